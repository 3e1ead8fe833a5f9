//go:build unix

package fsx

import (
	"os"

	"github.com/rogpeppe/go-internal/lockedfile"
	"golang.org/x/sys/unix"
)

// openNoFollow opens path read-only without following a final symlink and
// without blocking: a FIFO or a character device given where a file was
// expected would otherwise block open(2) (a FIFO waits for a writer) and
// the command would ignore SIGTERM while it waits. Regular files get their
// blocking mode back, so reads behave as usual; anything else keeps
// O_NONBLOCK, so a caller that reads it anyway sees EOF or EAGAIN instead
// of hanging.
func openNoFollow(path string) (*os.File, error) {
	return openNonblocking(path, unix.O_NOFOLLOW)
}

// openFollow is openNoFollow for inputs where a symlink is acceptable (a
// plugin manifest in a linked package folder): it still never blocks.
func openFollow(path string) (*os.File, error) {
	return openNonblocking(path, 0)
}

func openNonblocking(path string, flags int) (*os.File, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NONBLOCK|flags, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT == unix.S_IFREG {
		if err := unix.SetNonblock(fd, false); err != nil {
			unix.Close(fd)
			return nil, &os.PathError{Op: "open", Path: path, Err: err}
		}
	}
	return os.NewFile(uintptr(fd), path), nil
}

// OpenLockFile opens (creating it if needed) and locks a lock file with
// lockedfile, as lockedfile.MutexAt does, but never through a symbolic
// link (a link could make it create a file outside the home) and without
// blocking in open(2); anything but a regular file is refused with a
// NotRegularError and left as it is. The caller's Close releases the lock.
func OpenLockFile(path string, perm os.FileMode) (*lockedfile.File, error) {
	// Refuse what is there before locking it: a FIFO or a device is never
	// locked (O_NONBLOCK keeps open(2) from waiting on a FIFO either way).
	if err := RegularIfExists(path); err != nil {
		return nil, err
	}
	f, err := lockedfile.OpenFile(path, os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW|unix.O_NONBLOCK, perm)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, &NotRegularError{Path: path, Kind: describeMode(st.Mode())}
	}
	return f, nil
}
