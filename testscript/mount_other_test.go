//go:build !linux

package testscript

import "errors"

// The full-disk tests mount a tmpfs, which only Linux offers them: they
// skip elsewhere.
func mountTmpfs(string, string) error { return errors.New("no tmpfs outside Linux") }

func unmountTmpfs(string) error { return nil }
