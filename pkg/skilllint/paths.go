// Package skilllint is the skill linter (docs/skills.md): the path and name
// rules, the frontmatter split and strict parse, validation with size limits
// and the security scan under a profile, `skill validate`'s reports and
// summaries, and revisions. It needs no state: `skill validate --dir` runs it
// on any folder, and pkg/skills (the authoring store) runs it on every write
// and install before anything is staged.
package skilllint

import (
	"strings"
	"unicode/utf8"

	"github.com/clawkit/clawkit/pkg/errs"
)

// SkillFile is the one file every skill has.
const SkillFile = "SKILL.md"

// SupportDirs are the only folders a skill may hold files in, besides
// SKILL.md at its top. Anything else is refused, so a skill folder has a
// predictable layout that discovery and review can rely on.
var SupportDirs = []string{"assets", "examples", "references", "scripts", "templates"}

// NormalizeSkillFilePath checks a file path inside a skill and returns it in
// canonical form. It accepts exactly "SKILL.md" or a relative path below one
// of SupportDirs; it refuses ".." segments, absolute paths, backslashes, NUL,
// empty segments and "." segments. It deliberately does not "clean" a path
// into shape (a/./b or a//b are refused, not rewritten): a caller that sends
// an odd spelling gets told, rather than writing somewhere it did not name.
//
// Errors are invalid_path (exit 2), except ".." and absolute paths, which are
// path_escape (exit 3): those try to leave the skill.
func NormalizeSkillFilePath(p string) (string, error) {
	switch {
	case p == "":
		return "", invalidPath(p, "the path is empty")
	case strings.ContainsRune(p, 0):
		return "", invalidPath(p, "the path contains a NUL byte")
	case !utf8.ValidString(p), strings.ContainsRune(p, utf8.RuneError):
		// U+FFFD is what undecodable bytes become on the way through JSON
		// (a call routed to the owner): a name that holds it was not UTF-8.
		return "", invalidPath(p, "the path is not valid UTF-8")
	case strings.Contains(p, `\`):
		return "", invalidPath(p, "the path contains a backslash; use '/' between segments")
	case strings.HasPrefix(p, "/"):
		return "", PathEscape(p, "the path is absolute")
	}
	segs := strings.Split(p, "/")
	for _, s := range segs {
		switch s {
		case "":
			return "", invalidPath(p, "the path has an empty segment (a leading, trailing or doubled '/')")
		case ".":
			return "", invalidPath(p, "the path has a '.' segment")
		case "..":
			return "", PathEscape(p, "the path has a '..' segment")
		}
		if r := SuspiciousRune(s); r != 0 {
			return "", invalidPath(p, "the path contains the character U+%04X (control, format or look-alike)", r)
		}
		if len(s) > 255 {
			return "", invalidPath(p, "a path segment is longer than 255 bytes")
		}
	}
	if len(p) > 1024 {
		return "", invalidPath(p, "the path is longer than 1024 bytes")
	}
	if p == SkillFile {
		return p, nil
	}
	if len(segs) < 2 || !IsSupportDir(segs[0]) {
		return "", invalidPath(p, "files other than SKILL.md must be below %s/", strings.Join(SupportDirs, "/, ")).
			WithHint("use SKILL.md, or a path such as references/notes.md or scripts/run.sh")
	}
	return p, nil
}

// IsSupportDir reports whether s is one of SupportDirs.
func IsSupportDir(s string) bool {
	for _, d := range SupportDirs {
		if s == d {
			return true
		}
	}
	return false
}

// SuspiciousRune returns the first rune in s that has no place in a file
// name: ASCII and C1 controls, Unicode format characters (bidi overrides,
// zero-width), and look-alikes of '/', '\' and '.' that could make a path
// read differently than it resolves. 0 when none.
func SuspiciousRune(s string) rune {
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) {
			return r
		}
		if isHiddenFormat(r) {
			return r
		}
		switch r {
		case '\u2215', '\u2044', '\u29f8', '\uff0f', '\u2571', // slash look-alikes
			'\u29f5', '\u29f9', '\uff3c', '\u2216', '\ufe68', // backslash look-alikes
			'\u2024', '\u2025', '\u2026', '\uff0e', '\u3002', '\ufe52', // dot look-alikes
			'\u00a0', '\u2000', '\u2001', '\u2002', '\u2003', '\u2004', '\u2005',
			'\u2006', '\u2007', '\u2008', '\u2009', '\u200a', '\u202f', '\u205f', '\u3000': // odd spaces
			return r
		}
	}
	return 0
}

// isHiddenFormat reports bidi controls and zero-width characters.
func isHiddenFormat(r rune) bool {
	switch {
	case r >= 0x202a && r <= 0x202e: // LRE RLE PDF LRO RLO
		return true
	case r >= 0x2066 && r <= 0x2069: // LRI RLI FSI PDI
		return true
	case r == 0x200e || r == 0x200f || r == 0x061c: // LRM RLM ALM
		return true
	case r == 0x200b || r == 0x200c || r == 0x200d || r == 0x2060 || r == 0xfeff || r == 0x180e:
		return true
	}
	return false
}

// CheckSkillName checks a skill name given on the command line or found
// as a folder. The authoring contract leaves naming rules to the plugin
// (docs/skills.md): clawkit only requires one safe, plain folder name. A name
// that is not one plain folder name (separators, dot segments, NUL,
// control, bidi or zero-width characters, look-alikes of / \ .) is
// path_escape; a plain name that is hidden (leading '.', the space of
// clawkit's staging folders), longer than 255 bytes or not UTF-8 is
// invalid_path. The Agent Skills name rule is the spec profile's business
// (validate), not a condition of writing.
func CheckSkillName(name string) error {
	switch {
	case name == "", name == ".", name == "..",
		strings.ContainsAny(name, "/\\\x00"):
		return errs.Refused(errs.CodePathEscape, "skill name %q is not one plain folder name", name).
			WithHint("name a skill by its folder name only, e.g. 'pdf-tools'")
	}
	if r := SuspiciousRune(name); r != 0 {
		return errs.Refused(errs.CodePathEscape, "skill name %q contains the character U+%04X", name, r).
			WithHint("name a skill by its folder name only, e.g. 'pdf-tools'")
	}
	switch {
	case !utf8.ValidString(name), strings.ContainsRune(name, utf8.RuneError):
		// U+FFFD is what undecodable bytes become on the way through JSON
		// (a call routed to the owner): a name that holds it was not UTF-8.
		return errs.Usage(errs.CodeInvalidPath, "skill name %q is not valid UTF-8", name).
			WithHint("name a skill with UTF-8 text, e.g. 'pdf-tools'")
	case strings.HasPrefix(name, "."):
		return errs.Usage(errs.CodeInvalidPath, "skill name %q starts with '.'; hidden folders are not skills", name).
			WithHint("use a name such as 'pdf-tools'")
	case len(name) > 255:
		return errs.Usage(errs.CodeInvalidPath, "skill name is %d bytes; a folder name holds at most 255", len(name))
	}
	return nil
}

// ValidName implements ^(?!.*--)[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$
// (Go's regexp has no lookahead, so it is spelled out).
func ValidName(s string) bool {
	if len(s) < 1 || len(s) > 64 {
		return false
	}
	if s[0] == '-' || s[len(s)-1] == '-' || strings.Contains(s, "--") {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

func invalidPath(p, format string, args ...any) *errs.Error {
	return errs.Usage(errs.CodeInvalidPath, "invalid skill file path %q: "+format, append([]any{p}, args...)...).
		WithHint("use SKILL.md or a relative path below assets/, examples/, references/, scripts/ or templates/, with '/' separators and no '.', '..' or empty segments")
}

// PathEscape is the path_escape refusal for path p.
func PathEscape(p, format string, args ...any) *errs.Error {
	return errs.Refused(errs.CodePathEscape, "skill file path %q leaves the skill: "+format, append([]any{p}, args...)...).
		WithHint("name a file relative to the skill folder, e.g. references/notes.md")
}
