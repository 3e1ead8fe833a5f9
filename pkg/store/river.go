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
		return nil, errs.Failed("migration_failed", "create schema %s: %v", RiverSchema, err)
	}
	m, err := rivermigrate.New(riverpgxv5.New(pg.pool), &rivermigrate.Config{
		Schema: RiverSchema,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		return nil, errs.Failed("migration_failed", "river migrations: %v", err)
	}
	res, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil)
	if err != nil {
		return nil, errs.Failed("migration_failed", "river migrations: %v", err)
	}
	var applied []int
	for _, v := range res.Versions {
		applied = append(applied, v.Version)
	}
	return applied, nil
}
