package owner

import (
	"bytes"
	"log"
	"strings"
	"testing"
	"time"

	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/store"
)

// The lease part of the fence uses the local monotonic deadline: once it
// passed without a successful heartbeat (the process was stopped), the
// gateway refuses effects at once, says so in its log and signals its
// retirement, even before the database is asked.
func TestLeaseCheckRefusesPastDeadline(t *testing.T) {
	var buf bytes.Buffer
	k := &LeaseKeeper{
		lease:      store.Lease{Incarnation: 7, TTL: time.Second},
		log:        log.New(&buf, "", 0),
		validUntil: time.Now().Add(time.Hour),
		who:        "this gateway",
		lost:       make(chan struct{}),
	}
	if err := k.Check(); err != nil {
		t.Fatalf("a live lease: %v", err)
	}
	k.mu.Lock()
	k.validUntil = time.Now().Add(-time.Millisecond)
	k.mu.Unlock()
	err := k.Check()
	if errs.CodeOf(err) != "owner_retired" || errs.KindOf(err) != errs.KindRefused {
		t.Fatalf("past the deadline: %v", err)
	}
	select {
	case <-k.lost:
	default:
		t.Fatal("lost not signalled")
	}
	if !strings.Contains(buf.String(), "owner lease 7 lost") || !strings.Contains(buf.String(), "retiring") {
		t.Fatalf("log: %q", buf.String())
	}
	// Once lost, always lost, logged once.
	k.mu.Lock()
	k.validUntil = time.Now().Add(time.Hour)
	k.mu.Unlock()
	if k.Check() == nil {
		t.Fatal("a lost lease came back")
	}
	if strings.Count(buf.String(), "lost") != 1 {
		t.Fatalf("logged more than once: %q", buf.String())
	}
}
