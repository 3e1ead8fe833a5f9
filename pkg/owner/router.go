package owner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"time"

	"github.com/google/uuid"

	"github.com/clawkit/clawkit/pkg/config"
	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/fsx"
	"github.com/clawkit/clawkit/pkg/store"
)

// Router runs a stateful call where the state is owned (docs/architecture.md):
//  1. a live gateway (answering on its socket, record unchanged right
//     before dispatch) gets the call with expectedOwnerId;
//  2. else the owner lock is taken and the operation runs in-process;
//  3. while the lock is busy and no gateway answers, it waits up to
//     LockTimeout, re-checking for a gateway, then refuses with the
//     holder's pid (exit 5).
//
// After a request was dispatched to a gateway it is never replayed locally.
type Router struct {
	Home        Home
	Registry    *Registry
	LockTimeout time.Duration
	// Gateway is an explicit "unix:PATH" target; it is used as given and a
	// failure to reach it is never replaced by a local run.
	Gateway  string
	Now      func() time.Time
	Progress io.Writer
	// Version is recorded in an offline command's owner lease (PostgreSQL).
	Version string
	// LookupEnv is the caller's environment (os.LookupEnv when nil): the
	// variables an operation declares (Op.Env) are read from it, offline
	// and, carried with the call, in a gateway.
	LookupEnv func(string) (string, bool)
}

// pollEvery is how often a waiting router re-checks for a gateway.
const pollEvery = 25 * time.Millisecond

// Route runs the operation named name (with or without its version
// suffix) on p, its parameter value (a handle's P); Handle.Call is how a
// call site uses it. The answer of a call run in this process is the
// result value; a gateway's is decoded into into, once, and Route answers
// nil.
//
// Order, so that a refused call creates nothing: the parameters are
// checked and normalised (Op.Check) first; a write's Admit reads the
// home's files next; only then is the home created or its lock taken. A
// read-only call on a home nobody ever owned (no lock file, no database)
// takes no lock: there is nothing to own, and the lock file itself would
// be something created.
func (r *Router) Route(ctx context.Context, name string, params any, into Reply) (any, error) {
	m, ok := r.Registry.Lookup(name)
	if !ok {
		return nil, errs.Usage(errs.CodeUnknownMethod, "unknown operation %q", name)
	}
	p, ok := m.value(params)
	if !ok {
		return nil, m.mistyped(params)
	}
	p, err := m.check(p)
	if err != nil {
		return nil, err
	}
	return r.call(ctx, m, p, into)
}

func (r *Router) lookupEnv(k string) (string, bool) {
	if r.LookupEnv != nil {
		return r.LookupEnv(k)
	}
	return os.LookupEnv(k)
}

func (r *Router) getenv(k string) string {
	v, _ := r.lookupEnv(k)
	return v
}

// call routes a checked call. A gateway's answer is decoded into into; the
// offline executor answers the value (res).
func (r *Router) call(ctx context.Context, m Method, p any, into Reply) (res any, err error) {
	if r.Now == nil {
		r.Now = time.Now
	}
	exists, err := r.Home.Exists()
	if err != nil {
		return nil, err
	}
	// The routing read of config.json (gateway.remote), before ownership;
	// a write's Admit sees the same read. The operation itself sees the
	// one read made after ownership (runLocal, or the gateway's).
	pre := Pre{Home: r.Home.Dir, Config: &config.Config{Root: map[string]any{}}, Getenv: r.getenv}
	if exists {
		pre.Config, pre.ConfigErr = config.Load(r.Home.Dir)
	}
	explicit := r.Gateway
	if explicit == "" && pre.ConfigErr == nil {
		explicit = pre.Config.String("gateway.remote")
	}
	if explicit != "" {
		return nil, r.callExplicit(ctx, m, p, explicit, into)
	}
	if !m.Write && (!exists || r.neverOwned()) {
		// Read-only on a home nobody owns: nothing to own, nothing to create.
		return r.runLocal(ctx, m, p, nil)
	}
	// A write's Admit runs in the executor that will run it: here, before
	// the home is created or the owner lock taken; a gateway that takes
	// the call runs it there instead (gateway's invokeSafely), against its
	// own config, so it runs once on either path, routed or not.
	admitted := false
	admit := func() error {
		if admitted || !m.Write || m.admit == nil {
			return nil
		}
		admitted = true
		return m.admit(pre, p)
	}
	if m.Write && !exists {
		if err := admit(); err != nil {
			return nil, err
		}
		if err := r.Home.Ensure(); err != nil {
			return nil, err
		}
	}

	deadline := time.Now().Add(r.LockTimeout)
	var attempt *lockAttempt
	defer func() {
		if attempt != nil {
			attempt.abandon()
		}
	}()
	for {
		if dispatched, err := r.tryGateway(ctx, m, p, into); dispatched {
			return nil, err
		}
		if attempt == nil {
			if err := admit(); err != nil {
				return nil, err
			}
			// About to own the state: a database setting that cannot work
			// (postgres without a URL, a password in config.json) is
			// refused from config alone, before the lock file exists. A
			// call routed to a gateway never gets here, so it never reads
			// database settings.
			if !m.FilesOnly && pre.ConfigErr == nil {
				if _, err := store.EngineForEnv(r.Home.Dir, pre.Config, r.getenv, nil); err != nil {
					return nil, err
				}
			}
			attempt = startLockAttempt(r.Home.Lock())
		}
		select {
		case <-attempt.done:
			if attempt.err != nil {
				return nil, errs.Failed(errs.CodeLockFailed, "cannot lock %s: %v", r.Home.Lock(), attempt.err).
					WithHint("check that the home is a writable folder")
			}
			lock := attempt.lock
			attempt.lock = nil
			attempt = nil
			defer lock.Release() //nolint:gocritic // deferInLoop: this iteration returns below
			// We own the state: any record left behind (kill -9) is stale.
			if rec, _ := ReadRecord(r.Home); rec != nil {
				RemoveRecord(r.Home, rec.OwnerID)
			}
			return r.runLocal(ctx, m, p, lock)
		case <-ctx.Done():
			return nil, errs.Unavailable(errs.CodeInterrupted, "interrupted while waiting for the state-owner lock")
		case <-time.After(pollEvery):
		}
		if time.Now().After(deadline) && (heldByLiveProcess(r.Home.Lock()) || time.Now().After(deadline.Add(freeLockGrace))) {
			return nil, r.busy()
		}
	}
}

// freeLockGrace bounds how much past --lock-timeout the router waits for
// its own attempt when no live process holds the lock. The attempt is a
// goroutine blocked in flock; on a loaded machine it can be scheduled
// later than a short timeout (1 ms), and refusing then would call a free
// lock busy (seen right after 'gateway stop' at load 20+). A lock a live
// process holds is refused at the timeout, as documented.
const freeLockGrace = 10 * time.Second

// heldByLiveProcess reports whether the pid the lock file names is alive
// and another process. A holder writes its pid right after taking the
// lock, so an empty file or a dead pid means the lock is free or being
// freed; this process's own pid (or an empty file) is its own attempt,
// caught between taking the lock and saying so (a CLI process makes one
// attempt at a time).
func heldByLiveProcess(path string) bool {
	pid := HolderPID(path)
	return pid > 0 && pid != os.Getpid() && PIDAlive(pid)
}

// neverOwned reports whether the home has neither an owner lock file nor
// a database: no command ever owned it, so no gateway can be serving it.
func (r *Router) neverOwned() bool {
	for _, f := range []string{r.Home.Lock(), r.Home.DB()} {
		if _, err := os.Lstat(f); !errors.Is(err, fs.ErrNotExist) {
			return false
		}
	}
	return true
}

// wire is a checked call as it crosses the socket.
func (r *Router) wire(m Method, p any, owner string) CallRequest {
	return CallRequest{Method: m.Name, ExpectedOwnerID: owner, Scopes: scopesOf(m), Env: CallerEnv(m, r.lookupEnv), Params: p}
}

func (r *Router) busy() error {
	pid := HolderPID(r.Home.Lock())
	who := "another process"
	if pid > 0 {
		who = fmt.Sprintf("pid %d", pid)
	}
	return errs.Unavailable(CodeOwnerBusy, "the clawkit state in %s is owned by %s (waited %s for the owner lock)", r.Home.Dir, who, r.LockTimeout).
		WithHint("wait for that command to finish, start a gateway to share the state, or raise --lock-timeout")
}

// tryGateway dispatches to a live gateway if there is one. dispatched
// reports whether the request was sent (or definitively refused before
// sending because the owner changed).
func (r *Router) tryGateway(ctx context.Context, m Method, p any, into Reply) (bool, error) {
	rec, st := LiveGateway(ctx, r.Home)
	if st == nil || st.OwnerID != rec.OwnerID {
		return false, nil
	}
	if st.Retiring {
		return true, errs.Unavailable(errs.CodeGatewayStopping, "the gateway (pid %d) is stopping", rec.PID).
			WithRetryAfter(1000).WithHint("retry once it has stopped")
	}
	// Re-read the record right before dispatch: the owner must not have
	// changed between the status check and the call.
	again, _ := ReadRecord(r.Home)
	if again == nil || again.PID != rec.PID || again.OwnerID != rec.OwnerID {
		return true, errs.Refused(CodeOwnerChanged, "the state owner changed before dispatch").
			WithHint("nothing was sent; run the command again")
	}
	c := NewClient(rec.Socket)
	defer fsx.CloseRead(c) // a client connection: the call reports its own errors
	return true, c.CallInto(ctx, r.wire(m, p, rec.OwnerID), into)
}

func (r *Router) callExplicit(ctx context.Context, m Method, p any, target string, into Reply) error {
	path, err := GatewaySocket(target)
	if err != nil {
		return err
	}
	c := NewClient(path)
	defer fsx.CloseRead(c) // as above
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	st, err := c.Status(sctx)
	cancel()
	if err != nil {
		return errs.Unavailable(CodeGatewayUnavailable, "the gateway at %s does not answer: %v", target, err).
			WithHint("start it, or drop --gateway/gateway.remote to run locally; an explicit gateway is never replaced by a local run")
	}
	return c.CallInto(ctx, r.wire(m, p, st.OwnerID), into)
}

// scopesOf is what a call asks for: only the scope its operation needs.
func scopesOf(m Method) []string { return []string{m.NeedScope()} }

// runLocal is the offline executor: the operation runs in this process
// under lock (nil only for a read-only call on a home nobody owns), on the
// parameter value itself, and its result is returned as a value.
func (r *Router) runLocal(ctx context.Context, m Method, p any, lock *Lock) (res any, err error) {
	fence := func() error {
		if err := ctx.Err(); err != nil {
			return ErrRetired("interrupted")
		}
		if lock != nil && !lock.Held() {
			return ErrRetired("the owner lock file was removed or replaced")
		}
		return nil
	}
	// The call's one read of config.json after ownership: it selects the
	// engine and is the snapshot the operation sees (OpEnv.Config).
	cfg, cfgErr := config.Load(r.Home.Dir)
	if m.FilesOnly {
		// The home's files only: the owner lock is the whole fence, and
		// no engine is resolved.
		env := NewOpEnv(r.Home.Dir, nil, fence, r.Now, r.Progress, false)
		env.getenv = r.getenv
		env.snapshotConfig(cfg, cfgErr)
		return m.run(ctx, env, p)
	}
	_, statErr := os.Stat(r.Home.DB())
	fresh := m.Write && lock != nil && errors.Is(statErr, fs.ErrNotExist)
	st, err := openStore(ctx, r.Home, !m.Write, cfg, cfgErr)
	if err != nil {
		return nil, err
	}
	// On a shared database an offline write is one more owner beside the
	// gateways of other hosts: it holds an owner lease for the whole
	// operation, so its writes are fenced by the database exactly like a
	// gateway's (a command paused past its lease cannot write late).
	// docs/state.md refuses only `state migrate` while others hold
	// leases; an ordinary command runs beside them as a gateway would.
	var lease *LeaseKeeper
	release := func() {}
	if m.Write && store.IsPostgres(st.Engine()) {
		lease, err = StartLease(ctx, st, uuid.NewString(), "offline", r.Home.Dir, r.Version, DefaultLeaseTTL, r.now(), slog.NewLogLogger(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}), slog.LevelWarn))
		if err != nil {
			_ = st.Close() // the lease's error is the one to report
			return nil, err
		}
		lctx, stop := context.WithCancel(context.Background())
		beat := make(chan struct{})
		go func() { defer close(beat); lease.Run(lctx) }()
		// Released before the store closes (the defer below), after the
		// operation's last write.
		release = func() {
			stop()
			<-beat
			lease.Release(r.now())
		}
	}
	defer func() {
		release()
		err = errors.Join(err, st.Close())
		// A write refused before any effect (usage or authority) leaves no
		// database behind when this call created it: "refused" promises
		// nothing changed. We still hold the owner lock, so nobody else
		// can have opened the new file.
		if fresh && err != nil && (errs.KindOf(err) == errs.KindUsage || errs.KindOf(err) == errs.KindRefused) {
			for _, suffix := range []string{"", "-wal", "-shm", "-journal"} {
				if rerr := os.Remove(r.Home.DB() + suffix); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
					err = errors.Join(err, rerr)
				}
			}
		}
	}()
	leased := fence
	if lease != nil {
		leased = func() error {
			if err := fence(); err != nil {
				return err
			}
			return lease.Check()
		}
	}
	env := NewOpEnv(r.Home.Dir, st, leased, r.Now, r.Progress, false)
	env.getenv = r.getenv
	env.snapshotConfig(cfg, cfgErr) // the call's config snapshot
	res, err = m.run(ctx, env, p)
	// A server lost mid-operation is exit 5 (or 4 after a write), as
	// through a gateway.
	return res, store.ClassifyUnreachable(st, err, env.EffectBegun())
}

// OpenStore opens the home's configured store. readOnly on a home without a
// database gives an empty in-memory store, so read-only commands never
// create the database.
func OpenStore(ctx context.Context, h Home, readOnly bool) (*store.Store, error) {
	cfg, err := config.Load(h.Dir)
	return openStore(ctx, h, readOnly, cfg, err)
}

// openStore is OpenStore with the home's config already read.
func openStore(ctx context.Context, h Home, readOnly bool, cfg *config.Config, cfgErr error) (*store.Store, error) {
	var e store.Engine = store.SQLite{Path: ":memory:"}
	if ok, _ := h.Exists(); ok {
		if cfgErr != nil {
			return nil, cfgErr
		}
		var err error
		e, err = ResolveEngine(h, cfg)
		if err != nil {
			return nil, err
		}
		if readOnly {
			if ok, err := e.Exists(ctx); err != nil {
				if errs.As(err) != nil {
					return nil, err // e.g. PostgreSQL down: exit 5, the server's message
				}
				return nil, errs.Failed(errs.CodeStoreUnreadable, "cannot read the database: %v", err)
			} else if !ok {
				e = store.SQLite{Path: ":memory:"}
			}
		}
	}
	return store.Open(ctx, e)
}

// AcquireExclusive takes exclusive offline ownership for commands such as
// `state migrate`: it refuses while a live gateway owns the home (exit 3)
// and otherwise waits up to timeout for the lock.
func AcquireExclusive(ctx context.Context, h Home, timeout time.Duration) (*Lock, error) {
	if err := h.Ensure(); err != nil {
		return nil, err
	}
	if rec, st := LiveGateway(ctx, h); st != nil {
		return nil, ErrGatewayRunning(h, rec)
	}
	// Wait for the lock, looking for a gateway meanwhile: a gateway that
	// starts serving while we wait (two `gateway run` at once, issue 31)
	// is the refusal above, not "owned by pid N" after the whole timeout.
	a := startLockAttempt(h.Lock())
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	var l *Lock
	for l == nil {
		select {
		case <-a.done:
			if a.err != nil {
				return nil, errs.Failed(errs.CodeLockFailed, "cannot lock %s: %v", h.Lock(), a.err)
			}
			l = a.lock
		case <-ctx.Done():
			a.abandon()
			return nil, (&Router{Home: h, LockTimeout: timeout}).busy()
		case <-deadline.C:
			a.abandon()
			if rec, st := LiveGateway(ctx, h); st != nil {
				return nil, ErrGatewayRunning(h, rec)
			}
			return nil, (&Router{Home: h, LockTimeout: timeout}).busy()
		case <-time.After(pollEvery):
			if rec, st := LiveGateway(ctx, h); st != nil {
				a.abandon()
				return nil, ErrGatewayRunning(h, rec)
			}
		}
	}
	if rec, _ := ReadRecord(h); rec != nil {
		RemoveRecord(h, rec.OwnerID)
	}
	return l, nil
}

func (r *Router) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}
