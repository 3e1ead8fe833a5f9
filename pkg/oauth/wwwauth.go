package oauth

import "strings"

// Challenge is one challenge of a WWW-Authenticate header (RFC 9110
// §11.6.1): a scheme and its auth-params (names in lower case). A
// token68 challenge keeps its value in Token68.
type Challenge struct {
	Scheme  string
	Params  map[string]string
	Token68 string
}

// Bounds on a WWW-Authenticate header: the server is untrusted and the
// parser must stay linear and small whatever it sends.
const (
	maxChallengeBytes = 16 << 10
	maxChallenges     = 16
	maxParams         = 32
)

// ParseChallenges parses the values of every WWW-Authenticate header of a
// response. Malformed parts end the parse: what came before is kept, and
// nothing after a syntax error is guessed at.
func ParseChallenges(values []string) []Challenge {
	var out []Challenge
	total := 0
	for _, v := range values {
		total += len(v)
		if total > maxChallengeBytes {
			break
		}
		out = append(out, parseHeader(v)...)
		if len(out) >= maxChallenges {
			return out[:maxChallenges]
		}
	}
	return out
}

// Bearer returns the first Bearer challenge, else the first DPoP one (a
// server that wants DPoP-bound tokens challenges with that scheme, RFC
// 9449 §7.1, with the same parameters); schemes compare without case.
func Bearer(cs []Challenge) (Challenge, bool) {
	for _, scheme := range []string{"Bearer", SchemeDPoP} {
		for _, c := range cs {
			if strings.EqualFold(c.Scheme, scheme) {
				return c, true
			}
		}
	}
	return Challenge{}, false
}

type lexer struct {
	s string
	i int
}

func (l *lexer) skipOWS() {
	for l.i < len(l.s) && (l.s[l.i] == ' ' || l.s[l.i] == '\t') {
		l.i++
	}
}

func (l *lexer) skipCommas() {
	for {
		l.skipOWS()
		if l.i < len(l.s) && l.s[l.i] == ',' {
			l.i++
			continue
		}
		return
	}
}

func isTchar(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

func (l *lexer) token() string {
	start := l.i
	for l.i < len(l.s) && isTchar(l.s[l.i]) {
		l.i++
	}
	return l.s[start:l.i]
}

// quoted reads a quoted-string after its opening quote; ok is false when
// it is not closed.
func (l *lexer) quoted() (string, bool) {
	var b strings.Builder
	for l.i < len(l.s) {
		c := l.s[l.i]
		l.i++
		switch c {
		case '"':
			return b.String(), true
		case '\\':
			if l.i >= len(l.s) {
				return "", false
			}
			b.WriteByte(l.s[l.i])
			l.i++
		default:
			b.WriteByte(c)
		}
	}
	return "", false
}

func parseHeader(s string) []Challenge {
	l := &lexer{s: s}
	var out []Challenge
	for {
		l.skipCommas()
		if l.i >= len(l.s) {
			return out
		}
		scheme := l.token()
		if scheme == "" {
			return out
		}
		c := Challenge{Scheme: scheme, Params: map[string]string{}}
		l.skipOWS()
		// token68: the characters of a token68 then only '=' padding, then
		// a comma or the end.
		if t, ok := l.token68(); ok {
			c.Token68 = t
			out = append(out, c)
			continue
		}
		for {
			save := l.i
			l.skipCommas()
			name := l.token()
			if name == "" {
				// The end, or a syntax error: keep what came before.
				return append(out, c)
			}
			l.skipOWS()
			if l.i >= len(l.s) || l.s[l.i] != '=' {
				// A bare token begins the next challenge.
				l.i = save
				break
			}
			l.i++
			l.skipOWS()
			var val string
			if l.i < len(l.s) && l.s[l.i] == '"' {
				l.i++
				v, ok := l.quoted()
				if !ok {
					return append(out, c)
				}
				val = v
			} else {
				val = l.token()
			}
			if len(c.Params) < maxParams {
				name = strings.ToLower(name)
				if _, dup := c.Params[name]; !dup { // the first wins
					c.Params[name] = val
				}
			}
			l.skipOWS()
			if l.i < len(l.s) && l.s[l.i] != ',' {
				return append(out, c)
			}
		}
		out = append(out, c)
	}
}

// token68 reads a token68 (RFC 9110 §11.2) when one stands here alone:
// its characters, '=' padding, then a comma or the end.
func (l *lexer) token68() (string, bool) {
	j := l.i
	for j < len(l.s) && isToken68(l.s[j]) {
		j++
	}
	if j == l.i {
		return "", false
	}
	for j < len(l.s) && l.s[j] == '=' {
		j++
	}
	t := l.s[l.i:j]
	for j < len(l.s) && (l.s[j] == ' ' || l.s[j] == '\t') {
		j++
	}
	if j < len(l.s) && l.s[j] != ',' {
		return "", false
	}
	l.i = j
	return t, true
}

func isToken68(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return strings.IndexByte("-._~+/", c) >= 0
}

// Scopes splits a space-delimited scope string (RFC 6749 §3.3).
func Scopes(s string) []string { return strings.Fields(s) }
