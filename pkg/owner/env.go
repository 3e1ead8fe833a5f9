package owner

import (
	"context"
	"io"
	"os"
	"sync/atomic"
	"time"

	"github.com/clawkit/clawkit/pkg/config"
	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/store"
)

// OpEnv is what an operation gets: its home, store, clock, fence, config
// snapshot and caller's environment. (pkg/cli's Env is the command's:
// flags, output, stdin.)
type OpEnv struct {
	Home     string
	Store    *store.Store
	Fence    Fence
	Now      func() time.Time
	Progress io.Writer // nil inside the gateway
	// Gateway is true when the operation runs inside a gateway.
	Gateway bool

	// getenv is the caller's environment (WithCallerEnv); nil
	// means this process's own (offline, or a gateway's background work).
	getenv func(string) string

	fences *callFence
	// config is the call's config snapshot (SnapshotConfig): read once,
	// after ownership, so a change during the call does not change what it
	// sees.
	config      *config.Config
	configErr   error
	configTaken bool

	// effect is set once the operation began a write or an external
	// effect (BeginWrite, MarkEffect): from then on its errors are no longer
	// refusals before any effect.
	effect atomic.Bool
}

// Getenv reads an environment variable as the caller of the operation has
// it: in a gateway, a variable the operation declared (Op.Env) comes from
// the call, never from the gateway's own environment.
func (e *OpEnv) Getenv(k string) string {
	if e.getenv != nil {
		return e.getenv(k)
	}
	return os.Getenv(k)
}

// WithCallerEnv makes Getenv answer the names m declares from vals (the
// call's environment; an absent name is unset) and every other name from
// this process.
func (e *OpEnv) WithCallerEnv(m Method, vals map[string]string) {
	declared := make(map[string]bool, len(m.Env))
	for _, k := range m.Env {
		declared[k] = true
	}
	e.getenv = func(k string) string {
		if declared[k] {
			return vals[k]
		}
		return os.Getenv(k)
	}
}

// CallerEnv collects the variables m declares from getenv: what a routed
// call carries.
func CallerEnv(m Method, lookup func(string) (string, bool)) map[string]string {
	if len(m.Env) == 0 {
		return nil
	}
	out := map[string]string{}
	for _, k := range m.Env {
		if v, ok := lookup(k); ok {
			out[k] = v
		}
	}
	return out
}

// SnapshotConfig reads the home's config once, as the snapshot the operation
// sees (Config). Executors call it after they own the state and
// before the operation runs.
func (e *OpEnv) SnapshotConfig() {
	e.snapshotConfig(config.Load(e.Home))
}

// snapshotConfig takes a config the executor has just read as the call's
// snapshot (the offline executor reads it once, for the engine and the
// call).
func (e *OpEnv) snapshotConfig(cfg *config.Config, err error) {
	e.config, e.configErr = cfg, err
	e.configTaken = true
}

// Config returns the call's config snapshot. An OpEnv built
// without a snapshot (a gateway's long-lived background Env, tests) reads
// the current config instead: a background pass has no call to take a
// snapshot for.
func (e *OpEnv) Config() (*config.Config, error) {
	if e.configTaken {
		return e.config, e.configErr
	}
	return config.Load(e.Home)
}

// BeginWrite is the write fence: the owner fence, checked immediately before a
// database write or file publication, which it then counts as an effect.
func (e *OpEnv) BeginWrite() error {
	if err := e.AssertOwner(); err != nil {
		return err
	}
	e.effect.Store(true)
	return nil
}

// Writer is the operation's store with the write fence (BeginWrite) in front
// of each of the store's own writes (sessions): what write operations use.
func (e *OpEnv) Writer() *store.Store { return e.Store.Gated(e.BeginWrite) }

// MarkEffect records that an external effect (an HTTP request that may
// change provider state) is about to be made.
func (e *OpEnv) MarkEffect() { e.effect.Store(true) }

// EffectBegun reports whether the operation began any write or effect.
func (e *OpEnv) EffectBegun() bool { return e.effect.Load() }

// BindSession loads agentID/sessionKey (creating the default main/cli
// session on first use; any other must exist), refuses a revoked (exit 3) or
// refreshing (exit 5) session, and makes Fence.AssertCurrent fail as soon as
// the session is reset, revoked or starts refreshing.
func (e *OpEnv) BindSession(ctx context.Context, agentID, sessionKey string) (store.Session, error) {
	// The default session's first use creates it: that write alone passes
	// the write fence (an existing session is only read).
	sess, err := e.Writer().EnsureSession(ctx, agentID, sessionKey, e.Now())
	if err != nil {
		return sess, err
	}
	if err := store.CheckSessionUsable(sess); err != nil {
		return sess, err
	}
	inc := sess.Incarnation
	st := e.Store
	e.fences.add(func() error {
		cur, err := st.GetSession(context.Background(), agentID, sessionKey)
		if err != nil {
			return errs.Refused(errs.CodeSessionGone, "session %s of agent %s no longer exists", sessionKey, agentID)
		}
		if err := store.CheckSessionUsable(cur); err != nil {
			return err
		}
		if cur.Incarnation != inc {
			return errs.Refused(CodeSessionStale, "session %s of agent %s was reset (incarnation %d, now %d)", sessionKey, agentID, inc, cur.Incarnation).
				WithHint("start the operation again in the current session")
		}
		return nil
	})
	return sess, nil
}

// NewOpEnv builds an operation's OpEnv whose Fence checks fence first.
func NewOpEnv(home string, st *store.Store, fence func() error, now func() time.Time, progress io.Writer, gateway bool) *OpEnv {
	sc := &callFence{fence: fence}
	return &OpEnv{Home: home, Store: st, Fence: sc, Now: now, Progress: progress, Gateway: gateway, fences: sc}
}
