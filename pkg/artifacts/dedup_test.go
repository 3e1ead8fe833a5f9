package artifacts

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clawkit/clawkit/pkg/archive"
)

// bootstrapEntries reads the node bootstrap of an export with the standard
// library's reader: every header in archive order and each file's content.
func bootstrapEntries(t *testing.T, out string, m *Manifest) ([]*tar.Header, map[string]string, []byte) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(out, filepath.FromSlash(m.NodeBootstrap.Path)))
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	var hs []*tar.Header
	body := map[string]string{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		hs = append(hs, h)
		body[h.Name] = string(b)
	}
	return hs, body, raw
}

// Files with the same content and mode are stored once: later copies are
// hard links to the first, which extraction (pkg/archive, so crabbox
// install) turns back into the same bytes at every path. A copy with
// another mode, a file of the same size with other bytes, and a first copy
// whose path is too long for the ustar link field are archived in full.
// The archive is in archiveOrder and the same installation exported twice
// gives the same bytes.
func TestExportStoresCopiesAsHardLinks(t *testing.T) {
	pkg := sampleCopy(t)
	same := strings.Repeat("module.exports = 'the same bytes';\n", 40)
	other := strings.Repeat("module.exports = 'other: the bytes';\n", 40)[:len(same)]
	long := "dist/" + strings.Repeat("l", 90) + "/a.dat" // > 100 bytes in the archive
	files := map[string]struct {
		content string
		mode    os.FileMode
	}{
		"dist/dup/one.txt":    {same, 0o644},
		"dist/dup/two.txt":    {same, 0o644},
		"dist/dup/x/two.txt":  {same, 0o600}, // normalised to 0644: still a copy
		"dist/dup/exec.txt":   {same, 0o755},
		"dist/dup/exec2.txt":  {same, 0o700},
		"dist/dup/three.txt":  {other, 0o644},
		long:                  {other + "!", 0o644},
		"dist/dup/b.dat":      {other + "!", 0o644},
		"dist/dup/c.dat":      {other + "!", 0o644},
		"dist/dup/empty.txt":  {"", 0o644},
		"dist/dup/empty2.txt": {"", 0o644},
	}
	for p, f := range files {
		full := filepath.Join(pkg, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(f.content), f.mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(full, f.mode); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	res, err := Export(context.Background(), ExportOptions{PackageRoot: pkg, Output: filepath.Join(dir, "a")})
	if err != nil {
		t.Fatal(err)
	}
	res2, err := Export(context.Background(), ExportOptions{PackageRoot: pkg, Output: filepath.Join(dir, "b")})
	if err != nil {
		t.Fatal(err)
	}
	hs, body, raw := bootstrapEntries(t, res.Output, res.Manifest)
	_, _, raw2 := bootstrapEntries(t, res2.Output, res2.Manifest)
	if !bytes.Equal(raw, raw2) {
		t.Fatal("two exports of the same installation differ")
	}

	const pre = "node_modules/openclaw/"
	want := map[string]string{ // entry → link target ("" = regular file)
		"dist/dup/one.txt": "", "dist/dup/two.txt": "dist/dup/one.txt", "dist/dup/x/two.txt": "dist/dup/one.txt",
		"dist/dup/exec.txt": "", "dist/dup/exec2.txt": "dist/dup/exec.txt",
		"dist/dup/three.txt": "",
		long:                 "", "dist/dup/b.dat": "", "dist/dup/c.dat": "dist/dup/b.dat",
		"dist/dup/empty.txt": "", "dist/dup/empty2.txt": "",
	}
	pos := map[string]int{}
	var names []plannedFile
	for i, h := range hs {
		pos[h.Name] = i
		names = append(names, plannedFile{Arch: h.Name})
		if rel, _ := strings.CutPrefix(h.Name, pre); want[rel] == "" && h.Typeflag != tar.TypeReg {
			t.Errorf("%s: type %q, want a regular file", h.Name, h.Typeflag)
		}
	}
	for rel, target := range want {
		h := hs[pos[pre+rel]]
		switch {
		case target == "" && h.Typeflag != tar.TypeReg:
			t.Errorf("%s: type %q, want a regular file", rel, h.Typeflag)
		case target != "" && (h.Typeflag != tar.TypeLink || h.Linkname != pre+target || h.Size != 0):
			t.Errorf("%s: type %q link %q size %d, want a hard link to %s", rel, h.Typeflag, h.Linkname, h.Size, target)
		case target != "" && pos[pre+target] >= pos[pre+rel]:
			t.Errorf("%s links to %s, which comes after it", rel, target)
		}
	}
	sorted := append([]plannedFile(nil), names...)
	archiveOrder(sorted)
	for i := range sorted {
		if sorted[i].Arch != names[i].Arch {
			t.Fatalf("entry %d is %s, archive order wants %s", i, names[i].Arch, sorted[i].Arch)
		}
	}
	if links := len(hs) - len(body); links != 0 {
		t.Fatalf("%d duplicate names in the archive", links)
	}

	// Extraction gives every path its bytes; the copies share the inode.
	dest := t.TempDir()
	if _, err := archive.ExtractDir(bytes.NewReader(raw), dest, archive.ExtractOptions{Options: archive.Options{Size: int64(len(raw))}}); err != nil {
		t.Fatal(err)
	}
	for rel, f := range files {
		got, err := os.ReadFile(filepath.Join(dest, filepath.FromSlash(pre+rel)))
		if err != nil || string(got) != f.content {
			t.Errorf("%s: extracted %d bytes (%v), want %d", rel, len(got), err, len(f.content))
		}
	}
	st1, _ := os.Stat(filepath.Join(dest, pre+"dist/dup/one.txt"))
	st2, _ := os.Stat(filepath.Join(dest, pre+"dist/dup/x/two.txt"))
	if !os.SameFile(st1, st2) {
		t.Error("a copy was not extracted as a hard link")
	}
}
