package research

import (
	"context"
	"testing"
	"time"

	"github.com/clawkit/clawkit/pkg/research/google"
)

// awaitCond waits for cond, checking it every few milliseconds; the
// deadline only bounds a test that would otherwise hang (nothing is
// asserted about how long it took).
func awaitCond(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestGatewayFollowsStreamOfItsJobs: a job the gateway's poller polls is
// followed on its stream; when the provider ends the interaction between
// polls, the stream's report makes the gateway poll at once (no poller
// pass runs meanwhile), that poll completes the job, and the stream is
// let go. While the stream was live the job's next poll was the backstop.
func TestGatewayFollowsStreamOfItsJobs(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	k := f.svc.startKeeper(ctx, f.env(), MaxGatewayStreams)
	defer k.close()
	res, err := f.start("fake:never")
	if err != nil {
		t.Fatal(err)
	}
	streams := "GET /interactions/" + res.Handle + "?stream=true*"
	if err := f.clk.Sleep(ctx, 6*time.Second); err != nil {
		t.Fatal(err)
	}
	if n, _ := f.svc.PollDue(ctx, f.env(), 10); n != 1 {
		t.Fatalf("polled %d", n)
	}
	awaitCond(t, "the stream to open", func() bool { return f.fake.Count(streams) == 1 && f.svc.streamLive(res.Job) })
	// A second poll while the stream is live schedules the next one at
	// the backstop, not the fast interval.
	j := f.job(res.Job)
	if err := f.clk.Sleep(ctx, time.Duration(j.NextPollAt-f.clk.Now().UnixMilli())*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	f.svc.PollDue(ctx, f.env(), 10)
	if j = f.job(res.Job); j.NextPollAt-f.clk.Now().UnixMilli() < DefaultBudgets.StreamBackstop.Milliseconds() {
		t.Fatalf("next poll in %d ms with a live stream", j.NextPollAt-f.clk.Now().UnixMilli())
	}
	if !f.fake.Finish(res.Handle) {
		t.Fatal("not finished")
	}
	awaitCond(t, "the job to complete", func() bool { return f.job(res.Job).State == StateCompleted })
	if n := f.fake.Count("GET /interactions/" + res.Handle); n != 3 {
		t.Fatalf("%d polls, want 3 (two by the poller, one at the stream's end)", n)
	}
	if n := f.fake.Count(streams); n != 1 {
		t.Fatalf("%d stream requests", n)
	}
	awaitCond(t, "the stream to be let go", func() bool {
		k.mu.Lock()
		defer k.mu.Unlock()
		return len(k.jobs) == 0 && !f.svc.streamLive(res.Job)
	})
}

// TestGatewayStreamsBoundedAndClosed: the gateway follows at most its
// bound of streams (the rest are polled alone), and closing the keeper
// (a draining gateway) ends every stream before it returns.
func TestGatewayStreamsBoundedAndClosed(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	k := f.svc.startKeeper(ctx, f.env(), 1)
	var ids []string
	for range 3 {
		res, err := f.start("fake:never")
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, res.Job)
	}
	if err := f.clk.Sleep(ctx, 6*time.Second); err != nil {
		t.Fatal(err)
	}
	if n, _ := f.svc.PollDue(ctx, f.env(), 10); n != 3 {
		t.Fatalf("polled %d", n)
	}
	k.mu.Lock()
	kept := len(k.jobs)
	k.mu.Unlock()
	if kept != 1 {
		t.Fatalf("%d streams followed, bound 1", kept)
	}
	awaitCond(t, "one stream to open", func() bool {
		n := 0
		for _, e := range f.fake.Requests() {
			if e.Stream {
				n++
			}
		}
		return n == 1
	})
	k.close()
	live := 0
	f.svc.streams.Range(func(any, any) bool { live++; return true })
	if live != 0 {
		t.Fatalf("%d streams left after close", live)
	}
	if f.svc.gatewayKeeper() != nil {
		t.Fatal("keeper still installed")
	}
	for _, id := range ids {
		if s := f.job(id).State; s != StateRunning {
			t.Fatalf("%s %s", id, s)
		}
	}
}

// TestGatewayStreamUsageFeedsTokenBudget: usage a followed stream reports
// is recorded on the job between polls, and usage past the job's token
// budget makes the gateway poll at once, which cancels the job for its
// budget (the poll decides, as for usage it reads itself).
func TestGatewayStreamUsageFeedsTokenBudget(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	k := f.svc.startKeeper(ctx, f.env(), MaxGatewayStreams)
	defer k.close()
	res, err := f.startChecked(ctx, f.env(), StartParams{Question: "fake:never", MaxTokens: 1000})
	if err != nil {
		t.Fatal(err)
	}
	j := f.job(res.Job)
	ks := &keptStream{stop: func() {}, maxTokens: 1000}
	// Under the budget: recorded, nothing polled.
	k.streamUsage(ctx, j, ks, google.StreamEvent{Type: google.EventStatusUpdate, Usage: &google.Usage{Total: 400}})
	if j = f.job(res.Job); j.Usage == nil || j.Usage.Tokens() != 400 || j.State != StateRunning {
		t.Fatalf("%+v", j)
	}
	// An older view (fewer tokens) is not recorded.
	ks.usageAt = time.Time{}
	k.streamUsage(ctx, j, ks, google.StreamEvent{Type: google.EventStatusUpdate, Usage: &google.Usage{Total: 300}})
	if j = f.job(res.Job); j.Usage.Tokens() != 400 {
		t.Fatalf("usage went back to %d", j.Usage.Tokens())
	}
	if n := f.fake.Count("GET /interactions/" + res.Handle); n != 0 {
		t.Fatalf("%d polls under the budget", n)
	}
	// Past it: polled at once and cancelled for the budget.
	k.streamUsage(ctx, j, ks, google.StreamEvent{Type: google.EventStatusUpdate, Usage: &google.Usage{Total: 1200}})
	if j = f.job(res.Job); j.State != StateCancelRequested || j.ErrorCode != codeTokenBudget {
		t.Fatalf("%+v", j)
	}
	if n := f.fake.Count("GET /interactions/" + res.Handle); n != 1 {
		t.Fatalf("%d polls, want 1", n)
	}
}

// TestGatewayStreamNeedsCustody: a job whose session was reset after the
// gateway took it (its binding no longer current) gets no stream: the
// custody check before the opening refuses it, nothing is requested, and
// the job is not marked as streamless (its next successful poll may
// follow it again).
func TestGatewayStreamNeedsCustody(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	k := f.svc.startKeeper(ctx, f.env(), MaxGatewayStreams)
	defer k.close()
	res, err := f.start("fake:never")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.st.UpdateSession(ctx, "main", "cli", "reset", 0, f.clk.Now()); err != nil {
		t.Fatal(err)
	}
	k.adopt(f.job(res.Job))
	awaitCond(t, "the refused stream to be let go", func() bool {
		k.mu.Lock()
		defer k.mu.Unlock()
		return len(k.jobs) == 0
	})
	for _, e := range f.fake.Requests() {
		if e.Stream {
			t.Fatalf("a stream was requested without custody: %+v", e)
		}
	}
	k.mu.Lock()
	_, off := k.off[res.Job]
	k.mu.Unlock()
	if off {
		t.Fatal("marked streamless for a custody refusal")
	}
}

// TestGatewayStreamRefusedPolledAlone: a job whose stream the provider
// does not serve is given up once and then polled alone: later polls do
// not ask for its stream again.
func TestGatewayStreamRefusedPolledAlone(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	k := f.svc.startKeeper(ctx, f.env(), MaxGatewayStreams)
	defer k.close()
	res, err := f.start("fake:stream-refused fake-polls:50")
	if err != nil {
		t.Fatal(err)
	}
	streams := func() int {
		n := 0
		for _, e := range f.fake.Requests() {
			if e.Stream {
				n++
			}
		}
		return n
	}
	if err := f.clk.Sleep(ctx, 6*time.Second); err != nil {
		t.Fatal(err)
	}
	f.svc.PollDue(ctx, f.env(), 10)
	awaitCond(t, "the stream to be given up", func() bool {
		k.mu.Lock()
		defer k.mu.Unlock()
		_, off := k.off[res.Job]
		return off && len(k.jobs) == 0
	})
	for range 3 {
		if err := f.clk.Sleep(ctx, 20*time.Second); err != nil {
			t.Fatal(err)
		}
		f.svc.PollDue(ctx, f.env(), 10)
	}
	if n := f.fake.Count("GET /interactions/" + res.Handle); n != 4 {
		t.Fatalf("%d polls, want 4", n)
	}
	if n := streams(); n != 1 {
		t.Fatalf("%d stream requests, want 1", n)
	}
}
