package skilllint

import (
	"bytes"
	"fmt"
	"sort"
	"strings"
	"sync"
)

// The floor set by OpenClaw's own skill-text scanner. Under the openclaw
// profile clawkit is never weaker than the scanner of any supported
// OpenClaw release: whatever a release marks critical is an error here,
// whatever it marks as a warning is at least a warning. The rules below
// describe what those releases match (the facts are in docs/skills.md,
// "Agreement with OpenClaw's scanner"); they run after clawkit's own
// line rules and only ever add findings or raise a warning to an error.
// conformance/ runs every release's scanner beside this one on the same
// corpus and fails on any case where clawkit is the weaker side.
//
// How the matching is carried over: the releases match JavaScript regular
// expressions over the whole text and then look for the first line that
// matches on its own (falling back to the line where a match that spans
// lines starts). Here each rule finds every such line. Where JavaScript and
// Go disagree on a detail, the Go form is the wider one: bounded repeats
// count code points (JavaScript counts UTF-16 units, so an astral
// character uses two), case folding follows Unicode (which also folds the
// Kelvin sign and the long s), and jsSpace is JavaScript's \s.

// floorRule is one rule of the floor.
type floorRule struct {
	rule     string // clawkit's rule id of the finding
	severity string
	why      string
	// lineRe matches one line; wholeRe, when set, also matches across
	// lines (its finding is the line where the match starts).
	lineRe, wholeRe *lazyRe
	// match, when set, replaces the regexps (a private key block needs a
	// back reference RE2 has no syntax for).
	match func(content string) []int
	// need is a cheap test every match passes, on the text and on its
	// ASCII-lowercased copy (the releases' case-insensitive patterns fold
	// ASCII letters only): most text fails it, and the regexps, some with
	// long bounded repeats, never run on it.
	need func(text, lower string) bool
}

// hasAll reports whether s holds every one of subs; hasAny whether it holds one.
func hasAll(s string, subs ...string) bool {
	for _, x := range subs {
		if !strings.Contains(s, x) {
			return false
		}
	}
	return true
}

func hasAny(s string, subs ...string) bool { return containsAny(s, subs) }

// asciiLower lowercases ASCII letters only.
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

const (
	jsSpace = `[\t\n\v\f\r \x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}\x{FEFF}]`
	// jsDot is JavaScript's '.' without the s flag.
	jsDot = `[^\n\r\x{2028}\x{2029}]`
	// jsSpaceNoLF is jsSpace within one line.
	jsSpaceNoLF = `[\t\v\f\r \x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}\x{FEFF}]`
)

// spaced builds a rule's pattern with sp standing for JavaScript's \s.
func spaced(format, sp string) string { return strings.ReplaceAll(format, "_S_", sp) }

// floorPair returns the one-line and the whole-text form of a pattern
// whose only multi-line part is \s (written _S_).
func floorPair(format string) (*lazyRe, *lazyRe) {
	return lazyRegexp(spaced(format, jsSpaceNoLF)), lazyRegexp(spaced(format, jsSpace))
}

// floorRules is built on first use: its closures and patterns cost every
// process start otherwise, and most processes never lint a skill.
var floorRules = sync.OnceValue(func() []floorRule {
	pipeL, pipeW := floorPair(`(?i)\b(?:curl|wget)\b[^|\n]{0,120}\|_S_*(?:sh|bash|zsh)\b`)
	rmL, rmW := floorPair(`(?i)\brm_S_+-rf_S_+(?:/|\$HOME|~|\.)`)
	chmodL, chmodW := floorPair(`(?i)\bchmod_S_+(?:-R_S_+)?777\b`)
	ignoreL, ignoreW := floorPair(`(?i)\bignore_S_+(?:(?:all|any)_S_+)?(?:previous|above|prior|all|any)_S_+instructions\b`)
	layerL, layerW := floorPair(`(?i)\b(?:system_S_+prompt|developer_S_+message|hidden_S_+instructions)\b`)
	toolW := lazyRegexp(`(?i)\b(?:run|execute|invoke|call)\b(?s:.){0,50}\btool\b(?s:.){0,50}\bwithout\b(?s:.){0,30}\b(?:permission|approval)`)
	toolL := lazyRegexp(`(?i)\b(?:run|execute|invoke|call)\b[^\n]{0,50}\btool\b[^\n]{0,50}\bwithout\b[^\n]{0,30}\b(?:permission|approval)`)
	return []floorRule{
		{rule: RuleSecretLiteral, severity: SeverityError, why: "a literal credential of a shape OpenClaw's scanner refuses",
			need: func(t, _ string) bool {
				return hasAny(t, "sk-", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "xoxb-", "xoxa-", "xoxp-", "xoxr-", "xoxs-", "AIza")
			},
			lineRe: lazyRegexp(`\b(?:sk-(?:proj-|svcacct-)?[A-Za-z0-9_-]{32,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|xox[baprs]-[A-Za-z0-9-]{20,}|AIza[0-9A-Za-z_-]{35})(?:[^A-Za-z0-9_-]|$)`)},
		{rule: RulePrivateKey, severity: SeverityError, why: "a private key block (header, key material, matching END line)", match: privateKeyBlocks},
		{rule: RulePipeToShell, severity: SeverityError, why: "downloaded code piped into a shell", lineRe: pipeL, wholeRe: pipeW,
			need: func(_, l string) bool { return hasAny(l, "curl", "wget") && hasAll(l, "|", "sh") }},
		{rule: RuleExfiltration, severity: SeverityError, why: "the environment and a network tool or URL on one line (possible exfiltration of secrets)",
			lineRe: lazyRegexp(`(?i)\b(?:process\.env|env)\b` + jsDot + `{0,80}\b(?:fetch|curl|wget|http|https)\b`),
			need:   func(_, l string) bool { return hasAll(l, "env") && hasAny(l, "fetch", "curl", "wget", "http") }},
		{rule: RuleDestructive, severity: SeverityWarning, why: "rm -rf of a path that starts with /, ~, $HOME or . (the whole tree, a home or the current folder, or something below them)", lineRe: rmL, wholeRe: rmW,
			need: func(_, l string) bool { return hasAll(l, "rm", "-rf") }},
		{rule: RuleWorldWritable, severity: SeverityWarning, why: "chmod 777", lineRe: chmodL, wholeRe: chmodW,
			need: func(_, l string) bool { return hasAll(l, "chmod", "777") }},
		{rule: RulePromptInjection, severity: SeverityError, why: "wording that tells the agent to ignore earlier instructions", lineRe: ignoreL, wholeRe: ignoreW,
			need: func(_, l string) bool { return hasAll(l, "ignore", "instructions") }},
		{rule: RulePromptInjection, severity: SeverityError, why: "a reference to hidden prompt layers (system prompt, developer message, hidden instructions)", lineRe: layerL, wholeRe: layerW,
			need: func(_, l string) bool {
				return hasAll(l, "system", "prompt") || hasAll(l, "developer", "message") || hasAll(l, "hidden", "instructions")
			}},
		{rule: RulePromptInjection, severity: SeverityError, why: "wording that asks to run a tool without permission or approval", lineRe: toolL, wholeRe: toolW,
			need: func(_, l string) bool { return hasAll(l, "tool", "without") && hasAny(l, "permission", "approval") }},
	}
})

// floorLines returns the 1-based lines a rule reports in content.
func (r *floorRule) floorLines(content, lower string, lines []string) []int {
	if r.need != nil && !r.need(content, lower) {
		return nil
	}
	if r.match != nil {
		return r.match(content)
	}
	// Most text matches no rule: one pass over the whole text first.
	if pre := r.wholeRe; pre != nil {
		if !pre.MatchString(content) {
			return nil
		}
	} else if !r.lineRe.MatchString(content) {
		return nil
	}
	var out []int
	for i, l := range lines {
		if r.lineRe.MatchString(l) {
			out = append(out, i+1)
		}
	}
	if r.wholeRe != nil {
		// A match that spans lines (its \s crossing a newline) is reported
		// at the line where it starts; a line already reported is not
		// repeated.
		re := r.wholeRe.get()
		for _, m := range re.FindAllStringIndex(content, -1) {
			ln := 1 + strings.Count(content[:m[0]], "\n")
			if !containsInt(out, ln) {
				out = append(out, ln)
			}
		}
		sort.Ints(out)
	}
	return out
}

func containsInt(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

var pemBlockRe = lazyRegexp(`-----BEGIN ([A-Z0-9 ]*PRIVATE KEY)-----\r?\n((?:[A-Za-z0-9+/=]+\r?\n)+)-----END ([A-Z0-9 ]*PRIVATE KEY)-----`)

// privateKeyBlocks finds complete private key blocks: a BEGIN line, at
// least 48 characters of base64 on the lines that follow, and the END line
// of the same label. It reports each block's BEGIN line.
func privateKeyBlocks(content string) []int {
	if !strings.Contains(content, "PRIVATE KEY-----") {
		return nil
	}
	var out []int
	for _, m := range pemBlockRe.get().FindAllStringSubmatchIndex(content, -1) {
		if content[m[2]:m[3]] != content[m[6]:m[7]] {
			continue
		}
		body := content[m[4]:m[5]]
		n := len(body) - strings.Count(body, "\n") - strings.Count(body, "\r")
		if n < 48 {
			continue
		}
		out = append(out, 1+strings.Count(content[:m[0]], "\n"))
	}
	return out
}

// applyFloor adds the floor's findings to fs (clawkit's own, for file):
// a finding of the same rule on the same line is raised to the floor's
// severity when it was lower; otherwise the floor's finding is added.
func applyFloor(file string, content []byte, fs []Finding) []Finding {
	content = bytes.TrimPrefix(content, bom)
	s := string(content)
	lower := asciiLower(s)
	var lines []string
	rules := floorRules()
	for i := range rules {
		r := &rules[i]
		if r.need != nil && !r.need(s, lower) {
			continue
		}
		if lines == nil {
			lines = strings.Split(s, "\n")
		}
		for _, ln := range r.floorLines(s, lower, lines) {
			found := false
			for j := range fs {
				if fs[j].Rule != r.rule || fs[j].Line != ln {
					continue
				}
				found = true
				if r.severity == SeverityError && fs[j].Severity != SeverityError {
					fs[j].Severity = SeverityError
					fs[j].Message += "; OpenClaw's own scanner refuses this too"
				}
			}
			if !found {
				col := 0
				if r.lineRe != nil && ln <= len(lines) {
					col = column(lines[ln-1], r.lineRe.index(lines[ln-1]))
				}
				fs = append(fs, Finding{Severity: r.severity, Code: CodeUnsafe, Rule: r.rule, File: file, Line: ln, Column: col,
					Message: fmt.Sprintf("%s; OpenClaw's own scanner flags this", r.why)})
			}
		}
	}
	sort.SliceStable(fs, func(a, b int) bool { return fs[a].Line < fs[b].Line })
	return fs
}
