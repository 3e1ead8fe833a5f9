package store_test

import (
	"context"
	"database/sql"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/fsx"
	"github.com/clawkit/clawkit/pkg/store"
	"github.com/clawkit/clawkit/pkg/store/pgtest"
)

// River's tables are under the lease trigger like clawkit's: once an
// owner's lease is gone at the database, none of its statements changes
// a row of river's (jobs, leader, queues, clients), however late it
// arrives; a live owner and connections without a lease are unaffected.
// state migrate puts the trigger on every river table except its
// migration ledger.
func TestRiverTablesAreFenced(t *testing.T) {
	ctx := context.Background()
	u := pgtest.URL(t)
	if _, err := store.Migrate(ctx, &store.Postgres{URL: u}, 0); err != nil {
		t.Fatal(err)
	}
	a, err := store.Open(ctx, &store.Postgres{URL: u})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := a.Close(); err != nil {
			t.Error(err)
		}
	}()
	if missing, err := store.RiverUnfenced(ctx, a); err != nil || len(missing) != 0 {
		t.Fatalf("river tables without the trigger: %v %v", missing, err)
	}
	la, err := a.AcquireLease(ctx, "gw-a", "gateway", "host-a", "/home/a", 11, "test", time.Minute, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	rows, err := a.DB().QueryContext(ctx, `SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = $1 AND c.relkind = 'r' AND c.relname <> 'river_migration' ORDER BY 1`, store.RiverSchema)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var tb string
		if err := rows.Scan(&tb); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, tb)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	fsx.CloseRead(rows)
	if len(tables) < 3 {
		t.Fatalf("river tables: %v", tables)
	}
	for _, tb := range tables {
		if _, err := a.DB().ExecContext(ctx, `DELETE FROM `+store.RiverSchema+`.`+tb+` WHERE false`); err != nil {
			t.Fatalf("%s under a live lease: %v", tb, err)
		}
	}
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
	for _, tb := range tables {
		_, err := a.DB().ExecContext(ctx, `DELETE FROM `+store.RiverSchema+`.`+tb+` WHERE false`)
		if !store.FenceError(err) {
			t.Fatalf("%s written by an expired owner: %v", tb, err)
		}
	}
	if _, err := raw.ExecContext(ctx, `DELETE FROM `+store.RiverSchema+`.river_job WHERE false`); err != nil {
		t.Fatalf("a connection without a lease: %v", err)
	}
	// The owner's connections are named after its incarnation, and ask
	// the server for keepalives and timeouts.
	var app, idle, uto, iit string
	if err := a.DB().QueryRowContext(ctx, `SELECT current_setting('application_name'), current_setting('tcp_keepalives_idle'),
 current_setting('tcp_user_timeout'), current_setting('idle_in_transaction_session_timeout')`).Scan(&app, &idle, &uto, &iit); err != nil {
		t.Fatal(err)
	}
	if app != store.ApplicationName(la.Incarnation) || idle != "15" || uto != "15000" || iit != "30s" {
		t.Fatalf("session settings: application_name %q, tcp_keepalives_idle %q, tcp_user_timeout %q, idle_in_transaction_session_timeout %q", app, idle, uto, iit)
	}
}

// Past its send deadline (the lease's local deadline) an engine sends
// nothing: open connections are reset and every statement or new
// connection is refused locally, so nothing it queued can reach the
// server later. The refusal is not "unreachable".
func TestSendFenceStopsEverything(t *testing.T) {
	ctx := context.Background()
	u := pgtest.URL(t)
	if _, err := store.Migrate(ctx, &store.Postgres{URL: u}, 0); err != nil {
		t.Fatal(err)
	}
	pg := &store.Postgres{URL: u}
	st, err := store.Open(ctx, pg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := st.Close(); err != nil {
			t.Error(err)
		}
	}()
	if _, err := st.AcquireLease(ctx, "gw", "gateway", "h", "/h", 1, "test", time.Minute, time.Now()); err != nil {
		t.Fatal(err)
	}
	conn, err := st.DB().Conn(ctx) // an open connection, held
	if err != nil {
		t.Fatal(err)
	}
	defer fsx.CloseRead(conn)
	if _, err := conn.ExecContext(ctx, `SELECT 1`); err != nil {
		t.Fatal(err)
	}
	pg.SetSendDeadline(time.Now().Add(100 * time.Millisecond))
	for !pg.Fenced() {
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := conn.ExecContext(ctx, `SELECT 1`); err == nil {
		t.Fatal("a held connection still works past the send deadline")
	}
	_, err = st.DB().ExecContext(ctx, `SELECT 1`)
	if !errors.Is(err, store.ErrSendFenced) || store.Unreachable(err) {
		t.Fatalf("a new statement past the send deadline: %v", err)
	}
	pg.SetSendDeadline(time.Now().Add(time.Hour)) // a passed deadline is final
	if _, err := st.DB().ExecContext(ctx, `SELECT 1`); !errors.Is(err, store.ErrSendFenced) {
		t.Fatalf("the fence reopened: %v", err)
	}
}

// A server that cannot be reached is classified as such (exit 5 with
// retryAfterMs when nothing was written, outcome unknown when a write may
// have been sent), within the connect timeout; a refusal by the server
// is not.
func TestUnreachableClassification(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil { // nothing listens there now: connection refused
		t.Fatal(err)
	}
	ctx := context.Background()
	start := time.Now()
	_, err = store.Open(ctx, &store.Postgres{URL: "postgres://u@" + addr + "/db?sslmode=disable"})
	if errs.KindOf(err) != errs.KindUnavailable || errs.As(err).RetryAfterMs == 0 {
		t.Fatalf("open against a closed port: %v", err)
	}
	if d := time.Since(start); d > store.DefaultConnectTimeout+2*time.Second {
		t.Logf("open took %s", d) // informational: bounded by the connect timeout
	}
	// Right after a failed attempt, the engine does not try again for a
	// second: the next statement of the same operation fails at once,
	// classified the same way.
	pg := &store.Postgres{URL: "postgres://u@" + addr + "/db?sslmode=disable"}
	if _, err := store.Open(ctx, pg); errs.KindOf(err) != errs.KindUnavailable {
		t.Fatalf("first open: %v", err)
	}
	_, err = store.Open(ctx, pg)
	if errs.KindOf(err) != errs.KindUnavailable || !strings.Contains(err.Error(), "not retried within a second") {
		t.Fatalf("second open at once: %v", err)
	}
	var opErr error = &net.OpError{Op: "read", Net: "tcp", Err: errors.New("connection timed out")}
	if !store.Unreachable(opErr) {
		t.Fatal("a network error is not classified unreachable")
	}
	e := store.UnreachableError(opErr, false)
	if e.Kind != errs.KindUnavailable || e.RetryAfterMs != store.UnavailableRetryMs || e.Code != "database_unavailable" {
		t.Fatalf("nothing written: %+v", e)
	}
	if e := store.UnreachableError(opErr, true); e.Kind != errs.KindUnknown {
		t.Fatalf("a write may have been sent: %+v", e)
	}
	if store.Unreachable(errs.Failed("session_not_found", "no session")) {
		t.Fatal("a classified refusal taken for unreachable")
	}
}
