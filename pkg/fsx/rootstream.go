package fsx

// Streaming publication inside an *os.Root (used by runtime-artifacts
// export, whose archives are too large to hold in memory, unlike
// PublishInRoot's data argument).

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
)

// PublishStreamIn is Publish for a file inside an opened *os.Root: the temporary
// sibling, the fsync, the rename and the directory fsync all go through the
// root's descriptor, so a folder renamed or replaced by someone else during
// the run cannot redirect the write. name is slash-separated and relative
// to the root; its folder must exist. On any error the temporary file is
// removed and name is untouched.
func PublishStreamIn(root *os.Root, name string, perm os.FileMode, fill func(w io.Writer) error) (err error) {
	f, tmp, err := CreateTempInRoot(root, name, perm)
	if err != nil {
		return err
	}
	defer func() {
		if f != nil {
			err = errors.Join(err, f.Close())
		}
		if err != nil {
			err = errors.Join(err, root.Remove(tmp))
		}
	}()
	if err := fill(f); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	cerr := f.Close()
	f = nil
	if cerr != nil {
		return cerr
	}
	if err := root.Rename(tmp, name); err != nil {
		return err
	}
	return SyncDirInRoot(root, path.Dir(name))
}

// CreateTempInRoot exclusively creates a new empty temporary file next to name
// inside root ("<dir>/.<base>.tmp-<random>") and returns it with its
// root-relative name; the caller renames or removes it.
func CreateTempInRoot(root *os.Root, name string, perm os.FileMode) (*os.File, string, error) {
	dir, base := path.Split(name)
	for i := 0; i < 10; i++ {
		var b [8]byte
		rand.Read(b[:])
		tmp := dir + "." + base + ".tmp-" + hex.EncodeToString(b[:])
		f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return f, tmp, err
	}
	return nil, "", errors.New("fsx: cannot create a unique temporary file")
}

// SyncDirInRoot fsyncs a folder inside root ("." for the root itself).
func SyncDirInRoot(root *os.Root, dir string) error {
	if dir == "" {
		dir = "."
	}
	d, err := root.Open(dir)
	if err != nil {
		return err
	}
	defer CloseRead(d)
	return d.Sync()
}
