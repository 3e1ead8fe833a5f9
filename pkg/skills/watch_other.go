//go:build !linux

package skills

import "os"

// networkFS is not detected on this platform.
func networkFS(string) (string, bool) { return "", false }

// OutputGone never fires on this platform; a closed stdout is noticed by
// the next write instead (EPIPE).
func OutputGone(*os.File, <-chan struct{}) <-chan struct{} { return nil }
