package fsx

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

func TestCreateExclusiveManyWriters(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	const n = 32
	var wg sync.WaitGroup
	created := make([]bool, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			data := bytes.Repeat([]byte{byte('a' + i%26)}, 64<<10)
			c, err := CreateExclusive(path, data, 0o644)
			if err != nil {
				t.Error(err)
			}
			created[i] = c
		}()
	}
	wg.Wait()
	winners := 0
	for _, c := range created {
		if c {
			winners++
		}
	}
	if winners != 1 {
		t.Fatalf("%d writers reported created, want exactly 1", winners)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 64<<10 || bytes.Count(got, got[:1]) != len(got) {
		t.Fatalf("file holds mixed or partial content (%d bytes)", len(got))
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Fatalf("temporary files left behind: %v", ents)
	}
}

func TestPublishFailureLeavesOldFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := WriteFile(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	err := Publish(path, 0o600, func(w io.Writer) error {
		fmt.Fprint(w, "half of the new")
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	got, _ := os.ReadFile(path)
	if string(got) != "old" {
		t.Fatalf("file = %q, want old content", got)
	}
	ents, _ := os.ReadDir(filepath.Dir(path))
	if len(ents) != 1 {
		t.Fatalf("temporary files left behind: %v", ents)
	}
}

func TestCheckRel(t *testing.T) {
	for _, ok := range []string{"a", "a/b", "a.b/c-d", "..a/b.."} {
		if err := CheckRel(ok); err != nil {
			t.Errorf("CheckRel(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", "/a", "a/../b", "..", "a//b", "./a", "a/.", `a\b`, "a\x00b", "a/"} {
		if err := CheckRel(bad); err == nil {
			t.Errorf("CheckRel(%q) accepted", bad)
		}
	}
}

func TestRealWithinFollowsLinks(t *testing.T) {
	root := t.TempDir()
	out := t.TempDir()
	if err := os.Symlink(out, filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	in, err := RealWithin(root, filepath.Join(root, "link", "new"))
	if err != nil {
		t.Fatal(err)
	}
	if in {
		t.Fatal("a path through a link that leaves root was reported inside")
	}
	in, err = RealWithin(root, filepath.Join(root, "sub", "x"))
	if err != nil || !in {
		t.Fatalf("RealWithin(missing child) = %v, %v", in, err)
	}
}

func TestOpenNoFollow(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "f")
	os.WriteFile(f, []byte("x"), 0o600)
	os.Symlink(f, filepath.Join(dir, "l"))
	if _, err := OpenNoFollow(filepath.Join(dir, "l")); err == nil {
		t.Fatal("opened a symlink")
	}
	h, err := OpenNoFollow(f)
	if err != nil {
		t.Fatal(err)
	}
	h.Close()
}

func FuzzCheckRel(f *testing.F) {
	for _, s := range []string{"a/b", "../x", "a//b", `a\b`, "/abs", "a/./b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, rel string) {
		if CheckRel(rel) != nil {
			return
		}
		// Anything accepted must stay inside the root lexically.
		root := "/base/x"
		p, err := Join(root, rel)
		if err != nil || !Within(root, p) || p == root {
			t.Fatalf("accepted %q escapes or collapses: %q %v", rel, p, err)
		}
	})
}
