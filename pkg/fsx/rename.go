package fsx

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// RenameNoReplace renames oldpath to newpath and fails with syscall.EEXIST
// (errors.Is fs.ErrExist) when newpath exists; it never replaces it. Errors
// are bare errno values on every platform. On Linux it is one renameat2(RENAME_NOREPLACE); elsewhere
// it is renameNoReplacePortable, which is weaker for folders
// (docs/release.md, "Platforms").
func RenameNoReplace(oldpath, newpath string) error { return renameNoReplace(oldpath, newpath) }

// Exchange swaps the entries at a and b. On Linux it is one
// renameat2(RENAME_EXCHANGE): every reader sees one or the other, never
// neither. Elsewhere it is exchangeByRenames: b is absent for a moment
// (docs/release.md, "Platforms").
func Exchange(a, b string) error { return exchange(a, b) }

// renameNoReplacePortable is RenameNoReplace with POSIX calls only. A file
// (or link) is hard-linked to newpath, which link(2) refuses atomically when
// newpath exists, then its old name is removed. A folder cannot be linked:
// newpath is checked and then renamed onto, so a folder created at newpath
// by someone else between the two steps is replaced when it is empty
// (rename(2) replaces an empty folder). Callers rename folders they own
// into paths under their own lock, where no one else creates entries.
func renameNoReplacePortable(oldpath, newpath string) error {
	fi, err := os.Lstat(oldpath)
	if err != nil {
		return underlying(err)
	}
	if !fi.IsDir() {
		if err := os.Link(oldpath, newpath); err == nil {
			if err := os.Remove(oldpath); err != nil {
				// Undo the link; the remove's error is the one to report.
				_ = os.Remove(newpath)
				return underlying(err)
			}
			return nil
		} else if errors.Is(err, fs.ErrExist) {
			return syscall.EEXIST
		}
		// A file system without hard links: check, then rename.
	}
	if _, err := os.Lstat(newpath); err == nil {
		return syscall.EEXIST
	} else if !errors.Is(err, fs.ErrNotExist) {
		return underlying(err)
	}
	return underlying(os.Rename(oldpath, newpath))
}

// exchangeByRenames swaps a and b with three renames: b moves aside to
// "<a>.exchange", a takes b's place, and the old b takes a's name. Between
// the first two renames b does not exist; a failure of the second puts b
// back. A kill between them leaves b's old entry at "<a>.exchange": named
// after a, so a caller whose a is a staging name (crabbox's
// ".<id>.staging-…") sweeps it with its other stale staging folders.
// Callers exchange only under their own lock.
func exchangeByRenames(a, b string) error {
	aside := a + ".exchange"
	if err := os.Rename(b, aside); err != nil {
		return underlying(err)
	}
	if err := os.Rename(a, b); err != nil {
		if rerr := os.Rename(aside, b); rerr != nil {
			return errors.Join(underlying(err), rerr)
		}
		return underlying(err)
	}
	return underlying(os.Rename(aside, a))
}

// SyncTree fsyncs every regular file and folder under root (links are not
// followed), folders after their entries. It is the portable stand-in for
// syncfs(2) where a whole staged tree must be durable before it is
// published: one fsync per entry instead of one call for the file system.
// On macOS, Go's File.Sync is F_FULLFSYNC (to stable storage).
func SyncTree(root string) error {
	var dirs []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			dirs = append(dirs, p)
		case d.Type().IsRegular():
			return syncPath(p)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := syncPath(dirs[i]); err != nil {
			return err
		}
	}
	return nil
}

func syncPath(p string) error {
	f, err := OpenNoFollow(p)
	if err != nil {
		return err
	}
	defer CloseRead(f) // opened to fsync it: Sync reports its own error
	return f.Sync()
}

func underlying(err error) error {
	if err == nil {
		return nil
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}
