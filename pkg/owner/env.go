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

// Env is what an operation gets.
type Env struct {
	Home     string
	Store    *store.Store
	Scope    Scope
	Now      func() time.Time
	Progress io.Writer // nil inside the gateway
	// Gateway is true when the operation runs inside a gateway.
	Gateway bool

	// getenv is the caller's admitted environment (WithCallerEnv); nil
	// means this process's own (offline, or a gateway's background work).
	getenv func(string) string

	scope *scope
	// config is the config admitted with the call (AdmitConfig): read once,
	// after ownership, so a change during the call does not change what it
	// sees.
	config         *config.Config
	configErr      error
	configAdmitted bool

	// effect is set once the operation admitted a write or an external
	// effect (Admit, MarkEffect): from then on its errors are no longer
	// refusals before any effect.
	effect atomic.Bool
}

// Getenv reads an environment variable as the caller of the operation has
// it: in a gateway, a variable the operation declared (Op.Env) comes from
// the call, never from the gateway's own environment.
func (e *Env) Getenv(k string) string {
	if e.getenv != nil {
		return e.getenv(k)
	}
	return os.Getenv(k)
}

// WithCallerEnv makes Getenv answer the names m declares from vals (the
// call's environment; an absent name is unset) and every other name from
// this process.
func (e *Env) WithCallerEnv(m Method, vals map[string]string) {
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

// AdmitConfig reads the home's config once, as the snapshot the operation
// sees (AdmittedConfig). Executors call it after they own the state and
// before the operation runs.
func (e *Env) AdmitConfig() {
	e.admitConfig(config.Load(e.Home))
}

// admitConfig admits a config the executor has just read (the offline
// executor reads it once, for the engine and the call).
func (e *Env) admitConfig(cfg *config.Config, err error) {
	e.config, e.configErr = cfg, err
	e.configAdmitted = true
}

// AdmittedConfig returns the config admitted with the call. An Env built
// without admission (a gateway's long-lived background Env, tests) reads
// the current config instead: a background pass has no call to admit with.
func (e *Env) AdmittedConfig() (*config.Config, error) {
	if e.configAdmitted {
		return e.config, e.configErr
	}
	return config.Load(e.Home)
}

// Admit is writer admission: the owner fence, checked immediately before a
// database write or file publication, which it then counts as an effect.
func (e *Env) Admit() error {
	if err := e.Fence(); err != nil {
		return err
	}
	e.effect.Store(true)
	return nil
}

// Writer is the operation's store with writer admission (Admit) in front
// of each of the store's own writes (sessions): what write operations use.
func (e *Env) Writer() *store.Store { return e.Store.Gated(e.Admit) }

// MarkEffect records that an external effect (an HTTP request that may
// change provider state) is about to be made.
func (e *Env) MarkEffect() { e.effect.Store(true) }

// EffectBegun reports whether the operation admitted any write or effect.
func (e *Env) EffectBegun() bool { return e.effect.Load() }

// BindSession loads agentID/sessionKey (creating the default main/cli
// session on first use; any other must exist), refuses a revoked (exit 3) or
// refreshing (exit 5) session, and makes Scope.AssertCurrent fail as soon as
// the session is reset, revoked or starts refreshing.
func (e *Env) BindSession(ctx context.Context, agentID, sessionKey string) (store.Session, error) {
	// The default session's first use creates it: that write alone passes
	// writer admission (an existing session is only read).
	sess, err := e.Writer().EnsureSession(ctx, agentID, sessionKey, e.Now())
	if err != nil {
		return sess, err
	}
	if err := store.CheckSessionUsable(sess); err != nil {
		return sess, err
	}
	inc := sess.Incarnation
	st := e.Store
	e.scope.add(func() error {
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

// NewEnv builds an operation Env whose Scope checks fence first.
func NewEnv(home string, st *store.Store, fence func() error, now func() time.Time, progress io.Writer, gateway bool) *Env {
	sc := &scope{fence: fence}
	return &Env{Home: home, Store: st, Scope: sc, Now: now, Progress: progress, Gateway: gateway, scope: sc}
}
