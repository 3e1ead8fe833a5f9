//go:build unix

package fsx

import (
	"os"

	"golang.org/x/sys/unix"
)

// openNoFollow opens with O_NONBLOCK so that opening a FIFO (or a device)
// given where a file is expected returns at once instead of waiting for a
// writer; callers then refuse anything that is not a regular file. Reads of
// a regular file are unaffected by the flag.
func openNoFollow(path string) (*os.File, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}
