// Package fsx is the one way clawkit puts bytes on disk: atomic publication
// (write a temporary sibling, fsync, rename), exclusive creation, and path
// joins that cannot escape their root.
//
// Every published file in clawkit goes through WriteFile or Publish, so a
// crash or kill -9 leaves either the old file or the new one, never a prefix.
package fsx

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// WriteFile atomically replaces path with data (mode perm).
func WriteFile(path string, data []byte, perm os.FileMode) error {
	return Publish(path, perm, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// Publish streams the content written by fill into a temporary sibling of
// path and renames it into place only when fill succeeds. On any error the
// temporary file is removed and path is untouched. An existing file keeps
// its permission bits; a new one gets perm (less the umask).
//
// The temporary file is always created in path's own folder, named
// ".<base>.tmp-<16 hex>" (TempPrefix): never in $TMPDIR, so a secret bound
// for the 0700 home never exists outside it, not even for a moment, and a
// write killed between create and rename leaves its temp file beside the
// destination, where RemoveStaleTemps (run by EditLocked) finds it.
// renameio, which clawkit used before, picks $TMPDIR whenever it is on the
// same filesystem and names its files in a way we cannot match for cleanup;
// see docs/architecture.md ("Publishing files").
func Publish(path string, perm os.FileMode, fill func(w io.Writer) error) (err error) {
	dir := filepath.Dir(path)
	keep := false
	if fi, serr := os.Stat(path); serr == nil && fi.Mode().IsRegular() {
		perm, keep = fi.Mode().Perm(), true
	}
	f, err := tempSibling(dir, filepath.Base(path), perm)
	if err != nil {
		return err
	}
	name := f.Name()
	closed := false
	defer func() {
		if err != nil {
			if !closed {
				err = errors.Join(err, f.Close())
			}
			err = errors.Join(err, os.Remove(name))
		}
	}()
	if err := fill(f); err != nil {
		return err
	}
	// O_CREATE applied the umask; an existing file's bits are kept exactly.
	if keep {
		if err := f.Chmod(perm); err != nil {
			return err
		}
	}
	if err := f.Sync(); err != nil {
		return err
	}
	closed = true
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(name, path); err != nil {
		return err
	}
	return syncDir(dir)
}

// TempPrefix returns the prefix of every temporary sibling of path that
// fsx creates (Publish, WriteFile, CreateExclusive, TempSibling).
func TempPrefix(path string) string {
	return filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp-")
}

// RemoveStaleTemps removes the temporary siblings of path that a killed
// writer left behind. Only a caller that serialises every writer of path
// (EditLocked does) may call it: a live writer's temp file would go too.
func RemoveStaleTemps(path string) error {
	prefix := TempPrefix(path)
	ents, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	base := filepath.Base(prefix)
	var first error
	for _, e := range ents {
		n := e.Name()
		if !strings.HasPrefix(n, base) || len(n) != len(base)+16 || !e.Type().IsRegular() {
			continue
		}
		if _, herr := hex.DecodeString(n[len(base):]); herr != nil {
			continue
		}
		if rerr := os.Remove(filepath.Join(filepath.Dir(path), n)); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) && first == nil {
			first = rerr
		}
	}
	return first
}

// CreateExclusive creates path holding exactly data, or reports that it
// already exists. It never checks-then-writes: the content is written and
// synced to a private temporary sibling, then hard-linked to path, which the
// kernel does atomically and refuses if path exists. Concurrent callers see
// exactly one created=true, and readers never see partial content.
func CreateExclusive(path string, data []byte, perm os.FileMode) (created bool, err error) {
	dir := filepath.Dir(path)
	tmp, err := tempSibling(dir, filepath.Base(path), perm)
	if err != nil {
		return false, err
	}
	name := tmp.Name()
	defer func() {
		// Linked or not, the temporary name goes; a failure to remove it
		// fails the call (the leftover would be a stray file).
		if rerr := os.Remove(name); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			err = errors.Join(err, rerr)
		}
	}()
	if err := WriteSyncClose(tmp, data); err != nil {
		return false, err
	}
	if err := os.Link(name, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return false, nil
		}
		return false, err
	}
	if err := syncDir(dir); err != nil {
		return true, err
	}
	return true, nil
}

func tempSibling(dir, base string, perm os.FileMode) (*os.File, error) {
	for range 16 {
		var b [8]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, err
		}
		name := filepath.Join(dir, "."+base+".tmp-"+hex.EncodeToString(b[:]))
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return f, err
	}
	return nil, fmt.Errorf("cannot create a temporary file in %s", dir)
}

// TempSibling creates a new empty file next to path with a random name; the
// caller owns (and removes) it.
func TempSibling(path string, perm os.FileMode) (*os.File, error) {
	return tempSibling(filepath.Dir(path), filepath.Base(path), perm)
}

// SyncDir fsyncs a directory so that a rename or link inside it is durable.
func SyncDir(dir string) error { return syncDir(dir) }

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer CloseRead(d)
	return d.Sync()
}

// CloseRead closes c where its Close error cannot matter because nothing
// was written through c: a file or folder opened only for reading or only
// to fsync it (Sync reports its own error), an *os.Root, a watcher, query
// rows (Err reports their errors). Closing it loses no data. Write paths
// return their Close error instead (docs/architecture.md, "Checks").
func CloseRead(c io.Closer) { _ = c.Close() }

// ErrEscape is returned when a relative path would leave its root.
var ErrEscape = errors.New("path escapes its root")

// CheckRel validates a slash-separated relative path: not empty, not
// absolute, no backslash, no NUL, no empty, "." or ".." segments. It is the
// lexical rule used for user paths and archive entry names alike.
func CheckRel(rel string) error {
	switch {
	case rel == "":
		return fmt.Errorf("empty path")
	case strings.ContainsRune(rel, 0):
		return fmt.Errorf("path %q contains NUL", rel)
	case strings.Contains(rel, `\`):
		return fmt.Errorf("path %q contains a backslash", rel)
	case strings.HasPrefix(rel, "/"):
		return fmt.Errorf("path %q is absolute", rel)
	}
	for seg := range strings.SplitSeq(rel, "/") {
		switch seg {
		case "":
			return fmt.Errorf("path %q has an empty segment", rel)
		case ".":
			return fmt.Errorf("path %q has a %q segment", rel, ".")
		case "..":
			return fmt.Errorf("path %q: %w", rel, ErrEscape)
		}
	}
	return nil
}

// Join joins a relative slash path to root after CheckRel, so the result is
// lexically inside root.
func Join(root, rel string) (string, error) {
	if err := CheckRel(rel); err != nil {
		return "", err
	}
	return filepath.Join(root, filepath.FromSlash(rel)), nil
}

// Within reports whether path p (already cleaned and absolute or both
// relative to the same base) is root itself or below it.
func Within(root, p string) bool {
	root = filepath.Clean(root)
	p = filepath.Clean(p)
	if p == root {
		return true
	}
	if root == string(filepath.Separator) {
		return strings.HasPrefix(p, root)
	}
	return strings.HasPrefix(p, root+string(filepath.Separator))
}

// RealWithin resolves symlinks in both paths and reports whether p lies
// within root. Paths that do not exist are resolved through their deepest
// existing ancestor.
func RealWithin(root, p string) (bool, error) {
	r, err := RealPath(root)
	if err != nil {
		return false, err
	}
	q, err := RealPath(p)
	if err != nil {
		return false, err
	}
	return Within(r, q), nil
}

// RealPath returns the absolute path of p with every symlink in its existing
// prefix resolved; a missing tail is appended as given.
func RealPath(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	var tail []string
	cur := abs
	for {
		r, err := filepath.EvalSymlinks(cur)
		if err == nil {
			for i := len(tail) - 1; i >= 0; i-- {
				r = filepath.Join(r, tail[i])
			}
			return r, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return abs, nil
		}
		tail = append(tail, filepath.Base(cur))
		cur = parent
	}
}

// OpenNoFollow opens a file for reading and fails if the final component is
// a symbolic link. Callers that must refuse links (skill reads, archive
// inputs) use it instead of os.Open.
func OpenNoFollow(path string) (*os.File, error) {
	return openNoFollow(path)
}

// ErrNotRegular is returned by OpenRegular and ReadRegular for anything but
// a regular file (a FIFO, a device, a socket, a directory).
var ErrNotRegular = errors.New("not a regular file")

// OpenRegular opens a regular file for reading without following a final
// symlink and without ever blocking in open(2); anything else is refused
// with ErrNotRegular. Every input path a user names goes through it (or
// ReadRegular), so a FIFO given as a manifest cannot hang a command.
func OpenRegular(path string) (*os.File, error) {
	return checkRegular(path, OpenNoFollow)
}

// OpenRegularFollow is OpenRegular for inputs that may be reached through
// a symlink; it still never blocks and refuses anything but a regular file.
func OpenRegularFollow(path string) (*os.File, error) {
	return checkRegular(path, openFollow)
}

func checkRegular(path string, open func(string) (*os.File, error)) (*os.File, error) {
	f, err := open(path)
	if errors.Is(err, syscall.ENXIO) {
		// open(2) of a unix socket fails with ENXIO ("no such device or
		// address"): it is something other than a regular file, and the
		// refusal says so (docs/errors.md, not_regular_file).
		if st, serr := os.Stat(path); serr == nil && st.Mode()&fs.ModeSocket != 0 {
			return nil, &NotRegularError{Path: path, Kind: describeMode(st.Mode())}
		}
	}
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		CloseRead(f)
		return nil, err
	}
	if !st.Mode().IsRegular() {
		CloseRead(f)
		return nil, &NotRegularError{Path: path, Kind: describeMode(st.Mode())}
	}
	return f, nil
}

// RegularIfExists returns a NotRegularError when something other than a
// regular file (a link, a FIFO, a device, a folder) is at path; nothing
// there, or a regular file, is nil. It is the check before a home file is
// opened for writing or locking, so the refusal names what is there.
func RegularIfExists(path string) error {
	if st, err := os.Lstat(path); err == nil && !st.Mode().IsRegular() {
		return &NotRegularError{Path: path, Kind: describeMode(st.Mode())}
	}
	return nil
}

// NotRegularError says what a path is instead of a regular file; it
// matches ErrNotRegular.
type NotRegularError struct {
	Path string
	Kind string // "a FIFO", "a folder", …
}

func (e *NotRegularError) Error() string {
	return fmt.Sprintf("%s is not a regular file (%s)", e.Path, e.Kind)
}

// Is makes errors.Is(err, ErrNotRegular) hold.
func (e *NotRegularError) Is(target error) bool { return target == ErrNotRegular }

func describeMode(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a folder"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	default:
		return "not a regular file"
	}
}

// ErrTooLarge is returned by ReadRegular when a file exceeds its limit.
var ErrTooLarge = errors.New("file too large")

// ReadRegular reads a regular file of at most max bytes without following a
// final symlink. It reads at most max+1 bytes, so a file that grows while
// being read is still refused rather than read without bound.
func ReadRegular(path string, max int64) ([]byte, error) {
	f, err := OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer CloseRead(f)
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s is larger than %d bytes: %w", path, max, ErrTooLarge)
	}
	return b, nil
}

// LockSuffix names the lock file that serialises edits of a shared file.
const LockSuffix = ".lock"

// EditLocked runs edit while holding an exclusive lock on path+LockSuffix
// (lockedfile: flock on Unix). Every read-modify-write of a shared file
// (config.json, credentials.json) goes through it, so that two writers —
// goroutines of one gateway, or two processes — never both read the old
// content and the second rename silently drops the first one's change.
// The lock file is left in place: removing it would let a waiter lock an
// unlinked inode while a newcomer locks a fresh one.
func EditLocked(path string, edit func() error) error {
	f, err := OpenLockFile(path+LockSuffix, 0o666)
	if err != nil {
		return err
	}
	defer CloseRead(f) // the lock file: nothing written through it
	// Every writer of path holds this lock, so any temp sibling present now
	// is a leftover of a write that was killed mid-way.
	if err := RemoveStaleTemps(path); err != nil {
		return err
	}
	return edit()
}

// WriteSyncClose writes data to a freshly created file, fsyncs it and
// closes it — the one way a new file's bytes are made durable before it is
// linked or renamed into place. The file is closed on every path.
func WriteSyncClose(f *os.File, data []byte) error {
	if _, err := f.Write(data); err != nil {
		return errors.Join(err, f.Close())
	}
	if err := f.Sync(); err != nil {
		return errors.Join(err, f.Close())
	}
	return f.Close()
}
