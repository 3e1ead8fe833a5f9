package store

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/clawkit/clawkit/pkg/errs"
)

// Owner leases (PostgreSQL). Lease times are the database's clock, so hosts
// with skewed clocks agree on who holds a lease.

const pgNowMs = `(extract(epoch FROM clock_timestamp()) * 1000)::bigint`

// ErrLeaseLost is returned when a lease can no longer be renewed: it
// expired (the owner was paused or cut off past it) or was released.
var ErrLeaseLost = errors.New("owner lease lost")

// Lease is a held owner lease.
type Lease struct {
	Incarnation int64
	OwnerID     string
	TTL         time.Duration
}

// LeaseInfo describes a live lease (state status, migrate refusals).
type LeaseInfo struct {
	Incarnation    int64  `json:"incarnation"`
	OwnerID        string `json:"ownerId"`
	Kind           string `json:"kind"`
	Host           string `json:"host"`
	Home           string `json:"home"`
	PID            int    `json:"pid"`
	ExpiresInMs    int64  `json:"expiresInMs"`
	StartedAt      string `json:"startedAt"`
	LeaseExpiresAt int64  `json:"leaseExpiresAtMs"`
}

// AcquireLease inserts this owner's row with a lease of ttl and returns its
// fencing incarnation. On PostgreSQL the engine then tags every pooled
// connection with it, so each write checks the lease in its own
// transaction.
func (s *Store) AcquireLease(ctx context.Context, ownerID, kind, host, home string, pid int, version string, ttl time.Duration, now time.Time) (Lease, error) {
	pg, ok := s.engine.(*Postgres)
	if !ok {
		return Lease{}, errs.Failed(CodeLeaseUnsupported, "owner leases need PostgreSQL")
	}
	var inc int64
	err := s.db.QueryRowContext(ctx, `INSERT INTO owners (owner_id, kind, pid, version, started_at, host, home, lease_expires_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, `+pgNowMs+` + $8) RETURNING incarnation`,
		ownerID, kind, pid, version, now.UTC().Format(time.RFC3339Nano), host, home, ttl.Milliseconds()).Scan(&inc)
	if err != nil {
		return Lease{}, errs.Unavailable(CodeLeaseFailed, "cannot take an owner lease: %v", err)
	}
	pg.setIncarnation(inc)
	// database/sql keeps idle connections of its own (each holding a pool
	// connection opened before the lease): close them so every connection
	// used from now on is a fresh one that carries the incarnation.
	s.db.SetMaxIdleConns(0)
	s.db.SetMaxIdleConns(8)
	return Lease{Incarnation: inc, OwnerID: ownerID, TTL: ttl}, nil
}

// RenewLease extends a lease that is still held by ttl from now. A lease
// that already expired is never revived: ErrLeaseLost.
func (s *Store) RenewLease(ctx context.Context, l Lease) error {
	res, err := s.db.ExecContext(ctx, `UPDATE owners SET lease_expires_at = `+pgNowMs+` + $1
WHERE incarnation = $2 AND stopped_at IS NULL AND lease_expires_at > `+pgNowMs, l.TTL.Milliseconds(), l.Incarnation)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return ErrLeaseLost
	}
	return nil
}

// ReleaseLease ends a lease (clean stop).
func (s *Store) ReleaseLease(ctx context.Context, l Lease, now time.Time) error {
	_, err := s.db.ExecContext(ctx, `UPDATE owners SET stopped_at = $1, lease_expires_at = 0 WHERE incarnation = $2`,
		now.UTC().Format(time.RFC3339Nano), l.Incarnation)
	return err
}

// LiveLeases lists the leases still held (empty on SQLite, which has none).
func (s *Store) LiveLeases(ctx context.Context) ([]LeaseInfo, error) {
	if !IsPostgres(s.engine) {
		return []LeaseInfo{}, nil
	}
	return liveLeases(ctx, s.db)
}

func liveLeases(ctx context.Context, db *sql.DB) ([]LeaseInfo, error) {
	rows, err := db.QueryContext(ctx, `SELECT incarnation, owner_id, kind, host, home, pid, started_at, lease_expires_at, lease_expires_at - `+pgNowMs+`
FROM owners WHERE stopped_at IS NULL AND lease_expires_at > `+pgNowMs+` ORDER BY incarnation`)
	if err != nil {
		return nil, errs.Failed(errs.CodeStoreError, "cannot read owner leases: %v", err).Wrap(err)
	}
	defer rows.Close()
	out := []LeaseInfo{}
	for rows.Next() {
		var l LeaseInfo
		if err := rows.Scan(&l.Incarnation, &l.OwnerID, &l.Kind, &l.Host, &l.Home, &l.PID, &l.StartedAt, &l.LeaseExpiresAt, &l.ExpiresInMs); err != nil {
			return nil, errs.Failed(errs.CodeStoreError, "cannot read owner leases: %v", err).Wrap(err)
		}
		out = append(out, l)
	}
	return out, rows.Err()
}

// FenceError reports whether err is the database's refusal of a write by
// an owner whose lease is gone (the lease trigger's SQLSTATE CK001).
func FenceError(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "CK001"
}

// setIncarnation tags connections opened from now on with inc and drops
// the idle ones opened before, so no write escapes the lease check.
func (e *Postgres) setIncarnation(inc int64) {
	e.incarnation.Store(inc)
	if e.pool != nil {
		e.pool.Reset()
	}
}
