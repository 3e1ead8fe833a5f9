//go:build linux

package artifacts

import (
	"os"

	"golang.org/x/sys/unix"
)

// startWriteback starts writing n bytes of f from off to the disk
// (sync_file_range SYNC_FILE_RANGE_WRITE: asynchronous, it only starts
// it). Only an optimisation: durability still comes from the fsync in
// publish, so a file system without it is no error.
func startWriteback(f *os.File, off, n int64) {
	_ = unix.SyncFileRange(int(f.Fd()), off, n, unix.SYNC_FILE_RANGE_WRITE)
}
