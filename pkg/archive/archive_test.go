package archive_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clawkit/clawkit/pkg/archive"
	"github.com/clawkit/clawkit/pkg/archive/archivetest"
	"github.com/clawkit/clawkit/pkg/errs"
)

func walkAll(t *testing.T, data []byte, opt archive.Options) ([]archive.Entry, map[string][]byte, archive.Stats, error) {
	t.Helper()
	var ents []archive.Entry
	bodies := map[string][]byte{}
	st, err := archive.Walk(bytes.NewReader(data), opt, func(e *archive.Entry, body io.Reader) error {
		ents = append(ents, *e)
		if body != nil {
			b, err := io.ReadAll(body)
			if err != nil {
				return err
			}
			bodies[e.Path] = b
		}
		return nil
	})
	return ents, bodies, st, err
}

func TestWalkGood(t *testing.T) {
	data := archivetest.Good()
	ents, bodies, st, err := walkAll(t, data, archive.Options{Size: int64(len(data))})
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 7 || st.Entries != 7 || st.Files != 3 {
		t.Fatalf("entries=%d stats=%+v", len(ents), st)
	}
	if ents[0].Path != "node_modules" || ents[0].Type != archive.TypeDir {
		t.Fatalf("dir trailing slash not normalised: %+v", ents[0])
	}
	if got := string(bodies["node_modules/openclaw/package.json"]); !strings.Contains(got, `"openclaw"`) {
		t.Fatalf("body = %q", got)
	}
	if ents[4].Mode != 0o755 || ents[4].RawMode != 0o755 {
		t.Fatalf("mode = %v raw %o", ents[4].Mode, ents[4].RawMode)
	}
	if st.SHA256 != sha256.Sum256(data) || st.CompressedBytes != int64(len(data)) {
		t.Fatalf("stats digest/size wrong: %+v", st)
	}
	var want int64
	for _, b := range bodies {
		want += int64(len(b))
	}
	if st.ExpandedBytes != 0 && st.ExpandedBytes != want {
		t.Fatalf("expanded = %d, want %d", st.ExpandedBytes, want)
	}
}

func TestWalkCallbackMayLeaveBodyUnread(t *testing.T) {
	data := archivetest.Good()
	n := 0
	_, err := archive.Walk(bytes.NewReader(data), archive.Options{}, func(e *archive.Entry, body io.Reader) error {
		n++
		return nil
	})
	if err != nil || n != 7 {
		t.Fatalf("n=%d err=%v", n, err)
	}
}

func TestWalkCallbackErrorPassesThrough(t *testing.T) {
	sentinel := errors.New("stop here")
	_, err := archive.Walk(bytes.NewReader(archivetest.Good()), archive.Options{}, func(e *archive.Entry, body io.Reader) error {
		return sentinel
	})
	if !errors.Is(err, sentinel) || errors.Is(err, archive.ErrUnsafe) {
		t.Fatalf("err = %v", err)
	}
}

func TestHostileRefused(t *testing.T) {
	for _, kind := range archivetest.Kinds() {
		t.Run(kind, func(t *testing.T) {
			data := archivetest.Hostile(kind)
			for _, size := range []int64{int64(len(data)), 0} {
				var seen []string
				_, err := archive.Walk(bytes.NewReader(data), archive.Options{Size: size}, func(e *archive.Entry, body io.Reader) error {
					seen = append(seen, e.Path)
					if body != nil {
						_, err := io.Copy(io.Discard, body)
						return err
					}
					return nil
				})
				if err == nil {
					t.Fatalf("size=%d: accepted; entries %q", size, seen)
				}
				if !errors.Is(err, archive.ErrUnsafe) {
					t.Fatalf("size=%d: error does not wrap ErrUnsafe: %v", size, err)
				}
				if got, want := errs.CodeOf(err), archivetest.HostileKinds[kind]; got != want {
					t.Fatalf("size=%d: code %s, want %s (%v)", size, got, want, err)
				}
				if errs.KindOf(err) != errs.KindFailed || errs.As(err).Hint == "" {
					t.Fatalf("want a failed error with a hint: %#v", errs.As(err))
				}
				for _, p := range seen {
					if strings.Contains(p, "evil") || strings.Contains(p, "..") || strings.HasPrefix(p, "/") {
						t.Fatalf("offending entry %q reached the callback", p)
					}
				}
			}
		})
	}
}

func TestLimits(t *testing.T) {
	many := make([]archivetest.Entry, 0, 12)
	for i := range 12 {
		many = append(many, archivetest.Entry{Name: "f" + string(rune('a'+i)), Body: []byte("x")})
	}
	cases := []struct {
		name string
		data []byte
		lim  archive.Limits
		code errs.Code
	}{
		{"entries", archivetest.Build(many), archive.Limits{MaxEntries: 10}, archive.CodeTooManyEntries},
		{"expanded", archivetest.Build([]archivetest.Entry{{Name: "a", Body: archivetest.Text(1, 5000)}}), archive.Limits{MaxExpandedBytes: 4096}, archive.CodeExpanded},
		{"archive-size", archivetest.Build([]archivetest.Entry{{Name: "a", Body: archivetest.Text(1, 5000)}}), archive.Limits{MaxArchiveBytes: 100}, errs.CodeArchiveTooLarge},
		{"path", archivetest.Build([]archivetest.Entry{{Name: strings.Repeat("a", 40), Body: []byte("x")}}), archive.Limits{MaxPathBytes: 32}, archive.CodeArchiveInvalidPath},
		{"ratio", archivetest.Build([]archivetest.Entry{{Name: "a", Body: archivetest.Text(1, 50000)}}), archive.Limits{MaxRatio: 2}, archive.CodeRatio},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, size := range []int64{int64(len(c.data)), 0} {
				_, _, _, err := walkAll(t, c.data, archive.Options{Limits: c.lim, Size: size})
				if errs.CodeOf(err) != c.code {
					t.Fatalf("size=%d: code %s, want %s (%v)", size, errs.CodeOf(err), c.code, err)
				}
			}
			// The same archive passes under the default limits.
			if _, _, _, err := walkAll(t, c.data, archive.Options{Size: int64(len(c.data))}); err != nil {
				t.Fatalf("default limits refused: %v", err)
			}
		})
	}
}

func TestPathAtLimitPasses(t *testing.T) {
	// exactly 1024 bytes in 64 segments (the depth limit)
	name := strings.Repeat(strings.Repeat("a", 15)+"/", 63) + strings.Repeat("b", 1024-16*63)
	if len(name) != 1024 {
		t.Fatal(len(name))
	}
	data := archivetest.Build([]archivetest.Entry{{Name: name, Body: []byte("x")}})
	if _, _, _, err := walkAll(t, data, archive.Options{}); err != nil {
		t.Fatal(err)
	}
	data = archivetest.Build([]archivetest.Entry{{Name: name + "d", Body: []byte("x")}})
	if _, _, _, err := walkAll(t, data, archive.Options{}); errs.CodeOf(err) != archive.CodeArchiveInvalidPath {
		t.Fatalf("1025-byte path: %v", err)
	}
}

func TestSizeMismatchRefused(t *testing.T) {
	data := archivetest.Good()
	_, _, _, err := walkAll(t, data, archive.Options{Size: int64(len(data)) + 1})
	if errs.CodeOf(err) != archive.CodeCorrupt {
		t.Fatalf("err = %v", err)
	}
	// Garbage after the gzip stream.
	_, _, _, err = walkAll(t, append(append([]byte{}, data...), "junk"...), archive.Options{})
	if err == nil {
		t.Fatal("trailing junk accepted")
	}
}

func TestExplicitDirAfterFiles(t *testing.T) {
	data := archivetest.Build([]archivetest.Entry{
		{Name: "a/b.txt", Body: []byte("b")},
		{Name: "a/", Type: tar.TypeDir, Mode: 0o750},
	})
	if _, _, _, err := walkAll(t, data, archive.Options{}); err != nil {
		t.Fatal(err)
	}
	// ...but only once.
	data = archivetest.Build([]archivetest.Entry{
		{Name: "a/", Type: tar.TypeDir},
		{Name: "a/", Type: tar.TypeDir},
	})
	if _, _, _, err := walkAll(t, data, archive.Options{}); errs.CodeOf(err) != archive.CodeDuplicate {
		t.Fatalf("duplicate dir: %v", err)
	}
}

func TestExtractDir(t *testing.T) {
	dest := t.TempDir()
	data := archivetest.Good()
	var sums = map[string][32]byte{}
	st, err := archive.ExtractDir(bytes.NewReader(data), dest, archive.ExtractOptions{
		Options:   archive.Options{Size: int64(len(data))},
		HashFiles: true,
		OnEntry: func(e *archive.Entry, sum [32]byte) error {
			sums[e.Path] = sum
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if st.Files != 3 {
		t.Fatalf("stats %+v", st)
	}
	pj := filepath.Join(dest, "node_modules", "openclaw", "package.json")
	b, err := os.ReadFile(pj)
	if err != nil || sha256.Sum256(b) != sums["node_modules/openclaw/package.json"] {
		t.Fatalf("package.json: %v / hash mismatch", err)
	}
	target, err := os.Readlink(filepath.Join(dest, "node_modules", ".bin", "openclaw"))
	if err != nil || target != "../openclaw/bin.js" {
		t.Fatalf("symlink: %q %v", target, err)
	}
	a, _ := os.Stat(filepath.Join(dest, "node_modules", "openclaw", "bin.js"))
	c, _ := os.Stat(filepath.Join(dest, "node_modules", "openclaw", "copy.js"))
	if !os.SameFile(a, c) {
		t.Fatal("hard link not linked")
	}
	if a.Mode().Perm()&0o100 == 0 {
		t.Fatalf("executable bit lost: %v", a.Mode())
	}
	// Not empty any more: a second extraction is refused.
	if _, err := archive.ExtractDir(bytes.NewReader(data), dest, archive.ExtractOptions{}); errs.CodeOf(err) != "extract_dest" {
		t.Fatalf("non-empty dest: %v", err)
	}
}

// Modes from an archive never make anything writable by group or others,
// nor setuid, setgid or sticky: folders follow the files' rule (issue 31,
// item 5: a 0777 or sticky folder in the archive became one on disk).
func TestExtractModesAtMost0755(t *testing.T) {
	ents := []archivetest.Entry{}
	for _, m := range []int64{0o777, 0o1777, 0o2775, 0o6755, 0o4777, 0o700, 0o500} {
		d := fmt.Sprintf("d%o/", m)
		ents = append(ents,
			archivetest.Entry{Name: d, Type: tar.TypeDir, Mode: m},
			archivetest.Entry{Name: d + "f", Mode: m, Body: []byte("x")},
		)
	}
	// A folder made implicitly first, then given a mode by its entry.
	ents = append(ents,
		archivetest.Entry{Name: "late/f", Mode: 0o666, Body: []byte("y")},
		archivetest.Entry{Name: "late/", Type: tar.TypeDir, Mode: 0o777},
	)
	data := archivetest.Build(ents)
	dest := t.TempDir()
	if _, err := archive.ExtractDir(bytes.NewReader(data), dest, archive.ExtractOptions{Options: archive.Options{Size: int64(len(data))}}); err != nil {
		t.Fatal(err)
	}
	n := 0
	if err := filepath.WalkDir(dest, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dest {
			return err
		}
		st, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		n++
		if m := st.Mode(); m&(fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky) != 0 || m.Perm()&^archive.MaxMode != 0 {
			t.Errorf("%s has mode %v, more than %v", p, m, archive.MaxMode)
		}
		if st.Mode().Perm()&0o700 != 0o700 && st.IsDir() || st.Mode().Perm()&0o600 != 0o600 {
			t.Errorf("%s has mode %v: the owner lost read/write", p, st.Mode())
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if n != 16 {
		t.Fatalf("%d entries extracted, want 16", n)
	}
}

func TestExtractHostileWritesNothingOutside(t *testing.T) {
	for _, kind := range archivetest.Kinds() {
		t.Run(kind, func(t *testing.T) {
			parent := t.TempDir()
			dest := filepath.Join(parent, "dest")
			if err := os.Mkdir(dest, 0o755); err != nil {
				t.Fatal(err)
			}
			data := archivetest.Hostile(kind)
			_, err := archive.ExtractDir(bytes.NewReader(data), dest, archive.ExtractOptions{Options: archive.Options{Size: int64(len(data))}})
			if err == nil {
				t.Fatal("accepted")
			}
			ents, _ := os.ReadDir(parent)
			if len(ents) != 1 {
				t.Fatalf("something was written beside dest: %v", ents)
			}
			werr := filepath.WalkDir(dest, func(p string, d os.DirEntry, err error) error {
				if d != nil && strings.Contains(d.Name(), "evil") {
					t.Errorf("offending file written: %s", p)
				}
				return nil
			})
			if werr != nil {
				t.Fatal(werr)
			}
		})
	}
}

func TestSparseRefused(t *testing.T) {
	// A PAX extended header carrying GNU sparse 1.0 records (as GNU tar
	// --sparse --format=pax writes), built by hand: archive/tar will not
	// write these records itself.
	rec := func(k, v string) string {
		l := len(k) + len(v) + 3
		for n := len(fmt.Sprint(l)); ; n++ {
			if tot := len(k) + len(v) + 3 + n; len(fmt.Sprint(tot)) == n {
				return fmt.Sprintf("%d %s=%s\n", tot, k, v)
			}
		}
	}
	pax := rec("GNU.sparse.major", "1") + rec("GNU.sparse.minor", "0") + rec("GNU.sparse.name", "big.img") + rec("GNU.sparse.realsize", "1048576")
	var raw bytes.Buffer
	tw := tar.NewWriter(&raw)
	if err := tw.WriteHeader(&tar.Header{Name: "PaxHeaders/big.img", Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(pax)), Format: tar.FormatUSTAR}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write([]byte(pax)); err != nil {
		t.Fatal(err)
	}
	if err := tw.WriteHeader(&tar.Header{Name: "big.img", Typeflag: tar.TypeReg, Mode: 0o644, Size: 512, Format: tar.FormatUSTAR}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write(append([]byte("1\n0\n1\n"), make([]byte, 506)...)); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	b := raw.Bytes()
	b[156] = 'x' // the first header becomes a PAX extended header
	copy(b[148:156], "        ")
	sum := 0
	for _, c := range b[:512] {
		sum += int(c)
	}
	copy(b[148:156], fmt.Sprintf("%06o\x00 ", sum))
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	_, _, _, err := walkAll(t, z.Bytes(), archive.Options{})
	if errs.CodeOf(err) != archive.CodeUnsupported || !strings.Contains(err.Error(), "sparse file") {
		t.Fatalf("err = %v", err)
	}
	// Old GNU sparse type flag 'S'.
	data := archivetest.Build([]archivetest.Entry{{Name: "s", Type: tar.TypeGNUSparse}})
	if _, _, _, err := walkAll(t, data, archive.Options{}); err == nil {
		t.Fatal("GNU sparse accepted")
	}
}

func TestDepthLimit(t *testing.T) {
	at := strings.Repeat("d/", 63) + "x.js" // 64 segments
	if _, _, _, err := walkAll(t, archivetest.Build([]archivetest.Entry{{Name: at, Body: []byte("x")}}), archive.Options{}); err != nil {
		t.Fatalf("64 segments refused: %v", err)
	}
	over := strings.Repeat("d/", 64) + "x.js"
	_, _, _, err := walkAll(t, archivetest.Build([]archivetest.Entry{{Name: over, Body: []byte("x")}}), archive.Options{})
	if errs.CodeOf(err) != archive.CodeArchiveInvalidPath || !strings.Contains(err.Error(), "65 folders deep") {
		t.Fatalf("65 segments: %v", err)
	}
}

// TestExtractDirParallel: many small files (sharing buffers), files larger
// than one buffer (streamed in pieces), links and hard links, extracted by
// several writers: every file has its bytes, every entry is reported once
// with its position and content digest.
func TestExtractDirParallel(t *testing.T) {
	var ents []archivetest.Entry
	want := map[string][]byte{}
	for i := range 600 {
		name := fmt.Sprintf("node_modules/p%02d/f%04d.js", i%37, i)
		size := 1 + (i*7919)%20000
		if i%100 == 7 {
			size = (3 << 20) + i // several buffers
		}
		b := archivetest.Text(uint64(i), size)
		ents = append(ents, archivetest.Entry{Name: name, Body: b})
		want[name] = b
	}
	ents = append(ents,
		archivetest.Entry{Name: "node_modules/p00/link.js", Type: tar.TypeSymlink, Linkname: "f0000.js"},
		archivetest.Entry{Name: "node_modules/p01/hard.js", Type: tar.TypeLink, Linkname: "node_modules/p07/f0007.js"},
	)
	want["node_modules/p01/hard.js"] = want["node_modules/p07/f0007.js"]
	data := archivetest.Build(ents)
	for _, workers := range []int{1, 4} {
		dest := t.TempDir()
		seen := map[int]string{}
		sums := map[string][32]byte{}
		st, err := archive.ExtractDir(bytes.NewReader(data), dest, archive.ExtractOptions{
			Options: archive.Options{Size: int64(len(data))}, HashFiles: true, Workers: workers,
			OnEntry: func(e *archive.Entry, sum [32]byte) error {
				if _, dup := seen[e.Index]; dup {
					t.Errorf("entry %d reported twice", e.Index)
				}
				seen[e.Index] = e.Path
				sums[e.Path] = sum
				return nil
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		if st.Entries != len(ents) || len(seen) != len(ents) {
			t.Fatalf("workers=%d: %d entries, %d reported, want %d", workers, st.Entries, len(seen), len(ents))
		}
		for i, e := range ents {
			if seen[i] != e.Name {
				t.Fatalf("entry %d is %q, reported as %q", i, e.Name, seen[i])
			}
		}
		for name, b := range want {
			got, err := os.ReadFile(filepath.Join(dest, name))
			if err != nil || !bytes.Equal(got, b) {
				t.Fatalf("workers=%d: %s differs (%v)", workers, name, err)
			}
			if name != "node_modules/p01/hard.js" && sums[name] != sha256.Sum256(b) {
				t.Fatalf("workers=%d: digest of %s", workers, name)
			}
		}
	}
}

// TestExtractDirStopsCleanly: a refusal or a truncation while large files
// are streaming to the writers ends the extraction with that error (no
// deadlock, no file written through), whatever the number of writers.
func TestExtractDirStopsCleanly(t *testing.T) {
	big := archivetest.Text(1, 5<<20)
	cases := map[string][]byte{
		"refusal-after-big": archivetest.Build([]archivetest.Entry{{Name: "a/big.bin", Body: big}, {Name: "a/big2.bin", Body: big}, {Name: "../evil", Body: []byte("x")}}),
		"truncated-big":     truncatedTar(archivetest.Build([]archivetest.Entry{{Name: "a/big.bin", Body: big}}), 2<<20),
	}
	for name, data := range cases {
		for _, workers := range []int{1, 3} {
			dest := t.TempDir()
			_, err := archive.ExtractDir(bytes.NewReader(data), dest, archive.ExtractOptions{Options: archive.Options{Size: int64(len(data))}, HashFiles: true, Workers: workers})
			if !errors.Is(err, archive.ErrUnsafe) {
				t.Fatalf("%s workers=%d: err = %v", name, workers, err)
			}
		}
	}
	// The caller's Check refuses before anything is created for the entry.
	data := archivetest.Build([]archivetest.Entry{{Name: "a/ok.js", Body: []byte("x")}, {Name: "b/no.js", Body: []byte("y")}})
	dest := t.TempDir()
	stop := errors.New("stop")
	_, err := archive.ExtractDir(bytes.NewReader(data), dest, archive.ExtractOptions{Check: func(e *archive.Entry) error {
		if e.Path == "b/no.js" {
			return stop
		}
		return nil
	}})
	if !errors.Is(err, stop) {
		t.Fatalf("err = %v", err)
	}
	if _, err := os.Lstat(filepath.Join(dest, "b")); err == nil {
		t.Fatal("the refused entry's folder was created")
	}
}

// truncatedTar re-compresses the first n bytes of the tar inside data.
func truncatedTar(data []byte, n int) []byte {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		panic(err)
	}
	raw, _ := io.ReadAll(zr)
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	if _, err := zw.Write(raw[:n]); err != nil {
		panic(err)
	}
	if err := zw.Close(); err != nil {
		panic(err)
	}
	return z.Bytes()
}
