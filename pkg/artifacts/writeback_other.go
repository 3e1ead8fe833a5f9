//go:build !linux

package artifacts

import "os"

// startWriteback does nothing without sync_file_range: the data leaves for
// the disk at the fsync in publish, as durable, only later
// (docs/release.md, "Platforms").
func startWriteback(*os.File, int64, int64) {}
