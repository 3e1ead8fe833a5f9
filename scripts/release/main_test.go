package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestArchiveIsNormalised: the same files give the same archive bytes
// whatever their mtimes, modes and owners on disk and whatever order they
// are given in; every header is normalised and the gzip header carries no
// name or time. scripts/release-check.sh proves the whole release.
func TestArchiveIsNormalised(t *testing.T) {
	mtime := time.Unix(1796193567, 0).UTC()
	write := func(dir string, perm os.FileMode, when time.Time) []file {
		t.Helper()
		var fs []file
		for name, body := range map[string]string{"clawkit": "bin", "README.md": "readme", "man/clawkit.1": "man", "completions/clawkit.bash": "c"} {
			p := filepath.Join(dir, filepath.FromSlash(name))
			if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(body), perm); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(p, when, when); err != nil {
				t.Fatal(err)
			}
			mode := int64(0o644)
			if name == "clawkit" {
				mode = 0o755
			}
			fs = append(fs, file{name: name, path: p, mode: mode})
		}
		return fs
	}
	dir := t.TempDir()
	a := filepath.Join(dir, "a.tar.gz")
	b := filepath.Join(dir, "b.tar.gz")
	fa := write(filepath.Join(dir, "one"), 0o600, time.Now())
	fb := write(filepath.Join(dir, "two", "deeper"), 0o666, time.Unix(0, 0))
	fb[0], fb[len(fb)-1] = fb[len(fb)-1], fb[0]
	if err := writeArchive(a, fa, mtime); err != nil {
		t.Fatal(err)
	}
	if err := writeArchive(b, fb, mtime); err != nil {
		t.Fatal(err)
	}
	ab, _ := os.ReadFile(a)
	bb, _ := os.ReadFile(b)
	if !bytes.Equal(ab, bb) {
		t.Fatal("the same files gave different archives")
	}
	zr, err := gzip.NewReader(bytes.NewReader(ab))
	if err != nil {
		t.Fatal(err)
	}
	if zr.Name != "" || !zr.ModTime.IsZero() || zr.Comment != "" {
		t.Errorf("gzip header: name %q, mtime %v", zr.Name, zr.ModTime)
	}
	tr := tar.NewReader(zr)
	var names []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		if h.Uid != 0 || h.Gid != 0 || h.Uname != "" || h.Gname != "" || !h.ModTime.Equal(mtime) || h.Format != tar.FormatUSTAR || len(h.PAXRecords) != 0 {
			t.Errorf("%s: header not normalised: %+v", h.Name, h)
		}
		want := int64(0o644)
		if h.Name == "clawkit" || h.Typeflag == tar.TypeDir {
			want = 0o755
		}
		if h.Mode != want {
			t.Errorf("%s: mode %o, want %o", h.Name, h.Mode, want)
		}
	}
	wantNames := []string{"README.md", "clawkit", "completions/", "completions/clawkit.bash", "man/", "man/clawkit.1"}
	if len(names) != len(wantNames) {
		t.Fatalf("entries %v, want %v", names, wantNames)
	}
	for i := range names {
		if names[i] != wantNames[i] {
			t.Fatalf("entries %v, want %v", names, wantNames)
		}
	}
}
