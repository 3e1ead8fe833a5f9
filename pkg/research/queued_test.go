package research

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/owner"
)

// recordingScheduler is a SharedScheduler that records what was queued,
// inside the caller's transaction (a row in a table of its own, so a
// rolled-back transaction leaves none).
type recordingScheduler struct{}

func (recordingScheduler) Serves(*owner.OpEnv) bool { return true }
func (recordingScheduler) queue(ctx context.Context, tx *sql.Tx, kind, id string) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO test_queue (kind, job) VALUES (?, ?)`, kind, id)
	return err
}
func (r recordingScheduler) EnqueuePollTx(ctx context.Context, _ *owner.OpEnv, tx *sql.Tx, id string, _ time.Time) error {
	return r.queue(ctx, tx, "poll", id)
}
func (r recordingScheduler) EnqueueCancelTx(ctx context.Context, _ *owner.OpEnv, tx *sql.Tx, id string, _ time.Time) error {
	return r.queue(ctx, tx, "cancel", id)
}
func (r recordingScheduler) EnqueuePublishTx(ctx context.Context, _ *owner.OpEnv, tx *sql.Tx, id string) error {
	return r.queue(ctx, tx, "publish", id)
}
func (recordingScheduler) Run(context.Context, *owner.OpEnv, Worker)        {}
func (recordingScheduler) Wake(context.Context, *owner.OpEnv, string) error { return nil }
func (recordingScheduler) CreatorGone(context.Context, *owner.OpEnv, string, time.Duration) bool {
	return false
}

func useRecordingScheduler(t *testing.T, f *fixture) {
	if _, err := f.st.DB().Exec(`CREATE TABLE test_queue (kind TEXT, job TEXT)`); err != nil {
		t.Fatal(err)
	}
	f.svc.Shared = recordingScheduler{}
}

func queued(t *testing.T, f *fixture, kind string) int {
	var n int
	if err := f.st.DB().QueryRow(`SELECT count(*) FROM test_queue WHERE kind = ?`, kind).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func (f *fixture) requestsTo(prefix string) int {
	n := 0
	for _, e := range f.fake.Requests() {
		if strings.HasPrefix(e.Req, prefix) {
			n++
		}
	}
	return n
}

// A queued poll over budget records the cancel-request together with its
// queued cancellation and sends nothing itself; the cancellation worker
// is fenced (a retired owner sends nothing), sends once, and not again
// once the provider accepted it.
func TestQueuedCancel(t *testing.T) {
	f := newFixture(t)
	useRecordingScheduler(t, f)
	f.svc.Budgets.MaxPolls = 1
	ctx := context.Background()
	res, err := f.start("fake:never over budget")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.clk.Sleep(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, _, err := (Worker{f.svc}).Poll(ctx, f.env(), res.Job); err != nil {
		t.Fatal(err)
	}
	if j := f.job(res.Job); j.State != StateCancelRequested || j.ErrorCode != "poll_budget_exceeded" {
		t.Fatalf("after the poll over budget: %s %s", j.State, j.ErrorCode)
	}
	if n := queued(t, f, "cancel"); n != 1 {
		t.Fatalf("%d cancellations queued, want 1", n)
	}
	cancelReq := "POST /interactions/" + res.Handle + "/cancel"
	if n := f.requestsTo(cancelReq); n != 0 {
		t.Fatalf("the queued poll sent %d cancel requests itself", n)
	}

	f.fence = owner.ErrRetired("test")
	if _, err := (Worker{f.svc}).Cancel(ctx, f.env(), res.Job); errs.CodeOf(err) != "owner_retired" {
		t.Fatalf("cancel under a retired owner: %v", err)
	}
	if n := f.requestsTo(cancelReq); n != 0 {
		t.Fatalf("a retired owner sent %d cancel requests", n)
	}
	f.fence = nil
	for range 2 {
		if again, err := (Worker{f.svc}).Cancel(ctx, f.env(), res.Job); err != nil || again != 0 {
			t.Fatalf("cancel: %v %v", again, err)
		}
	}
	if n := f.requestsTo(cancelReq); n != 1 {
		t.Fatalf("%d cancel requests, want 1", n)
	}
}

// A queued poll that sees the end records the observation together with
// its queued publication and publishes nothing itself; the publication
// worker is fenced, publishes once (reading the interaction again), and
// then finds nothing left to do.
func TestQueuedPublish(t *testing.T) {
	f := newFixture(t)
	useRecordingScheduler(t, f)
	ctx := context.Background()
	res, err := f.start("fake-polls:1 finish")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.clk.Sleep(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	_, pollable, err := (Worker{f.svc}).Poll(ctx, f.env(), res.Job)
	if err != nil || pollable {
		t.Fatalf("poll that saw the end: pollable %v, %v", pollable, err)
	}
	j := f.job(res.Job)
	if !PublishPending(j) || j.Published {
		t.Fatalf("after the terminal observation: %s %s published=%v", j.State, j.ProviderStatus, j.Published)
	}
	if n := queued(t, f, "publish"); n != 1 {
		t.Fatalf("%d publications queued, want 1", n)
	}
	report := filepath.Join(f.home, "research", res.Job, ReportFile)
	if _, err := os.Stat(report); err == nil {
		t.Fatal("the queued poll published itself")
	}

	gets := f.requestsTo("GET /interactions/")
	f.fence = owner.ErrRetired("test")
	if _, err := (Worker{f.svc}).Publish(ctx, f.env(), res.Job); errs.CodeOf(err) != "owner_retired" {
		t.Fatalf("publish under a retired owner: %v", err)
	}
	if _, err := os.Stat(report); err == nil || f.requestsTo("GET /interactions/") != gets {
		t.Fatal("a retired owner read or published")
	}
	f.fence = nil
	for range 2 {
		if again, err := (Worker{f.svc}).Publish(ctx, f.env(), res.Job); err != nil || again != 0 {
			t.Fatalf("publish: %v %v", again, err)
		}
	}
	if j := f.job(res.Job); j.State != StateCompleted || !j.Published {
		t.Fatalf("after publication: %s published=%v", j.State, j.Published)
	}
	if _, err := os.Stat(report); err != nil {
		t.Fatal(err)
	}
	if n := f.requestsTo("GET /interactions/"); n != gets+1 {
		t.Fatalf("%d GETs for the publication, want 1", n-gets)
	}
}
