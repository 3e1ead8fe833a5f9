package owner

import (
	"context"
	"errors"
	"log"
	"os"
	"sync"
	"time"

	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/store"
)

// DefaultLeaseTTL is how long an owner lease lasts without a heartbeat.
const DefaultLeaseTTL = 10 * time.Second

// LeaseKeeper holds an owner lease on a shared (PostgreSQL) database — a
// gateway's for its life, an offline command's for the command — renewing
// it by heartbeat and saying when it is gone.
//
// Two guards keep a paused gateway from writing late: the database's
// lease trigger refuses its writes once the lease expired (database
// clock), and check() refuses before external effects (HTTP, file
// publication) once the local monotonic deadline passed — measured from
// before each renewal was sent, so it never outlives the database's view.
type LeaseKeeper struct {
	st    *store.Store
	lease store.Lease
	log   *log.Logger
	who   string // "this gateway", "this command": for messages

	mu         sync.Mutex
	validUntil time.Time // monotonic
	lostWhy    string
	lost       chan struct{}
}

// StartLease takes an owner lease of kind ("gateway", "offline") on st,
// whose connections then write under its fencing incarnation. Run keeps
// it; Release ends it.
func StartLease(ctx context.Context, st *store.Store, ownerID, kind, home, version string, ttl time.Duration, now time.Time, lg *log.Logger) (*LeaseKeeper, error) {
	host, _ := os.Hostname()
	t0 := time.Now()
	l, err := st.AcquireLease(ctx, ownerID, kind, host, home, os.Getpid(), version, ttl, now)
	if err != nil {
		return nil, err
	}
	who := "this gateway"
	if kind != "gateway" {
		who = "this command"
	}
	k := &LeaseKeeper{st: st, lease: l, log: lg, who: who, lost: make(chan struct{})}
	k.extend(t0)
	return k, nil
}

// leaseMargin is how long before the lease's own end (measured locally
// from before the renewal was sent) this owner stops: the fence refuses and
// its database connections are reset that much earlier, so a statement it
// sent just before cannot reach the server after the lease ended there.
func leaseMargin(ttl time.Duration) time.Duration { return min(ttl/10, time.Second) }

// extend moves the local deadline to t0 (when the successful renewal was
// sent) + TTL - margin, and the engine's send fence with it.
func (k *LeaseKeeper) extend(t0 time.Time) {
	until := t0.Add(k.lease.TTL - leaseMargin(k.lease.TTL))
	k.mu.Lock()
	k.validUntil = until
	k.mu.Unlock()
	if pg, ok := k.st.Engine().(*store.Postgres); ok {
		pg.SetSendDeadline(until)
	}
}

// Incarnation is the lease's fencing incarnation.
func (k *LeaseKeeper) Incarnation() int64 { return k.lease.Incarnation }

// Lost is closed once the lease is gone.
func (k *LeaseKeeper) Lost() <-chan struct{} { return k.lost }

// Run heartbeats until ctx ends or the lease is lost.
func (k *LeaseKeeper) Run(ctx context.Context) {
	every := k.lease.TTL / 3
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-k.lost:
			return
		case <-t.C:
		}
		// A heartbeat that was itself delayed past the deadline (the
		// process was stopped) must not renew: the lease is gone already.
		if time.Now().After(k.until()) {
			k.markLost("the lease expired before it could be renewed (the process was paused or cut off)")
			return
		}
		t0 := time.Now()
		rctx, cancel := context.WithTimeout(ctx, every)
		err := k.st.RenewLease(rctx, k.lease)
		cancel()
		switch {
		case err == nil:
			k.extend(t0)
		case errors.Is(err, store.ErrLeaseLost):
			k.markLost("the database says the lease expired (the process was paused or cut off past it)")
			return
		case ctx.Err() != nil:
			return
		default:
			k.log.Printf("owner lease %d: heartbeat failed: %v", k.lease.Incarnation, err)
		}
	}
}

func (k *LeaseKeeper) until() time.Time {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.validUntil
}

func (k *LeaseKeeper) markLost(why string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.lostWhy != "" {
		return
	}
	k.lostWhy = why
	k.log.Printf("owner lease %d lost: %s; retiring: %s makes no further writes or publications", k.lease.Incarnation, why, k.who)
	close(k.lost)
}

// Check is the lease part of the owner's fence.
func (k *LeaseKeeper) Check() error {
	k.mu.Lock()
	why, until := k.lostWhy, k.validUntil
	k.mu.Unlock()
	if why == "" && time.Now().After(until) {
		k.markLost("the lease deadline passed without a successful heartbeat")
		why = "lease expired"
	}
	if why != "" {
		return errs.Refused(CodeOwnerRetired, "%s no longer holds its owner lease (incarnation %d): %s", k.who, k.lease.Incarnation, why).
			WithHint("another owner took over its work; nothing further was written or published")
	}
	return nil
}

// Release ends the lease at now (owners.stopped_at; it expires by itself
// if this fails). A lease already lost is not touched: its owner sends
// nothing more to the database.
func (k *LeaseKeeper) Release(now time.Time) {
	select {
	case <-k.lost:
		return
	default:
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := k.st.ReleaseLease(ctx, k.lease, now); err != nil {
		k.log.Printf("owner lease %d: release failed (it expires by itself): %v", k.lease.Incarnation, err)
	}
}
