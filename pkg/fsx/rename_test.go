package fsx

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// The platform forms (renameat2 on Linux) and the portable forms the other
// platforms use are held to the same outcomes here, so the fallbacks are
// tested on the Linux machines that run CI (docs/release.md, "Platforms").
var renameForms = []struct {
	name     string
	noRepl   func(a, b string) error
	exchange func(a, b string) error
}{
	{"platform", RenameNoReplace, Exchange},
	{"portable", renameNoReplacePortable, exchangeByRenames},
}

func TestRenameNoReplace(t *testing.T) {
	for _, f := range renameForms {
		t.Run(f.name, func(t *testing.T) {
			dir := t.TempDir()
			p := func(n string) string { return filepath.Join(dir, n) }
			mustWrite(t, p("a"), "a")
			mustWrite(t, p("b"), "b")
			// A file onto an existing file: refused, both untouched.
			if err := f.noRepl(p("a"), p("b")); !errors.Is(err, syscall.EEXIST) || !errors.Is(err, fs.ErrExist) {
				t.Fatalf("file onto file: %v, want EEXIST", err)
			}
			mustRead(t, p("a"), "a")
			mustRead(t, p("b"), "b")
			// A file to a free name: moved.
			if err := f.noRepl(p("a"), p("c")); err != nil {
				t.Fatal(err)
			}
			mustRead(t, p("c"), "a")
			if _, err := os.Lstat(p("a")); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("old name still there: %v", err)
			}
			// A folder onto an existing empty folder: refused (plain
			// rename(2) would replace it).
			must(t, os.Mkdir(p("d1"), 0o755))
			mustWrite(t, p("d1/x"), "x")
			must(t, os.Mkdir(p("d2"), 0o755))
			if err := f.noRepl(p("d1"), p("d2")); !errors.Is(err, syscall.EEXIST) {
				t.Fatalf("folder onto empty folder: %v, want EEXIST", err)
			}
			mustRead(t, p("d1/x"), "x")
			// A folder to a free name: moved with its content.
			if err := f.noRepl(p("d1"), p("d3")); err != nil {
				t.Fatal(err)
			}
			mustRead(t, p("d3/x"), "x")
			// A dangling link at the destination counts as existing.
			must(t, os.Symlink("nowhere", p("link")))
			if err := f.noRepl(p("c"), p("link")); !errors.Is(err, syscall.EEXIST) {
				t.Fatalf("onto a dangling link: %v, want EEXIST", err)
			}
			// A missing source.
			if err := f.noRepl(p("missing"), p("e")); !errors.Is(err, syscall.ENOENT) {
				t.Fatalf("missing source: %v, want ENOENT", err)
			}
		})
	}
}

func TestExchange(t *testing.T) {
	for _, f := range renameForms {
		t.Run(f.name, func(t *testing.T) {
			dir := t.TempDir()
			p := func(n string) string { return filepath.Join(dir, n) }
			must(t, os.Mkdir(p("new"), 0o755))
			mustWrite(t, p("new/v"), "new")
			must(t, os.Mkdir(p("cur"), 0o755))
			mustWrite(t, p("cur/v"), "old")
			if err := f.exchange(p("new"), p("cur")); err != nil {
				t.Fatal(err)
			}
			mustRead(t, p("cur/v"), "new")
			mustRead(t, p("new/v"), "old")
			ents, _ := os.ReadDir(dir)
			if len(ents) != 2 {
				t.Fatalf("leftovers after the exchange: %v", ents)
			}
			// b missing: fails, a untouched.
			if err := f.exchange(p("new"), p("gone")); !errors.Is(err, syscall.ENOENT) {
				t.Fatalf("missing b: %v, want ENOENT", err)
			}
			mustRead(t, p("new/v"), "old")
			// a missing: fails, b back in place, nothing aside.
			if err := f.exchange(p("gone"), p("cur")); !errors.Is(err, syscall.ENOENT) {
				t.Fatalf("missing a: %v, want ENOENT", err)
			}
			mustRead(t, p("cur/v"), "new")
			if ents, _ := os.ReadDir(dir); len(ents) != 2 {
				t.Fatalf("leftovers after a failed exchange: %v", ents)
			}
		})
	}
}

func TestSyncTree(t *testing.T) {
	dir := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(dir, "a", "b"), 0o755))
	mustWrite(t, filepath.Join(dir, "a", "b", "f"), "x")
	must(t, os.Symlink("/nonexistent", filepath.Join(dir, "a", "l")))
	if err := SyncTree(dir); err != nil {
		t.Fatal(err)
	}
	if err := SyncTree(filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing root: %v", err)
	}
	// A FIFO is neither synced nor opened (opening it could block).
	if err := syscall.Mkfifo(filepath.Join(dir, "a", "fifo"), 0o644); err != nil {
		t.Skip(err)
	}
	if err := SyncTree(dir); err != nil {
		t.Fatal(err)
	}
}

func mustWrite(t *testing.T, p, s string) {
	t.Helper()
	must(t, os.WriteFile(p, []byte(s), 0o644))
}

func mustRead(t *testing.T, p, want string) {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil || string(b) != want {
		t.Fatalf("%s: %q %v, want %q", p, b, err, want)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
