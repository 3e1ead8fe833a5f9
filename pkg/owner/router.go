package owner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log"
	"os"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/clawkit/clawkit/pkg/config"
	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/store"
)

// Router runs a stateful call where the state is owned (DESIGN §3):
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
}

// pollEvery is how often a waiting router re-checks for a gateway.
const pollEvery = 25 * time.Millisecond

// Call runs method with params and decodes its result into result (if not
// nil).
func (r *Router) Call(ctx context.Context, method string, params, result any) error {
	m, ok := r.Registry.Lookup(method)
	if !ok {
		return errs.Usage("unknown_method", "unknown operation %q", method)
	}
	raw, err := json.Marshal(params)
	if err != nil {
		return fmt.Errorf("encode %s params: %w", method, err)
	}
	out, err := r.call(ctx, m, raw)
	if err != nil {
		return err
	}
	if result != nil && len(out) > 0 {
		if err := json.Unmarshal(out, result); err != nil {
			return fmt.Errorf("decode %s result: %w", method, err)
		}
	}
	return nil
}

func (r *Router) call(ctx context.Context, m Method, params json.RawMessage) (json.RawMessage, error) {
	if r.Now == nil {
		r.Now = time.Now
	}
	explicit := r.Gateway
	if explicit == "" {
		if ok, err := r.Home.Exists(); err != nil {
			return nil, err
		} else if ok {
			if cfg, err := config.Load(r.Home.Dir); err == nil {
				explicit = cfg.String("gateway.remote")
			}
		}
	}
	if explicit != "" {
		return r.callExplicit(ctx, m, params, explicit)
	}

	exists, err := r.Home.Exists()
	if err != nil {
		return nil, err
	}
	if !exists {
		if !m.Write {
			// Read-only on a fresh home: nothing to own, nothing to create.
			return r.runLocal(ctx, m, params, nil)
		}
		if err := admit(m, r.Home, params); err != nil {
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
		if out, dispatched, err := r.tryGateway(ctx, m, params); dispatched {
			return out, err
		}
		if attempt == nil {
			attempt = startLockAttempt(r.Home.Lock())
		}
		select {
		case <-attempt.done:
			if attempt.err != nil {
				return nil, errs.Failed("lock_failed", "cannot lock %s: %v", r.Home.Lock(), attempt.err).
					WithHint("check that the home is a writable folder")
			}
			lock := attempt.lock
			attempt.lock = nil
			attempt = nil
			defer lock.Release()
			// We own the state: any record left behind (kill -9) is stale.
			if rec, _ := ReadRecord(r.Home); rec != nil {
				RemoveRecord(r.Home, rec.OwnerID)
			}
			return r.runLocal(ctx, m, params, lock)
		case <-ctx.Done():
			return nil, errs.Unavailable("interrupted", "interrupted while waiting for the state-owner lock")
		case <-time.After(pollEvery):
		}
		if time.Now().After(deadline) {
			return nil, r.busy()
		}
	}
}

func (r *Router) busy() error {
	pid := HolderPID(r.Home.Lock())
	who := "another process"
	if pid > 0 {
		who = fmt.Sprintf("pid %d", pid)
	}
	return errs.Unavailable("owner_busy", "the clawkit state in %s is owned by %s (waited %s for the owner lock)", r.Home.Dir, who, r.LockTimeout).
		WithHint("wait for that command to finish, start a gateway to share the state, or raise --lock-timeout")
}

// tryGateway dispatches to a live gateway if there is one. dispatched
// reports whether the request was sent (or definitively refused before
// sending because the owner changed).
func (r *Router) tryGateway(ctx context.Context, m Method, params json.RawMessage) (json.RawMessage, bool, error) {
	rec, _ := ReadRecord(r.Home)
	if rec == nil || !rec.Alive() {
		return nil, false, nil
	}
	c := NewClient(rec.Socket)
	defer c.Close()
	sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	st, err := c.Status(sctx)
	cancel()
	if err != nil || st.OwnerID != rec.OwnerID {
		return nil, false, nil
	}
	if st.Retiring {
		return nil, true, errs.Unavailable("gateway_stopping", "the gateway (pid %d) is stopping", rec.PID).
			WithRetryAfter(1000).WithHint("retry once it has stopped")
	}
	// Re-read the record right before dispatch: the owner must not have
	// changed between the status check and the call.
	again, _ := ReadRecord(r.Home)
	if again == nil || again.PID != rec.PID || again.OwnerID != rec.OwnerID {
		return nil, true, errs.Refused("owner_changed", "the state owner changed before dispatch").
			WithHint("nothing was sent; run the command again")
	}
	out, err := c.Call(ctx, CallRequest{Method: m.Name, Params: params, ExpectedOwnerID: rec.OwnerID, Scopes: scopesOf(m)})
	return out, true, err
}

func (r *Router) callExplicit(ctx context.Context, m Method, params json.RawMessage, target string) (json.RawMessage, error) {
	path, ok := strings.CutPrefix(target, "unix:")
	if !ok || path == "" {
		return nil, errs.Usage("invalid_gateway", "invalid gateway address %q", target).WithHint("use unix:PATH")
	}
	c := NewClient(path)
	defer c.Close()
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	st, err := c.Status(sctx)
	cancel()
	if err != nil {
		return nil, errs.Unavailable("gateway_unavailable", "the gateway at %s does not answer: %v", target, err).
			WithHint("start it, or drop --gateway/gateway.remote to run locally; an explicit gateway is never replaced by a local run")
	}
	return c.Call(ctx, CallRequest{Method: m.Name, Params: params, ExpectedOwnerID: st.OwnerID, Scopes: scopesOf(m)})
}

// scopesOf is what a call asks for: only the scope its operation needs.
func scopesOf(m Method) []string { return []string{m.NeedScope()} }

// runLocal is the offline executor: the operation runs in this process
// under lock (nil only for a read-only call on a home that does not exist).
func (r *Router) runLocal(ctx context.Context, m Method, params json.RawMessage, lock *Lock) (out json.RawMessage, err error) {
	if err := admit(m, r.Home, params); err != nil {
		return nil, err
	}
	if m.FilesOnly {
		return r.runFiles(ctx, m, params, lock)
	}
	_, statErr := os.Stat(r.Home.DB())
	fresh := m.Write && lock != nil && errors.Is(statErr, fs.ErrNotExist)
	// The call's one read of config.json, after ownership: it selects the
	// engine and is the snapshot the operation sees (AdmittedConfig).
	cfg, cfgErr := config.Load(r.Home.Dir)
	st, err := openStore(ctx, r.Home, !m.Write, cfg, cfgErr)
	if err != nil {
		return nil, err
	}
	// On a shared database an offline write is one more owner beside the
	// gateways of other hosts: it holds an owner lease for the whole
	// operation, so its writes are fenced by the database exactly like a
	// gateway's (a command paused past its lease cannot write late).
	// DESIGN §4 refuses only `state migrate` while others hold leases; an
	// ordinary command runs beside them as a gateway would.
	var lease *LeaseKeeper
	release := func() {}
	if m.Write && store.IsPostgres(st.Engine()) {
		lease, err = StartLease(ctx, st, uuid.NewString(), "offline", r.Home.Dir, r.Version, DefaultLeaseTTL, r.now(), log.New(os.Stderr, "clawkit: ", 0))
		if err != nil {
			st.Close()
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
		st.Close()
		// A write refused before any effect (usage or authority) leaves no
		// database behind when this call created it: "refused" promises
		// nothing changed. We still hold the owner lock, so nobody else
		// can have opened the new file.
		if fresh && err != nil && (errs.KindOf(err) == errs.KindUsage || errs.KindOf(err) == errs.KindRefused) {
			for _, suffix := range []string{"", "-wal", "-shm", "-journal"} {
				os.Remove(r.Home.DB() + suffix)
			}
		}
	}()
	fence := func() error {
		if err := ctx.Err(); err != nil {
			return ErrRetired("interrupted")
		}
		if lock != nil && !lock.Held() {
			return ErrRetired("the owner lock file was removed or replaced")
		}
		if lease != nil {
			return lease.Check()
		}
		return nil
	}
	env := NewEnv(r.Home.Dir, st, fence, r.Now, r.Progress, false)
	env.admitConfig(cfg, cfgErr) // the call's config snapshot
	out, err = Invoke(ctx, m, env, params)
	// A server lost mid-operation is exit 5 (or 4 after a write), as
	// through a gateway.
	return out, store.ClassifyUnreachable(st, err, env.EffectBegun())
}

// runFiles runs an operation on the home's files only: the owner lock is
// its whole fence, and no engine is resolved.
func (r *Router) runFiles(ctx context.Context, m Method, params json.RawMessage, lock *Lock) (json.RawMessage, error) {
	fence := func() error {
		if err := ctx.Err(); err != nil {
			return ErrRetired("interrupted")
		}
		if lock != nil && !lock.Held() {
			return ErrRetired("the owner lock file was removed or replaced")
		}
		return nil
	}
	env := NewEnv(r.Home.Dir, nil, fence, r.Now, r.Progress, false)
	env.AdmitConfig()
	return Invoke(ctx, m, env, params)
}

// admit runs a write method's Admit check (before the home or database is
// created).
func admit(m Method, h Home, params json.RawMessage) error {
	if m.Admit == nil || !m.Write {
		return nil
	}
	if len(params) == 0 {
		params = json.RawMessage("{}")
	}
	return m.Admit(h.Dir, params)
}

// Invoke runs a handler and encodes its result; both executors use it.
func Invoke(ctx context.Context, m Method, env *Env, params json.RawMessage) (json.RawMessage, error) {
	if len(params) == 0 {
		params = json.RawMessage("{}")
	}
	res, err := m.Handler(ctx, env, params)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(res)
	if err != nil {
		return nil, fmt.Errorf("encode %s result: %w", m.Name, err)
	}
	return b, nil
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
				return nil, errs.Failed("store_unreadable", "cannot read the database: %v", err)
			} else if !ok {
				e = store.SQLite{Path: ":memory:"}
			}
		}
	}
	return store.Open(ctx, e)
}

// ErrGatewayRunning is returned by operations that need exclusive offline
// ownership while a gateway runs.
var ErrGatewayRunning = errors.New("gateway running")

// AcquireExclusive takes exclusive offline ownership for commands such as
// `state migrate`: it refuses while a live gateway owns the home (exit 3)
// and otherwise waits up to timeout for the lock.
func AcquireExclusive(ctx context.Context, h Home, timeout time.Duration) (*Lock, error) {
	if err := h.Ensure(); err != nil {
		return nil, err
	}
	if rec, _ := ReadRecord(h); rec != nil && rec.Alive() {
		c := NewClient(rec.Socket)
		sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := c.Status(sctx)
		cancel()
		c.Close()
		if err == nil {
			return nil, errs.Refused("gateway_running", "a gateway (pid %d) owns the state in %s", rec.PID, h.Dir).
				WithHint("stop it first with 'clawkit gateway stop', then run this command again")
		}
	}
	lctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	l, err := AcquireLock(lctx, h.Lock())
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			r := &Router{Home: h, LockTimeout: timeout}
			return nil, r.busy()
		}
		return nil, errs.Failed("lock_failed", "cannot lock %s: %v", h.Lock(), err)
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
