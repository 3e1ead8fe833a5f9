//go:build !unix

package skills

import (
	"io/fs"
	"os"

	"github.com/clawkit/clawkit/pkg/errs"
)

// OpenInput opens a regular input file (see input_unix.go). Without
// O_NONBLOCK and O_NOFOLLOW, it checks the path first and the opened file
// again.
func OpenInput(p string) (*os.File, fs.FileInfo, error) {
	lst, err := os.Lstat(p)
	if err != nil {
		return nil, nil, err
	}
	if lst.Mode()&fs.ModeSymlink != 0 {
		return nil, nil, errs.Refused(CodePathEscape, "%s is a symbolic link; links are refused", p)
	}
	if !lst.Mode().IsRegular() {
		return nil, nil, errs.Usage("not_regular_file", "%s is not a regular file; only regular files (or - for stdin) are read", p)
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, nil, err
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() || !os.SameFile(st, lst) {
		f.Close()
		return nil, nil, errs.Usage("not_regular_file", "%s changed while being opened", p)
	}
	return f, st, nil
}
