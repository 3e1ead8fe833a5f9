package riversched_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/clawkit/clawkit/pkg/auth"
	"github.com/clawkit/clawkit/pkg/config"
	"github.com/clawkit/clawkit/pkg/owner"
	"github.com/clawkit/clawkit/pkg/research"
	"github.com/clawkit/clawkit/pkg/research/google/fakeapi"
	"github.com/clawkit/clawkit/pkg/research/riversched"
	"github.com/clawkit/clawkit/pkg/store"
	"github.com/clawkit/clawkit/pkg/store/pgtest"
)

// rig is one gateway's worth of research on a private PostgreSQL
// database: a store holding an owner lease, the fake API, a service with
// fast polls, and river scheduling installed.
type rig struct {
	t    *testing.T
	home string
	st   *store.Store
	fake *fakeapi.Listener
	svc  *research.Service
}

func newRig(t *testing.T) *rig {
	t.Helper()
	fake, err := fakeapi.Start("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fake.Close)
	return newRigOn(t, pgtest.URL(t), fake, "test-owner")
}

// newRigOn is one more gateway on the database at u, against fake.
func newRigOn(t *testing.T, u string, fake *fakeapi.Listener, ownerID string) *rig {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, &store.Postgres{URL: u})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Error(err)
		}
	})
	if _, err := st.AcquireLease(ctx, ownerID, "gateway", "test", "home", os.Getpid(), "test", time.Minute, time.Now()); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	cfg, err := config.Load(home)
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Set(research.ConfigPath, map[string]any{"enabled": true, "profileId": "google:default", "baseUrl": fake.URL}); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Save(); err != nil {
		t.Fatal(err)
	}
	as, err := auth.Load(home)
	if err != nil {
		t.Fatal(err)
	}
	if err := as.Add(auth.Profile{ID: "google:default", Provider: "google", Kind: auth.KindAPIKey, Secret: "key-one"}, true); err != nil {
		t.Fatal(err)
	}
	if err := as.Save(); err != nil {
		t.Fatal(err)
	}
	svc := &research.Service{
		Shared: riversched.New(),
		Getenv: func(string) string { return "" },
		// The stream's backstop as fast as the polls: these tests are
		// about the queued work, which a live stream must not slow down
		// (TestQueuedJobsFollowTheStream is the stream's).
		Budgets: research.Budgets{FastInterval: 30 * time.Millisecond, SlowInterval: 30 * time.Millisecond, StreamBackstop: 30 * time.Millisecond, RequestTimeout: time.Second},
	}
	return &rig{t: t, home: home, st: st, fake: fake, svc: svc}
}

func (r *rig) env() *owner.OpEnv {
	return owner.NewOpEnv(r.home, r.st, func() error { return nil }, time.Now, nil, true)
}

// runGateway runs the river scheduler until the test ends.
func (r *rig) runGateway() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.svc.RunGateway(ctx, r.env()) }()
	r.t.Cleanup(func() { cancel(); <-done })
}

// await waits until query yields want (a readiness condition, polled),
// failing after a generous bound for a loaded machine.
func (r *rig) await(want int, query string, args ...any) {
	r.t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	var n int
	for time.Now().Before(deadline) {
		if err := r.st.DB().QueryRow(query, args...).Scan(&n); err != nil {
			r.t.Fatal(err)
		}
		if n == want {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	r.t.Fatalf("%s: %d, want %d", query, n, want)
}

// requests counts the requests to the fake that start with prefix,
// streams apart (streams counts those).
func (r *rig) requests(prefix string) int {
	n := 0
	for _, e := range r.fake.Requests() {
		if strings.HasPrefix(e.Req, prefix) && !e.Stream {
			n++
		}
	}
	return n
}

// streams counts the stream requests of interaction handle.
func (r *rig) streams(handle string) int {
	n := 0
	for _, e := range r.fake.Requests() {
		if e.Stream && strings.HasPrefix(e.Req, "GET /interactions/"+handle+"?") {
			n++
		}
	}
	return n
}

func (r *rig) riverJobs(kind, state string) int {
	var n int
	if err := r.st.DB().QueryRow(`SELECT count(*) FROM `+store.RiverSchema+`.river_job WHERE kind = $1 AND state = $2`, kind, state).Scan(&n); err != nil {
		r.t.Fatal(err)
	}
	return n
}

// A queued poll that sees the end leaves the publication to its own river
// job, inserted with the terminal observation: the job is published once,
// by that job, which reads the interaction again (one GET beyond the
// polls) and records the terminal state.
func TestPublicationIsAQueuedJob(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	res, err := r.svc.Start(ctx, r.env(), checked(t, research.StartParams{Question: "fake-polls:2 publish me"}))
	if err != nil {
		t.Fatal(err)
	}
	r.runGateway()
	r.await(1, `SELECT count(*) FROM research_jobs WHERE job_id = $1 AND state = 'completed' AND published = 1`, res.Job)
	r.await(1, `SELECT count(*) FROM `+store.RiverSchema+`.river_job WHERE kind = $1 AND state = 'completed'`, riversched.PublishKind)
	if n := r.riverJobs(riversched.Kind, "completed"); n != 1 {
		t.Fatalf("%d completed poll jobs, want 1", n)
	}
	var polls int
	if err := r.st.DB().QueryRow(`SELECT poll_count FROM research_jobs WHERE job_id = $1`, res.Job).Scan(&polls); err != nil {
		t.Fatal(err)
	}
	if polls != 2 {
		t.Fatalf("poll_count %d, want 2", polls)
	}
	if n := r.requests("GET /interactions/"); n != polls+1 {
		t.Fatalf("%d GETs, want %d polls + 1 publication read", n, polls)
	}
	if _, err := os.Stat(filepath.Join(r.home, "research", res.Job, research.ReportFile)); err != nil {
		t.Fatal(err)
	}
}

// A queued poll that finds a job over its poll budget records the
// cancel-request with a queued cancellation in one transaction and sends
// nothing itself; the cancellation job asks the provider exactly once;
// polls then confirm it and the publication job records it.
func TestBudgetCancelIsAQueuedJob(t *testing.T) {
	r := newRig(t)
	r.svc.Budgets.MaxPolls = 2
	ctx := context.Background()
	res, err := r.svc.Start(ctx, r.env(), checked(t, research.StartParams{Question: "fake:never cancel me"}))
	if err != nil {
		t.Fatal(err)
	}
	r.runGateway()
	r.await(1, `SELECT count(*) FROM research_jobs WHERE job_id = $1 AND state = 'cancelled'`, res.Job)
	r.await(1, `SELECT count(*) FROM `+store.RiverSchema+`.river_job WHERE kind = $1 AND state = 'completed'`, riversched.PublishKind)
	if n := r.riverJobs(riversched.CancelKind, "completed"); n != 1 {
		t.Fatalf("%d completed cancel jobs, want 1", n)
	}
	if n := r.requests("POST /interactions/" + res.Handle + "/cancel"); n != 1 {
		t.Fatalf("%d cancel requests, want 1", n)
	}
	var code string
	if err := r.st.DB().QueryRow(`SELECT error_code FROM research_jobs WHERE job_id = $1`, res.Job).Scan(&code); err != nil {
		t.Fatal(err)
	}
	if code != "poll_budget_exceeded" {
		t.Fatalf("error_code %q", code)
	}
}

// `research cancel` asks the provider at once and records that; the
// cancellation job inserted with its cancel-request is a backstop due
// later, which then finds the request made and sends nothing.
func TestForegroundCancelLeavesABackstop(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	res, err := r.svc.Start(ctx, r.env(), checked(t, research.StartParams{Question: "fake:never cancel now"}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.svc.Cancel(ctx, r.env(), checkedJob(t, research.JobParams{Job: res.Job})); err != nil {
		t.Fatal(err)
	}
	if n := r.riverJobs(riversched.CancelKind, "scheduled"); n != 1 {
		t.Fatalf("%d scheduled cancel jobs, want 1 (inserted with the cancel-request)", n)
	}
	r.runGateway()
	r.await(1, `SELECT count(*) FROM research_jobs WHERE job_id = $1 AND state = 'cancelled' AND published = 1`, res.Job)
	r.await(1, `SELECT count(*) FROM `+store.RiverSchema+`.river_job WHERE kind = $1 AND state = 'completed'`, riversched.CancelKind)
	if n := r.requests("POST /interactions/" + res.Handle + "/cancel"); n != 1 {
		t.Fatalf("%d cancel requests, want 1", n)
	}
}

// checkedJob is p as the job operations' Check returns it (Cancel trusts
// its parameters).
func checkedJob(t *testing.T, p research.JobParams) research.JobParams {
	t.Helper()
	p, err := research.CheckJob(p)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// checked is p as the start operation's Check returns it (Start trusts
// its parameters).
func checked(t *testing.T, p research.StartParams) research.StartParams {
	t.Helper()
	p, err := research.CheckStart(p)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// A gateway on a shared database follows the stream of the jobs its river
// poll jobs poll: once a poll has put the next one at the stream's
// backstop (far off here), the provider ending the interaction between
// polls is seen on the stream, and the gateway polls at once; that poll
// records the end with its queued publication, as a queued poll does.
func TestQueuedJobsFollowTheStream(t *testing.T) {
	r := newRig(t)
	r.svc.Budgets.StreamBackstop = 10 * time.Minute
	ctx := context.Background()
	res, err := r.svc.Start(ctx, r.env(), checked(t, research.StartParams{Question: "fake:never streamed"}))
	if err != nil {
		t.Fatal(err)
	}
	r.runGateway()
	backstop := time.Now().Add(5 * time.Minute).UnixMilli()
	r.await(1, `SELECT count(*) FROM research_jobs WHERE job_id = $1 AND next_poll_at > $2`, res.Job, backstop)
	// The stream is live from just before its request: wait for the
	// request to arrive.
	for deadline := time.Now().Add(90 * time.Second); r.streams(res.Handle) == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no stream request")
		}
	}
	if !r.fake.Finish(res.Handle) {
		t.Fatal("not finished")
	}
	r.await(1, `SELECT count(*) FROM research_jobs WHERE job_id = $1 AND state = 'completed' AND published = 1`, res.Job)
	if n := r.streams(res.Handle); n != 1 {
		t.Fatalf("%d streams, want 1", n)
	}
}
