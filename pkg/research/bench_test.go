package research

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/clawkit/clawkit/pkg/auth"
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
	js := jobStore{f.st}
	for i := 0; i < n; i++ {
		id := f.fake.Seed("fake:never bench")
		j := &Job{ID: newJobID(), AgentID: "main", SessionKey: "cli", SessionIncarnation: 1, ProfileID: "google:default",
			CredentialAccount: auth.Fingerprint("key-one"), BaseURL: f.fake.URL, Agent: google.DefaultAgent, Handle: id,
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
