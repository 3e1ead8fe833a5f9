//go:build linux

package testscript

import "syscall"

// mountTmpfs mounts a small tmpfs (root only) for the full-disk tests.
func mountTmpfs(dir, opts string) error { return syscall.Mount("tmpfs", dir, "tmpfs", 0, opts) }

func unmountTmpfs(dir string) error { return syscall.Unmount(dir, syscall.MNT_DETACH) }
