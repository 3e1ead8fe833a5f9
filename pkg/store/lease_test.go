package store_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/store"
	"github.com/clawkit/clawkit/pkg/store/pgtest"
)

// A gateway's writes are checked against its lease in the writing
// transaction: once the lease is gone (expired at the database, here
// forced by another connection), every write through its pool fails with
// the fence error and the lease cannot be renewed; another owner with a
// live lease, and plain connections, are unaffected. Live leases block
// state migrate (exit 3, naming the owner).
func TestLeaseFencesWrites(t *testing.T) {
	ctx := context.Background()
	u := pgtest.URL(t)
	if _, err := store.Migrate(ctx, &store.Postgres{URL: u}, 0); err != nil {
		t.Fatal(err)
	}
	open := func() *store.Store {
		st, err := store.Open(ctx, &store.Postgres{URL: u})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := st.Close(); err != nil {
				t.Error(err)
			}
		})
		return st
	}
	a, b := open(), open()
	now := time.Now()
	la, err := a.AcquireLease(ctx, "gw-a", "gateway", "host-a", "/home/a", 11, "test", time.Minute, now)
	if err != nil {
		t.Fatal(err)
	}
	lb, err := b.AcquireLease(ctx, "gw-b", "gateway", "host-b", "/home/b", 22, "test", time.Minute, now)
	if err != nil || lb.Incarnation <= la.Incarnation {
		t.Fatalf("lease b %+v %v", lb, err)
	}
	if _, err := a.CreateSession(ctx, "main", "s1", now); err != nil {
		t.Fatalf("write under a live lease: %v", err)
	}
	if err := a.RenewLease(ctx, la); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Migrate(ctx, &store.Postgres{URL: u}, 0); errs.CodeOf(err) != "database_leased" || errs.KindOf(err) != errs.KindRefused {
		t.Fatalf("migrate with live leases: %v", err)
	}

	// Expire a's lease behind its back (what a long pause amounts to).
	raw, err := sql.Open("pgx", u)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := raw.Close(); err != nil {
			t.Error(err)
		}
	}()
	if _, err := raw.ExecContext(ctx, `UPDATE owners SET lease_expires_at = 1 WHERE incarnation = $1`, la.Incarnation); err != nil {
		t.Fatal(err)
	}
	_, err = a.UpdateSession(ctx, "main", "s1", "revoke", 0, now)
	if err == nil || !strings.Contains(err.Error(), "fenced off") {
		t.Fatalf("a fenced owner's write: %v", err)
	}
	if s, _ := b.GetSession(ctx, "main", "s1"); s.Status != store.SessionActive {
		t.Fatalf("late write landed: %+v", s)
	}
	if err := a.RenewLease(ctx, la); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("renew of an expired lease: %v", err)
	}
	if _, err := b.UpdateSession(ctx, "main", "s1", "revoke", 0, now); err != nil {
		t.Fatalf("b still holds its lease: %v", err)
	}
	leases, err := b.LiveLeases(ctx)
	if err != nil || len(leases) != 1 || leases[0].OwnerID != "gw-b" || leases[0].Host != "host-b" {
		t.Fatalf("live leases %+v %v", leases, err)
	}
	if err := b.ReleaseLease(ctx, lb, now); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Migrate(ctx, &store.Postgres{URL: u}, 0); err != nil {
		t.Fatalf("migrate once no lease is held: %v", err)
	}
}
