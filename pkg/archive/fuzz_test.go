package archive_test

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clawkit/clawkit/pkg/archive"
	"github.com/clawkit/clawkit/pkg/archive/archivetest"
	"github.com/clawkit/clawkit/pkg/fsx"
)

// FuzzExtract feeds arbitrary bytes to the reader and the extractor. The
// properties: never panic; every entry the callback sees obeys the path
// rules with no duplicates; and extraction never creates anything outside
// its destination folder, whether it succeeds or not.
func FuzzExtract(f *testing.F) {
	f.Add(archivetest.Good())
	for _, k := range archivetest.Kinds() {
		if k == "bomb" || k == "longpath" {
			continue // large seeds slow every fuzz iteration
		}
		f.Add(archivetest.Hostile(k))
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		lim := archive.Limits{MaxExpandedBytes: 1 << 20, MaxEntries: 1000}
		seen := map[string]bool{}
		_, err := archive.Walk(bytes.NewReader(data), archive.Options{Limits: lim}, func(e *archive.Entry, body io.Reader) error {
			if err := fsx.CheckRel(e.Path); err != nil {
				t.Fatalf("callback saw invalid path %q: %v", e.Path, err)
			}
			if len(e.Path) > 1024 || seen[e.Path] {
				t.Fatalf("callback saw long or duplicate path %q", e.Path)
			}
			seen[e.Path] = true
			if (body != nil) != (e.Type == archive.TypeFile) {
				t.Fatalf("body presence wrong for %v", e.Type)
			}
			return nil
		})
		if err != nil && !errors.Is(err, archive.ErrUnsafe) {
			t.Fatalf("walk error does not wrap ErrUnsafe: %v", err)
		}
		parent := t.TempDir()
		dest := filepath.Join(parent, "dest")
		if err := os.Mkdir(dest, 0o755); err != nil {
			t.Fatal(err)
		}
		_, xerr := archive.ExtractDir(bytes.NewReader(data), dest, archive.ExtractOptions{Options: archive.Options{Limits: lim}})
		if (err == nil) != (xerr == nil) {
			t.Fatalf("walk and extract disagree: %v vs %v", err, xerr)
		}
		ents, _ := os.ReadDir(parent)
		if len(ents) != 1 {
			t.Fatalf("extraction wrote beside its destination: %v", ents)
		}
		werr := filepath.WalkDir(dest, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.Type()&os.ModeSymlink == 0 {
				return nil
			}
			target, _ := os.Readlink(p)
			if strings.HasPrefix(target, "/") {
				t.Fatalf("absolute symlink extracted: %s -> %s", p, target)
			}
			if ok, _ := fsx.RealWithin(dest, filepath.Join(filepath.Dir(p), target)); !ok {
				t.Fatalf("symlink leaves the destination: %s -> %s", p, target)
			}
			return nil
		})
		if werr != nil {
			t.Fatal(werr)
		}
	})
}

// FuzzWalkTar fuzzes the tar layer directly (the input is gzipped before
// the walk), which reaches header validation far more often than mutating
// compressed bytes does.
func FuzzWalkTar(f *testing.F) {
	f.Add(gunzip(archivetest.Good()))
	for _, k := range []string{"slip", "absolute", "symlink-escape", "symlink-through", "hardlink-escape", "device", "duplicate", "file-as-dir"} {
		f.Add(gunzip(archivetest.Hostile(k)))
	}
	f.Fuzz(func(t *testing.T, tarBytes []byte) {
		var z bytes.Buffer
		zw := gzip.NewWriter(&z)
		if _, err := zw.Write(tarBytes); err != nil {
			t.Fatal(err)
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		lim := archive.Limits{MaxExpandedBytes: 1 << 20, MaxEntries: 1000}
		seen := map[string]archive.Type{}
		_, err := archive.Walk(bytes.NewReader(z.Bytes()), archive.Options{Limits: lim}, func(e *archive.Entry, body io.Reader) error {
			if err := fsx.CheckRel(e.Path); err != nil || len(e.Path) > 1024 {
				t.Fatalf("callback saw invalid path %q", e.Path)
			}
			if _, dup := seen[e.Path]; dup {
				t.Fatalf("duplicate %q", e.Path)
			}
			for dir := filepath.Dir(e.Path); dir != "."; dir = filepath.Dir(dir) {
				if t0, ok := seen[dir]; ok && t0 != archive.TypeDir {
					t.Fatalf("%q lies below a %v", e.Path, t0)
				}
			}
			seen[e.Path] = e.Type
			if e.Type == archive.TypeHardlink && seen[e.Linkname] != archive.TypeFile {
				t.Fatalf("hard link %q to %q", e.Path, e.Linkname)
			}
			if e.Type == archive.TypeSymlink && (strings.HasPrefix(e.Linkname, "/") || strings.Contains(e.Linkname, "\x00")) {
				t.Fatalf("symlink %q -> %q", e.Path, e.Linkname)
			}
			return nil
		})
		if err != nil && !errors.Is(err, archive.ErrUnsafe) {
			t.Fatalf("walk error does not wrap ErrUnsafe: %v", err)
		}
	})
}

func gunzip(b []byte) []byte {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		panic(err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		panic(err)
	}
	return out
}
