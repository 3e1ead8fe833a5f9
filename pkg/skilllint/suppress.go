package skilllint

import (
	"fmt"
	"sort"
	"strings"

	"github.com/clawkit/clawkit/pkg/errs"
)

// Suppressions let a CI user accept findings of `skill validate`, one by
// one and with a reason, or switch a rule off for a run (docs/skills.md,
// "Suppressions"):
//
//   - inline, in the skill: a line holding
//     `clawkit:ignore RULE[,RULE…] -- REASON`, inside whatever comment the
//     file has (an HTML comment `<!-- … -->` in Markdown, `# …` in YAML
//     frontmatter and scripts, `// …`). It covers the findings of those
//     rules on its own line and, when the line holds nothing but the
//     comment, on the next line too;
//   - on the command line: `--disable RULE` (repeatable) for the whole run.
//
// A suppressed finding is not an error or a warning any more, but it is
// never hidden: the report lists it under suppressed with the suppression
// that accepted it (JSON, SARIF `suppressions`). A directive without a
// reason, naming no rule or an unknown rule is itself an error
// (suppression-invalid) and accepts nothing; a directive that accepts
// nothing is a warning (suppression-unused). `skill write` and `skill
// bundle` read no directive: the authoring contract is what OpenClaw
// checks again when it loads the skill, and no comment turns that off.

// Suppression rule ids (findings about the suppressions themselves).
const (
	RuleSuppressionInvalid = "suppression-invalid"
	RuleSuppressionUnused  = "suppression-unused"
)

// Suppression kinds, as SARIF names them.
const (
	SuppressInSource = "inSource" // a directive in the skill
	SuppressExternal = "external" // --disable on the command line
)

// DirectiveToken starts an inline suppression.
const DirectiveToken = "clawkit:ignore"

// maxDirectives bounds the directives read from one file: a hostile file
// of nothing else costs at most this much bookkeeping.
const maxDirectives = 1024

// Suppression is how a finding was accepted.
type Suppression struct {
	Kind          string `json:"kind"`
	Justification string `json:"justification"`
	// File and Line locate an inline directive.
	File string `json:"file,omitempty"`
	Line int    `json:"line,omitempty"`
}

// Directive is one inline suppression as read, with what it accepted.
type Directive struct {
	File   string   `json:"file"`
	Line   int      `json:"line"`
	Rules  []string `json:"rules"`
	Reason string   `json:"reason"`
	// Covers are the lines whose findings it accepts (its own, and the
	// next when it stands alone on its line).
	Covers  []int `json:"covers"`
	Matched int   `json:"matched"`
	// Problem says why the directive accepts nothing (no reason, no
	// rule, an unknown rule); such a directive is a finding itself.
	Problem string `json:"problem,omitempty"`
}

// ParseDirectives reads the inline suppressions of one text file.
func ParseDirectives(file string, content []byte) []Directive {
	var out []Directive
	s := string(content)
	if !strings.Contains(s, DirectiveToken) {
		return nil
	}
	for i, l := range strings.Split(s, "\n") {
		at := strings.Index(l, DirectiveToken)
		if at < 0 {
			continue
		}
		if len(out) >= maxDirectives {
			break
		}
		d := parseDirective(file, i+1, l, at)
		out = append(out, d)
	}
	return out
}

// parseDirective reads `clawkit:ignore RULES -- REASON` starting at byte
// at of line l (line n of file).
func parseDirective(file string, n int, l string, at int) Directive {
	d := Directive{File: file, Line: n, Rules: []string{}, Covers: []int{n}}
	rest := l[at+len(DirectiveToken):]
	// The comment's closing token ends the directive.
	for _, end := range []string{"-->", "*/"} {
		if i := strings.Index(rest, end); i >= 0 {
			rest = rest[:i]
		}
	}
	rules, reason, hasReason := strings.Cut(rest, " -- ")
	if !hasReason {
		// "RULE --" at the very end, or no separator at all.
		rules = strings.TrimSuffix(strings.TrimRight(rules, " \t\r"), " --")
	}
	d.Reason = strings.TrimSpace(reason)
	d.Rules = append(d.Rules, strings.FieldsFunc(rules, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\r' })...)
	switch {
	case !strings.HasPrefix(rest, " ") && rest != "":
		d.Problem = fmt.Sprintf("%s must be followed by a space and the rules it accepts", DirectiveToken)
	case len(d.Rules) == 0:
		d.Problem = "the directive names no rule; name the rules it accepts: " + DirectiveToken + " RULE -- why"
	case d.Reason == "":
		d.Problem = "the directive gives no reason; every suppression says why: " + DirectiveToken + " " + strings.Join(d.Rules, ",") + " -- why"
	default:
		for _, r := range d.Rules {
			if !KnownRule(r) {
				d.Problem = fmt.Sprintf("unknown rule %q; the rules are listed in docs/skills.md", r)
				break
			}
			if r == RuleSuppressionInvalid || r == RuleSuppressionUnused {
				d.Problem = fmt.Sprintf("%s cannot be suppressed", r)
				break
			}
		}
	}
	// Standing alone on its line (nothing but the comment around it), it
	// covers the next line too.
	before := strings.TrimSpace(l[:at])
	for _, open := range []string{"<!--", "#", "//", "/*", "--", ";"} {
		before = strings.TrimSpace(strings.TrimSuffix(before, open))
	}
	if before == "" {
		d.Covers = append(d.Covers, n+1)
	}
	return d
}

// allRules are every rule id a finding can carry.
var allRules = func() map[string]bool {
	m := map[string]bool{}
	for _, r := range append(append([]string(nil), Rules...),
		RuleSkillMDMissing, RuleSkillMDCase, RuleFrontmatter, RuleYAML, RuleNameRequired, RuleNameLength,
		RuleNameCase, RuleNameCharset, RuleNameHyphen, RuleNameFolder, RuleDescRequired, RuleDescLength,
		RuleCompatLength, RuleFieldType, RuleUnknownKey, RuleFileLocation, RuleLink, RuleNotRegular,
		RuleFileSize, RuleSkillSize, RuleSkillFiles, RuleFolderLink, RuleNotFolder, RuleUnreadable,
		RuleOpenClawName, RuleDescBytes, RuleMetadataStrings, RuleSuppressionInvalid, RuleSuppressionUnused) {
		m[r] = true
	}
	return m
}()

// KnownRule reports whether r is a rule id of the linter.
func KnownRule(r string) bool { return allRules[r] }

// AllRules lists every rule id, sorted.
func AllRules() []string {
	out := make([]string, 0, len(allRules))
	for r := range allRules {
		out = append(out, r)
	}
	sort.Strings(out)
	return out
}

// CheckDisable validates --disable values: known rules, never the rules
// that report suppressions themselves.
func CheckDisable(rules []string) error {
	for _, r := range rules {
		if !KnownRule(r) || r == RuleSuppressionInvalid || r == RuleSuppressionUnused {
			return errs.Usage(CodeUnknownRule, "--disable %s: not a rule that can be disabled", r).
				WithHint("the rules: %s", strings.Join(disableable(), ", "))
		}
	}
	return nil
}

func disableable() []string {
	var out []string
	for _, r := range AllRules() {
		if r != RuleSuppressionInvalid && r != RuleSuppressionUnused {
			out = append(out, r)
		}
	}
	return out
}

// applySuppressions moves the findings that --disable or a valid directive
// accepts from the report's errors and warnings to Suppressed, and adds
// the findings about the directives themselves (invalid: error; unused:
// warning). It runs before Finish, so --strict sees only what is left.
func (r *Report) applySuppressions(dirs []Directive, disable []string) {
	off := map[string]bool{}
	for _, d := range disable {
		off[d] = true
	}
	type key struct {
		file string
		line int
		rule string
	}
	byLine := map[key]int{} // → index in dirs
	for i := range dirs {
		d := &dirs[i]
		if d.Problem != "" {
			continue
		}
		for _, ln := range d.Covers {
			for _, rule := range d.Rules {
				k := key{d.File, ln, rule}
				if _, taken := byLine[k]; !taken {
					byLine[k] = i
				}
			}
		}
	}
	keep := func(list []Finding) []Finding {
		out := list[:0]
		for _, f := range list {
			if off[f.Rule] {
				f.Suppression = &Suppression{Kind: SuppressExternal, Justification: "disabled on the command line (--disable " + f.Rule + ")"}
				r.Suppressed = append(r.Suppressed, f)
				continue
			}
			if i, ok := byLine[key{f.File, f.Line, f.Rule}]; ok && f.Line > 0 {
				d := &dirs[i]
				d.Matched++
				f.Suppression = &Suppression{Kind: SuppressInSource, Justification: d.Reason, File: d.File, Line: d.Line}
				r.Suppressed = append(r.Suppressed, f)
				continue
			}
			out = append(out, f)
		}
		return out
	}
	r.Errors = keep(r.Errors)
	r.Warnings = keep(r.Warnings)
	for _, d := range dirs {
		switch {
		case d.Problem != "":
			r.Add(Finding{Severity: SeverityError, Code: CodeInvalidSuppression, Rule: RuleSuppressionInvalid, File: d.File, Line: d.Line, Message: d.Problem})
		case d.Matched == 0:
			r.Add(Finding{Severity: SeverityWarning, Code: CodeUnusedSuppression, Rule: RuleSuppressionUnused, File: d.File, Line: d.Line,
				Message: fmt.Sprintf("the suppression of %s matches no finding on line %s; remove it", strings.Join(d.Rules, ", "), coveredLines(d.Covers))})
		}
	}
	if dirs == nil {
		dirs = []Directive{}
	}
	r.Directives = dirs
}

func coveredLines(ls []int) string {
	parts := make([]string, len(ls))
	for i, l := range ls {
		parts[i] = fmt.Sprint(l)
	}
	return strings.Join(parts, " or ")
}
