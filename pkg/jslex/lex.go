// Package jslex is a small lexer and module reader for the ES modules
// OpenClaw's bundler emits. pkg/artifacts uses it to read the worker
// bundle inventory from a release's compiled code without running Node
// (docs/runtime-artifacts.md). It is a parser of untrusted bytes: its fuzz
// target is FuzzParseJSModule.
package jslex

import (
	"errors"
	"strings"
)

// The lexer only needs to tell code from strings, template literals,
// comments and regular expressions, and to know how deeply braces nest, so
// that a "const X = [...]" inside a string or
// a template (OpenClaw generates shell and JS text with such lines) is never
// mistaken for a declaration.

// Kind is a token's kind.
type Kind uint8

// The token kinds.
const (
	Ident    Kind = iota + 1
	String        // '…' or "…"; Val is the raw body between the quotes
	Template      // `…`; Val is the raw text of the whole literal, expressions included
	Number
	Punct
	Regexp
)

// Token is one token of a module.
type Token struct {
	Kind  Kind
	Val   string
	Depth int // brace depth ({ and template ${) before this token
}

// ErrUnterminated is returned for a string, template, regular expression or
// comment that the source ends inside.
var ErrUnterminated = errors.New("unterminated literal or comment")

// keywords after which a "/" starts a regular expression, not a division.
var jsRegexpAfter = map[string]bool{
	"return": true, "typeof": true, "instanceof": true, "in": true, "of": true, "new": true,
	"delete": true, "void": true, "throw": true, "case": true, "do": true, "else": true,
	"yield": true, "await": true,
}

func isIdentStart(c byte) bool {
	return c == '_' || c == '$' || c == '#' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

func isIdentPart(c byte) bool { return isIdentStart(c) || c >= '0' && c <= '9' }

// Lex splits src into tokens. Template literals are one token each; the
// code inside their ${…} is lexed too (its tokens follow the template token,
// at a deeper Depth), so that braces inside it balance.
func Lex(src string) ([]Token, error) {
	var toks []Token
	// stack of open braces: '{' for code, '$' for a template's ${.
	var stack []byte
	// templateStart remembers where the template whose ${ is open began.
	var templateStart []int
	i := 0
	if strings.HasPrefix(src, "#!") {
		if j := strings.IndexByte(src, '\n'); j >= 0 {
			i = j
		} else {
			i = len(src)
		}
	}
	regexpOK := func() bool {
		if len(toks) == 0 {
			return true
		}
		t := toks[len(toks)-1]
		switch t.Kind {
		case Ident:
			return jsRegexpAfter[t.Val]
		case Punct:
			return t.Val != ")" && t.Val != "]" && t.Val != "}"
		}
		return false
	}
	// scanTemplate scans template text from j (just after ` or a closing })
	// and returns the index after the closing ` or after "${".
	scanTemplate := func(j int) (int, bool, error) {
		for j < len(src) {
			switch src[j] {
			case '\\':
				j += 2
			case '`':
				return j + 1, true, nil
			case '$':
				if j+1 < len(src) && src[j+1] == '{' {
					return j + 2, false, nil
				}
				j++
			default:
				j++
			}
		}
		return 0, false, ErrUnterminated
	}
	for i < len(src) {
		c := src[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			i++
		case c == '/' && i+1 < len(src) && src[i+1] == '/':
			j := strings.IndexByte(src[i:], '\n')
			if j < 0 {
				i = len(src)
			} else {
				i += j
			}
		case c == '/' && i+1 < len(src) && src[i+1] == '*':
			j := strings.Index(src[i+2:], "*/")
			if j < 0 {
				return nil, ErrUnterminated
			}
			i += j + 4
		case c == '"' || c == '\'':
			j := i + 1
			for j < len(src) && src[j] != c {
				switch src[j] {
				case '\\':
					j++
				case '\n':
					return nil, ErrUnterminated
				}
				j++
			}
			if j >= len(src) {
				return nil, ErrUnterminated
			}
			toks = append(toks, Token{Kind: String, Val: src[i+1 : j], Depth: len(stack)})
			i = j + 1
		case c == '`':
			j, closed, err := scanTemplate(i + 1)
			if err != nil {
				return nil, err
			}
			if closed {
				toks = append(toks, Token{Kind: Template, Val: src[i:j], Depth: len(stack)})
			} else {
				stack = append(stack, '$')
				templateStart = append(templateStart, i)
			}
			i = j
		case c == '}' && len(stack) > 0 && stack[len(stack)-1] == '$':
			stack = stack[:len(stack)-1]
			start := templateStart[len(templateStart)-1]
			templateStart = templateStart[:len(templateStart)-1]
			j, closed, err := scanTemplate(i + 1)
			if err != nil {
				return nil, err
			}
			if closed {
				toks = append(toks, Token{Kind: Template, Val: src[start:j], Depth: len(stack)})
			} else {
				stack = append(stack, '$')
				templateStart = append(templateStart, start)
			}
			i = j
		case c == '/' && regexpOK():
			j := i + 1
			inClass := false
		scan:
			for j < len(src) {
				d := src[j]
				if d == '\\' {
					j += 2
					continue
				}
				if d == '\n' {
					return nil, ErrUnterminated
				}
				switch {
				case d == '[':
					inClass = true
				case d == ']':
					inClass = false
				case d == '/' && !inClass:
					break scan
				}
				j++
			}
			if j >= len(src) {
				return nil, ErrUnterminated
			}
			j++
			for j < len(src) && isIdentPart(src[j]) {
				j++
			}
			toks = append(toks, Token{Kind: Regexp, Val: src[i:j], Depth: len(stack)})
			i = j
		case isIdentStart(c):
			j := i + 1
			for j < len(src) && isIdentPart(src[j]) {
				j++
			}
			toks = append(toks, Token{Kind: Ident, Val: src[i:j], Depth: len(stack)})
			i = j
		case c >= '0' && c <= '9' || c == '.' && i+1 < len(src) && src[i+1] >= '0' && src[i+1] <= '9':
			j := i + 1
			for j < len(src) && (isIdentPart(src[j]) || src[j] == '.') {
				j++
			}
			toks = append(toks, Token{Kind: Number, Val: src[i:j], Depth: len(stack)})
			i = j
		case c == '{':
			toks = append(toks, Token{Kind: Punct, Val: "{", Depth: len(stack)})
			stack = append(stack, '{')
			i++
		case c == '}':
			if len(stack) == 0 {
				return nil, errors.New("unbalanced }")
			}
			stack = stack[:len(stack)-1]
			toks = append(toks, Token{Kind: Punct, Val: "}", Depth: len(stack)})
			i++
		default:
			// Multi-character operators are split into single characters:
			// nothing here needs to tell "=" from "==" except that a
			// declaration's "=" is followed by its value, which "==" never
			// is in the positions we look at.
			toks = append(toks, Token{Kind: Punct, Val: src[i : i+1], Depth: len(stack)})
			i++
		}
	}
	if len(stack) != 0 {
		return nil, ErrUnterminated
	}
	return toks, nil
}
