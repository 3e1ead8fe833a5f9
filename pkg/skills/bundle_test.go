package skills

import (
	"archive/tar"
	"bytes"
	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/skilllint"
	"reflect"
	"testing"
	"testing/iotest"
)

func sampleBundle(t testing.TB) *BundleResult {
	t.Helper()
	b, err := CheckBundle("pdf", []SourceFile{
		{Path: "scripts/run.sh", Content: []byte("#!/bin/sh\necho run\n"), Executable: true},
		{Path: skilllint.SkillFile, Content: []byte("---\nname: pdf\ndescription: Fill PDF forms.\n---\nBody.\n")},
		{Path: "references/api.md", Content: []byte("# API\n")},
	}, false)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The bundle is deterministic (the order files are given in does not
// matter) and reads back to the same files.
func TestBundleRoundTrip(t *testing.T) {
	b := sampleBundle(t)
	one, sum1, err := BundleBytes(b)
	if err != nil {
		t.Fatal(err)
	}
	rev := append([]SourceFile(nil), b.Files...)
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	b2, err := CheckBundle("pdf", rev, false)
	if err != nil {
		t.Fatal(err)
	}
	two, sum2, _ := BundleBytes(b2)
	if !bytes.Equal(one, two) || sum1 != sum2 {
		t.Fatal("the same files in another order gave another bundle")
	}
	skill, tree, err := ReadBundle(bytes.NewReader(one))
	if err != nil {
		t.Fatal(err)
	}
	if skill != "pdf" || len(tree.Disallowed) != 0 || !reflect.DeepEqual(tree.Files, b.Files) {
		t.Fatalf("read back %q %+v; want %+v", skill, tree, b.Files)
	}
	back, err := CheckBundle(skill, tree.Files, false)
	if err != nil {
		t.Fatal(err)
	}
	if back.Revision != b.Revision {
		t.Fatalf("revision %v after the round trip; want %v", back.Revision, b.Revision)
	}
}

// CheckBundle refuses what skill write would refuse.
func TestCheckBundleRefuses(t *testing.T) {
	for name, files := range map[string][]SourceFile{
		"no SKILL.md":  {{Path: "references/a.md", Content: []byte("a")}},
		"bad path":     {{Path: skilllint.SkillFile, Content: []byte("---\nname: pdf\ndescription: d\n---\n")}, {Path: "LICENSE", Content: []byte("x")}},
		"wrong name":   {{Path: skilllint.SkillFile, Content: []byte("---\nname: other\ndescription: d\n---\n")}},
		"unsafe":       {{Path: skilllint.SkillFile, Content: []byte("---\nname: pdf\ndescription: d\n---\nrm -rf /\n")}},
		"twice":        {{Path: skilllint.SkillFile, Content: []byte("---\nname: pdf\ndescription: d\n---\n")}, {Path: skilllint.SkillFile, Content: []byte("x")}},
		"file too big": {{Path: skilllint.SkillFile, Content: []byte("---\nname: pdf\ndescription: d\n---\n")}, {Path: "assets/a", Content: make([]byte, skilllint.MaxSupportBytes+1)}},
	} {
		if _, err := CheckBundle("pdf", files, false); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func tarOf(t testing.TB, hs ...*tar.Header) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range hs {
		if h.Typeflag == tar.TypeReg {
			h.Size = int64(len(h.Linkname))
		}
		data := h.Linkname
		if h.Typeflag == tar.TypeReg {
			h.Linkname = ""
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			tw.Write([]byte(data))
		}
	}
	tw.Close()
	return buf.Bytes()
}

func TestReadBundleRefuses(t *testing.T) {
	reg := func(name, data string) *tar.Header {
		return &tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Linkname: data}
	}
	cases := map[string]struct {
		data []byte
		code errs.Code
	}{
		"symlink":    {tarOf(t, reg("pdf/SKILL.md", "x"), &tar.Header{Typeflag: tar.TypeSymlink, Name: "pdf/references/a", Linkname: "/etc/passwd"}), errs.CodePathEscape},
		"hard link":  {tarOf(t, reg("pdf/SKILL.md", "x"), &tar.Header{Typeflag: tar.TypeLink, Name: "pdf/references/a", Linkname: "pdf/SKILL.md"}), errs.CodePathEscape},
		"dotdot":     {tarOf(t, reg("pdf/../x", "x")), errs.CodePathEscape},
		"dotdot dir": {tarOf(t, reg("pdf/SKILL.md", "x"), &tar.Header{Typeflag: tar.TypeDir, Name: "pdf/references/../../"}), errs.CodePathEscape},
		"two skills": {tarOf(t, reg("pdf/SKILL.md", "x"), reg("doc/SKILL.md", "x")), CodeInvalidBundle},
		"twice":      {tarOf(t, reg("pdf/SKILL.md", "x"), reg("pdf/SKILL.md", "y")), CodeInvalidBundle},
		"fifo":       {tarOf(t, reg("pdf/SKILL.md", "x"), &tar.Header{Typeflag: tar.TypeFifo, Name: "pdf/references/p"}), "not_regular_file"},
		"empty":      {tarOf(t), CodeInvalidBundle},
		"not a tar":  {[]byte("hello, this is not a tar archive at all"), CodeInvalidBundle},
		"too big":    {tarOf(t, reg("pdf/SKILL.md", "x"), reg("pdf/assets/big", string(make([]byte, skilllint.MaxSupportBytes+1)))), errs.CodeTooLarge},
	}
	for name, c := range cases {
		_, _, err := ReadBundle(bytes.NewReader(c.data))
		if got := errs.CodeOf(err); got != c.code {
			t.Errorf("%s: %v (code %q); want %s", name, err, got, c.code)
		}
	}
	// Too many files: 257 below assets/.
	hs := []*tar.Header{reg("pdf/SKILL.md", "x")}
	for i := 0; i < skilllint.MaxFiles; i++ {
		hs = append(hs, reg("pdf/assets/f"+string(rune('a'+i%26))+string(rune('a'+i/26)), "x"))
	}
	if _, _, err := ReadBundle(bytes.NewReader(tarOf(t, hs...))); errs.CodeOf(err) != errs.CodeTooLarge {
		t.Errorf("257 files: %v", err)
	}
}

// A bundle cut short anywhere before the end of its end-of-archive marker
// is refused, never read as the shorter archive it looks like: cut at a
// block boundary (a later entry missing), inside an entry's padding,
// inside its data, inside a header, and after one of the two zero blocks.
func TestReadBundleTruncated(t *testing.T) {
	good, _, err := BundleBytes(sampleBundle(t))
	if err != nil {
		t.Fatal(err)
	}
	end := len(good) - 1024 // where the two zero blocks start (tar.Writer pads no further)
	cuts := []int{0, 1, 511, 512, 513, 600, 1023, 1024, 1027, 1536, end - 1, end, end + 1, end + 512, end + 1023}
	for _, n := range cuts {
		_, _, err := ReadBundle(bytes.NewReader(good[:n]))
		if errs.CodeOf(err) != CodeInvalidBundle {
			t.Errorf("cut at %d of %d bytes: %v (code %q); want %s", n, len(good), err, errs.CodeOf(err), CodeInvalidBundle)
		}
	}
	// Every cut, byte by byte: refused or (past the marker) the same bundle.
	for n := 0; n < len(good); n++ {
		if _, _, err := ReadBundle(bytes.NewReader(good[:n])); err == nil {
			t.Fatalf("cut at %d of %d bytes accepted", n, len(good))
		}
	}
	// Bytes after the marker (tar -cf pads to 10 KiB records) are fine.
	padded := append(append([]byte(nil), good...), make([]byte, 8192)...)
	if _, _, err := ReadBundle(bytes.NewReader(padded)); err != nil {
		t.Fatalf("a bundle padded after its marker: %v", err)
	}
	// A reader that hands over the last bytes together with io.EOF.
	if _, _, err := ReadBundle(iotest.DataErrReader(bytes.NewReader(good))); err != nil {
		t.Fatalf("whole bundle, data with EOF: %v", err)
	}
	if _, _, err := ReadBundle(iotest.DataErrReader(bytes.NewReader(good[:1024]))); errs.CodeOf(err) != CodeInvalidBundle {
		t.Fatalf("cut bundle, data with EOF: %v", err)
	}
	// One byte at a time, too.
	if _, _, err := ReadBundle(iotest.OneByteReader(bytes.NewReader(good))); err != nil {
		t.Fatalf("whole bundle, one byte at a time: %v", err)
	}
}

// FuzzReadBundle feeds arbitrary bytes to the bundle reader: it never
// panics, and whatever it accepts is within the skill limits, with
// normalized paths, once each. Truncation: the input cut at any point is
// refused, or (when the cut lies after the end-of-archive marker) reads
// as exactly the same bundle; a cut never reads as a smaller skill.
func FuzzReadBundle(f *testing.F) {
	good, _, _ := BundleBytes(sampleBundle(f))
	f.Add(good, uint(len(good)))
	f.Add(good[:700], uint(700))
	f.Add([]byte{}, uint(0))
	// The cuts of issue 31: a block boundary, padding, a header, a zero block.
	for _, n := range []int{1024, 1027, 1127, 1535, 1536, 2048, len(good) - 1024, len(good) - 512} {
		f.Add(good, uint(n))
	}
	f.Fuzz(func(t *testing.T, data []byte, cut uint) {
		skill, tree, err := ReadBundle(bytes.NewReader(data))
		if n := int(cut % uint(len(data)+1)); n < len(data) {
			pskill, ptree, perr := ReadBundle(bytes.NewReader(data[:n]))
			if perr == nil && (err != nil || pskill != skill || !reflect.DeepEqual(ptree, tree)) {
				t.Fatalf("the first %d of %d bytes read as a bundle (%q, %d files) that the whole input is not (%v)", n, len(data), pskill, len(ptree.Files), err)
			}
		}
		if err != nil {
			return
		}
		if skilllint.CheckSkillName(skill) != nil {
			t.Fatalf("accepted skill name %q", skill)
		}
		if len(tree.Files) > skilllint.MaxFiles {
			t.Fatalf("%d files accepted", len(tree.Files))
		}
		seen := map[string]bool{}
		var total int
		for _, f := range tree.Files {
			if p, err := skilllint.NormalizeSkillFilePath(f.Path); err != nil || p != f.Path || seen[p] {
				t.Fatalf("accepted path %q (%v, twice %v)", f.Path, err, seen[p])
			}
			seen[f.Path] = true
			total += len(f.Content)
		}
		if total > skilllint.MaxSkillBytes {
			t.Fatalf("%d bytes accepted", total)
		}
	})
}
