package store

import (
	"context"
	"fmt"
)

// RiverSchema is the PostgreSQL schema holding river's tables (its own
// migrations are applied there by `state migrate`).
const RiverSchema = "river"

// Status is `clawkit state status`.
type Status struct {
	Engine        string      `json:"engine"`
	SchemaVersion int         `json:"schemaVersion"`
	LatestVersion int         `json:"latestVersion"`
	RiverSchema   string      `json:"riverSchema,omitempty"`
	RiverVersion  *int        `json:"riverVersion,omitempty"`
	Leases        []LeaseInfo `json:"leases"`
}

// Status reports the schema, river's migration version and live leases.
func (s *Store) Status(ctx context.Context) (*Status, error) {
	v, err := s.SchemaVersion(ctx)
	if err != nil {
		return nil, err
	}
	st := &Status{Engine: s.engine.Name(), SchemaVersion: v, LatestVersion: LatestVersion(), Leases: []LeaseInfo{}}
	if !IsPostgres(s.engine) {
		return st, nil
	}
	st.RiverSchema = RiverSchema
	rv, err := RiverVersion(ctx, s)
	if err != nil {
		return nil, err
	}
	st.RiverVersion = rv
	if v >= leaseVersion {
		if st.Leases, err = liveLeases(ctx, s.db); err != nil {
			return nil, err
		}
	}
	return st, nil
}

// RiverVersion is the newest river migration applied (nil when river's
// tables were never installed).
func RiverVersion(ctx context.Context, s *Store) (*int, error) {
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM information_schema.tables WHERE table_schema = $1 AND table_name = 'river_migration'`, RiverSchema).Scan(&n); err != nil {
		return nil, fmt.Errorf("read river's migrations: %w", err)
	}
	if n == 0 {
		return nil, nil
	}
	var v *int
	if err := s.db.QueryRowContext(ctx, `SELECT max(version) FROM `+RiverSchema+`.river_migration`).Scan(&v); err != nil {
		return nil, fmt.Errorf("read river's migrations: %w", err)
	}
	return v, nil
}
