package fsx

import (
	"os"
	"path/filepath"
	"testing"
)

func TestPublishInRoot(t *testing.T) {
	dir := t.TempDir()
	outside := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "a"), 0o755); err != nil {
		t.Fatal(err)
	}
	r, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer CloseRead(r)
	if err := PublishInRoot(r, "a/f.txt", []byte("one"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := PublishInRoot(r, "a/f.txt", []byte("two"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a", "f.txt")); string(b) != "two" {
		t.Fatalf("content %q", b)
	}
	ents, _ := os.ReadDir(filepath.Join(dir, "a"))
	if len(ents) != 1 {
		t.Fatalf("temporary files left: %v", ents)
	}
	// A folder replaced by a link to outside the root: the publish fails
	// and nothing lands outside.
	if err := os.Symlink(outside, filepath.Join(dir, "b")); err != nil {
		t.Fatal(err)
	}
	if err := PublishInRoot(r, "b/x.txt", []byte("escape"), 0o644); err == nil {
		t.Fatal("published through a link leaving the root")
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Fatalf("wrote outside the root: %v", ents)
	}
	for _, bad := range []string{"../x", "/abs", "a//b", ""} {
		if err := PublishInRoot(r, bad, nil, 0o644); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
