// Package gateway is the long-running owner of a clawkit home: it holds the
// owner lock for its whole life and serves the operation registry over
// HTTP/1.1 on a unix socket (docs/architecture.md).
//
// Shutdown order matters: the fence retires first (no new publication may
// start), admission closes, in-flight calls drain with a deadline (their
// cleanup may still run), then the store closes, the record and socket are
// removed and the lock is released.
package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/owner"
	"github.com/clawkit/clawkit/pkg/store"
)

// Options configure a gateway.
type Options struct {
	Home        owner.Home
	Registry    *owner.Registry
	Version     string
	LockTimeout time.Duration
	// DrainTimeout bounds how long stop waits for in-flight calls.
	DrainTimeout time.Duration
	Now          func() time.Time
	Log          *log.Logger
	// Ready, if set, is called once the record is published.
	Ready func(owner.Record)
	// LeaseTTL is the owner lease's life without a heartbeat on a shared
	// (PostgreSQL) database (default DefaultLeaseTTL).
	LeaseTTL time.Duration
}

// Gateway is a running gateway.
type Gateway struct {
	opts        Options
	ownerID     string
	incarnation int64
	store       *store.Store
	lock        *owner.Lock
	rec         owner.Record
	schema      int
	lease       *owner.LeaseKeeper // nil on SQLite

	retiring atomic.Bool
	inflight sync.WaitGroup
	nflight  atomic.Int64
	stopOnce sync.Once
	stopCh   chan struct{}
}

// Run takes ownership of the home and serves until ctx ends or a stop is
// requested.
// DefaultLeaseTTL is how long a gateway's owner lease lasts without a
// heartbeat.
const DefaultLeaseTTL = owner.DefaultLeaseTTL

func Run(ctx context.Context, opts Options) error {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Log == nil {
		opts.Log = log.New(io.Discard, "", 0)
	}
	if opts.DrainTimeout == 0 {
		opts.DrainTimeout = 30 * time.Second
	}
	h := opts.Home
	if err := h.Ensure(); err != nil {
		return err
	}
	// AcquireExclusive refuses while another gateway serves the home.
	lock, err := owner.AcquireExclusive(ctx, h, opts.LockTimeout)
	if err != nil {
		return err
	}
	g := &Gateway{opts: opts, lock: lock, ownerID: uuid.NewString(), stopCh: make(chan struct{})}
	defer lock.Release()

	st, err := owner.OpenStore(ctx, h, false)
	if err != nil {
		return err
	}
	g.store = st
	defer st.Close()
	g.schema, _ = st.SchemaVersion(ctx)
	var leaseLost <-chan struct{}
	if store.IsPostgres(st.Engine()) {
		// Several gateways share the database: own it through a lease.
		k, err := owner.StartLease(ctx, st, g.ownerID, "gateway", h.Dir, opts.Version, cmpOr(opts.LeaseTTL, DefaultLeaseTTL), opts.Now(), opts.Log)
		if err != nil {
			return err
		}
		g.lease, g.incarnation, leaseLost = k, k.Incarnation(), k.Lost()
		// Now() when the gateway stops: owners.stopped_at is the stop time.
		defer func() { k.Release(opts.Now()) }()
		hctx, stopHB := context.WithCancel(context.Background())
		defer stopHB()
		go k.Run(hctx)
	} else {
		inc, err := st.RecordOwner(ctx, g.ownerID, "gateway", os.Getpid(), opts.Version, opts.Now())
		if err != nil {
			return err
		}
		g.incarnation = inc
	}

	sock, err := h.SocketPath()
	if err != nil {
		return err
	}
	os.Remove(sock) // a leftover from a killed gateway; we hold the lock
	ln, err := net.Listen("unix", sock)
	if err != nil {
		return errs.Failed(errs.CodeListenFailed, "cannot listen on %s: %v", sock, err)
	}
	defer os.Remove(sock)
	if err := os.Chmod(sock, 0o600); err != nil {
		ln.Close()
		return errs.Failed(errs.CodeListenFailed, "cannot restrict %s: %v", sock, err)
	}

	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/call", g.handleCall)
	mux.HandleFunc("GET /v1/status", g.handleStatus)
	mux.HandleFunc("POST /v1/stop", g.handleStop)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}

	startTime, _ := owner.ProcessStartTime(os.Getpid())
	g.rec = owner.Record{
		OwnerID: g.ownerID, PID: os.Getpid(), StartTime: startTime, Socket: sock,
		Version: opts.Version, Engine: st.Engine().Name(), StartedAt: opts.Now().UTC(),
	}
	if err := owner.WriteRecord(h, g.rec); err != nil {
		ln.Close()
		return errs.Failed(CodeRecordFailed, "cannot write %s: %v", h.Record(), err)
	}
	defer owner.RemoveRecord(h, g.ownerID)

	life, cancelLife := context.WithCancel(context.Background())
	defer cancelLife()
	genv := owner.NewOpEnv(h.Dir, st, g.fence, opts.Now, nil, true)
	var starters sync.WaitGroup
	for _, start := range opts.Registry.Starters() {
		starters.Add(1)
		go func() { defer starters.Done(); start(life, genv) }()
	}
	// Background work (river) stops before the lease is released below:
	// once released, the database refuses its statements.
	defer func() { cancelLife(); waitBounded(&starters, 10*time.Second) }()

	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	opts.Log.Printf("gateway %s (pid %d) owns %s, listening on %s", g.ownerID, os.Getpid(), h.Dir, sock)
	if opts.Ready != nil {
		opts.Ready(g.rec)
	}

	watch := time.NewTicker(time.Second)
	defer watch.Stop()
	var exitErr error
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case <-g.stopCh:
			break loop
		case <-leaseLost:
			// Exit non-zero: a supervisor that restarts on failure brings
			// the gateway back with a new lease (docs/scale-out.md).
			exitErr = errs.Unavailable(CodeOwnerLeaseLost, "gateway %s lost its owner lease (incarnation %d) and retired", g.ownerID, g.incarnation).
				WithHint("start it again (a supervisor with Restart=on-failure does): it takes a new lease once the database is reachable")
			break loop
		case err := <-serveErr:
			opts.Log.Printf("server ended: %v", err)
			break loop
		case <-watch.C:
			// A gateway whose home vanished (or whose lock file was
			// replaced) no longer owns anything: stop.
			if !lock.Held() {
				opts.Log.Printf("owner lock lost; stopping")
				break loop
			}
		}
	}
	// Retire the fence before draining: in-flight cleanup may run, but no
	// operation may publish after this point.
	g.retiring.Store(true)
	cancelLife()
	drained := make(chan struct{})
	go func() { g.inflight.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(opts.DrainTimeout):
		opts.Log.Printf("drain deadline passed with %d calls in flight", g.nflight.Load())
	}
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	srv.Shutdown(sctx)
	cancel()
	if g.lease == nil {
		_ = st.OwnerStopped(context.Background(), g.ownerID, opts.Now())
	}
	opts.Log.Printf("gateway %s stopped", g.ownerID)
	return exitErr
}

func (g *Gateway) fence() error {
	if g.retiring.Load() {
		return owner.ErrRetired("the gateway is stopping")
	}
	if !g.lock.Held() {
		return owner.ErrRetired("the owner lock file was removed or replaced")
	}
	if g.lease != nil {
		return g.lease.Check()
	}
	return nil
}

func (g *Gateway) stop() { g.stopOnce.Do(func() { close(g.stopCh) }) }

func (g *Gateway) handleStatus(w http.ResponseWriter, r *http.Request) {
	var rt int64
	if pg, ok := g.store.Engine().(*store.Postgres); ok {
		rt = pg.RoundTrips()
	}
	writeJSON(w, http.StatusOK, owner.Status{
		DBRoundTrips: rt,
		OwnerID:      g.ownerID, PID: g.rec.PID, Socket: g.rec.Socket, Version: g.opts.Version,
		Engine: g.rec.Engine, StartedAt: g.rec.StartedAt, Incarnation: g.incarnation,
		SchemaVersion: g.schema, InFlight: int(g.nflight.Load()), Retiring: g.retiring.Load(),
		Methods: len(g.opts.Registry.Names()),
	})
}

func (g *Gateway) handleStop(w http.ResponseWriter, r *http.Request) {
	// Refuse new calls before acknowledging: once a client has the reply,
	// no call it (or anyone) sends afterwards is admitted, without waiting
	// for the serve loop to notice the stop.
	g.retiring.Store(true)
	writeJSON(w, http.StatusOK, map[string]any{"ok": true, "ownerId": g.ownerID})
	g.stop()
}

var falseV = false

func refusal(code errs.Code, msg, hint string, kind errs.Kind) owner.CallReply {
	return owner.CallReply{Error: &owner.CallError{Code: code, Message: msg, Hint: hint, Kind: int(kind), MutationAccepted: &falseV}}
}

func (g *Gateway) handleCall(w http.ResponseWriter, r *http.Request) {
	// Admission: counted before the retiring check so drain waits for it.
	g.inflight.Add(1)
	g.nflight.Add(1)
	defer g.inflight.Done()
	defer g.nflight.Add(-1)

	// One decode: the envelope, and the params straight into the
	// operation's P (a params refusal is answered after the envelope's).
	req, m, params, paramsErr, err := owner.ReadCall(io.LimitReader(r.Body, 64<<20), g.opts.Registry.LookupWire)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, refusal(CodeBadRequest, "malformed call: "+err.Error(), "", errs.KindUsage))
		return
	}
	if g.retiring.Load() {
		rep := refusal(errs.CodeGatewayStopping, "the gateway is stopping", "retry once it has stopped", errs.KindUnavailable)
		rep.Error.RetryAfterMs = 1000
		writeJSON(w, http.StatusServiceUnavailable, rep)
		return
	}
	if req.ExpectedOwnerID != g.ownerID {
		writeJSON(w, http.StatusConflict, refusal(CodeOwnerMismatch,
			fmt.Sprintf("the call expected owner %q but this gateway is %s", req.ExpectedOwnerID, g.ownerID),
			"the state owner changed; run the command again", errs.KindRefused))
		return
	}
	// Exact versioned name: a call for an operation version this gateway
	// does not have is refused before any effect.
	if m.Name == "" {
		writeJSON(w, http.StatusNotFound, refusal(errs.CodeUnknownMethod, "unknown operation "+req.Method,
			"the gateway may be an older clawkit; restart it with this version", errs.KindUsage))
		return
	}
	if need := m.NeedScope(); !owner.ScopeGranted(req.Scopes, need) {
		writeJSON(w, http.StatusForbidden, refusal(CodeScopeMissing, fmt.Sprintf("%s needs scope %s; the call carries %v", m.Name, need, req.Scopes),
			"call it with that scope (or operator.admin, the default when no scopes are given)", errs.KindRefused))
		return
	}
	// One line per admitted call: which operation versions clients use
	// (and how many calls a command made) is visible in the gateway log.
	g.opts.Log.Printf("call %s", m.Name)
	// The call's context ends if the client goes away; the operation's own
	// fence keeps it from publishing after retirement.
	env := owner.NewOpEnv(g.opts.Home.Dir, g.store, g.fence, g.opts.Now, nil, true)
	env.WithCallerEnv(m, req.Env) // the variables it declares, as the caller has them
	env.SnapshotConfig()          // the config this call sees, read once at admission
	if paramsErr != nil {
		writeJSON(w, http.StatusOK, errorReply(paramsErr, false))
		return
	}
	res, err := invokeSafely(r.Context(), m, env, params)
	if err != nil {
		writeJSON(w, http.StatusOK, errorReply(store.ClassifyUnreachable(g.store, err, env.EffectBegun()), env.EffectBegun()))
		return
	}
	// One encode: the result value inside the reply.
	writeJSON(w, http.StatusOK, resultReply{OK: true, Result: res})
}

// resultReply is a success as the gateway writes it: the operation's
// result value, encoded with the envelope in one pass.
type resultReply struct {
	OK     bool `json:"ok"`
	Result any  `json:"result"`
}

// invokeSafely checks the decoded params (the gateway trusts no client)
// and runs the operation.
func invokeSafely(ctx context.Context, m owner.Method, env *owner.OpEnv, params any) (res any, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("operation %s panicked: %v", m.Name, p)
		}
	}()
	if params, err = m.Check(params); err != nil {
		return nil, err
	}
	return m.Run(ctx, env, params)
}

// errorReply reports a handler error. The gateway does not reclassify it:
// mutationAccepted:false ("nothing was done") only for a classified error
// raised before the operation admitted any write or external effect;
// once it did, mutationAccepted:true with the operation's own
// classification (kind), which the client keeps (an operation that cannot
// tell what its effect did says outcome unknown itself). An unclassified
// error leaves mutationAccepted absent: outcome unknown.
func errorReply(err error, effectBegun bool) owner.CallReply {
	e := errs.As(err)
	if e == nil {
		return owner.CallReply{Error: &owner.CallError{Code: CodeInternal, Message: err.Error()}}
	}
	ce := &owner.CallError{Code: e.Code, Message: e.Message, Hint: e.Hint, Kind: int(e.Kind), RetryAfterMs: e.RetryAfterMs}
	if e.Kind != errs.KindUnknown && !effectBegun {
		ce.MutationAccepted = &falseV
	} else {
		t := true
		ce.MutationAccepted = &t
	}
	return owner.CallReply{Error: ce}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// Stop asks the home's gateway to stop and waits until it has exited (its
// record is gone and its pid is dead) or the deadline passes.
func Stop(ctx context.Context, h owner.Home, wait time.Duration) (*owner.Record, error) {
	rec, st := owner.LiveGateway(ctx, h)
	if st == nil {
		return nil, errs.Failed(errs.CodeGatewayNotRunning, "no gateway is running for %s", h.Dir).
			WithHint("start one with 'clawkit gateway run --detach'")
	}
	c := owner.NewClient(rec.Socket)
	err := c.Stop(ctx)
	c.Close()
	if err != nil {
		return rec, errs.Unavailable(CodeGatewayStopFailed, "the gateway (pid %d) did not accept the stop: %v", rec.PID, err)
	}
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		if !rec.Alive() {
			// The pid can read as gone (its leader thread a zombie) while
			// the last threads still hold the owner lock. Return only once
			// the lock is free, so the next command never finds it busy.
			lctx, cancel := context.WithDeadline(ctx, deadline)
			l, err := owner.AcquireLock(lctx, h.Lock())
			cancel()
			if err == nil {
				l.Release()
				return rec, nil
			}
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	return rec, errs.Unavailable(CodeGatewayStopTimeout, "the gateway (pid %d) is still draining after %s", rec.PID, wait).
		WithHint("check 'clawkit gateway status'; it exits once in-flight calls finish")
}

// waitBounded waits for wg, at most d.
func waitBounded(wg *sync.WaitGroup, d time.Duration) {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
	}
}

func cmpOr(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}
