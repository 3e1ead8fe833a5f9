//go:build unix

package skills

import (
	"errors"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"

	"github.com/clawkit/clawkit/pkg/errs"
)

// OpenInput opens a file clawkit reads as input (a --from file, a file of
// a folder being validated or installed) without blocking and without
// following a final link: O_NONBLOCK makes opening a FIFO return at once
// instead of waiting for a writer, and the fstat that follows refuses
// anything but a regular file before a single byte is read. The returned
// file is switched back to blocking mode (irrelevant for regular files, but
// it keeps reads ordinary).
func OpenInput(p string) (*os.File, fs.FileInfo, error) {
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			return nil, nil, errs.Refused(CodePathEscape, "%s is a symbolic link; links are refused", p).
				WithHint("pass the file the link points to")
		}
		return nil, nil, &os.PathError{Op: "open", Path: p, Err: err}
	}
	f := os.NewFile(uintptr(fd), p)
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, nil, errs.Usage("not_regular_file", "%s is not a regular file (%s); only regular files (or - for stdin) are read", p, fileKind(st.Mode())).
			WithHint("copy the content into a regular file, or pipe it on stdin with --from -")
	}
	_ = unix.SetNonblock(fd, false)
	return f, st, nil
}

func fileKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m.IsDir():
		return "a folder"
	}
	return "not a regular file"
}
