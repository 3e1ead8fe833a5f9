//go:build linux

package skills

import (
	"os"

	"github.com/clawkit/clawkit/pkg/fsx"
	"golang.org/x/sys/unix"
)

// exchangeInRoot swaps two entries of the root in one atomic step
// (renameat2 RENAME_EXCHANGE): readers see the old tree or the new one,
// never neither. Both names are single path components.
func exchangeInRoot(r *os.Root, a, b string) error {
	d, err := r.Open(".")
	if err != nil {
		return err
	}
	defer fsx.CloseRead(d)
	fd := int(d.Fd())
	if err := unix.Renameat2(fd, a, fd, b, unix.RENAME_EXCHANGE); err != nil {
		if err == unix.EINVAL || err == unix.ENOSYS {
			return exchangeByRenames(r, a, b) // a filesystem without exchange
		}
		return &os.LinkError{Op: "renameat2", Old: a, New: b, Err: err}
	}
	return nil
}
