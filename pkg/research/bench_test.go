package research

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/clawkit/clawkit/pkg/auth"
	"github.com/clawkit/clawkit/pkg/owner"
	"github.com/clawkit/clawkit/pkg/research/google"
)

// BenchmarkPoller1000Jobs measures the gateway's background poller: 1,000
// running jobs (each bound to the default session, pinned profile and the
// fake endpoint), every one due, polled once per iteration by PollDue with
// its real authority checks, HTTP round trip to the in-process fake, CAS
// update and budget bookkeeping. Reported: jobs polled per second and CPU
// (user+system, this process: client AND the in-process fake server) per
// poll.
func BenchmarkPoller1000Jobs(b *testing.B) {
	const n = 1000
	f := newFixture(b)
	f.fake.NoLog = true
	ctx := context.Background()
	env := f.env()
	if _, err := env.BindSession(ctx, "main", "cli"); err != nil {
		b.Fatal(err)
	}
	now := f.clk.Now()
	js := jobStore{st: f.st}
	for i := 0; i < n; i++ {
		id := f.fake.Seed("fake:never bench")
		j := &Job{ID: newJobID(), AgentID: "main", SessionKey: "cli", SessionIncarnation: 1, ProfileID: "google:default",
			CredentialAccount: auth.Fingerprint("key-one"), BaseURL: f.fake.URL + "/" + google.DefaultAPIVersion, Agent: google.DefaultAgent, Handle: id,
			State: StateRunning, Question: "bench", OutputFormat: "markdown", MaxReportBytes: DefaultReportMax,
			CreatedAt: ms(now), UpdatedAt: ms(now), SubmittedAt: ms(now), DeadlineAt: ms(now.Add(1000 * time.Hour)), RowVersion: 1}
		if err := js.insert(ctx, j); err != nil {
			b.Fatal(err)
		}
	}
	f.svc.Budgets.MaxPolls = 1 << 30
	var ru0, ru1 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	start := time.Now()
	polled := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f.clk.Sleep(ctx, time.Minute) // every job due again
		k, _ := f.svc.PollDue(ctx, env, n)
		polled += k
	}
	b.StopTimer()
	el := time.Since(start)
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	cpu := time.Duration(ru1.Utime.Nano()-ru0.Utime.Nano()) + time.Duration(ru1.Stime.Nano()-ru0.Stime.Nano())
	if polled != n*b.N {
		b.Fatalf("polled %d, want %d", polled, n*b.N)
	}
	b.ReportMetric(float64(polled)/el.Seconds(), "polls/s")
	b.ReportMetric(float64(cpu.Microseconds())/float64(polled), "cpu-µs/poll")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkRunPollerRealTime runs the gateway's real poller loop
// (RunPoller: real clock, real sleeps, 5 s ±20 % intervals) over 1,000
// running jobs for 12 s of wall time per iteration and reports the polls
// per second it sustained, the CPU it used as a share of one core, and the
// worst lateness of a poll against its due time. Run with -benchtime 1x.
func BenchmarkRunPollerRealTime(b *testing.B) {
	const n = 1000
	const window = 12 * time.Second
	f := newFixture(b)
	f.fake.NoLog = true
	f.svc = &Service{Getenv: func(string) string { return "" }, Budgets: Budgets{MaxPolls: 1 << 30}}
	ctx := context.Background()
	env := owner.NewOpEnv(f.home, f.st, func() error { return nil }, time.Now, nil, true)
	if _, err := env.BindSession(ctx, "main", "cli"); err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	js := jobStore{st: f.st}
	for i := 0; i < n; i++ {
		id := f.fake.Seed("fake:never bench")
		// Spread the first polls over one interval, as submissions would be.
		next := now.Add(time.Duration(i) * 5 * time.Second / n)
		j := &Job{ID: newJobID(), AgentID: "main", SessionKey: "cli", SessionIncarnation: 1, ProfileID: "google:default",
			CredentialAccount: auth.Fingerprint("key-one"), BaseURL: f.fake.URL + "/" + google.DefaultAPIVersion, Agent: google.DefaultAgent, Handle: id,
			State: StateRunning, Question: "bench", OutputFormat: "markdown", MaxReportBytes: DefaultReportMax,
			CreatedAt: ms(now), UpdatedAt: ms(now), SubmittedAt: ms(now), DeadlineAt: ms(now.Add(1000 * time.Hour)),
			NextPollAt: ms(next), RowVersion: 1}
		if err := js.insert(ctx, j); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var ru0, ru1 syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
		polls0 := totalPolls(b, f)
		pctx, cancel := context.WithTimeout(ctx, window)
		start := time.Now()
		f.svc.RunPoller(pctx, env)
		cancel()
		el := time.Since(start)
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
		cpu := time.Duration(ru1.Utime.Nano()-ru0.Utime.Nano()) + time.Duration(ru1.Stime.Nano()-ru0.Stime.Nano())
		polls := totalPolls(b, f) - polls0
		late := maxLateness(b, f, time.Now())
		b.ReportMetric(float64(polls)/el.Seconds(), "polls/s")
		b.ReportMetric(100*cpu.Seconds()/el.Seconds(), "%cpu")
		b.ReportMetric(float64(cpu.Microseconds())/float64(polls), "cpu-µs/poll")
		b.ReportMetric(late.Seconds(), "s-max-overdue")
	}
	b.ReportMetric(0, "ns/op")
}

func totalPolls(b *testing.B, f *fixture) int {
	var n int
	if err := f.st.DB().QueryRow(`SELECT COALESCE(SUM(poll_count),0) FROM research_jobs`).Scan(&n); err != nil {
		b.Fatal(err)
	}
	return n
}

// maxLateness is how far past its due time the most overdue job is now: a
// poller keeping up keeps it near zero.
func maxLateness(b *testing.B, f *fixture, now time.Time) time.Duration {
	var minNext int64
	if err := f.st.DB().QueryRow(`SELECT MIN(next_poll_at) FROM research_jobs WHERE state = 'running'`).Scan(&minNext); err != nil {
		b.Fatal(err)
	}
	if d := now.Sub(time.UnixMilli(minNext)); d > 0 {
		return d
	}
	return 0
}
