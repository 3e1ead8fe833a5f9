package fsx

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// A lock file is locked only when it is a regular file (created if
// missing); a FIFO, a link or a folder in its place is refused at once,
// and nothing is created through a link.
func TestOpenLockFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "x.lock")
	f, err := OpenLockFile(p, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if f, err = OpenLockFile(p, 0o600); err != nil {
		t.Fatalf("existing regular lock file: %v", err)
	}
	f.Close()

	fifo := filepath.Join(dir, "fifo.lock")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.lock")
	outside := filepath.Join(dir, "outside")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	folder := filepath.Join(dir, "dir.lock")
	os.Mkdir(folder, 0o700)
	for _, c := range []struct{ path, kind string }{{fifo, "a FIFO"}, {link, "a symbolic link"}, {folder, "a folder"}} {
		_, err := OpenLockFile(c.path, 0o600)
		var nr *NotRegularError
		if !errors.As(err, &nr) || nr.Kind != c.kind || !errors.Is(err, ErrNotRegular) {
			t.Errorf("%s: %v, want NotRegularError %s", c.path, err, c.kind)
		}
	}
	if _, err := os.Lstat(outside); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("a lock through a link created its target")
	}
	// EditLocked refuses the same way, without running the edit.
	ran := false
	if err := EditLocked(filepath.Join(dir, "fifo"), func() error { ran = true; return nil }); !errors.Is(err, ErrNotRegular) || ran {
		t.Fatalf("EditLocked over a FIFO lock: %v (ran %v)", err, ran)
	}
}
