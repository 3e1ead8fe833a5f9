package skilllint

import (
	"errors"
	"io/fs"
	"os"
	"syscall"

	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/fsx"
)

// OpenInput opens a file clawkit reads as input (a --from file, a file of
// a folder being validated or installed) through fsx.OpenRegular: never
// blocking (a FIFO is refused at once instead of waiting for a writer),
// never following a final link, and refusing anything but a regular file
// before a single byte is read. Its errors carry the skills codes.
func OpenInput(p string) (*os.File, fs.FileInfo, error) {
	f, err := fsx.OpenRegular(p)
	switch {
	case errors.Is(err, syscall.ELOOP):
		return nil, nil, errs.Refused(errs.CodePathEscape, "%s is a symbolic link; links are refused", p).WithPath(p).
			WithHint("pass the file the link points to")
	case errors.Is(err, fsx.ErrNotRegular):
		return nil, nil, errs.Usage(errs.CodeNotRegularFile, "%v; only regular files (or - for stdin) are read", err).WithPath(p).
			WithHint("copy the content into a regular file, or pipe it on stdin with --from -")
	case err != nil:
		return nil, nil, err
	}
	st, err := f.Stat()
	if err != nil {
		fsx.CloseRead(f)
		return nil, nil, err
	}
	return f, st, nil
}
