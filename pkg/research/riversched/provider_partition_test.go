package riversched_test

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clawkit/clawkit/pkg/research"
	"github.com/clawkit/clawkit/pkg/research/google/fakeapi"
	"github.com/clawkit/clawkit/pkg/research/riversched"
	"github.com/clawkit/clawkit/pkg/store/pgtest"
)

// hangingTransport stands in for a provider that this host cannot reach
// (a silent partition): every request waits until its context ends.
type hangingTransport struct{ n atomic.Int64 }

func (h *hangingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	h.n.Add(1)
	<-r.Context().Done()
	return nil, r.Context().Err()
}

// Two gateways on one database; one of them cannot reach the provider
// and its requests never return (its request timeout is far beyond the
// test). It gives up a stalled poll, releases the job at once and stops
// claiming work, so the healthy gateway polls every job to the end; the
// cut-off one sends no more than its first batch and its probes.
func TestProviderPartitionedGatewayStopsClaiming(t *testing.T) {
	saved := []time.Duration{riversched.PollStallAfter, riversched.ProbeFirst, riversched.ProbeMax}
	riversched.PollStallAfter, riversched.ProbeFirst, riversched.ProbeMax = 300*time.Millisecond, 500*time.Millisecond, 2*time.Second
	t.Cleanup(func() {
		riversched.PollStallAfter, riversched.ProbeFirst, riversched.ProbeMax = saved[0], saved[1], saved[2]
	})
	fake, err := fakeapi.Start("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fake.Close)
	u := pgtest.URL(t)
	healthy := newRigOn(t, u, fake, "healthy")
	cut := newRigOn(t, u, fake, "cut-off")
	hang := &hangingTransport{}
	cut.svc.HTTP = &http.Client{Transport: hang}
	cut.svc.Budgets.RequestTimeout = 10 * time.Minute
	healthy.svc.Budgets.FastInterval, healthy.svc.Budgets.SlowInterval = 100*time.Millisecond, 100*time.Millisecond
	cut.svc.Budgets.FastInterval, cut.svc.Budgets.SlowInterval = 100*time.Millisecond, 100*time.Millisecond

	ctx := context.Background()
	const jobs = 24
	for i := range jobs {
		if _, err := healthy.svc.Start(ctx, healthy.env(), checked(t, research.StartParams{Question: fmt.Sprintf("fake-polls:4 partitioned %d", i)})); err != nil {
			t.Fatal(err)
		}
	}
	// The cut-off gateway starts first and claims what it can.
	cut.runGateway()
	for deadline := time.Now().Add(30 * time.Second); hang.n.Load() == 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if hang.n.Load() == 0 {
		t.Fatal("the cut-off gateway never tried the provider")
	}
	healthy.runGateway()
	healthy.await(jobs, `SELECT count(*) FROM research_jobs WHERE state = 'completed' AND published = 1`)
	// First batch (at most one per worker) plus one request per probe.
	probes := int64(20)
	if n := hang.n.Load(); n > int64(riversched.MaxWorkers)+probes {
		t.Fatalf("the cut-off gateway sent %d requests: it kept claiming jobs", n)
	}
	if n := healthy.requests("POST /interactions"); n != jobs {
		t.Fatalf("%d creates, want %d", n, jobs)
	}
}
