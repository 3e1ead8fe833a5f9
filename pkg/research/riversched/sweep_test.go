package riversched_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/clawkit/clawkit/pkg/owner"
	"github.com/clawkit/clawkit/pkg/research"
	"github.com/clawkit/clawkit/pkg/research/riversched"
	"github.com/clawkit/clawkit/pkg/store"
	"github.com/clawkit/clawkit/pkg/store/pgtest"
)

// A gateway that stopped cleanly but left a river job marked running (its
// client's stop timed out) holds nothing: another gateway's first sweep
// makes the job available at once, long before river's own rescue (75 s
// with the default request timeout), so a drained gateway's work is taken
// over at once (docs/operations.md, "Draining a gateway"). A live owner's
// running job is left alone.
func TestSweepFreesJobsOfAStoppedOwner(t *testing.T) {
	ctx := context.Background()
	u := pgtest.URL(t)
	open := func(id string) (*store.Store, store.Lease) {
		st, err := store.Open(ctx, &store.Postgres{URL: u})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := st.Close(); err != nil {
				t.Error(err)
			}
		})
		l, err := st.AcquireLease(ctx, id, "gateway", "test", "home", os.Getpid(), "test", time.Minute, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return st, l
	}
	running := func(st *store.Store, job string, l store.Lease) {
		if _, err := st.DB().ExecContext(ctx, `INSERT INTO `+store.RiverSchema+`.river_job
  (args, kind, max_attempts, queue, state, attempt, attempted_at, attempted_by)
VALUES (jsonb_build_object('job', $1::text), $2, 25, $3, 'running', 1, now(), ARRAY[$4::text])`,
			job, riversched.Kind, riversched.Queue, riversched.ClientID(l.Incarnation)); err != nil {
			t.Fatal(err)
		}
	}
	a, la := open("owner-a")
	b, lb := open("owner-b")
	running(a, "rj_stopped", la)
	running(b, "rj_live", lb)
	if err := a.ReleaseLease(ctx, la, time.Now()); err != nil {
		t.Fatal(err)
	}
	state := func(job string) string {
		var s string
		if err := b.DB().QueryRowContext(ctx, `SELECT state FROM `+store.RiverSchema+`.river_job WHERE args->>'job' = $1`, job).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}

	// Gateway b's scheduler: it sweeps when it starts.
	svc := &research.Service{Shared: riversched.New(), Getenv: func(string) string { return "" }}
	env := owner.NewOpEnv(t.TempDir(), b, func() error { return nil }, time.Now, nil, true)
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); svc.RunGateway(rctx, env) }()
	defer func() { cancel(); <-done }()
	deadline := time.Now().Add(30 * time.Second) // a hang guard, well under river's rescue
	for state("rj_stopped") == "running" {
		if time.Now().After(deadline) {
			t.Fatal("the stopped owner's river job is still running: not freed by the sweep")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if s := state("rj_live"); s != "running" {
		t.Fatalf("a live owner's running job is %s after the sweep, want running", s)
	}
}
