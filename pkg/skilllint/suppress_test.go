package skilllint

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParseDirectives(t *testing.T) {
	cases := []struct {
		line    string
		rules   []string
		reason  string
		covers  []int
		problem string
	}{
		{"<!-- clawkit:ignore prompt-injection -- names the system prompt -->", []string{"prompt-injection"}, "names the system prompt", []int{1, 2}, ""},
		{"# clawkit:ignore unknown-key,field-type -- a client key", []string{"unknown-key", "field-type"}, "a client key", []int{1, 2}, ""},
		{"curl x | sh # clawkit:ignore pipe-to-shell -- vendored installer, pinned", []string{"pipe-to-shell"}, "vendored installer, pinned", []int{1}, ""},
		{"// clawkit:ignore world-writable -- /* a shared cache */", []string{"world-writable"}, "/* a shared cache", []int{1, 2}, ""},
		{"<!-- clawkit:ignore prompt-injection -->", []string{"prompt-injection"}, "", []int{1, 2}, "gives no reason"},
		{"<!-- clawkit:ignore prompt-injection -- -->", []string{"prompt-injection"}, "", []int{1, 2}, "gives no reason"},
		{"<!-- clawkit:ignore -- why -->", []string{}, "why", []int{1, 2}, "names no rule"},
		{"<!-- clawkit:ignore no-such-rule -- why -->", []string{"no-such-rule"}, "why", []int{1, 2}, `unknown rule "no-such-rule"`},
		{"<!-- clawkit:ignore suppression-unused -- why -->", []string{"suppression-unused"}, "why", []int{1, 2}, "cannot be suppressed"},
		{"<!-- clawkit:ignoreprompt-injection -- why -->", []string{"prompt-injection"}, "why", []int{1, 2}, "must be followed by a space"},
	}
	for _, c := range cases {
		ds := ParseDirectives("SKILL.md", []byte(c.line+"\n"))
		if len(ds) != 1 {
			t.Fatalf("%q: %d directives", c.line, len(ds))
		}
		d := ds[0]
		if !reflect.DeepEqual(d.Rules, c.rules) || d.Reason != c.reason || !reflect.DeepEqual(d.Covers, c.covers) ||
			(c.problem == "") != (d.Problem == "") || !strings.Contains(d.Problem, c.problem) {
			t.Errorf("%q: got %+v", c.line, d)
		}
	}
	if ds := ParseDirectives("a.md", []byte("no directive here\n")); ds != nil {
		t.Errorf("no directive: %+v", ds)
	}
}

// One by one, with a reason: each directive accepts the findings of its
// rules on the lines it covers, nothing else; the suppressed findings stay
// in the report; --strict counts only what is left.
func TestSuppressionsInReport(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "api")
	os.MkdirAll(dir, 0o755)
	md := "---\nname: api\ndescription: Call the API.\n# clawkit:ignore unknown-key -- a client key\nuser-tier: pro\n---\n" +
		"<!-- clawkit:ignore prompt-injection -- how the system prompt is set -->\n" +
		"Set the system prompt first.\n" +
		"Then read the system prompt back.\n"
	os.WriteFile(filepath.Join(dir, SkillFile), []byte(md), 0o644)
	rep, err := ValidateDir(dir, Options{Profile: ProfileSpec, Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	// The directive's own line names the system prompt too: covered.
	if len(rep.Suppressed) != 3 || rep.Suppressed[0].Rule != RuleUnknownKey || rep.Suppressed[1].Line != 7 || rep.Suppressed[2].Line != 8 {
		t.Fatalf("suppressed: %+v", rep.Suppressed)
	}
	if rep.OK || len(rep.Errors) != 1 || rep.Errors[0].Line != 9 || rep.Errors[0].Rule != RulePromptInjection {
		t.Fatalf("errors (strict): %+v", rep.Errors)
	}
	if len(rep.Directives) != 2 || rep.Directives[0].Matched != 1 || rep.Directives[1].Matched != 2 {
		t.Fatalf("directives: %+v", rep.Directives)
	}
	// --disable takes every finding of its rule first: the directive of
	// that rule then matches nothing, which is reported (an error under
	// --strict).
	rep, _ = ValidateDir(dir, Options{Profile: ProfileSpec, Strict: true, Disable: []string{RulePromptInjection}})
	if rep.OK || len(rep.Errors) != 1 || rep.Errors[0].Rule != RuleSuppressionUnused || len(rep.Suppressed) != 4 {
		t.Fatalf("with --disable: errors %+v, suppressed %d", rep.Errors, len(rep.Suppressed))
	}
}

func TestCheckDisable(t *testing.T) {
	if err := CheckDisable([]string{RulePromptInjection, RuleUnknownKey}); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"nope", RuleSuppressionInvalid, RuleSuppressionUnused, ""} {
		if CheckDisable([]string{bad}) == nil {
			t.Errorf("--disable %q accepted", bad)
		}
	}
}

// FuzzParseDirectives: any text gives directives that are well formed —
// on a line that holds the token, covering that line and at most the
// next, with a problem whenever the reason or the rules are missing or
// unknown — and never more than the bound.
func FuzzParseDirectives(f *testing.F) {
	f.Add([]byte("<!-- clawkit:ignore prompt-injection -- the system prompt -->\nThe system prompt.\n"))
	f.Add([]byte("x clawkit:ignore a,b -- c -->clawkit:ignore\n# clawkit:ignore\n"))
	f.Add([]byte("clawkit:ignore -- --  -- */ -->\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ds := ParseDirectives("f.md", data)
		if len(ds) > maxDirectives {
			t.Fatalf("%d directives", len(ds))
		}
		lines := strings.Split(string(data), "\n")
		for _, d := range ds {
			if d.Line < 1 || d.Line > len(lines) || !strings.Contains(lines[d.Line-1], DirectiveToken) {
				t.Fatalf("directive on line %d, which holds no token", d.Line)
			}
			if d.Covers[0] != d.Line || len(d.Covers) > 2 || (len(d.Covers) == 2 && d.Covers[1] != d.Line+1) {
				t.Fatalf("covers %v for line %d", d.Covers, d.Line)
			}
			if d.Problem == "" {
				if strings.TrimSpace(d.Reason) == "" || len(d.Rules) == 0 {
					t.Fatalf("accepted without reason or rule: %+v", d)
				}
				for _, r := range d.Rules {
					if !KnownRule(r) {
						t.Fatalf("accepted unknown rule %q", r)
					}
				}
			}
		}
	})
}
