package skills

import (
	"archive/tar"
	"bytes"
	"reflect"
	"testing"

	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/skilllint"
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
			if _, err := tw.Write([]byte(data)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
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

// FuzzReadBundle feeds arbitrary bytes to the bundle reader: it never
// panics, and whatever it accepts is within the skill limits, with
// normalized paths, once each.
func FuzzReadBundle(f *testing.F) {
	good, _, _ := BundleBytes(sampleBundle(f))
	f.Add(good)
	f.Add(good[:700])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		skill, tree, err := ReadBundle(bytes.NewReader(data))
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
