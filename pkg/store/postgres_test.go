package store_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/clawkit/clawkit/pkg/config"
	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/store"
	"github.com/clawkit/clawkit/pkg/store/pgtest"
)

func TestPostgresFreshSchemaAndSessions(t *testing.T) {
	ctx := context.Background()
	e := &store.Postgres{URL: pgtest.URL(t)}
	st, err := store.Open(ctx, e)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := st.Close(); err != nil {
			t.Error(err)
		}
	}()
	v, err := st.SchemaVersion(ctx)
	if err != nil || v != store.LatestVersion() {
		t.Fatalf("schema %d (%v), want %d", v, err, store.LatestVersion())
	}
	now := time.Now()
	s, err := st.CreateSession(ctx, "main", "s1", now)
	if err != nil || s.Incarnation != 1 || s.Status != store.SessionActive {
		t.Fatalf("create: %+v %v", s, err)
	}
	if _, err := st.CreateSession(ctx, "main", "s1", now); errs.CodeOf(err) != "session_exists" {
		t.Fatalf("second create: %v", err)
	}
	s, err = st.UpdateSession(ctx, "main", "s1", "reset", 0, now)
	if err != nil || s.Incarnation != 2 {
		t.Fatalf("reset: %+v %v", s, err)
	}
	a, err := st.RecordOwner(ctx, "owner-a", "gateway", 1, "test", now)
	if err != nil {
		t.Fatal(err)
	}
	b, err := st.RecordOwner(ctx, "owner-b", "gateway", 2, "test", now)
	if err != nil || b <= a {
		t.Fatalf("incarnations %d then %d (%v): must increase", a, b, err)
	}
}

// Every migration applies on PostgreSQL, one version at a time, with the
// same version numbers as on SQLite; many concurrent migrators (hosts)
// are serialised by the advisory lock and apply each step once.
func TestPostgresMigrateSerialised(t *testing.T) {
	ctx := context.Background()
	u := pgtest.URL(t)
	first := store.Migrations()[0].Version
	res, err := store.Migrate(ctx, &store.Postgres{URL: u}, first)
	if err != nil || res.To != first {
		t.Fatalf("migrate to %d: %+v %v", first, res, err)
	}
	var wg sync.WaitGroup
	results := make([]store.MigrateResult, 4)
	errors := make([]error, 4)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errors[i] = store.Migrate(ctx, &store.Postgres{URL: u}, 0)
		}()
	}
	wg.Wait()
	applied := map[string]int{}
	for i, r := range results {
		if errors[i] != nil {
			t.Fatalf("migrator %d: %v", i, errors[i])
		}
		if r.To != store.LatestVersion() {
			t.Fatalf("migrator %d ended at %d", i, r.To)
		}
		for _, a := range r.Applied {
			applied[a]++
		}
	}
	if len(applied) != len(store.Migrations())-1 {
		t.Fatalf("applied %v, want every migration after %d", applied, first)
	}
	for a, n := range applied {
		if n != 1 {
			t.Fatalf("%s applied %d times", a, n)
		}
	}
	if _, err := store.Migrate(ctx, &store.Postgres{URL: u}, first); errs.CodeOf(err) != "schema_downgrade" {
		t.Fatalf("downgrade: %v", err)
	}
}

func TestPostgresConnectionFailureIsTemporaryWithoutSecret(t *testing.T) {
	e := &store.Postgres{URL: "postgres://someone@127.0.0.1:1/x?sslmode=disable&connect_timeout=2", Password: "s3cret-pw"}
	_, err := store.Open(context.Background(), e)
	if errs.KindOf(err) != errs.KindUnavailable || errs.CodeOf(err) != "database_unavailable" {
		t.Fatalf("got %v (kind %v)", err, errs.KindOf(err))
	}
	if strings.Contains(err.Error(), "s3cret-pw") {
		t.Fatalf("secret in %q", err)
	}
}

func TestPostgresBackupRefused(t *testing.T) {
	err := (&store.Postgres{}).Backup(context.Background(), nil, "/tmp/x", nil)
	if errs.KindOf(err) != errs.KindRefused || !strings.Contains(errs.As(err).Hint, "pg_dump") {
		t.Fatalf("got %v", err)
	}
}

func TestEngineSelection(t *testing.T) {
	// cfg builds the document as a file on disk may hold it: config set
	// refuses a password in database.url, but a file an older clawkit (or
	// an editor) wrote can still carry one, and the engine must refuse it.
	cfg := func(kv ...string) *config.Config {
		c := &config.Config{Root: map[string]any{}}
		for i := 0; i < len(kv); i += 2 {
			parts := strings.Split(kv[i], ".")
			m := c.Root
			for _, p := range parts[:len(parts)-1] {
				next, ok := m[p].(map[string]any)
				if !ok {
					next = map[string]any{}
					m[p] = next
				}
				m = next
			}
			m[parts[len(parts)-1]] = kv[i+1]
		}
		return c
	}
	noenv := func(string) string { return "" }
	if _, err := store.EngineForEnv("/h", cfg("database.engine", "postgres", "database.url", "postgres://u:pw@h/db"), noenv, nil); errs.CodeOf(err) != "database_password_in_config" {
		t.Fatalf("password in config: %v", err)
	}
	if _, err := store.EngineForEnv("/h", cfg("database.engine", "postgres", "database.url", "host=h password=pw"), noenv, nil); errs.CodeOf(err) != "database_password_in_config" {
		t.Fatalf("keyword password in config: %v", err)
	}
	if _, err := store.EngineForEnv("/h", cfg("database.engine", "postgres"), noenv, nil); errs.CodeOf(err) != "database_url_missing" {
		t.Fatalf("no url: %v", err)
	}
	env := func(k string) string {
		if k == store.EnvDatabaseURL {
			return "postgres://u:envpw@h/db"
		}
		return ""
	}
	e, err := store.EngineForEnv("/h", cfg("database.engine", "postgres"), env, func() (string, error) { t.Fatal("stored password read although the URL has one"); return "", nil })
	if err != nil || e.(*store.Postgres).URL != "postgres://u:envpw@h/db" {
		t.Fatalf("env url: %v %v", e, err)
	}
	e, err = store.EngineForEnv("/h", cfg("database.engine", "postgres", "database.url", "postgres://u@h/db"), noenv, func() (string, error) { return "stored", nil })
	if err != nil || e.(*store.Postgres).Password != "stored" {
		t.Fatalf("stored password: %v %v", e, err)
	}
	if _, err := store.EngineForEnv("/h", cfg("database.engine", "mysql"), noenv, nil); errs.CodeOf(err) != "engine_unsupported" {
		t.Fatalf("unknown engine: %v", err)
	}
}

func TestPostgresRebind(t *testing.T) {
	e := &store.Postgres{}
	for in, want := range map[string]string{
		`SELECT 1`:                       `SELECT 1`,
		`a = ? AND b = ?`:                `a = $1 AND b = $2`,
		`x = '?' AND y = ? AND "q?" = ?`: `x = '?' AND y = $1 AND "q?" = $2`,
		`INSERT INTO t VALUES (?,?,?)`:   `INSERT INTO t VALUES ($1,$2,$3)`,
		`s = 'it''s ?' AND t = ?`:        `s = 'it''s ?' AND t = $1`,
	} {
		if got := e.Rebind(in); got != want {
			t.Errorf("Rebind(%q) = %q, want %q", in, got, want)
		}
	}
}
