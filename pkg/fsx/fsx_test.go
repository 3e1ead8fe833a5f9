package fsx

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
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
		if _, err := fmt.Fprint(w, "half of the new"); err != nil {
			t.Error(err)
		}
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
	if err := os.WriteFile(f, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(f, filepath.Join(dir, "l")); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenNoFollow(filepath.Join(dir, "l")); err == nil {
		t.Fatal("opened a symlink")
	}
	h, err := OpenNoFollow(f)
	if err != nil {
		t.Fatal(err)
	}
	CloseRead(h)
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

// A FIFO with no writer must be refused at once, not block in open(2).
func TestOpenRegularRefusesFIFOWithoutBlocking(t *testing.T) {
	p := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Skip("mkfifo:", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := ReadRegular(p, 1<<20)
		done <- err
	}()
	err := <-done // a blocking open would hang here and the test would time out
	if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "a FIFO") {
		t.Fatalf("ReadRegular(fifo) = %v; want ErrNotRegular naming the pipe", err)
	}
	if _, err := OpenRegular(t.TempDir()); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("OpenRegular(dir) = %v", err)
	}
	f, err := OpenNoFollow(p)
	if err != nil {
		t.Fatalf("OpenNoFollow(fifo) = %v", err)
	}
	CloseRead(f)
}

// Regular files opened through the non-blocking path read normally.
func TestReadRegularReadsFiles(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := ReadRegular(p, 5)
	if err != nil || string(b) != "hello" {
		t.Fatalf("ReadRegular = %q, %v", b, err)
	}
	if _, err := ReadRegular(p, 4); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("over the limit: %v", err)
	}
}

// EditLocked serialises read-modify-write cycles: every increment survives.
func TestEditLockedSerialisesEdits(t *testing.T) {
	p := filepath.Join(t.TempDir(), "counter")
	if err := os.WriteFile(p, []byte("0"), 0o600); err != nil {
		t.Fatal(err)
	}
	const n = 40
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := EditLocked(p, func() error {
				b, err := os.ReadFile(p)
				if err != nil {
					return err
				}
				v, _ := strconv.Atoi(string(b))
				runtime.Gosched()
				return WriteFile(p, []byte(strconv.Itoa(v+1)), 0o600)
			})
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if b, _ := os.ReadFile(p); string(b) != strconv.Itoa(n) {
		t.Fatalf("counter = %s, want %d", b, n)
	}
}

// A unix socket is refused as not a regular file (open(2) itself fails
// with ENXIO on one), like a FIFO.
func TestOpenRegularRefusesSocket(t *testing.T) {
	p := filepath.Join(t.TempDir(), "s.sock")
	l, err := net.Listen("unix", p)
	if err != nil {
		t.Skip("unix socket:", err)
	}
	defer func() { _ = l.Close() }()
	for name, open := range map[string]func(string) (*os.File, error){"OpenRegular": OpenRegular, "OpenRegularFollow": OpenRegularFollow} {
		if _, err := open(p); !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "a socket") {
			t.Errorf("%s(socket) = %v; want ErrNotRegular naming the socket", name, err)
		}
	}
}
