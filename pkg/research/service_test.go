package research

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/clawkit/clawkit/pkg/auth"
	"github.com/clawkit/clawkit/pkg/config"
	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/owner"
	"github.com/clawkit/clawkit/pkg/research/google"
	"github.com/clawkit/clawkit/pkg/research/google/fakeapi"
	"github.com/clawkit/clawkit/pkg/store"
)

// clock is a fake clock; the service's Sleep advances it, so budgets of
// an hour run in microseconds.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
	return nil
}

type fixture struct {
	t     testing.TB
	home  string
	fake  *fakeapi.Listener
	st    *store.Store
	clk   *clock
	svc   *Service
	fence error
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	home := t.TempDir()
	l, err := fakeapi.Start("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	st, err := store.Open(context.Background(), store.SQLite{Path: filepath.Join(home, "state.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Error(err)
		}
	})
	f := &fixture{t: t, home: home, fake: l, st: st, clk: &clock{t: time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)}}
	f.svc = &Service{Sleep: f.clk.Sleep, Rand: func() float64 { return 0.5 }, Getenv: func(string) string { return "" }}
	f.setConfig(map[string]any{"enabled": true, "profileId": "google:default", "baseUrl": l.URL})
	f.addProfile("google:default", auth.KindAPIKey, "key-one")
	return f
}

func (f *fixture) setConfig(v map[string]any) {
	cfg, err := config.Load(f.home)
	if err != nil {
		f.t.Fatal(err)
	}
	if err := cfg.Set(ConfigPath, v); err != nil {
		f.t.Fatal(err)
	}
	if err := cfg.Save(); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) addProfile(id, kind, secret string) {
	as, err := auth.Load(f.home)
	if err != nil {
		f.t.Fatal(err)
	}
	if err := as.Add(auth.Profile{ID: id, Provider: "google", Kind: kind, Secret: secret}, true); err != nil {
		f.t.Fatal(err)
	}
	if err := as.Save(); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) env() *owner.OpEnv {
	return owner.NewOpEnv(f.home, f.st, func() error { return f.fence }, f.clk.Now, nil, false)
}

func (f *fixture) start(q string) (*StartResult, error) {
	return f.startChecked(context.Background(), f.env(), StartParams{Question: q})
}

func (f *fixture) job(id string) *Job {
	j, err := jobStore{st: f.st}.get(context.Background(), id)
	if err != nil {
		f.t.Fatal(err)
	}
	return j
}

func wantCode(t *testing.T, err error, kind errs.Kind, code errs.Code) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %s/%s", kind, code)
	}
	if errs.KindOf(err) != kind || errs.CodeOf(err) != code {
		t.Fatalf("got %s/%s (%v), want %s/%s", errs.KindOf(err), errs.CodeOf(err), err, kind, code)
	}
}

func TestStartWaitPublishes(t *testing.T) {
	f := newFixture(t)
	res, err := f.start("why is the sky blue")
	if err != nil {
		t.Fatal(err)
	}
	if res.State != StateRunning || res.Handle == "" || !ValidJobID(res.Job) {
		t.Fatalf("%+v", res)
	}
	out := filepath.Join(t.TempDir(), "copy.md")
	pr, err := f.svc.Wait(context.Background(), f.env(), WaitParams{JobParams: jobp(JobParams{Job: res.Job, Out: out})})
	if err != nil {
		t.Fatal(err)
	}
	if pr.State != StateCompleted || !pr.Published || pr.Partial {
		t.Fatalf("%+v", pr.Job)
	}
	dir := jobDir(f.home, res.Job)
	rep, _ := os.ReadFile(filepath.Join(dir, ReportFile))
	if string(rep) != fakeapi.ReportText {
		t.Fatalf("report %q", rep)
	}
	cp, _ := os.ReadFile(out)
	if string(cp) != fakeapi.ReportText {
		t.Fatal("--out copy differs")
	}
	var cd CitationsDoc
	b, _ := os.ReadFile(filepath.Join(dir, CitationsFile))
	if err := json.Unmarshal(b, &cd); err != nil {
		t.Fatal(err)
	}
	if len(cd.Citations) != 1 || string(rep[*cd.Citations[0].StartByte:*cd.Citations[0].EndByte]) != "Rayleigh scattering" {
		t.Fatalf("citations %+v", cd)
	}
	var r Result
	b, _ = os.ReadFile(filepath.Join(dir, ResultFile))
	if err := json.Unmarshal(b, &r); err != nil || r.Status != "completed" || len(r.Usage) == 0 {
		t.Fatalf("result %s", b)
	}
	for _, name := range []string{ReportFile, CitationsFile, ResultFile} {
		b, _ := os.ReadFile(filepath.Join(dir, name))
		for _, m := range []string{fakeapi.ThoughtMarker, fakeapi.SearchMarker, fakeapi.InterimMarker, "key-one"} {
			if strings.Contains(string(b), m) {
				t.Fatalf("%s contains %s", name, m)
			}
		}
	}
	if n := f.fake.Count("POST /interactions"); n != 1 {
		t.Fatalf("creates %d", n)
	}
	// Terminal jobs are not polled again.
	before := len(f.fake.Requests())
	if _, err := f.svc.Poll(context.Background(), f.env(), jobp(JobParams{Job: res.Job})); err != nil {
		t.Fatal(err)
	}
	if len(f.fake.Requests()) != before {
		t.Fatal("terminal job polled")
	}
}

func TestRefusalsMakeNoHTTP(t *testing.T) {
	f := newFixture(t)
	res, err := f.start("fake:never question")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	base := len(f.fake.Requests())
	noHTTP := func(name string) {
		t.Helper()
		if n := len(f.fake.Requests()); n != base {
			t.Fatalf("%s: %d HTTP requests after a refusal", name, n-base)
		}
	}
	// Foreign owner.
	_, err = f.svc.Poll(ctx, f.env(), jobp(JobParams{Job: res.Job, Caller: Caller{AgentID: "main", SessionKey: "other"}}))
	wantCode(t, err, errs.KindRefused, "foreign_owner")
	_, err = f.svc.Cancel(ctx, f.env(), jobp(JobParams{Job: res.Job, Caller: Caller{AgentID: "intruder", SessionKey: "cli"}}))
	wantCode(t, err, errs.KindRefused, "foreign_owner")
	noHTTP("foreign")
	// Unknown handle.
	_, err = f.svc.Poll(ctx, f.env(), jobp(JobParams{Handle: "v1_someone_else"}))
	wantCode(t, err, errs.KindRefused, "unknown_handle")
	noHTTP("unknown handle")
	// Profile substitution.
	f.addProfile("google:other", auth.KindAPIKey, "key-two")
	f.setConfig(map[string]any{"enabled": true, "profileId": "google:other", "baseUrl": f.fake.URL})
	_, err = f.svc.Poll(ctx, f.env(), jobp(JobParams{Job: res.Job}))
	wantCode(t, err, errs.KindRefused, "profile_substituted")
	// Credential substitution within the same profile id.
	f.setConfig(map[string]any{"enabled": true, "profileId": "google:default", "baseUrl": f.fake.URL})
	f.addProfile("google:default", auth.KindAPIKey, "key-three")
	_, err = f.svc.Poll(ctx, f.env(), jobp(JobParams{Job: res.Job}))
	wantCode(t, err, errs.KindRefused, "credential_substituted")
	f.addProfile("google:default", auth.KindAPIKey, "key-one")
	// OAuth profile.
	f.addProfile("google:oauth", auth.KindOAuth, "tok")
	f.setConfig(map[string]any{"enabled": true, "profileId": "google:oauth", "baseUrl": f.fake.URL})
	_, err = f.start("q")
	wantCode(t, err, errs.KindRefused, "oauth_profile_rejected")
	// Disabled.
	f.setConfig(map[string]any{"enabled": false, "profileId": "google:default", "baseUrl": f.fake.URL})
	_, err = f.start("q")
	wantCode(t, err, errs.KindRefused, "research_disabled")
	_, err = f.svc.Poll(ctx, f.env(), jobp(JobParams{Job: res.Job}))
	wantCode(t, err, errs.KindRefused, "research_disabled")
	f.setConfig(map[string]any{"enabled": true, "profileId": "google:default", "baseUrl": f.fake.URL})
	// Stale session (reset bumps the incarnation).
	if _, err := f.st.UpdateSession(ctx, "main", "cli", "reset", 0, f.clk.Now()); err != nil {
		t.Fatal(err)
	}
	_, err = f.svc.Poll(ctx, f.env(), jobp(JobParams{Job: res.Job}))
	wantCode(t, err, errs.KindRefused, "stale_owner")
	_, err = f.svc.Cancel(ctx, f.env(), jobp(JobParams{Job: res.Job}))
	wantCode(t, err, errs.KindRefused, "stale_owner")
	// Revoked.
	if _, err := f.st.UpdateSession(ctx, "main", "cli", "revoke", 0, f.clk.Now()); err != nil {
		t.Fatal(err)
	}
	_, err = f.start("q")
	wantCode(t, err, errs.KindRefused, "session_revoked")
	// asOf is an unsupported constraint.
	_, err = f.startChecked(ctx, f.env(), StartParams{Question: "q", AsOf: "2025-01-01", Caller: Caller{SessionKey: "cli"}})
	wantCode(t, err, errs.KindUsage, "unsupported_constraint")
	noHTTP("all refusals")
}

func TestOwnerFenceBeforeCreate(t *testing.T) {
	f := newFixture(t)
	f.fence = owner.ErrRetired("test")
	_, err := f.start("q")
	wantCode(t, err, errs.KindRefused, "owner_retired")
	if len(f.fake.Requests()) != 0 {
		t.Fatal("HTTP after a failed fence")
	}
	// Nothing is written either: a job row passes the write fence too.
	jobs, _ := f.svc.List(context.Background(), f.env(), ListParams{})
	if len(jobs) != 0 {
		t.Fatalf("%+v", jobs)
	}
}

func TestCreateOutcomes(t *testing.T) {
	f := newFixture(t)
	cases := []struct {
		q     string
		kind  errs.Kind
		code  errs.Code
		state string
		retry int64
	}{
		{"fake:create-429", errs.KindUnavailable, "provider_busy", StateNotSent, 7000},
		{"fake:create-503", errs.KindUnavailable, "provider_busy", StateNotSent, 7000},
		{"fake:create-400", errs.KindFailed, "not_sent", StateNotSent, 0},
		{"fake:create-401", errs.KindRefused, "provider_refused_credential", StateNotSent, 0},
		{"fake:create-500", errs.KindUnknown, "create_outcome_unknown", StateIndeterminate, 0},
		{"fake:create-drop", errs.KindUnknown, "create_outcome_unknown", StateIndeterminate, 0},
	}
	for _, tc := range cases {
		_, err := f.start(tc.q)
		wantCode(t, err, tc.kind, tc.code)
		if e := errs.As(err); e.RetryAfterMs != tc.retry {
			t.Errorf("%s: retryAfter %d", tc.q, e.RetryAfterMs)
		}
		if r := ErrorResponse(err); r.State != tc.state {
			t.Errorf("%s: envelope state %s", tc.q, r.State)
		}
	}
	jobs, _ := f.svc.List(context.Background(), f.env(), ListParams{})
	for _, j := range jobs {
		if j.Handle != "" {
			t.Fatalf("failed create has a handle: %+v", j)
		}
	}
	// Recovery never resubmits.
	if _, err := f.svc.Recover(context.Background(), f.env(), true); err != nil {
		t.Fatal(err)
	}
	if n := f.fake.Count("POST /interactions"); n != len(cases) {
		t.Fatalf("creates %d, want %d", n, len(cases))
	}
}

func TestIdempotencyKeyReusesInteraction(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	p := StartParams{Question: "q1", IdempotencyKey: "k1"}
	a, err := f.startChecked(ctx, f.env(), p)
	if err != nil {
		t.Fatal(err)
	}
	b, err := f.startChecked(ctx, f.env(), p)
	if err != nil {
		t.Fatal(err)
	}
	if a.Job != b.Job || a.Handle != b.Handle || !b.Existing {
		t.Fatalf("%+v %+v", a, b)
	}
	_, err = f.startChecked(ctx, f.env(), StartParams{Question: "other", IdempotencyKey: "k1"})
	wantCode(t, err, errs.KindUsage, "idempotency_key_reused")
	// An indeterminate create stays indeterminate under the same key.
	_, err = f.startChecked(ctx, f.env(), StartParams{Question: "fake:create-drop", IdempotencyKey: "k2"})
	wantCode(t, err, errs.KindUnknown, "create_outcome_unknown")
	_, err = f.startChecked(ctx, f.env(), StartParams{Question: "fake:create-drop", IdempotencyKey: "k2"})
	wantCode(t, err, errs.KindUnknown, "create_outcome_unknown")
	if n := f.fake.Count("POST /interactions"); n != 2 {
		t.Fatalf("creates %d, want 2", n)
	}
}

func TestRecoverSubmittingBecomesIndeterminate(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	now := f.clk.Now()
	j := &Job{ID: newJobID(), AgentID: "main", SessionKey: "cli", SessionIncarnation: 1, ProfileID: "google:default",
		CredentialAccount: auth.Fingerprint("key-one"), BaseURL: f.fake.URL + "/" + google.DefaultAPIVersion, Agent: google.DefaultAgent, State: StateSubmitting,
		Question: "q", OutputFormat: "markdown", MaxReportBytes: DefaultReportMax, CreatedAt: ms(now), UpdatedAt: ms(now),
		DeadlineAt: ms(now.Add(time.Hour)), RowVersion: 1}
	if err := (jobStore{st: f.st}).insert(ctx, j); err != nil {
		t.Fatal(err)
	}
	running, err := f.start("fake:slow")
	if err != nil {
		t.Fatal(err)
	}
	res, err := f.svc.Recover(ctx, f.env(), true)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Indeterminate) != 1 || res.Indeterminate[0] != j.ID || len(res.Resumed) != 1 || res.Resumed[0] != running.Job {
		t.Fatalf("%+v", res)
	}
	if f.job(j.ID).State != StateIndeterminate {
		t.Fatal("not indeterminate")
	}
	if n := f.fake.Count("POST /interactions"); n != 1 {
		t.Fatalf("creates %d", n)
	}
}

func TestCancelConfirmedOnlyByStatus(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	res, _ := f.start("fake:never")
	pr, err := f.svc.Cancel(ctx, f.env(), jobp(JobParams{Job: res.Job}))
	if err != nil {
		t.Fatal(err)
	}
	if pr.State != StateCancelRequested {
		t.Fatalf("state after 200: %s", pr.State)
	}
	pr, err = f.svc.Poll(ctx, f.env(), jobp(JobParams{Job: res.Job}))
	if err != nil || pr.State != StateCancelled {
		t.Fatalf("%v %+v", err, pr)
	}
	// cancel-ignored: acknowledged, never effective; the job stays
	// cancel-requested however often it is polled.
	res2, _ := f.start("fake:cancel-ignored")
	if _, err := f.svc.Cancel(ctx, f.env(), jobp(JobParams{Job: res2.Job})); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := f.svc.Poll(ctx, f.env(), jobp(JobParams{Job: res2.Job})); err != nil {
			t.Fatal(err)
		}
	}
	if s := f.job(res2.Job).State; s != StateCancelRequested {
		t.Fatalf("state %s", s)
	}
}

func TestWallClockBudgetCancels(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	res, _ := f.start("fake:never")
	// Polling alone: the cadence the poll counts below are about (the
	// stream's backstop is TestWallClockBudgetWithStream's).
	pr, err := f.svc.Wait(ctx, f.env(), WaitParams{JobParams: jobp(JobParams{Job: res.Job}), NoStream: true})
	if err != nil {
		t.Fatal(err)
	}
	if pr.State != StateCancelled || pr.ErrorCode != "wall_clock_budget_exceeded" {
		t.Fatalf("%+v", pr.Job)
	}
	elapsed := fromMs(pr.FinishedAt).Sub(fromMs(pr.CreatedAt))
	if elapsed < 65*time.Minute || elapsed > 67*time.Minute {
		t.Fatalf("cancelled after %s", elapsed)
	}
	// 24 fast polls (5 s for 2 min) then 15 s ones for the rest.
	if pr.PollCount < 250 || pr.PollCount > 300 {
		t.Fatalf("poll count %d", pr.PollCount)
	}
	if n := f.fake.Count("POST /interactions/*"); n != 1 {
		t.Fatalf("cancel requests %d", n)
	}
}

// TestWallClockBudgetWithStream: a wait that follows the stream polls at
// the backstop while it is live, yet the wall-clock budget still cancels
// on time, and never with more polls than polling alone.
func TestWallClockBudgetWithStream(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	res, _ := f.start("fake:never")
	pr, err := f.svc.Wait(ctx, f.env(), WaitParams{JobParams: jobp(JobParams{Job: res.Job})})
	if err != nil {
		t.Fatal(err)
	}
	if pr.State != StateCancelled || pr.ErrorCode != "wall_clock_budget_exceeded" {
		t.Fatalf("%+v", pr.Job)
	}
	elapsed := fromMs(pr.FinishedAt).Sub(fromMs(pr.CreatedAt))
	if elapsed < 65*time.Minute || elapsed > 67*time.Minute {
		t.Fatalf("cancelled after %s", elapsed)
	}
	if pr.PollCount > 300 {
		t.Fatalf("poll count %d", pr.PollCount)
	}
	if n := f.fake.Count("GET /interactions/" + res.Handle + "?stream=true*"); n > maxStreamResumes+1 {
		t.Fatalf("%d streams", n)
	}
}

func TestWaitHonoursRetryAfterAndTemporaryErrors(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	for _, q := range []string{"fake:poll-429-once", "fake:poll-503-once", "fake:poll-500-once"} {
		res, _ := f.start(q)
		pr, err := f.svc.Wait(ctx, f.env(), WaitParams{JobParams: jobp(JobParams{Job: res.Job})})
		if err != nil || pr.State != StateCompleted {
			t.Fatalf("%s: %v %+v", q, err, pr)
		}
	}
	// A single poll surfaces the temporary error with retryAfterMs.
	res, _ := f.start("fake:poll-429-once")
	_, err := f.svc.Poll(ctx, f.env(), jobp(JobParams{Job: res.Job}))
	wantCode(t, err, errs.KindUnavailable, "provider_unavailable")
	if errs.As(err).RetryAfterMs != 1000 {
		t.Fatalf("retry %d", errs.As(err).RetryAfterMs)
	}
	if f.job(res.Job).State != StateRunning {
		t.Fatal("temporary error changed the state")
	}
}

func TestPartialAndLegacyAndMultibyte(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	for _, tc := range []struct {
		q, state string
		partial  bool
		code     string
	}{
		{"fake:partial", StateFailed, true, "provider_error"},
		{"fake:step-error", StateFailed, true, "provider_error"},
		{"fake:incomplete", StateIncomplete, true, ""},
		{"fake:budget-exceeded", StateIncomplete, true, "provider_budget_exceeded"},
		{"fake:legacy-outputs", StateFailed, false, "empty_report"},
		{"fake:steps-empty", StateFailed, false, "empty_report"},
		{"fake:multibyte", StateCompleted, false, ""},
		{"fake:split-output", StateCompleted, false, ""},
		{"fake:unknown-status", StateCompleted, false, ""},
		{"fake:continuation-on-create", StateCompleted, false, ""},
		{"fake:continuation-on-poll", StateCompleted, false, ""},
	} {
		res, err := f.start(tc.q)
		if err != nil || res.Handle == "" {
			t.Fatalf("%s: start %v %+v", tc.q, err, res)
		}
		pr, err := f.svc.Wait(ctx, f.env(), WaitParams{JobParams: jobp(JobParams{Job: res.Job})})
		// A job that ended without report text is no success (no_report),
		// its view still the job as it ended.
		if tc.code == "empty_report" {
			if errs.CodeOf(err) != "no_report" {
				t.Fatalf("%s: %v, want no_report", tc.q, err)
			}
			err = nil
		}
		if err != nil || pr.State != tc.state || pr.Partial != tc.partial || !pr.Published || pr.ErrorCode != tc.code || pr.Handle != res.Handle {
			t.Fatalf("%s: %v %+v", tc.q, err, pr)
		}
		if tc.q == "fake:split-output" {
			text, cites, _ := ReadReport(f.home, res.Job)
			if text != strings.Join(fakeapi.SplitParts, "") || len(cites) != 2 {
				t.Fatalf("split report %q %+v", text, cites)
			}
		}
		if tc.q == "fake:multibyte" {
			text, cites, err := ReadReport(f.home, res.Job)
			if err != nil || text != strings.Join(fakeapi.MultibyteBlocks, "") {
				t.Fatalf("%v %q", err, text)
			}
			want := map[string]string{"https://example.com/tokyo": "東京", "https://example.com/rocket": "🚀", "https://example.com/cafe": "café"}
			if len(cites) != 3 || pr.DroppedCitations != 4 {
				t.Fatalf("%+v dropped %d", cites, pr.DroppedCitations)
			}
			for _, c := range cites {
				if text[*c.StartByte:*c.EndByte] != want[c.URL] {
					t.Fatalf("%s covers %q", c.URL, text[*c.StartByte:*c.EndByte])
				}
			}
		}
	}
}

func TestTerminalNeverOverwritten(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	res, _ := f.start("q")
	j := f.job(res.Job)
	stale := *j
	if _, err := f.svc.Wait(ctx, f.env(), WaitParams{JobParams: jobp(JobParams{Job: res.Job})}); err != nil {
		t.Fatal(err)
	}
	stale.State = StateRunning
	if err := (jobStore{st: f.st}).update(ctx, &stale, f.clk.Now()); !errors.Is(err, errStale) {
		t.Fatalf("stale update: %v", err)
	}
	if f.job(res.Job).State != StateCompleted {
		t.Fatal("overwritten")
	}
}

func TestRefreshingSessionBoundedRetries(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if _, err := f.st.EnsureSession(ctx, "main", "cli", f.clk.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := f.st.UpdateSession(ctx, "main", "cli", "refreshing", 2000, f.clk.Now()); err != nil {
		t.Fatal(err)
	}
	t0 := f.clk.Now()
	_, err := f.start("q")
	wantCode(t, err, errs.KindUnavailable, "session_refreshing")
	if waited := f.clk.Now().Sub(t0); waited != 5*2*time.Second {
		t.Fatalf("waited %s over the retries", waited)
	}
	if len(f.fake.Requests()) != 0 {
		t.Fatal("HTTP while refreshing")
	}
	// A session that becomes active during the retries proceeds.
	sleeps := 0
	f.svc.Sleep = func(ctx context.Context, d time.Duration) error {
		sleeps++
		if sleeps == 2 {
			if _, err := f.st.UpdateSession(ctx, "main", "cli", "activate", 0, f.clk.Now()); err != nil {
				return err
			}
		}
		return f.clk.Sleep(ctx, d)
	}
	if _, err := f.start("q"); err != nil {
		t.Fatal(err)
	}
}

func TestPollerUnderBinding(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	var ids []string
	for range 5 {
		r, err := f.start("fake-polls:3")
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.Job)
	}
	// A job whose session was reset is skipped without HTTP.
	if _, err := f.st.CreateSession(ctx, "main", "other", f.clk.Now()); err != nil {
		t.Fatal(err)
	}
	other, err := f.startChecked(ctx, f.env(), StartParams{Question: "q", Caller: Caller{SessionKey: "other"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.st.UpdateSession(ctx, "main", "other", "reset", 0, f.clk.Now()); err != nil {
		t.Fatal(err)
	}
	for range 10 {
		if err := f.clk.Sleep(ctx, 6*time.Second); err != nil {
			t.Fatal(err)
		}
		f.svc.PollDue(ctx, f.env(), 100)
	}
	for _, id := range ids {
		if s := f.job(id).State; s != StateCompleted {
			t.Fatalf("%s %s", id, s)
		}
	}
	oj := f.job(other.Job)
	if oj.State != StateRunning || oj.PollCount != 0 || oj.ErrorCode != "stale_owner" {
		t.Fatalf("%+v", oj)
	}
}

func TestPollCountBudgetCancels(t *testing.T) {
	f := newFixture(t)
	f.svc.Budgets.MaxPolls = 5
	ctx := context.Background()
	res, _ := f.start("fake:never")
	pr, err := f.svc.Wait(ctx, f.env(), WaitParams{JobParams: jobp(JobParams{Job: res.Job})})
	if err != nil {
		t.Fatal(err)
	}
	if pr.State != StateCancelled || pr.ErrorCode != "poll_budget_exceeded" || pr.PollCount != 7 {
		t.Fatalf("%+v", pr.Job)
	}
	// cancel-ignored: the cancellation is never confirmed, and polling stops
	// at the poll budget plus the grace polls.
	res, _ = f.start("fake:cancel-ignored")
	_, err = f.svc.Wait(ctx, f.env(), WaitParams{JobParams: jobp(JobParams{Job: res.Job})})
	wantCode(t, err, errs.KindFailed, "poll_budget_exhausted")
	if j := f.job(res.Job); j.State != StateCancelRequested || j.PollCount != 5+cancelGracePolls {
		t.Fatalf("%+v", j)
	}
}

func TestWaitAndPollerPollOncePerInterval(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	res, _ := f.start("fake:never")
	// The poller polls the due job; a wait that wakes for the same due
	// time finds it already polled and does not poll again.
	if err := f.clk.Sleep(ctx, 6*time.Second); err != nil {
		t.Fatal(err)
	}
	f.svc.PollDue(ctx, f.env(), 10)
	j := f.job(res.Job)
	cred, err := f.svc.jobAuthority(f.env(), j, mustSession(t, f))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.pollOnce(ctx, f.env(), j.ID, cred, func() error { return nil }, true); err != nil {
		t.Fatal(err)
	}
	if n := f.fake.Count("GET /interactions/*"); n != 1 {
		t.Fatalf("polls %d, want 1", n)
	}
}

func mustSession(t *testing.T, f *fixture) store.Session {
	s, err := f.st.GetSession(context.Background(), "main", "cli")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestReportDeliveryNeedsCurrentSession(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	res, _ := f.start("q")
	if _, err := f.svc.Wait(ctx, f.env(), WaitParams{JobParams: jobp(JobParams{Job: res.Job})}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.st.UpdateSession(ctx, "main", "cli", "reset", 0, f.clk.Now()); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "r.md")
	_, err := f.svc.Poll(ctx, f.env(), jobp(JobParams{Job: res.Job, Out: out}))
	wantCode(t, err, errs.KindRefused, "stale_owner")
	if _, err := os.Stat(out); err == nil {
		t.Fatal("report delivered to a stale session")
	}
	_, err = f.svc.Wait(ctx, f.env(), WaitParams{JobParams: jobp(JobParams{Job: res.Job, Out: out})})
	wantCode(t, err, errs.KindRefused, "stale_owner")
	r := f.svc.RPC(ctx, f.env(), &RPC{Request: Request{Version: 1, Action: ActionPoll, Handle: res.Handle}, AgentID: "main", SessionKey: "cli"})
	if r.OK || r.Reason != "stale_owner" {
		t.Fatalf("%+v", r)
	}
	// The state itself is still visible.
	pr, err := f.svc.Poll(ctx, f.env(), jobp(JobParams{Job: res.Job}))
	if err != nil || pr.State != StateCompleted || pr.Report != "" {
		t.Fatalf("%v %+v", err, pr)
	}
}

func TestConcurrentStartsWithOneKeySubmitOnce(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	jobs := make([]string, 8)
	errsSeen := make([]error, 8)
	for i := range jobs {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			r, err := f.startChecked(ctx, f.env(), StartParams{Question: "fake:slow same", IdempotencyKey: "race"})
			errsSeen[i] = err
			if r != nil {
				jobs[i] = r.Job
			}
		}(i)
	}
	wg.Wait()
	for i := range jobs {
		if errsSeen[i] != nil {
			t.Fatalf("start %d: %v", i, errsSeen[i])
		}
		if jobs[i] != jobs[0] {
			t.Fatalf("different jobs %v", jobs)
		}
	}
	if n := f.fake.Count("POST /interactions"); n != 1 {
		t.Fatalf("creates %d", n)
	}
}

// The provider authority is read again after a refresh wait, immediately
// before the create: research disabled (or the key replaced) during the
// wait refuses the create, and nothing is sent.
func TestProviderAuthorityRecheckedAfterRefreshWait(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(f *fixture)
		code   errs.Code
	}{
		{"disabled", func(f *fixture) {
			f.setConfig(map[string]any{"enabled": false, "profileId": "google:default", "baseUrl": f.fake.URL})
		}, "research_disabled"},
		{"key replaced", func(f *fixture) { f.addProfile("google:default", "api-key", "key-two") }, "credential_substituted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			ctx := context.Background()
			if _, err := f.st.EnsureSession(ctx, "main", "cli", f.clk.Now()); err != nil {
				t.Fatal(err)
			}
			if _, err := f.st.UpdateSession(ctx, "main", "cli", "refreshing", 2000, f.clk.Now()); err != nil {
				t.Fatal(err)
			}
			f.svc.Sleep = func(ctx context.Context, d time.Duration) error {
				// During the wait: the authority changes, then the session
				// becomes usable again.
				tc.change(f)
				if _, err := f.st.UpdateSession(ctx, "main", "cli", "activate", 0, f.clk.Now()); err != nil {
					return err
				}
				return f.clk.Sleep(ctx, d)
			}
			_, err := f.start("q")
			wantCode(t, err, errs.KindRefused, tc.code)
			if n := len(f.fake.Requests()); n != 0 {
				t.Fatalf("%d HTTP requests after the authority changed", n)
			}
			jobs, _ := jobStore{st: f.st}.list(ctx, "")
			if len(jobs) != 1 || jobs[0].State != StateNotSent {
				t.Fatalf("jobs %+v", jobs)
			}
		})
	}
}

// The same holds for a poll: research disabled while the session was
// refreshing before the poll refuses the GET.
func TestPollRechecksProviderAuthorityAfterRefreshWait(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	res, err := f.start("fake:never q")
	if err != nil {
		t.Fatal(err)
	}
	base := len(f.fake.Requests())
	env := f.env()
	cred, err := f.svc.custody(ctx, env, f.job(res.Job), Caller{AgentID: "main", SessionKey: "cli"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.st.UpdateSession(ctx, "main", "cli", "refreshing", 2000, f.clk.Now()); err != nil {
		t.Fatal(err)
	}
	f.svc.Sleep = func(ctx context.Context, d time.Duration) error {
		f.setConfig(map[string]any{"enabled": false, "profileId": "google:default", "baseUrl": f.fake.URL})
		if _, err := f.st.UpdateSession(ctx, "main", "cli", "activate", 0, f.clk.Now()); err != nil {
			return err
		}
		return f.clk.Sleep(ctx, d)
	}
	_, err = f.svc.pollOnce(ctx, env, res.Job, cred, env.Fence.AssertCurrent, false)
	wantCode(t, err, errs.KindRefused, "research_disabled")
	if n := len(f.fake.Requests()) - base; n != 0 {
		t.Fatalf("%d HTTP requests after research was disabled", n)
	}
}

// roundTripFunc adapts a function to http.RoundTripper.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// The receipt is written only after the write fence lets it through: ownership
// lost while the create was in flight leaves no receipt (exit 4,
// receipt_not_recorded, never resubmitted), the row stays submitting, and
// the next owner's recovery makes it indeterminate.
func TestReceiptNotRecordedWhenOwnershipEndsDuringCreate(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	var mu sync.Mutex
	retired := false
	fence := func() error {
		mu.Lock()
		defer mu.Unlock()
		if retired {
			return owner.ErrRetired("test: the gateway is stopping")
		}
		return nil
	}
	f.svc.HTTP = &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		resp, err := http.DefaultTransport.RoundTrip(r)
		if err == nil && r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/interactions") {
			mu.Lock()
			retired = true // ownership ends while the create's answer is on its way
			mu.Unlock()
		}
		return resp, err
	})}
	env := owner.NewOpEnv(f.home, f.st, fence, f.clk.Now, nil, false)
	_, err := f.startChecked(ctx, env, StartParams{Question: "fake:never q", IdempotencyKey: "k"})
	wantCode(t, err, errs.KindUnknown, "receipt_not_recorded")
	if !strings.Contains(errs.As(err).Hint, "do not start it again") {
		t.Fatalf("hint %q", errs.As(err).Hint)
	}
	jobs, _ := jobStore{st: f.st}.list(ctx, "")
	if len(jobs) != 1 || jobs[0].State != StateSubmitting || jobs[0].Handle != "" {
		t.Fatalf("a receipt was written without the write fence: %+v", jobs)
	}
	if n := f.fake.Count("POST /interactions"); n != 1 {
		t.Fatalf("creates %d", n)
	}
	// The next owner: recovery classifies it, a repeat never resubmits.
	mu.Lock()
	retired = false
	mu.Unlock()
	rr, err := f.svc.Recover(ctx, f.env(), false)
	if err != nil || len(rr.Indeterminate) != 1 {
		t.Fatalf("%v %+v", err, rr)
	}
	_, err = f.startChecked(ctx, f.env(), StartParams{Question: "fake:never q", IdempotencyKey: "k"})
	wantCode(t, err, errs.KindUnknown, "create_outcome_unknown")
	if n := f.fake.Count("POST /interactions"); n != 1 {
		t.Fatalf("creates %d after recovery", n)
	}
}

// A poller deferral is a job write too: it is not made once ownership ends.
func TestDeferralNeedsWriterAdmission(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	res, err := f.start("fake:never q")
	if err != nil {
		t.Fatal(err)
	}
	before := f.job(res.Job)
	f.fence = owner.ErrRetired("test")
	f.svc.deferJob(ctx, f.env(), res.Job, time.Hour, errs.Refused("x", "y"))
	f.fence = nil
	if after := f.job(res.Job); after.RowVersion != before.RowVersion || after.NextPollAt != before.NextPollAt {
		t.Fatalf("deferred without the write fence: %+v", after)
	}
}

// An operation uses its call's config snapshot: a config.json
// change after the snapshot does not change the agent the create names.
func TestStartUsesConfigSnapshot(t *testing.T) {
	f := newFixture(t)
	f.setConfig(map[string]any{"enabled": true, "profileId": "google:default", "baseUrl": f.fake.URL, "agent": "agent-admitted"})
	env := f.env()
	env.SnapshotConfig()
	f.setConfig(map[string]any{"enabled": true, "profileId": "google:default", "baseUrl": f.fake.URL, "agent": "agent-changed-later"})
	res, err := f.startChecked(context.Background(), env, StartParams{Question: "fake:never q"})
	if err != nil {
		t.Fatal(err)
	}
	if a := f.job(res.Job).Agent; a != "agent-admitted" {
		t.Fatalf("job agent %q", a)
	}
	reqs := f.fake.Requests()
	if len(reqs) != 1 || !strings.Contains(string(reqs[0].Body), `"agent":"agent-admitted"`) {
		t.Fatalf("create %+v", reqs)
	}
}

// A job's lock leaves the service's map with its last holder.
func TestJobLocksReleased(t *testing.T) {
	s := &Service{}
	unlock := s.lockJob("rj_a")
	done := make(chan struct{})
	go func() { s.lockJob("rj_a")(); close(done) }()
	for {
		s.locksMu.Lock()
		refs := s.locks["rj_a"].refs
		s.locksMu.Unlock()
		if refs == 2 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	unlock()
	<-done
	s.locksMu.Lock()
	defer s.locksMu.Unlock()
	if len(s.locks) != 0 {
		t.Fatalf("%d job locks kept", len(s.locks))
	}
}

// An answer over the response bound is refused once: the job ends failed
// (response_too_large) with its handle, and is never polled again (every
// poll would download it again).
func TestOversizedPollEndsTheJobOnce(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	res, err := f.start("fake:oversized fake-polls:1")
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.svc.Wait(ctx, f.env(), WaitParams{JobParams: jobp(JobParams{Job: res.Job})})
	if errs.CodeOf(err) != "response_too_large" {
		t.Fatalf("wait: %v", err)
	}
	j := f.job(res.Job)
	if j.State != StateFailed || j.Handle != res.Handle || j.ErrorCode != "response_too_large" {
		t.Fatalf("%+v", j)
	}
	// Polling it again sends nothing and says it ended without a report.
	if _, err := f.svc.Poll(ctx, f.env(), jobp(JobParams{Job: res.Job})); errs.CodeOf(err) != "no_report" {
		t.Fatalf("poll: %v, want no_report", err)
	}
	if n := f.fake.Count("GET /interactions/" + res.Handle); n != 1 {
		t.Fatalf("%d GETs of the oversized interaction", n)
	}
}

// startChecked runs a start as the operation does: Check (checkStartParams)
// normalises the parameters, and Start trusts what it returned.
func (f *fixture) startChecked(ctx context.Context, env *owner.OpEnv, p StartParams) (*StartResult, error) {
	p, err := checkStartParams(p)
	if err != nil {
		return nil, err
	}
	return f.svc.Start(ctx, env, p)
}

// jobp is p as the job operations' Check returns it when it accepts p
// (Poll, Wait, Cancel, Reject and Approve trust their parameters), else p
// as given: a test driving a Service directly with a reference Check
// would refuse gets the refusal of a reference no Check made.
func jobp(p JobParams) JobParams {
	if c, err := checkJobRef(p); err == nil {
		return c
	}
	return p
}
