package skilllint

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestSplitFrontmatter(t *testing.T) {
	cases := []struct {
		name, in            string
		present, terminated bool
		yaml, body          string
		bodyLine            int
	}{
		{"none", "# Title\nbody\n", false, false, "", "# Title\nbody\n", 1},
		{"basic", "---\nname: a\n---\nbody\n", true, true, "name: a\n", "body\n", 4},
		{"crlf", "---\r\nname: a\r\n---\r\nbody\r\n", true, true, "name: a\n", "body\r\n", 4},
		{"bom", "\ufeff---\nname: a\n---\n", true, true, "name: a\n", "", 4},
		{"trailing space on delimiters", "--- \nname: a\n---\t\nx", true, true, "name: a\n", "x", 4},
		{"unterminated", "---\nname: a\n", true, false, "", "---\nname: a\n", 1},
		{"only opener", "---", true, false, "", "---", 1},
		{"empty block", "---\n---\nbody", true, true, "", "body", 3},
		{"closing at EOF without newline", "---\na: 1\n---", true, true, "a: 1\n", "", 4},
		{"four dashes is not a delimiter", "----\na: 1\n---\n", false, false, "", "----\na: 1\n---\n", 1},
		{"empty input", "", false, false, "", "", 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := SplitFrontmatter([]byte(c.in))
			if s.Present != c.present || s.Terminated != c.terminated || s.YAML != c.yaml || s.Body != c.body || s.BodyLine != c.bodyLine {
				t.Fatalf("got %+v", s)
			}
		})
	}
}

func TestParseFrontmatter(t *testing.T) {
	good := "---\nname: a\ndescription: d\nmetadata:\n  x: [1, 2]\n---\n"
	fm, err := ParseFrontmatter(SplitFrontmatter([]byte(good)))
	if err != nil {
		t.Fatal(err)
	}
	if fm.Fields["name"] != "a" || len(fm.Keys) != 3 || fm.Keys[2].Name != "metadata" || fm.Keys[2].Line != 4 {
		t.Fatalf("got %+v", fm)
	}
	bad := map[string]string{
		"unterminated":     "---\nname: a\n",
		"list root":        "---\n- a\n- b\n---\n",
		"scalar root":      "---\njust text\n---\n",
		"duplicate":        "---\nname: a\nname: b\n---\n",
		"nested duplicate": "---\nmetadata:\n  k: 1\n  k: 2\n---\n",
		"dup in list map":  "---\nm:\n  - {a: 1, a: 2}\n---\n",
		"syntax":           "---\nname: [a\n---\n",
		"tab indent":       "---\nname: a\n\tdescription: b\n---\n",
		"complex key":      "---\n? [a, b]\n: 1\n---\n",
		"merge key":        "---\nbase: &b {x: 1}\nm:\n  <<: *b\n---\n",
		"second document":  "---\na: 1\n...\nb: 2\n---\n",
		"invalid utf8":     "---\nname: \xff\n---\n",
	}
	for name, in := range bad {
		if _, err := ParseFrontmatter(SplitFrontmatter([]byte(in))); err == nil {
			t.Errorf("%s: accepted %q", name, in)
		}
	}
	// An alias bomb ("billion laughs") is refused, not expanded.
	var bomb strings.Builder
	bomb.WriteString("---\nname: a\ndescription: d\nl0: &l0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 10; i++ {
		fmt.Fprintf(&bomb, "l%d: &l%d [", i, i)
		for k := 0; k < 10; k++ {
			fmt.Fprintf(&bomb, "*l%d, ", i-1)
		}
		bomb.WriteString("]\n")
	}
	bomb.WriteString("---\n")
	if _, err := ParseFrontmatter(SplitFrontmatter([]byte(bomb.String()))); err == nil || !strings.Contains(err.Error(), "alias") {
		t.Errorf("alias bomb: %v", err)
	}
	fe, _ := func() (*FrontmatterError, error) {
		_, err := ParseFrontmatter(SplitFrontmatter([]byte("---\nname: a\ndescription: x\nname: b\n---\n")))
		var e *FrontmatterError
		errors.As(err, &e)
		return e, err
	}()
	if fe == nil || fe.Line != 4 || !strings.Contains(fe.Msg, "first defined on line 2") {
		t.Fatalf("duplicate key error: %+v", fe)
	}
	// No block at all is not a parse error.
	if fm, err := ParseFrontmatter(SplitFrontmatter([]byte("# x"))); err != nil || fm.Fields != nil {
		t.Fatalf("no block: %+v %v", fm, err)
	}
}

func FuzzSplitFrontmatter(f *testing.F) {
	for _, s := range []string{"---\nname: a\ndescription: b\n---\nbody", "\ufeff---\r\na: 1\r\n---\r\n",
		"---\n", "", "---\n- a\n---\n", "---\na: 1\na: 2\n---\n", "---\n&a [*a]\n---\n", "no frontmatter"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		s := SplitFrontmatter(doc) // must never panic or fail
		if !s.Present && s.Body != strings.TrimPrefix(string(doc), "\ufeff") {
			t.Fatalf("no frontmatter but body changed")
		}
		if s.Terminated && !s.Present {
			t.Fatalf("terminated without present")
		}
		if !s.Terminated && s.YAML != "" {
			t.Fatalf("unterminated with YAML")
		}
		fm, err := ParseFrontmatter(s)
		if err == nil && s.Present && fm.Fields == nil {
			t.Fatalf("parsed block without fields")
		}
		if err != nil {
			if fe := (*FrontmatterError)(nil); !errors.As(err, &fe) {
				t.Fatalf("untyped error %T", err)
			}
		}
		_ = CheckSkillMD("a", doc, true)
		// The spec profile reads scalars as text and counts characters:
		// every finding it makes must be well formed.
		for _, f := range CheckSkillMDAs("a", doc, Options{Profile: ProfileSpec}) {
			if f.Rule == "" || f.Code == "" || f.Message == "" || (f.Severity != SeverityError && f.Severity != SeverityWarning) {
				t.Fatalf("malformed finding %+v", f)
			}
		}
	})
}
