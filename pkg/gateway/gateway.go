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
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/fsx"
	"github.com/clawkit/clawkit/pkg/owner"
	"github.com/clawkit/clawkit/pkg/store"
)

// Options configure a gateway.
type Options struct {
	Home        owner.Home
	Registry    *owner.Registry
	Version     string
	LockTimeout time.Duration
	// DrainTimeout (`--shutdown-timeout`) bounds how long a stop waits for
	// in-flight calls (default 30 s).
	DrainTimeout time.Duration
	Now          func() time.Time
	// Log is the gateway's structured log (NewLogger); nil logs nothing.
	Log *slog.Logger
	// Secrets are scrubbed from every log line and readiness reason; the
	// gateway adds its credentials and each call's declared variables.
	Secrets *Secrets
	// Ready, if set, is called once the record is published.
	Ready func(owner.Record)
	// LeaseTTL is the owner lease's life without a heartbeat on a shared
	// (PostgreSQL) database (default DefaultLeaseTTL).
	LeaseTTL time.Duration
	// MetricsListen, when set (HOST:PORT), serves /healthz, /readyz and
	// /metrics there (docs/operations.md). Off by default.
	MetricsListen string
}

// Gateway is a running gateway.
type Gateway struct {
	opts        Options
	log         *slog.Logger
	secrets     *Secrets
	ownerID     string
	incarnation int64
	store       *store.Store
	lock        *owner.Lock
	rec         owner.Record
	schema      int
	lease       *owner.LeaseKeeper // nil on SQLite
	metrics     *metrics
	metricsAddr string
	started     time.Time

	// starters is how many background starters run; startersDown counts
	// those that ended while the gateway was not stopping (readiness).
	starters     int
	startersDown atomic.Int64

	retiring atomic.Bool
	inflight sync.WaitGroup
	nflight  atomic.Int64
	stopOnce sync.Once
	stopCh   chan struct{}
}

// DefaultLeaseTTL is how long a gateway's owner lease lasts without a
// heartbeat.
const DefaultLeaseTTL = owner.DefaultLeaseTTL

// Run takes ownership of the home and serves until ctx ends (SIGTERM) or
// a stop is requested, then shuts down gracefully: admission closes, the
// in-flight calls finish (up to DrainTimeout), river's jobs and the owner
// lease are released so another gateway takes over at once
// (docs/operations.md, "Draining a gateway").
func Run(ctx context.Context, opts Options) error {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Secrets == nil {
		opts.Secrets = &Secrets{}
	}
	if opts.Log == nil {
		opts.Log = NewLogger(io.Discard, LogConfig{}, slog.LevelError, opts.Secrets)
	}
	if opts.DrainTimeout == 0 {
		opts.DrainTimeout = 30 * time.Second
	}
	// Refusals of the options themselves come first: nothing is created.
	if err := CheckMetricsListen(opts.MetricsListen); err != nil {
		return err
	}
	notify := takeNotifier()
	h := opts.Home
	if err := h.Ensure(); err != nil {
		return err
	}
	// AcquireExclusive refuses while another gateway serves the home.
	lock, err := owner.AcquireExclusive(ctx, h, opts.LockTimeout)
	if err != nil {
		return err
	}
	g := &Gateway{opts: opts, lock: lock, ownerID: uuid.NewString(), stopCh: make(chan struct{}), secrets: opts.Secrets}
	g.log = opts.Log.With(KeyOwner, g.ownerID)
	defer lock.Release()
	g.learnSecrets()

	st, err := owner.OpenStore(ctx, h, false)
	if err != nil {
		return err
	}
	g.store = st
	defer func() {
		if err := st.Close(); err != nil {
			g.log.Warn("closing the database", "error", err.Error())
		}
	}()
	g.log = g.log.With(KeyEngine, st.Engine().Name())
	g.schema, _ = st.SchemaVersion(ctx)
	// The lease keeper's lines (heartbeat failures, the loss) go through
	// the same handler, at warn.
	leaseLog := slog.NewLogLogger(g.log.Handler(), slog.LevelWarn)
	var leaseLost <-chan struct{}
	if store.IsPostgres(st.Engine()) {
		// Several gateways share the database: own it through a lease.
		k, err := owner.StartLease(ctx, st, g.ownerID, "gateway", h.Dir, opts.Version, cmpOr(opts.LeaseTTL, DefaultLeaseTTL), opts.Now(), leaseLog)
		if err != nil {
			return err
		}
		g.lease, g.incarnation, leaseLost = k, k.Incarnation(), k.Lost()
		// Now() when the gateway stops: owners.stopped_at is the stop time.
		defer func() {
			if k.State().LostReason != "" {
				return // a lost lease is not touched (LeaseKeeper.Release)
			}
			k.Release(opts.Now())
			g.log.Info("owner lease released", "incarnation", g.incarnation)
		}()
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

	g.metrics = newMetrics(g)
	var metricsSrv *http.Server
	if opts.MetricsListen != "" {
		mln, srv, err := g.listenMetrics(opts.MetricsListen)
		if err != nil {
			return err
		}
		metricsSrv, g.metricsAddr = srv, mln.Addr().String()
		go func() { _ = srv.Serve(mln) }()
		// Closed last: /healthz answers until the process is gone. Best
		// effort: the process is exiting, a probe cut short changes nothing.
		defer func() { _ = srv.Close() }()
	}

	sock, err := h.SocketPath()
	if err != nil {
		return err
	}
	_ = os.Remove(sock) // a leftover from a killed gateway; we hold the lock (Listen reports one still in the way)
	ln, err := net.Listen("unix", sock)
	if err != nil {
		return errs.Failed(errs.CodeListenFailed, "cannot listen on %s: %v", sock, err)
	}
	defer func() {
		if err := os.Remove(sock); err != nil && !errors.Is(err, fs.ErrNotExist) {
			g.log.Warn("cannot remove the socket", "error", err.Error())
		}
	}()
	if err := os.Chmod(sock, 0o600); err != nil {
		_ = ln.Close() // the chmod's error is the one to report
		return errs.Failed(errs.CodeListenFailed, "cannot restrict %s: %v", sock, err)
	}

	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/call", g.handleCall)
	mux.HandleFunc("GET /v1/status", g.handleStatus)
	mux.HandleFunc("POST /v1/stop", g.handleStop)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}

	startTime, _ := owner.ProcessStartTime(os.Getpid())
	g.started = time.Now()
	g.rec = owner.Record{
		OwnerID: g.ownerID, PID: os.Getpid(), StartTime: startTime, Socket: sock,
		Version: opts.Version, Engine: st.Engine().Name(), StartedAt: opts.Now().UTC(),
	}
	if err := owner.WriteRecord(h, g.rec); err != nil {
		_ = ln.Close() // the record's error is the one to report
		return errs.Failed(CodeRecordFailed, "cannot write %s: %v", h.Record(), err)
	}
	defer owner.RemoveRecord(h, g.ownerID)

	// Background work runs under the gateway's telemetry and logger.
	life, cancelLife := context.WithCancel(owner.WithLogger(owner.WithTelemetry(context.Background(), telemetry{g}), g.log))
	defer cancelLife()
	genv := owner.NewOpEnv(h.Dir, st, g.fence, opts.Now, nil, true)
	var starters sync.WaitGroup
	for _, start := range opts.Registry.Starters() {
		starters.Add(1)
		g.starters++
		go func() {
			defer starters.Done()
			start(life, genv)
			if life.Err() == nil {
				g.startersDown.Add(1)
				g.log.Error("a background scheduler stopped while the gateway serves: not ready")
			}
		}()
	}
	// Background work (river) stops before the lease is released below:
	// once released, the database refuses its statements. Stopping river
	// releases the jobs it was running (a cancelled poll is snoozed to
	// now), so the other gateways take them at once.
	defer func() {
		cancelLife()
		if !waitBounded(&starters, 10*time.Second) {
			g.log.Warn("background work did not stop within 10s")
		}
	}()

	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	g.log.Info("gateway serving", "pid", os.Getpid(), "home", h.Dir, "socket", sock, "metrics", g.metricsAddr, "incarnation", g.incarnation)
	notify.send("READY=1\nSTATUS=serving on " + sock + "\nMAINPID=" + strconv.Itoa(os.Getpid()))
	if opts.Ready != nil {
		opts.Ready(g.rec)
	}

	watch := time.NewTicker(time.Second)
	defer watch.Stop()
	var dog <-chan time.Time
	if notify != nil && notify.watchdog > 0 {
		t := time.NewTicker(notify.watchdog)
		defer t.Stop()
		dog = t.C
	}
	var dogBusy atomic.Bool
	var exitErr error
	why := "stop requested"
loop:
	for {
		select {
		case <-ctx.Done():
			why = "signalled"
			break loop
		case <-g.stopCh:
			break loop
		case <-leaseLost:
			// Exit non-zero: a supervisor that restarts on failure brings
			// the gateway back with a new lease (docs/scale-out.md).
			exitErr = errs.Unavailable(CodeOwnerLeaseLost, "gateway %s lost its owner lease (incarnation %d) and retired", g.ownerID, g.incarnation).
				WithHint("start it again (a supervisor with Restart=on-failure does): it takes a new lease once the database is reachable")
			why = "owner lease lost"
			break loop
		case err := <-serveErr:
			g.log.Error("server ended", errAttrs(err)...)
			why = "server ended"
			break loop
		case <-watch.C:
			// A gateway whose home vanished (or whose lock file was
			// replaced) no longer owns anything: stop.
			if !lock.Held() {
				g.log.Warn("owner lock lost; stopping")
				why = "owner lock lost"
				break loop
			}
		case <-dog:
			// The watchdog is fed only while the store answers and the
			// lease is held: a gateway wedged on either is restarted. The
			// check (a ping, up to 2 s) runs aside, so a stop is never
			// held up by it; one check at a time.
			if dogBusy.CompareAndSwap(false, true) {
				go func() {
					defer dogBusy.Store(false)
					if g.healthyForWatchdog() && !g.retiring.Load() {
						notify.send("WATCHDOG=1")
					}
				}()
			}
		}
	}
	// Retire the fence before draining: in-flight cleanup may run, but no
	// operation may publish after this point. Admission is closed too.
	notify.send("STOPPING=1\nSTATUS=draining (" + why + ")")
	g.retiring.Store(true)
	t0 := time.Now()
	g.log.Info("gateway stopping: admission closed, draining", "reason", why, "in_flight", g.nflight.Load(), "shutdown_timeout_ms", opts.DrainTimeout.Milliseconds())
	cancelLife()
	drained := make(chan struct{})
	go func() { g.inflight.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(opts.DrainTimeout):
		g.log.Warn("drain deadline passed with calls in flight", "in_flight", g.nflight.Load())
	}
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	if err := srv.Shutdown(sctx); err != nil {
		g.log.Warn("shutdown", "error", err.Error())
	}
	if metricsSrv != nil {
		// Best effort: /metrics and the probes are going away with the
		// process; a scrape cut short changes nothing.
		_ = metricsSrv.Shutdown(sctx)
	}
	cancel()
	if g.lease == nil {
		_ = st.OwnerStopped(context.Background(), g.ownerID, opts.Now())
	}
	g.log.Info("gateway stopped", KeyDurationMs, time.Since(t0).Milliseconds())
	return exitErr
}

// learnSecrets adds the home's stored credentials and the process's
// secret-bearing variables to the secrets no log line may contain.
func (g *Gateway) learnSecrets() {
	g.secrets.Add(owner.HomeSecrets(g.opts.Home.Dir)...)
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		if secretName(k) {
			g.secrets.Add(v)
		}
	}
}

// secretName reports whether a variable's name says it holds a secret
// (GEMINI_API_KEY, PGPASSWORD, …): its value is scrubbed from the log.
func secretName(k string) bool {
	k = strings.ToUpper(k)
	for _, w := range []string{"KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH"} {
		if strings.Contains(k, w) {
			return true
		}
	}
	return false
}

// healthyForWatchdog: the store answers and the lease (if any) is held.
func (g *Gateway) healthyForWatchdog() bool {
	if g.lease != nil && !g.lease.State().Held {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), pingTimeout)
	defer cancel()
	return g.store.DB().PingContext(ctx) == nil
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
	st := owner.Status{
		DBRoundTrips: rt,
		OwnerID:      g.ownerID, PID: g.rec.PID, Socket: g.rec.Socket, Version: g.opts.Version,
		Engine: g.rec.Engine, StartedAt: g.rec.StartedAt, Incarnation: g.incarnation,
		SchemaVersion: g.schema, InFlight: int(g.nflight.Load()), Retiring: g.retiring.Load(),
		Methods:       len(g.opts.Registry.Names()),
		UptimeSeconds: time.Since(g.started).Round(time.Millisecond).Seconds(), MetricsAddr: g.metricsAddr,
	}
	if r.URL.Query().Get("detail") == "1" {
		// Bounded: a database that does not answer leaves the counts out
		// and says so in the readiness reasons.
		ctx, cancel := context.WithTimeout(r.Context(), scrapeTimeout)
		defer cancel()
		why := g.notReady(ctx)
		d := &owner.StatusDetail{Ready: len(why) == 0, NotReady: why, Lease: g.leaseInfo(), Jobs: map[string]int{}, QueueDepth: -1}
		if jobs, err := g.jobsByState(ctx); err == nil {
			d.Jobs = jobs
		}
		if n, err := g.queueDepth(ctx); err == nil {
			d.QueueDepth = n
		}
		st.Detail = d
	}
	writeJSON(w, http.StatusOK, st)
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
	t0 := time.Now()
	method := "unknown"
	var callErr error
	// One line per call at info, with its outcome and duration, and the
	// call counted by method and outcome (docs/operations.md).
	defer func() {
		d := time.Since(t0)
		outcome := outcomeOf(callErr)
		g.metrics.calls.WithLabelValues(method, outcome).Inc()
		g.metrics.callSeconds.WithLabelValues(method).Observe(d.Seconds())
		args := []any{KeyMethod, method, "outcome", outcome, KeyDurationMs, d.Milliseconds()}
		args = append(args, errAttrs(callErr)...)
		g.log.Info("call", args...)
	}()

	// One decode: the envelope, and the params straight into the
	// operation's P (a params refusal is answered after the envelope's).
	req, m, params, paramsErr, err := owner.ReadCall(io.LimitReader(r.Body, 64<<20), g.opts.Registry.LookupWire)
	if err != nil {
		callErr = errs.Usage(CodeBadRequest, "malformed call")
		writeJSON(w, http.StatusBadRequest, refusal(CodeBadRequest, "malformed call: "+err.Error(), "", errs.KindUsage))
		return
	}
	if m.Name != "" {
		method = req.Method // a name the registry has: bounded label values
	}
	if g.retiring.Load() {
		callErr = errs.Unavailable(errs.CodeGatewayStopping, "the gateway is stopping")
		rep := refusal(errs.CodeGatewayStopping, "the gateway is stopping", "retry once it has stopped", errs.KindUnavailable)
		rep.Error.RetryAfterMs = 1000
		writeJSON(w, http.StatusServiceUnavailable, rep)
		return
	}
	if req.ExpectedOwnerID != g.ownerID {
		callErr = errs.Refused(CodeOwnerMismatch, "owner mismatch")
		writeJSON(w, http.StatusConflict, refusal(CodeOwnerMismatch,
			fmt.Sprintf("the call expected owner %q but this gateway is %s", req.ExpectedOwnerID, g.ownerID),
			"the state owner changed; run the command again", errs.KindRefused))
		return
	}
	// Exact versioned name: a call for an operation version this gateway
	// does not have is refused before any effect.
	if m.Name == "" {
		callErr = errs.Usage(errs.CodeUnknownMethod, "unknown operation")
		writeJSON(w, http.StatusNotFound, refusal(errs.CodeUnknownMethod, "unknown operation "+req.Method,
			"the gateway may be an older clawkit; restart it with this version", errs.KindUsage))
		return
	}
	if need := m.NeedScope(); !owner.ScopeGranted(req.Scopes, need) {
		callErr = errs.Refused(CodeScopeMissing, "scope missing")
		writeJSON(w, http.StatusForbidden, refusal(CodeScopeMissing, fmt.Sprintf("%s needs scope %s; the call carries %v", m.Name, need, req.Scopes),
			"call it with that scope (or operator.admin, the default when no scopes are given)", errs.KindRefused))
		return
	}
	// The caller's declared variables may carry keys: never logged.
	for k, v := range req.Env {
		if secretName(k) {
			g.secrets.Add(v)
		}
	}
	// The call's context ends if the client goes away; the operation's own
	// fence keeps it from publishing after retirement. It carries the
	// gateway's telemetry (provider requests) and logger.
	env := owner.NewOpEnv(g.opts.Home.Dir, g.store, g.fence, g.opts.Now, nil, true)
	env.WithCallerEnv(m, req.Env) // the variables it declares, as the caller has them
	env.SnapshotConfig()          // the config this call sees, read once as the call is taken
	if paramsErr != nil {
		callErr = paramsErr
		writeJSON(w, http.StatusOK, errorReply(paramsErr, false))
		return
	}
	cctx := owner.WithLogger(owner.WithTelemetry(r.Context(), telemetry{g}), g.log.With(KeyMethod, method))
	res, err := invokeSafely(cctx, m, env, params)
	if err != nil {
		err = store.ClassifyUnreachable(g.store, err, env.EffectBegun())
		callErr = err
		writeJSON(w, http.StatusOK, errorReply(err, env.EffectBegun()))
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

// invokeSafely checks the decoded params (the gateway trusts no client),
// runs a write's Admit (as the offline executor runs it before its lock)
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
	if err := m.Admit(env, params); err != nil {
		return nil, err
	}
	return m.Run(ctx, env, params)
}

// errorReply reports a handler error. The gateway does not reclassify it:
// mutationAccepted:false ("nothing was done") only for a classified error
// raised before the operation began any write or external effect;
// once it did, mutationAccepted:true with the operation's own
// classification (kind), which the client keeps (an operation that cannot
// tell what its effect did says outcome unknown itself). An unclassified
// error leaves mutationAccepted absent: outcome unknown.
func errorReply(err error, effectBegun bool) owner.CallReply {
	e := errs.As(err)
	if e == nil {
		return owner.CallReply{Error: &owner.CallError{Code: CodeInternal, Message: err.Error()}}
	}
	ce := &owner.CallError{Code: e.Code, Message: e.Message, Hint: e.Hint, Kind: int(e.Kind), RetryAfterMs: e.RetryAfterMs, Fields: e.Fields}
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
		return nil, errs.Failed(CodeGatewayNotRunning, "no gateway is running for %s", h.Dir).
			WithHint("start one with 'clawkit gateway run --detach'")
	}
	c := owner.NewClient(rec.Socket)
	err := c.Stop(ctx)
	fsx.CloseRead(c) // a client connection: Stop reported its own error
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

// waitBounded waits for wg, at most d, and reports whether it finished.
func waitBounded(wg *sync.WaitGroup, d time.Duration) bool {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

func cmpOr(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}
