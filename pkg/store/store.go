// Package store is clawkit's database: database/sql behind an Engine, with
// versioned migrations defined in code.
//
// The default engine is embedded SQLite (modernc.org/sqlite, no cgo) in
// <home>/state.db. The PostgreSQL engine (pgx stdlib) implements the same
// Engine interface; SQL in clawkit is written with ? placeholders and an
// engine rebinds them when its driver needs another style.
//
// Schema policy: a fresh database is created at the newest schema; a
// database at an older schema is refused until `clawkit state migrate`
// upgrades it (so an upgrade is always an explicit, exclusive act); a newer
// schema than this binary knows is refused and never downgraded.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/clawkit/clawkit/pkg/errs"
)

// Engine is a database backend.
type Engine interface {
	// Name is the config value of database.engine ("sqlite", "postgres").
	Name() string
	// Open opens a connection pool. create=false must not create anything
	// on disk (read-only commands on a fresh home).
	Open(ctx context.Context) (*sql.DB, error)
	// Exists reports whether the database already exists.
	Exists(ctx context.Context) (bool, error)
	// Backup writes a consistent copy of the database to path, which must
	// not exist yet. beginWrite (the write fence; nil: none) is called
	// immediately before the copy is published at path.
	Backup(ctx context.Context, db *sql.DB, path string, beginWrite func() error) error
	// Rebind rewrites ? placeholders for the engine's driver.
	Rebind(query string) string
}

// Migration is one schema step.
type Migration struct {
	Version int
	Name    string
	SQL     string
	// Postgres, when set, replaces SQL on PostgreSQL (same version: the
	// two engines always agree on what a schema version means).
	Postgres string
}

// sqlFor returns the migration's statements for engine e.
func (m Migration) sqlFor(e Engine) string {
	if IsPostgres(e) && m.Postgres != "" {
		return m.Postgres
	}
	return m.SQL
}

// migrations lists every schema step in version order. Each domain's
// steps are a function of its migrations_*.go file, called here
// explicitly: no init registers anything and no package variable holds
// the list, so what the schema is can be read in one place. A duplicate
// version is a programming error, caught by any test that opens a store.
func migrations() []Migration {
	var ms []Migration
	add := func(m Migration) {
		for _, x := range ms {
			if x.Version == m.Version {
				panic(fmt.Sprintf("store: duplicate migration version %d (%s, %s)", m.Version, x.Name, m.Name))
			}
		}
		ms = append(ms, m)
	}
	coreMigrations(add)            // 1–9
	researchMigrations(add)        // 10–19
	skillsMigrations(add)          // 20–29
	ownerLeaseMigrations(add)      // 30–31, docs/scale-out.md
	researchCancelMigrations(add)  // 32
	researchHotPollMigrations(add) // 33
	researchChainMigrations(add)   // 34
	sort.Slice(ms, func(i, j int) bool { return ms[i].Version < ms[j].Version })
	return ms
}

// Migrations returns every known migration in order.
func Migrations() []Migration { return migrations() }

// LatestVersion is the newest schema this binary knows.
func LatestVersion() int {
	ms := migrations()
	if len(ms) == 0 {
		return 0
	}
	return ms[len(ms)-1].Version
}

// Store is an open database at the current schema.
type Store struct {
	db     *sql.DB
	engine Engine
	// fence, when set (Gated), is the write fence: called immediately
	// before each of this Store's own writes (sessions), which it refuses
	// when it fails.
	fence func() error
	// stmts are the prepared statements of this database (Prepared).
	stmts *stmtCache
}

// Gated returns a view of s whose own writes (session create, update and
// the default session's first use) first pass fence, immediately before
// the statement: a process that no longer owns the state writes nothing,
// and a refusal found by the read before the write stays a refusal before
// any effect. The view shares s's pool; close s, not the view.
func (s *Store) Gated(fence func() error) *Store {
	c := *s
	c.fence = fence
	return &c
}

// beginWrite runs the write fence of a Gated view (nil otherwise).
func (s *Store) beginWrite() error {
	if s.fence == nil {
		return nil
	}
	return s.fence()
}

// DB returns the pool.
func (s *Store) DB() *sql.DB { return s.db }

// Engine returns the engine.
func (s *Store) Engine() Engine { return s.engine }

// Rebind rewrites placeholders for the engine.
func (s *Store) Rebind(q string) string { return s.engine.Rebind(q) }

// Close closes the prepared statements and the pool.
func (s *Store) Close() error {
	s.stmts.close()
	return s.db.Close()
}

// Open opens the database. A fresh database is initialised at the newest
// schema; an older one is refused (run state migrate) and so is a newer one.
func Open(ctx context.Context, e Engine) (*Store, error) {
	db, err := e.Open(ctx)
	if err != nil {
		return nil, err
	}
	s := &Store{db: db, engine: e, stmts: &stmtCache{}}
	v, err := s.SchemaVersion(ctx)
	if err != nil {
		_ = db.Close() // the open failed: its error is the one to report
		return nil, err
	}
	latest := LatestVersion()
	switch {
	case v == 0:
		if _, err := s.migrate(ctx, latest); err != nil {
			_ = db.Close() // the migration's error is the one to report
			return nil, err
		}
	case v > latest:
		_ = db.Close() // refused: the refusal is the one to report
		return nil, errs.Refused(CodeSchemaTooNew, "the database schema is version %d but this clawkit knows only up to %d", v, latest).
			WithHint("use a newer clawkit; databases are never downgraded")
	case v < latest:
		_ = db.Close() // refused: the refusal is the one to report
		return nil, errs.Refused(CodeSchemaOutdated, "the database schema is version %d; this clawkit needs %d", v, latest).
			WithHint("run 'clawkit state migrate' (stop the gateway first)")
	}
	return s, nil
}

// SchemaVersion reads meta.schema_version (0 for an empty database).
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	ok, err := tableExists(ctx, s.db, s.engine, "meta")
	if err != nil {
		return 0, errs.Failed(errs.CodeStoreUnreadable, "cannot read the database: %v", err).Wrap(err)
	}
	if !ok {
		return 0, nil
	}
	var v int
	err = s.db.QueryRowContext(ctx, `SELECT schema_version FROM meta WHERE id = 1`).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, errs.Failed(errs.CodeStoreUnreadable, "cannot read the schema version: %v", err).Wrap(err)
	}
	return v, nil
}

// MigrateResult says what Migrate did.
type MigrateResult struct {
	From    int      `json:"from"`
	To      int      `json:"to"`
	Applied []string `json:"applied"`
	// RiverApplied lists river's migrations applied (PostgreSQL).
	RiverApplied []int `json:"riverApplied,omitempty"`
}

// Migrate opens the database and applies migrations up to target (0 means
// the newest). It refuses to go down and refuses newer schemas.
func Migrate(ctx context.Context, e Engine, target int) (_ MigrateResult, err error) {
	db, err := e.Open(ctx)
	if err != nil {
		return MigrateResult{}, err
	}
	defer func() { err = errors.Join(err, db.Close()) }()
	s := &Store{db: db, engine: e, stmts: &stmtCache{}}
	if target == 0 {
		target = LatestVersion()
	}
	known := false
	for _, m := range migrations() {
		if m.Version == target {
			known = true
		}
	}
	if !known {
		return MigrateResult{}, errs.Usage(CodeUnknownSchemaVersion, "there is no schema version %d", target).
			WithHint("known versions: %s", versionList())
	}
	var res MigrateResult
	err = withMigrationLock(ctx, db, e, func() error {
		if err := s.refuseLeased(ctx); err != nil {
			return err
		}
		if res, err = s.migrateLocked(ctx, target); err != nil {
			return err
		}
		res.RiverApplied, err = s.migrateRiver(ctx)
		return err
	})
	return res, err
}

// refuseLeased refuses a schema change while any gateway holds an owner
// lease on a shared database: its code expects the schema it started with.
func (s *Store) refuseLeased(ctx context.Context) error {
	if !IsPostgres(s.engine) {
		return nil // SQLite: the owner lock already excludes a gateway
	}
	v, err := s.SchemaVersion(ctx)
	if err != nil || v < leaseVersion {
		return err
	}
	leases, err := liveLeases(ctx, s.db)
	if err != nil {
		return err
	}
	if len(leases) == 0 {
		return nil
	}
	l := leases[0]
	more := ""
	if len(leases) > 1 {
		more = fmt.Sprintf(" (and %d more)", len(leases)-1)
	}
	return errs.Refused(CodeDatabaseLeased, "gateway %s (pid %d on host %s, home %s) holds an owner lease on this database%s", l.OwnerID, l.PID, l.Host, l.Home, more).
		WithHint("stop every gateway on this database first ('clawkit gateway stop' on each host); a killed gateway's lease expires within %s", time.Duration(l.ExpiresInMs)*time.Millisecond)
}

// leaseVersion is the schema that introduced owner leases.
const leaseVersion = 30

func versionList() string {
	s := ""
	for i, m := range migrations() {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprint(m.Version)
	}
	return s
}

func (s *Store) migrate(ctx context.Context, target int) (res MigrateResult, err error) {
	// On PostgreSQL every host may try at once: the version is read again
	// under the advisory lock, so exactly one applies each migration.
	err = withMigrationLock(ctx, s.db, s.engine, func() error {
		if res, err = s.migrateLocked(ctx, target); err != nil {
			return err
		}
		// A fresh PostgreSQL database gets river's tables with clawkit's.
		res.RiverApplied, err = s.migrateRiver(ctx)
		return err
	})
	return res, err
}

func (s *Store) migrateLocked(ctx context.Context, target int) (MigrateResult, error) {
	from, err := s.SchemaVersion(ctx)
	if err != nil {
		return MigrateResult{}, err
	}
	res := MigrateResult{From: from, To: from, Applied: []string{}}
	if from > LatestVersion() {
		return res, errs.Refused(CodeSchemaTooNew, "the database schema is version %d but this clawkit knows only up to %d", from, LatestVersion()).
			WithHint("use a newer clawkit; databases are never downgraded")
	}
	if target < from {
		return res, errs.Refused(CodeSchemaDowngrade, "the database is at schema %d; refusing to go down to %d", from, target).
			WithHint("databases are never downgraded")
	}
	for _, m := range migrations() {
		if m.Version <= from || m.Version > target {
			continue
		}
		if err := s.apply(ctx, m); err != nil {
			return res, err
		}
		res.To = m.Version
		res.Applied = append(res.Applied, fmt.Sprintf("%d_%s", m.Version, m.Name))
	}
	return res, nil
}

// apply runs one migration and bumps the version in the same transaction, so
// a crash leaves the schema at a whole version.
func (s *Store) apply(ctx context.Context, m Migration) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return errs.Failed(CodeMigrationFailed, "migration %d (%s): %v", m.Version, m.Name, err)
	}
	defer func() { _ = tx.Rollback() }() // after Commit a no-op (sql.ErrTxDone)
	// A migration for the other engine only is a version step here.
	if q := m.sqlFor(s.engine); q != "" {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return errs.Failed(CodeMigrationFailed, "migration %d (%s): %v", m.Version, m.Name, err)
		}
	}
	if _, err := tx.ExecContext(ctx, s.Rebind(`INSERT INTO meta (id, schema_version) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET schema_version = excluded.schema_version`), m.Version); err != nil {
		return errs.Failed(CodeMigrationFailed, "migration %d (%s): %v", m.Version, m.Name, err)
	}
	if err := tx.Commit(); err != nil {
		return errs.Failed(CodeMigrationFailed, "migration %d (%s): %v", m.Version, m.Name, err)
	}
	return nil
}
