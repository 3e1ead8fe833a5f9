package skilllint

import (
	"strings"
	"testing"

	"github.com/clawkit/clawkit/pkg/errs"
)

func TestNormalizeSkillFilePath(t *testing.T) {
	ok := []string{"SKILL.md", "references/notes.md", "scripts/run.sh", "assets/logo.png",
		"examples/a/b/c.txt", "templates/t.tmpl", "references/ü.md", "scripts/.hidden"}
	for _, p := range ok {
		got, err := NormalizeSkillFilePath(p)
		if err != nil || got != p {
			t.Errorf("NormalizeSkillFilePath(%q) = %q, %v; want accepted unchanged", p, got, err)
		}
	}
	bad := map[string]errs.Code{
		"":                                       "invalid_path",
		"../SKILL.md":                            "path_escape",
		"references/../SKILL.md":                 "path_escape",
		"references/..":                          "path_escape",
		"/etc/passwd":                            "path_escape",
		"/SKILL.md":                              "path_escape",
		`references\notes.md`:                    "invalid_path",
		`..\..\x`:                                "invalid_path",
		"references/a\x00b":                      "invalid_path",
		"references//a.md":                       "invalid_path",
		"references/a.md/":                       "invalid_path",
		"./SKILL.md":                             "invalid_path",
		"references/./a.md":                      "invalid_path",
		"notes.md":                               "invalid_path",
		"skill.md":                               "invalid_path",
		"SKILL.md/x":                             "invalid_path",
		"references":                             "invalid_path",
		"bin/tool":                               "invalid_path",
		"references\u2215a.md":                   "invalid_path", // division slash
		"references/\u2024\u2024/x":              "invalid_path", // one-dot leaders
		"references/\uff0e\uff0e/x":              "invalid_path", // fullwidth full stops
		"references\uff0fa.md":                   "invalid_path", // fullwidth solidus
		"references/a\u202e.md":                  "invalid_path", // RLO
		"references/a\u200b.md":                  "invalid_path", // zero width space
		"references/a\tb.md":                     "invalid_path",
		"references/\xff.md":                     "invalid_path",
		"references/" + strings.Repeat("a", 256): "invalid_path",
	}
	for p, code := range bad {
		_, err := NormalizeSkillFilePath(p)
		if err == nil {
			t.Errorf("NormalizeSkillFilePath(%q) accepted; want %s", p, code)
			continue
		}
		if got := errs.CodeOf(err); got != code {
			t.Errorf("NormalizeSkillFilePath(%q) code %s, want %s (%v)", p, got, code, err)
		}
		if e := errs.As(err); e == nil || e.Hint == "" {
			t.Errorf("NormalizeSkillFilePath(%q): no hint", p)
		}
	}
}

func TestValidName(t *testing.T) {
	for _, n := range []string{"a", "pdf", "pdf-tools", "a1", "1a", "a-b-c", strings.Repeat("a", 64)} {
		if !ValidName(n) {
			t.Errorf("ValidName(%q) = false", n)
		}
	}
	for _, n := range []string{"", "-a", "a-", "a--b", "A", "a_b", "a.b", "a b", strings.Repeat("a", 65), "é"} {
		if ValidName(n) {
			t.Errorf("ValidName(%q) = true", n)
		}
	}
}

func TestCheckSkillName(t *testing.T) {
	cases := map[string]string{
		"pdf-tools":              "",
		"..":                     "path_escape",
		".":                      "path_escape",
		"":                       "path_escape",
		"a/b":                    "path_escape",
		"../x":                   "path_escape",
		`a\b`:                    "path_escape",
		"a\x00":                  "path_escape",
		"a\u2215b":               "path_escape",
		"Pdf":                    "", // naming rules belong to the plugin (docs/skills.md)
		"a--b":                   "",
		"données":                "",
		".hidden":                "invalid_path",
		strings.Repeat("a", 256): "invalid_path",
		"a\xff":                  "invalid_path",
	}
	for n, code := range cases {
		err := CheckSkillName(n)
		if code == "" {
			if err != nil {
				t.Errorf("CheckSkillName(%q) = %v", n, err)
			}
			continue
		}
		if got := errs.CodeOf(err); err == nil || string(got) != code {
			t.Errorf("CheckSkillName(%q) = %v (%s); want %s", n, err, got, code)
		}
	}
}

func FuzzNormalizeSkillFilePath(f *testing.F) {
	for _, s := range []string{"SKILL.md", "references/a.md", "../x", "/abs", `a\b`, "a//b", "./x",
		"scripts/\u2024/x", "references/a\x00", "assets/\u202e"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		got, err := NormalizeSkillFilePath(p)
		if err != nil {
			if c := errs.CodeOf(err); c != "invalid_path" && c != "path_escape" {
				t.Fatalf("unexpected code %s", c)
			}
			return
		}
		// Whatever is accepted is canonical, relative and stays inside.
		if got != p {
			t.Fatalf("accepted path rewritten: %q -> %q", p, got)
		}
		if strings.HasPrefix(p, "/") || strings.Contains(p, `\`) || strings.ContainsRune(p, 0) {
			t.Fatalf("accepted unsafe path %q", p)
		}
		for _, seg := range strings.Split(p, "/") {
			if seg == "" || seg == "." || seg == ".." {
				t.Fatalf("accepted bad segment in %q", p)
			}
		}
		if p != SkillFile && !IsSupportDir(strings.SplitN(p, "/", 2)[0]) {
			t.Fatalf("accepted %q outside the support folders", p)
		}
	})
}
