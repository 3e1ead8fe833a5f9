package config

import (
	"net/url"
	"regexp"
	"strings"
	"sync"

	"github.com/clawkit/clawkit/pkg/errs"
)

// config.json is not a secret store: only credentials.json (0600, in the
// home) ever holds a secret. The one key that could carry one is the
// PostgreSQL connection string (docs/scale-out.md, "Credentials"), so a
// value that would put a password there is refused when it is set, not only
// later when a command opens the database.

// DatabaseURLKey is the dotted path of the PostgreSQL connection string.
const DatabaseURLKey = "database.url"

// URLHasPassword reports whether a PostgreSQL connection string carries a
// password, in URL form (postgres://u:pw@…, ?password=…) or keyword form
// (password=…).
func URLHasPassword(s string) bool {
	if s == "" {
		return false
	}
	if u, err := url.Parse(s); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		if _, ok := u.User.Password(); ok {
			return true
		}
		return u.Query().Has("password")
	}
	for _, f := range strings.Fields(s) {
		if strings.HasPrefix(strings.ToLower(f), "password=") {
			return true
		}
	}
	// A URL that does not parse may still hold "user:secret@host".
	if _, rest, ok := strings.Cut(s, "://"); ok {
		if at := strings.LastIndex(rest, "@"); at >= 0 {
			return strings.Contains(rest[:at], ":")
		}
	}
	return false
}

// ErrPasswordInConfig is the refusal for a database password bound for
// config.json. It never quotes the value.
func ErrPasswordInConfig() *errs.Error {
	return errs.Refused(CodeDatabasePasswordInConfig, "%s must not carry a password: config.json is not a secret store", DatabaseURLKey).
		WithHint("set the URL without it (postgres://USER@HOST:5432/DBNAME) and store the password with 'clawkit auth add database --provider postgres --api-key-stdin', or in PGPASSFILE/~/.pgpass")
}

// CheckSet refuses a value that would put a secret into config.json: it is
// applied to an empty document and the result's database.url inspected, so
// every way of reaching that key (database.url, database, …) is covered.
func CheckSet(path string, v any) error {
	probe := &Config{Root: map[string]any{}}
	if err := probe.set(path, v); err != nil {
		return nil // the real Set reports the path's own error
	}
	if URLHasPassword(probe.String(DatabaseURLKey)) {
		return ErrPasswordInConfig()
	}
	return nil
}

var keywordPassword = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)(password=)\S*`) })

// Redacted returns a copy of the document safe to print: a password that an
// older clawkit let into database.url is replaced by "xxxxx".
func (c *Config) Redacted() *Config {
	s := c.String(DatabaseURLKey)
	if !URLHasPassword(s) {
		return c
	}
	out := &Config{Path: c.Path, Root: deepCopy(c.Root).(map[string]any)}
	red := keywordPassword().ReplaceAllString(s, "${1}xxxxx")
	if u, err := url.Parse(s); err == nil && u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
		}
		q := u.Query()
		if q.Has("password") {
			q.Set("password", "xxxxx")
			u.RawQuery = q.Encode()
		}
		red = u.String()
	} else if err != nil {
		red = "(redacted: it carries a password)"
	}
	_ = out.set(DatabaseURLKey, red)
	return out
}

func deepCopy(v any) any {
	switch t := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, e := range t {
			m[k] = deepCopy(e)
		}
		return m
	case []any:
		a := make([]any, len(t))
		for i, e := range t {
			a[i] = deepCopy(e)
		}
		return a
	default:
		return v
	}
}
