// Package termsafe makes text that came from outside (a provider, an MCP
// server, an archive entry, a folder name) safe to print on a terminal.
//
// Human output must never let such text move the cursor, change colours,
// forge a line of ours ("clawkit: error: …") or reorder what follows it
// (bidirectional overrides). Text escapes every control character, every
// invisible formatting character and every invalid UTF-8 byte the way Go's
// %q does, without the surrounding quotes, and leaves printable text,
// including non-ASCII letters, as it is. --json output is not escaped
// here: JSON encoding already makes it data. See docs/design.md, "Text
// from outside".
package termsafe

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Text returns s with every non-printable rune escaped as %q would escape
// it (\n, \x1b, \u202e, …), printable runes unchanged. A backslash is
// doubled only when s needed escaping, so ordinary paths read as before.
func Text(s string) string {
	if Safe(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b.WriteString(`\x`)
			b.WriteString(strconv.FormatUint(uint64(s[i])|0x100, 16)[1:])
		case r == '\\':
			b.WriteString(`\\`)
		case printable(r):
			b.WriteString(s[i : i+n])
		default:
			q := strconv.QuoteRuneToASCII(r) // 'x' with escapes
			b.WriteString(q[1 : len(q)-1])
		}
		i += n
	}
	return b.String()
}

// Safe reports whether s prints as itself: valid UTF-8 and no rune that
// Text would escape.
func Safe(s string) bool {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && n == 1) || !printable(r) {
			return false
		}
		i += n
	}
	return true
}

// printable: a graphic rune or a plain space, and not a formatting
// character (Cf: bidi overrides and isolates, zero-width joiners, BOM),
// which a terminal renders invisibly or uses to reorder text.
func printable(r rune) bool {
	if r == ' ' {
		return true
	}
	if unicode.Is(unicode.Cf, r) {
		return false
	}
	return unicode.IsGraphic(r) && !unicode.IsSpace(r)
}
