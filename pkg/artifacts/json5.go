package artifacts

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// maxJSON5Depth bounds nesting so hostile input cannot exhaust the stack.
const maxJSON5Depth = 256

// ParseJSON5 parses a JSON5 document (the format of openclaw.plugin.json
// and OpenClaw's config) into plain Go values: map[string]any, []any,
// string, float64, bool and nil. It accepts JSON5's additions to JSON —
// comments, unquoted identifier keys, single-quoted strings, trailing commas,
// hexadecimal and leading/trailing-dot numbers, a leading '+', line
// continuations in strings — and rejects Infinity and NaN, which JSON cannot
// carry. Duplicate keys keep the last value, as JSON5.parse does.
func ParseJSON5(src []byte) (any, error) {
	p := &j5{s: src}
	p.skip()
	if p.err != nil {
		return nil, p.err
	}
	v := p.value(0)
	if p.err != nil {
		return nil, p.err
	}
	p.skip()
	if p.err != nil {
		return nil, p.err
	}
	if p.i != len(p.s) {
		return nil, p.fail("unexpected %q after the document", p.s[p.i])
	}
	return v, nil
}

// DecodeJSON5 parses src as JSON5 and decodes it into v through
// encoding/json (so struct tags apply).
func DecodeJSON5(src []byte, v any) error {
	x, err := ParseJSON5(src)
	if err != nil {
		return err
	}
	b, err := json.Marshal(x)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

type j5 struct {
	s   []byte
	i   int
	err error
}

func (p *j5) fail(format string, args ...any) error {
	if p.err == nil {
		line := 1 + strings.Count(string(p.s[:min(p.i, len(p.s))]), "\n")
		p.err = fmt.Errorf("line %d: %s", line, fmt.Sprintf(format, args...))
	}
	return p.err
}

// skip passes white space (JSON5 allows the Unicode Zs set and a few more)
// and comments.
func (p *j5) skip() {
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f':
			p.i++
		case c == '/' && p.i+1 < len(p.s) && p.s[p.i+1] == '/':
			for p.i < len(p.s) && p.s[p.i] != '\n' {
				p.i++
			}
		case c == '/' && p.i+1 < len(p.s) && p.s[p.i+1] == '*':
			end := strings.Index(string(p.s[p.i+2:]), "*/")
			if end < 0 {
				p.fail("unterminated block comment")
				return
			}
			p.i += 2 + end + 2
		case c >= 0x80:
			r, n := utf8.DecodeRune(p.s[p.i:])
			if r == '\u00a0' || r == '\ufeff' || r == '\u2028' || r == '\u2029' || (r >= '\u2000' && r <= '\u200a') || r == '\u3000' || r == '\u202f' || r == '\u205f' || r == '\u1680' {
				p.i += n
				continue
			}
			return
		default:
			return
		}
	}
}

func (p *j5) value(depth int) any {
	if depth > maxJSON5Depth {
		p.fail("nesting deeper than %d", maxJSON5Depth)
		return nil
	}
	if p.i >= len(p.s) {
		p.fail("unexpected end of input")
		return nil
	}
	switch c := p.s[p.i]; {
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth)
	case c == '"' || c == '\'':
		return p.str()
	case c == '-' || c == '+' || c == '.' || (c >= '0' && c <= '9'):
		return p.number()
	default:
		id := p.ident()
		switch id {
		case "true":
			return true
		case "false":
			return false
		case "null":
			return nil
		case "Infinity", "NaN":
			p.fail("%s cannot be represented", id)
		case "":
			p.fail("unexpected %q", c)
		default:
			p.fail("unexpected identifier %q", id)
		}
		return nil
	}
}

func (p *j5) object(depth int) any {
	p.i++ // {
	m := map[string]any{}
	for {
		p.skip()
		if p.err != nil {
			return nil
		}
		if p.i >= len(p.s) {
			p.fail("unterminated object")
			return nil
		}
		if p.s[p.i] == '}' {
			p.i++
			return m
		}
		var key string
		if c := p.s[p.i]; c == '"' || c == '\'' {
			key = p.str()
		} else {
			key = p.ident()
			if key == "" {
				p.fail("expected a key, found %q", c)
			}
		}
		if p.err != nil {
			return nil
		}
		p.skip()
		if p.i >= len(p.s) || p.s[p.i] != ':' {
			p.fail("expected ':' after key %q", key)
			return nil
		}
		p.i++
		p.skip()
		v := p.value(depth + 1)
		if p.err != nil {
			return nil
		}
		m[key] = v
		p.skip()
		if p.err != nil {
			return nil
		}
		if p.i < len(p.s) && p.s[p.i] == ',' {
			p.i++
			continue
		}
		if p.i < len(p.s) && p.s[p.i] == '}' {
			p.i++
			return m
		}
		p.fail("expected ',' or '}' in object")
		return nil
	}
}

func (p *j5) array(depth int) any {
	p.i++ // [
	a := []any{}
	for {
		p.skip()
		if p.err != nil {
			return nil
		}
		if p.i >= len(p.s) {
			p.fail("unterminated array")
			return nil
		}
		if p.s[p.i] == ']' {
			p.i++
			return a
		}
		v := p.value(depth + 1)
		if p.err != nil {
			return nil
		}
		a = append(a, v)
		p.skip()
		if p.err != nil {
			return nil
		}
		if p.i < len(p.s) && p.s[p.i] == ',' {
			p.i++
			continue
		}
		if p.i < len(p.s) && p.s[p.i] == ']' {
			p.i++
			return a
		}
		p.fail("expected ',' or ']' in array")
		return nil
	}
}

func isIdentStart(r rune) bool {
	return r == '_' || r == '$' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= 0x80 && r != utf8.RuneError)
}

func (p *j5) ident() string {
	start := p.i
	for p.i < len(p.s) {
		r, n := utf8.DecodeRune(p.s[p.i:])
		if isIdentStart(r) || (p.i > start && r >= '0' && r <= '9') {
			p.i += n
			continue
		}
		break
	}
	return string(p.s[start:p.i])
}

func (p *j5) str() string {
	q := p.s[p.i]
	p.i++
	var b strings.Builder
	for {
		if p.i >= len(p.s) {
			p.fail("unterminated string")
			return ""
		}
		c := p.s[p.i]
		switch {
		case c == q:
			p.i++
			return b.String()
		case c == '\n' || c == '\r':
			p.fail("newline in string")
			return ""
		case c == '\\':
			p.i++
			if p.i >= len(p.s) {
				p.fail("unterminated escape")
				return ""
			}
			e := p.s[p.i]
			p.i++
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
				if p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
					p.fail("octal escapes are not allowed")
					return ""
				}
				b.WriteByte(0)
			case '\n':
			case '\r':
				if p.i < len(p.s) && p.s[p.i] == '\n' {
					p.i++
				}
			case 'x':
				if p.i+2 > len(p.s) {
					p.fail("short \\x escape")
					return ""
				}
				v, err := strconv.ParseUint(string(p.s[p.i:p.i+2]), 16, 8)
				if err != nil {
					p.fail("bad \\x escape")
					return ""
				}
				b.WriteRune(rune(v))
				p.i += 2
			case 'u':
				r := p.hex4()
				if p.err != nil {
					return ""
				}
				if r >= 0xd800 && r < 0xdc00 && p.i+1 < len(p.s) && p.s[p.i] == '\\' && p.s[p.i+1] == 'u' {
					p.i += 2
					lo := p.hex4()
					if p.err != nil {
						return ""
					}
					r = 0x10000 + (r-0xd800)<<10 + (lo - 0xdc00)
				}
				b.WriteRune(r)
			default:
				if e >= '1' && e <= '9' {
					p.fail("octal escapes are not allowed")
					return ""
				}
				b.WriteByte(e)
			}
		case c >= 0x80:
			// Invalid UTF-8 becomes U+FFFD byte by byte, as encoding/json
			// (and a UTF-8 decoder feeding JSON5.parse) does.
			r, n := utf8.DecodeRune(p.s[p.i:])
			b.WriteRune(r)
			p.i += n
		default:
			b.WriteByte(c)
			p.i++
		}
	}
}

func (p *j5) hex4() rune {
	if p.i+4 > len(p.s) {
		p.fail("short \\u escape")
		return 0
	}
	v, err := strconv.ParseUint(string(p.s[p.i:p.i+4]), 16, 32)
	if err != nil {
		p.fail("bad \\u escape")
		return 0
	}
	p.i += 4
	return rune(v)
}

func (p *j5) number() any {
	start := p.i
	neg := false
	if c := p.s[p.i]; c == '+' || c == '-' {
		neg = c == '-'
		p.i++
	}
	if p.i+1 < len(p.s) && p.s[p.i] == '0' && (p.s[p.i+1] == 'x' || p.s[p.i+1] == 'X') {
		p.i += 2
		hs := p.i
		for p.i < len(p.s) && strings.IndexByte("0123456789abcdefABCDEF", p.s[p.i]) >= 0 {
			p.i++
		}
		v, err := strconv.ParseUint(string(p.s[hs:p.i]), 16, 64)
		if err != nil {
			p.fail("bad hexadecimal number")
			return nil
		}
		f := float64(v)
		if neg {
			f = -f
		}
		return f
	}
	if id := p.ident(); id != "" {
		p.fail("%s cannot be represented", id)
		return nil
	}
	ns := p.i
	for p.i < len(p.s) && strings.IndexByte("0123456789.eE+-", p.s[p.i]) >= 0 {
		p.i++
	}
	lit := string(p.s[ns:p.i])
	if lit == "" || lit == "." || strings.HasPrefix(lit, "+") || strings.HasPrefix(lit, "-") {
		p.fail("bad number %q", string(p.s[start:p.i]))
		return nil
	}
	if len(lit) > 1 && lit[0] == '0' && lit[1] >= '0' && lit[1] <= '9' {
		p.fail("leading zeros are not allowed: %q", lit)
		return nil
	}
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil || math.IsInf(f, 0) {
		p.fail("bad number %q", lit)
		return nil
	}
	if neg {
		f = -f
	}
	return f
}
