package owner

import (
	"bytes"
	"context"
	"log"
	"testing"
	"time"

	"github.com/clawkit/clawkit/pkg/store"
	"github.com/clawkit/clawkit/pkg/store/pgtest"
)

// Release records the time it is called with (owners.stopped_at: the stop
// time, not the start), and a lease that was lost is not touched: its
// owner sends nothing more. The local deadline keeps a margin before the
// lease's end, and the engine's send fence follows it.
func TestLeaseReleaseAndMargin(t *testing.T) {
	ctx := context.Background()
	u := pgtest.URL(t)
	if _, err := store.Migrate(ctx, &store.Postgres{URL: u}, 0); err != nil {
		t.Fatal(err)
	}
	open := func() (*store.Store, *store.Postgres) {
		pg := &store.Postgres{URL: u}
		st, err := store.Open(ctx, pg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := st.Close(); err != nil {
				t.Error(err)
			}
		})
		return st, pg
	}
	var buf bytes.Buffer
	lg := log.New(&buf, "", 0)
	st, _ := open()
	started := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	t0 := time.Now()
	k, err := StartLease(ctx, st, "o1", "gateway", "/h", "test", 10*time.Second, started, lg)
	if err != nil {
		t.Fatal(err)
	}
	if until := k.until(); until.After(time.Now().Add(9*time.Second)) || until.Before(t0.Add(8*time.Second)) {
		t.Fatalf("local deadline %s after start, want the TTL (10 s) minus a 1 s margin", until.Sub(t0))
	}
	stopped := started.Add(90 * time.Minute)
	k.Release(stopped)
	var got string
	if err := st.DB().QueryRowContext(ctx, `SELECT stopped_at FROM owners WHERE incarnation = $1`, k.Incarnation()).Scan(&got); err != nil {
		t.Fatal(err)
	}
	if got != stopped.Format(time.RFC3339Nano) {
		t.Fatalf("stopped_at %q, want %q", got, stopped.Format(time.RFC3339Nano))
	}

	// A lease lost (its deadline passed): Release sends nothing, and the
	// engine sends nothing at all any more.
	st2, pg2 := open()
	k2, err := StartLease(ctx, st2, "o2", "gateway", "/h2", "test", 500*time.Millisecond, started, lg)
	if err != nil {
		t.Fatal(err)
	}
	for k2.Check() == nil {
		time.Sleep(20 * time.Millisecond)
	}
	for !pg2.Fenced() {
		time.Sleep(20 * time.Millisecond)
	}
	k2.Release(stopped)
	var n int
	if err := st.DB().QueryRowContext(ctx, `SELECT count(*) FROM owners WHERE incarnation = $1 AND stopped_at IS NULL`, k2.Incarnation()).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Fatal("a lost lease was released")
	}
	if bytes.Contains(buf.Bytes(), []byte("release failed")) {
		t.Fatalf("release tried on a lost lease: %s", buf.String())
	}
}
