//go:build !linux

package fsx

// No renameat2 outside Linux: the portable forms, whose weaker guarantees
// docs/release.md ("Platforms") lists. They are tested on Linux too
// (rename_test.go calls them directly).

func renameNoReplace(oldpath, newpath string) error { return renameNoReplacePortable(oldpath, newpath) }

func exchange(a, b string) error { return exchangeByRenames(a, b) }
