//go:build linux

package crabbox

import "golang.org/x/sys/unix"

// startFlusher flushes the staging folder's file system with syncfs(2)
// every flushEvery and at finish (see flusher).
func startFlusher(dir string) (*flusher, error) {
	return startFlusherWith(dir, flushEvery, unix.Syncfs)
}
