package store

import (
	"context"
	"io"
	"log/slog"

	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/clawkit/clawkit/pkg/errs"
)

// migrateRiver applies river's own migrations in RiverSchema (PostgreSQL
// only). It runs under the migration advisory lock with clawkit's, so
// `state migrate` on several hosts at once applies each step once; river
// versions are river's and reported separately by state status.
func (s *Store) migrateRiver(ctx context.Context) ([]int, error) {
	pg, ok := s.engine.(*Postgres)
	if !ok || pg.pool == nil {
		return nil, nil
	}
	if _, err := s.db.ExecContext(ctx, `CREATE SCHEMA IF NOT EXISTS `+RiverSchema); err != nil {
		return nil, errs.Failed(CodeMigrationFailed, "create schema %s: %v", RiverSchema, err)
	}
	m, err := rivermigrate.New(riverpgxv5.New(pg.pool), &rivermigrate.Config{
		Schema: RiverSchema,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		return nil, errs.Failed(CodeMigrationFailed, "river migrations: %v", err)
	}
	res, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil)
	if err != nil {
		return nil, errs.Failed(CodeMigrationFailed, "river migrations: %v", err)
	}
	var applied []int
	for _, v := range res.Versions {
		applied = append(applied, v.Version)
	}
	// After river's own steps (which may add or recreate tables), every
	// river table gets the lease trigger again.
	if _, err := s.db.ExecContext(ctx, riverFenceSQL); err != nil {
		return nil, errs.Failed(CodeMigrationFailed, "fence river's tables: %v", err)
	}
	return applied, nil
}

// River under the fence (docs/scale-out.md, "River under the fence").
//
// A gateway's river client runs on the gateway's own pool, whose
// connections carry its incarnation, so the lease trigger of clawkit's
// tables applies to river's as well: each of river's tables (its jobs,
// leader, queues and clients; not its migration ledger) gets the same
// statement trigger, and a statement of an owner whose lease has expired
// at the database — however late it arrives — changes no row of river's
// either. The database decides, as for clawkit's own tables, so no
// timing assumption about when the expired process stops sending is
// needed; connections without an incarnation (state migrate, an
// operator's psql) are not fenced.
//
// The trigger is (re)created after each of river's migrations, which run
// with clawkit's in `state migrate`, so a table river adds later gets it
// too.
const riverFenceSQL = `DO $fence$
DECLARE
  t text;
  fn text := (SELECT quote_ident(n.nspname) || '.clawkit_owner_fence()' FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
              WHERE p.proname = 'clawkit_owner_fence' ORDER BY n.nspname = current_schema() DESC LIMIT 1);
BEGIN
  IF fn IS NULL THEN
    RETURN; -- a schema migrated only part of the way (below version 30): no leases yet
  END IF;
  FOR t IN SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = '` + RiverSchema + `' AND c.relkind IN ('r', 'p') AND c.relname <> 'river_migration' LOOP
    IF NOT EXISTS (SELECT 1 FROM pg_trigger g JOIN pg_class c ON c.oid = g.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = '` + RiverSchema + `' AND c.relname = t AND g.tgname = 'clawkit_owner_fence') THEN
      EXECUTE format('CREATE TRIGGER clawkit_owner_fence BEFORE INSERT OR UPDATE OR DELETE ON %I.%I FOR EACH STATEMENT EXECUTE FUNCTION %s',
        '` + RiverSchema + `', t, fn);
    END IF;
  END LOOP;
END
$fence$`

// RiverUnfenced lists river's tables that lack the lease trigger (a
// database migrated by an older clawkit): a gateway warns until `state
// migrate` has run.
func RiverUnfenced(ctx context.Context, s *Store) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = $1 AND c.relkind IN ('r', 'p') AND c.relname <> 'river_migration'
  AND NOT EXISTS (SELECT 1 FROM pg_trigger g WHERE g.tgrelid = c.oid AND g.tgname = 'clawkit_owner_fence')
ORDER BY 1`, RiverSchema)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, rows.Err()
}
