package gateway

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

// leaseKeeper holds a gateway's owner lease on a shared (PostgreSQL)
// database: it renews the lease by heartbeat and says when it is gone.
//
// Two guards keep a paused gateway from writing late: the database's
// lease trigger refuses its writes once the lease expired (database
// clock), and check() refuses before external effects (HTTP, file
// publication) once the local monotonic deadline passed — measured from
// before each renewal was sent, so it never outlives the database's view.
type leaseKeeper struct {
	st    *store.Store
	lease store.Lease
	log   *log.Logger

	mu         sync.Mutex
	validUntil time.Time // monotonic
	lostWhy    string
	lost       chan struct{}
}

func startLease(ctx context.Context, st *store.Store, ownerID, home, version string, ttl time.Duration, now time.Time, lg *log.Logger) (*leaseKeeper, error) {
	host, _ := os.Hostname()
	t0 := time.Now()
	l, err := st.AcquireLease(ctx, ownerID, "gateway", host, home, os.Getpid(), version, ttl, now)
	if err != nil {
		return nil, err
	}
	return &leaseKeeper{st: st, lease: l, log: lg, validUntil: t0.Add(ttl), lost: make(chan struct{})}, nil
}

// run heartbeats until ctx ends or the lease is lost.
func (k *leaseKeeper) run(ctx context.Context) {
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
			k.markLost("the lease expired before it could be renewed (the gateway was paused or cut off)")
			return
		}
		t0 := time.Now()
		rctx, cancel := context.WithTimeout(ctx, every)
		err := k.st.RenewLease(rctx, k.lease)
		cancel()
		switch {
		case err == nil:
			k.mu.Lock()
			k.validUntil = t0.Add(k.lease.TTL)
			k.mu.Unlock()
		case errors.Is(err, store.ErrLeaseLost):
			k.markLost("the database says the lease expired (the gateway was paused or cut off past it)")
			return
		case ctx.Err() != nil:
			return
		default:
			k.log.Printf("owner lease %d: heartbeat failed: %v", k.lease.Incarnation, err)
		}
	}
}

func (k *leaseKeeper) until() time.Time {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.validUntil
}

func (k *leaseKeeper) markLost(why string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.lostWhy != "" {
		return
	}
	k.lostWhy = why
	k.log.Printf("owner lease %d lost: %s; retiring: this gateway makes no further writes or publications", k.lease.Incarnation, why)
	close(k.lost)
}

// check is the lease part of the gateway's fence.
func (k *leaseKeeper) check() error {
	k.mu.Lock()
	why, until := k.lostWhy, k.validUntil
	k.mu.Unlock()
	if why == "" && time.Now().After(until) {
		k.markLost("the lease deadline passed without a successful heartbeat")
		why = "lease expired"
	}
	if why != "" {
		return errs.Refused("owner_retired", "this gateway no longer holds its owner lease (incarnation %d): %s", k.lease.Incarnation, why).
			WithHint("another gateway took over its work; nothing further was written or published")
	}
	return nil
}

func (k *leaseKeeper) release(now time.Time) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := k.st.ReleaseLease(ctx, k.lease, now); err != nil {
		k.log.Printf("owner lease %d: release failed (it expires by itself): %v", k.lease.Incarnation, err)
	}
}
