// Package json5 parses JSON5 (https://spec.json5.org), the format of
// openclaw.plugin.json manifests, for every package that reads them.
package json5

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Parse decodes one JSON5 value (https://spec.json5.org) into the
// shapes encoding/json produces: map[string]any, []any, string, float64,
// bool and nil. It is deliberately strict beyond the spec in one way:
// duplicate object keys are an error (a manifest with two "id"s is
// ambiguous). Nesting is bounded (maxJSON5Depth) so hostile input cannot
// exhaust the stack.
//
// We wrote this small parser rather than take a dependency: no maintained
// Go JSON5 library was available to this project, and manifests need only
// the data subset. FuzzParse exercises it.
func Parse(src []byte) (any, error) {
	if !utf8.Valid(src) {
		return nil, &Error{Line: 1, Col: 1, Msg: "not valid UTF-8"}
	}
	p := &json5Parser{s: string(src), line: 1, col: 1}
	if strings.HasPrefix(p.s, "\ufeff") {
		p.pos = 3
	}
	if err := p.skipSpace(); err != nil {
		return nil, err
	}
	v, err := p.value(0)
	if err != nil {
		return nil, err
	}
	if err := p.skipSpace(); err != nil {
		return nil, err
	}
	if p.pos < len(p.s) {
		return nil, p.errf("unexpected %q after the value", p.peekRune())
	}
	return v, nil
}

const maxJSON5Depth = 200

// Error is a syntax error with its position (1-based line and column).
type Error struct {
	Line, Col int
	Msg       string
}

func (e *Error) Error() string {
	return fmt.Sprintf("line %d, column %d: %s", e.Line, e.Col, e.Msg)
}

type json5Parser struct {
	s         string
	pos       int
	line, col int
}

func (p *json5Parser) errf(format string, args ...any) error {
	// Recompute line/column from the start: errors are rare, parsing stays
	// simple.
	line, col := 1, 1
	for _, r := range p.s[:min(p.pos, len(p.s))] {
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return &Error{Line: line, Col: col, Msg: fmt.Sprintf(format, args...)}
}

func (p *json5Parser) peekRune() rune {
	if p.pos >= len(p.s) {
		return -1
	}
	r, _ := utf8.DecodeRuneInString(p.s[p.pos:])
	return r
}

func (p *json5Parser) next() rune {
	r, n := utf8.DecodeRuneInString(p.s[p.pos:])
	p.pos += n
	return r
}

func isJSON5Space(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', 0xa0, 0x2028, 0x2029, 0xfeff:
		return true
	}
	return unicode.Is(unicode.Zs, r)
}

func isLineTerm(r rune) bool { return r == '\n' || r == '\r' || r == 0x2028 || r == 0x2029 }

func (p *json5Parser) skipSpace() error {
	for p.pos < len(p.s) {
		r := p.peekRune()
		switch {
		case isJSON5Space(r):
			p.next()
		case strings.HasPrefix(p.s[p.pos:], "//"):
			for p.pos < len(p.s) && !isLineTerm(p.peekRune()) {
				p.next()
			}
		case strings.HasPrefix(p.s[p.pos:], "/*"):
			end := strings.Index(p.s[p.pos+2:], "*/")
			if end < 0 {
				return p.errf("unterminated /* comment")
			}
			p.pos += 2 + end + 2
		default:
			return nil
		}
	}
	return nil
}

func (p *json5Parser) value(depth int) (any, error) {
	if depth > maxJSON5Depth {
		return nil, p.errf("nesting deeper than %d levels", maxJSON5Depth)
	}
	if p.pos >= len(p.s) {
		return nil, p.errf("unexpected end of input, expected a value")
	}
	switch r := p.peekRune(); {
	case r == '{':
		return p.object(depth)
	case r == '[':
		return p.array(depth)
	case r == '"' || r == '\'':
		return p.str()
	case r == '-' || r == '+' || r == '.' || (r >= '0' && r <= '9'):
		return p.number()
	case isIDStart(r):
		id := p.ident()
		switch id {
		case "true":
			return true, nil
		case "false":
			return false, nil
		case "null":
			return nil, nil
		case "Infinity":
			return math.Inf(1), nil
		case "NaN":
			return math.NaN(), nil
		}
		return nil, p.errf("unexpected word %q, expected a value", id)
	default:
		return nil, p.errf("unexpected %q, expected a value", r)
	}
}

func (p *json5Parser) object(depth int) (any, error) {
	p.next() // {
	m := map[string]any{}
	for {
		if err := p.skipSpace(); err != nil {
			return nil, err
		}
		if p.peekRune() == '}' {
			p.next()
			return m, nil
		}
		var key string
		switch r := p.peekRune(); {
		case r == '"' || r == '\'':
			k, err := p.str()
			if err != nil {
				return nil, err
			}
			key = k
		case isIDStart(r):
			key = p.ident()
		default:
			return nil, p.errf("expected a key or '}', found %q", r)
		}
		if _, dup := m[key]; dup {
			return nil, p.errf("duplicate key %q", key)
		}
		if err := p.skipSpace(); err != nil {
			return nil, err
		}
		if p.peekRune() != ':' {
			return nil, p.errf("expected ':' after key %q", key)
		}
		p.next()
		if err := p.skipSpace(); err != nil {
			return nil, err
		}
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		m[key] = v
		if err := p.skipSpace(); err != nil {
			return nil, err
		}
		switch p.peekRune() {
		case ',':
			p.next()
		case '}':
			p.next()
			return m, nil
		default:
			return nil, p.errf("expected ',' or '}' in object")
		}
	}
}

func (p *json5Parser) array(depth int) (any, error) {
	p.next() // [
	a := []any{}
	for {
		if err := p.skipSpace(); err != nil {
			return nil, err
		}
		if p.peekRune() == ']' {
			p.next()
			return a, nil
		}
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		a = append(a, v)
		if err := p.skipSpace(); err != nil {
			return nil, err
		}
		switch p.peekRune() {
		case ',':
			p.next()
		case ']':
			p.next()
			return a, nil
		default:
			return nil, p.errf("expected ',' or ']' in array")
		}
	}
}

func isIDStart(r rune) bool {
	return r == '$' || r == '_' || unicode.IsLetter(r)
}

func isIDPart(r rune) bool {
	return isIDStart(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Mc, r) ||
		unicode.Is(unicode.Pc, r) || r == 0x200c || r == 0x200d
}

// ident reads an identifier name (no \u escapes: manifests do not need them).
func (p *json5Parser) ident() string {
	start := p.pos
	p.next()
	for p.pos < len(p.s) && isIDPart(p.peekRune()) {
		p.next()
	}
	return p.s[start:p.pos]
}

func (p *json5Parser) str() (string, error) {
	quote := p.next()
	var b strings.Builder
	for {
		if p.pos >= len(p.s) {
			return "", p.errf("unterminated string")
		}
		r := p.next()
		switch {
		case r == quote:
			return b.String(), nil
		case r == '\n' || r == '\r':
			return "", p.errf("line break inside a string (escape it with '\\')")
		case r != '\\':
			b.WriteRune(r)
			continue
		}
		if p.pos >= len(p.s) {
			return "", p.errf("unterminated string")
		}
		e := p.next()
		switch e {
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'v':
			b.WriteByte('\v')
		case '0':
			if r := p.peekRune(); r >= '0' && r <= '9' {
				return "", p.errf("octal escapes are not allowed")
			}
			b.WriteByte(0)
		case 'x':
			v, err := p.hex(2)
			if err != nil {
				return "", err
			}
			b.WriteRune(rune(v))
		case 'u':
			v, err := p.hex(4)
			if err != nil {
				return "", err
			}
			r := rune(v)
			if r >= 0xd800 && r < 0xdc00 && strings.HasPrefix(p.s[p.pos:], `\u`) {
				save := p.pos
				p.pos += 2
				lo, err := p.hex(4)
				if err == nil && lo >= 0xdc00 && lo < 0xe000 {
					r = 0x10000 + (r-0xd800)<<10 + rune(lo-0xdc00)
				} else {
					p.pos = save
				}
			}
			b.WriteRune(r) // lone surrogates become U+FFFD
		case '\r':
			if p.peekRune() == '\n' {
				p.next()
			}
		case '\n', 0x2028, 0x2029: // line continuation
		default:
			if e >= '1' && e <= '9' {
				return "", p.errf("invalid escape '\\%c'", e)
			}
			b.WriteRune(e) // \" \' \\ \/ and any other character stand for themselves
		}
	}
}

func (p *json5Parser) hex(n int) (int, error) {
	if p.pos+n > len(p.s) {
		return 0, p.errf("truncated escape")
	}
	v, err := strconv.ParseUint(p.s[p.pos:p.pos+n], 16, 32)
	if err != nil || strings.ContainsAny(p.s[p.pos:p.pos+n], "+-_") {
		return 0, p.errf("invalid hex escape")
	}
	p.pos += n
	return int(v), nil
}

func (p *json5Parser) number() (any, error) {
	start := p.pos
	sign := 1.0
	if r := p.peekRune(); r == '+' || r == '-' {
		if r == '-' {
			sign = -1
		}
		p.next()
	}
	rest := p.s[p.pos:]
	switch {
	case strings.HasPrefix(rest, "Infinity"):
		p.pos += len("Infinity")
		return math.Inf(int(sign)), p.endOfNumber()
	case strings.HasPrefix(rest, "NaN"):
		p.pos += len("NaN")
		return math.NaN(), p.endOfNumber()
	case strings.HasPrefix(rest, "0x") || strings.HasPrefix(rest, "0X"):
		p.pos += 2
		ds := p.pos
		for p.pos < len(p.s) && isHexDigit(p.s[p.pos]) {
			p.pos++
		}
		if ds == p.pos {
			return nil, p.errf("hexadecimal number without digits")
		}
		v, err := strconv.ParseUint(p.s[ds:p.pos], 16, 64)
		if err != nil {
			f, _ := new(big).parseHex(p.s[ds:p.pos])
			return sign * f, p.endOfNumber()
		}
		return sign * float64(v), p.endOfNumber()
	}
	intDigits := p.digits()
	if intDigits > 1 && p.s[p.pos-intDigits] == '0' {
		return nil, p.errf("leading zeros are not allowed")
	}
	frac := 0
	if p.pos < len(p.s) && p.s[p.pos] == '.' {
		p.pos++
		frac = p.digits()
	}
	if intDigits == 0 && frac == 0 {
		return nil, p.errf("invalid number")
	}
	if p.pos < len(p.s) && (p.s[p.pos] == 'e' || p.s[p.pos] == 'E') {
		p.pos++
		if p.pos < len(p.s) && (p.s[p.pos] == '+' || p.s[p.pos] == '-') {
			p.pos++
		}
		if p.digits() == 0 {
			return nil, p.errf("exponent without digits")
		}
	}
	lit := p.s[start:p.pos]
	lit = strings.TrimPrefix(lit, "+")
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil && !isRangeErr(err) {
		return nil, p.errf("invalid number %q", lit)
	}
	return f, p.endOfNumber()
}

func isRangeErr(err error) bool {
	return errors.Is(err, strconv.ErrRange)
}

func (p *json5Parser) endOfNumber() error {
	if p.pos < len(p.s) {
		if r := p.peekRune(); isIDPart(r) {
			return p.errf("unexpected %q after a number", r)
		}
	}
	return nil
}

func (p *json5Parser) digits() int {
	n := 0
	for p.pos < len(p.s) && p.s[p.pos] >= '0' && p.s[p.pos] <= '9' {
		p.pos++
		n++
	}
	return n
}

func isHexDigit(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// big parses hex integers wider than 64 bits into a float, as JavaScript does.
type big struct{}

func (big) parseHex(s string) (float64, error) {
	f := 0.0
	for i := 0; i < len(s); i++ {
		d, _ := strconv.ParseUint(s[i:i+1], 16, 8)
		f = f*16 + float64(d)
	}
	return f, nil
}

// Decode parses src as JSON5 and decodes it into v through encoding/json,
// so struct tags apply. Infinity and NaN, which JSON cannot carry, are
// reported as errors here.
func Decode(src []byte, v any) error {
	x, err := Parse(src)
	if err != nil {
		return err
	}
	b, err := json.Marshal(x)
	if err != nil {
		return &Error{Line: 1, Col: 1, Msg: "value cannot be represented as JSON: " + err.Error()}
	}
	return json.Unmarshal(b, v)
}
