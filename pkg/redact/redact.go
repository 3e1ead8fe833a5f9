// Package redact removes secrets from text before it is shown, logged or
// stored: the one place that knows what a secret in a URL looks like.
//
// Two kinds of secret are handled. URLs carry them in their userinfo and in
// query parameters with well-known names (key, api_key, token, password,
// sig, …): URL and URLsIn replace those values with the Mask. A caller's
// own secrets (an API key, a header profile's value, a database password)
// may come back inside a provider's or a server's text verbatim: Values
// replaces every occurrence of each. See docs/design.md §2, "Text from outside is data".
package redact

import (
	"bytes"
	"encoding/json"
	"net/url"
	"regexp"
	"strings"
	"sync"
)

// Mask replaces every redacted value.
const Mask = "REDACTED"

// minSecret is the shortest caller secret Values replaces: shorter strings
// would mangle ordinary text and are not credible secrets.
const minSecret = 6

// secretParams are the query parameter names whose value is a credential
// in the APIs clawkit talks to and in common practice (compared in lower
// case, with '-' read as '_').
var secretParams = map[string]bool{
	"key": true, "api_key": true, "apikey": true, "access_token": true,
	"token": true, "auth": true, "password": true, "passwd": true,
	"pwd": true, "secret": true, "client_secret": true, "sig": true,
	"signature": true, "x_goog_api_key": true, "refresh_token": true,
	"id_token": true, "session_token": true, "x_amz_signature": true,
	"x_amz_security_token": true, "x_amz_credential": true,
}

// IsSecretParam reports whether a query parameter of this name carries a
// credential.
func IsSecretParam(name string) bool {
	return secretParams[strings.ReplaceAll(strings.ToLower(name), "-", "_")]
}

// URL returns raw with its userinfo (a password, or a lone user name,
// which often is a token) and every secret query value replaced by Mask.
// It edits the text in place rather than re-serialising a parsed URL, so
// nothing else about the URL changes and redacting twice changes nothing.
func URL(raw string) string {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok || scheme == "" {
		return scrubParams(raw)
	}
	authEnd := strings.IndexAny(rest, "/?#")
	if authEnd < 0 {
		authEnd = len(rest)
	}
	if at := strings.LastIndex(rest[:authEnd], "@"); at >= 0 {
		user, _, hasPass := strings.Cut(rest[:at], ":")
		if hasPass {
			rest = user + ":" + Mask + rest[at:]
		} else if rest[:at] != Mask {
			rest = Mask + rest[at:]
		}
		authEnd = strings.IndexAny(rest, "/?#")
		if authEnd < 0 {
			authEnd = len(rest)
		}
	}
	path := rest[authEnd:]
	q := strings.IndexByte(path, '?')
	if q < 0 {
		return scheme + "://" + rest
	}
	frag := ""
	query := path[q+1:]
	if h := strings.IndexByte(query, '#'); h >= 0 {
		query, frag = query[:h], query[h:]
	}
	parts := strings.Split(query, "&")
	for i, p := range parts {
		name, _, hasValue := strings.Cut(p, "=")
		dn, err := url.QueryUnescape(name)
		if err != nil {
			dn = name
		}
		if hasValue && IsSecretParam(dn) {
			parts[i] = name + "=" + Mask
		}
	}
	return scheme + "://" + rest[:authEnd] + path[:q+1] + strings.Join(parts, "&") + frag
}

var urlInText = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.\-]*://[^\s"'<>]+`)
})

var paramInText = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)([?&;\s]|^)((?:x[-_]goog[-_])?api[-_]?key|key|access[-_]token|token|password|passwd|secret|client[-_]secret|sig|signature)=([^&\s"'<>]+)`)
})

// URLsIn redacts every URL found in free text (an error message, a
// provider's status) with URL's rules, and any stray key=value pair with a
// secret name.
func URLsIn(s string) string {
	if !strings.Contains(s, "://") && !strings.Contains(s, "=") {
		return s
	}
	s = urlInText().ReplaceAllStringFunc(s, URL)
	return scrubParams(s)
}

func scrubParams(s string) string {
	return paramInText().ReplaceAllStringFunc(s, func(m string) string {
		sub := paramInText().FindStringSubmatch(m)
		if sub[3] == Mask {
			return m
		}
		return sub[1] + sub[2] + "=" + Mask
	})
}

// Values replaces every occurrence of each secret (at least six bytes
// long; shorter ones are ignored) in s, and of its URL query encoding, by
// Mask, then applies URLsIn.
func Values(s string, secrets ...string) string {
	for _, sec := range secrets {
		if len(sec) < minSecret {
			continue
		}
		s = strings.ReplaceAll(s, sec, Mask)
		if q := url.QueryEscape(sec); q != sec {
			s = strings.ReplaceAll(s, q, Mask)
		}
	}
	return URLsIn(s)
}

// Bytes replaces every occurrence of each secret (at least six bytes; see
// Values) in b by Mask, also in its JSON string encoding and its URL query
// encoding, and applies no URL rules: it is for a whole response body from
// a provider, read before anything parses it, so that a key the provider
// echoes reaches no message, job record, published file or log. b is
// returned as it is when no secret occurs in it.
func Bytes(b []byte, secrets ...string) []byte {
	for _, sec := range secrets {
		if len(sec) < minSecret {
			continue
		}
		// As it is, as a JSON string (with and without HTML escaping, as
		// encoders differ) and query-escaped.
		forms := []string{sec, url.QueryEscape(sec)}
		for _, html := range []bool{true, false} {
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(html)
			if enc.Encode(sec) == nil {
				j := bytes.TrimSpace(buf.Bytes())
				forms = append(forms, string(j[1:len(j)-1]))
			}
		}
		for _, f := range forms {
			if len(f) >= minSecret && bytes.Contains(b, []byte(f)) {
				b = bytes.ReplaceAll(b, []byte(f), []byte(Mask))
			}
		}
	}
	return b
}
