package fsx

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
)

// PublishInRoot atomically replaces the file rel (a CheckRel slash path)
// inside root with data: a temporary sibling is created exclusively, written,
// fsynced and renamed over rel, all through root (os.Root, openat-based), so
// neither the write nor the rename can land outside root whatever links
// appear in the tree meanwhile. The parent folder is fsynced afterwards. On
// any error the temporary file is removed and rel is untouched.
//
// Use it where the destination folder is shared with other writers (e.g.
// an agent's skills folder); WriteFile/Publish remain the default.
func PublishInRoot(root *os.Root, rel string, data []byte, perm os.FileMode) (err error) {
	if err := CheckRel(rel); err != nil {
		return err
	}
	dir, base := path.Split(rel)
	var tmp string
	var f *os.File
	for range 16 {
		var b [8]byte
		if _, err := rand.Read(b[:]); err != nil {
			return err
		}
		tmp = dir + "." + base + ".tmp-" + hex.EncodeToString(b[:])
		f, err = root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		break
	}
	if err != nil {
		return err
	}
	if f == nil {
		return fmt.Errorf("cannot create a temporary file for %s", rel)
	}
	defer func() {
		if err != nil {
			_ = root.Remove(tmp)
		}
	}()
	if err := WriteSyncClose(f, data); err != nil {
		return err
	}
	if err := root.Rename(tmp, rel); err != nil {
		return err
	}
	parent := dir
	if parent == "" {
		parent = "."
	}
	d, err := root.Open(path.Clean(parent))
	if err != nil {
		return nil // published; the directory sync is best effort
	}
	defer CloseRead(d)
	_ = d.Sync()
	return nil
}
