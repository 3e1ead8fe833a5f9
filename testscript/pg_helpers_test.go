package testscript

import (
	"path/filepath"
	"strings"
	"sync"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/clawkit/clawkit/pkg/research/google/fakeapi"
	"github.com/clawkit/clawkit/pkg/store/pgtest"
)

// PostgreSQL scripts (pg_*.txtar) start with `[!pg] skip`: the condition
// holds when a server answers ($CLAWKIT_TEST_DATABASE_URL, else
// 127.0.0.1:5432); in CI a missing server fails instead. Each script gets
// a database of its own, dropped afterwards, as $PGURL (no password in it),
// and its own fake Interactions API like the research scripts.
func init() {
	conditions["pg"] = func() (bool, error) {
		u, err := pgAdmin()
		return u != "", err
	}
	setups = append(setups, pgSetup)
}

var pgAdmin = sync.OnceValues(pgtest.AdminURL)

func pgSetup(env *testscript.Env) error {
	n, ok := env.T().(interface{ Name() string })
	if !ok || !strings.Contains(n.Name(), "/pg_") {
		return nil
	}
	admin, err := pgAdmin()
	if err != nil || admin == "" {
		return nil // the script's [!pg] skip (or the condition's error) decides
	}
	u, drop, err := pgtest.CreateDB(admin, "clawkit_ts")
	if err != nil {
		return err
	}
	env.Defer(drop)
	env.Setenv("PGURL", u)
	l, err := fakeapi.Start(filepath.Join(env.WorkDir, "fakegoogle.log"))
	if err != nil {
		return err
	}
	env.Defer(l.Close)
	env.Setenv("CLAWKIT_GOOGLE_BASE_URL", l.URL)
	env.Setenv("FAKEGOOGLE_URL", l.URL)
	env.Setenv("CLAWKIT_RESEARCH_TIME_SCALE", "1000")
	return nil
}
