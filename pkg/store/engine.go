package store

import (
	"net/url"
	"path/filepath"
	"strings"

	"github.com/clawkit/clawkit/pkg/config"
	"github.com/clawkit/clawkit/pkg/errs"
)

// EnvDatabaseURL overrides database.url (and may carry a password, since
// it never lands in a file).
const EnvDatabaseURL = "CLAWKIT_DATABASE_URL"

// EngineForEnv picks the engine configured for a home. It is called only
// by a process that already owns the home (offline, under the owner lock,
// or a gateway): a command routed to a gateway never reads database
// settings. password, when not nil, supplies a stored database password
// (credentials.json) for URLs that carry none and when libpq's PGPASSWORD
// and password file give none either.
func EngineForEnv(home string, cfg *config.Config, getenv func(string) string, password func() (string, error)) (Engine, error) {
	switch name := cfg.String("database.engine"); name {
	case "", "sqlite":
		return SQLite{Path: filepath.Join(home, DBFileName)}, nil
	case "postgres":
		cfgURL := cfg.String("database.url")
		if hasPassword(cfgURL) {
			return nil, errs.Refused("database_password_in_config", "database.url in config.json carries a password").
				WithHint("remove it from the URL ('clawkit config set database.url postgres://USER@HOST/DB') and supply it through PGPASSWORD, PGPASSFILE/~/.pgpass or a database entry in credentials.json")
		}
		u := cfgURL
		if v := getenv(EnvDatabaseURL); v != "" {
			u = v
		}
		if u == "" {
			return nil, errs.Usage("database_url_missing", "database.engine is postgres but no database.url is configured").
				WithHint("set it with 'clawkit config set database.url postgres://USER@HOST:5432/DBNAME' or export %s", EnvDatabaseURL)
		}
		pg := &Postgres{URL: u}
		if password != nil && !hasPassword(u) && getenv("PGPASSWORD") == "" {
			p, err := password()
			if err != nil {
				return nil, err
			}
			pg.Password = p
		}
		return pg, nil
	default:
		return nil, errs.Failed("engine_unsupported", "unknown database.engine %q", name).
			WithHint("use sqlite (the default) or postgres")
	}
}

// hasPassword reports whether a connection string carries a password, in
// URL form (postgres://user:pw@…, ?password=) or keyword form (password=…).
func hasPassword(s string) bool {
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
	return false
}
