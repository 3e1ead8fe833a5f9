package store

import (
	"path/filepath"

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
		if config.URLHasPassword(cfgURL) {
			return nil, config.ErrPasswordInConfig()
		}
		u := cfgURL
		if v := getenv(EnvDatabaseURL); v != "" {
			u = v
		}
		if u == "" {
			return nil, errs.Usage(CodeDatabaseUrlMissing, "database.engine is postgres but no database.url is configured").
				WithHint("set it with 'clawkit config set database.url postgres://USER@HOST:5432/DBNAME' or export %s", EnvDatabaseURL)
		}
		pg := &Postgres{URL: u}
		if password != nil && !config.URLHasPassword(u) && getenv("PGPASSWORD") == "" {
			p, err := password()
			if err != nil {
				return nil, err
			}
			pg.Password = p
		}
		return pg, nil
	default:
		return nil, errs.Failed(CodeEngineUnsupported, "unknown database.engine %q", name).
			WithHint("use sqlite (the default) or postgres")
	}
}
