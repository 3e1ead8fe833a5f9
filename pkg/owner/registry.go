package owner

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/clawkit/clawkit/pkg/config"
	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/store"
)

// Scope is the authority an operation runs under.
type Scope interface {
	// AssertCurrent returns nil while this process still owns the state
	// (lock held, gateway not retiring) and, when a session was bound, that
	// session is still active at the same incarnation. Operations call it
	// after every await and immediately before every external effect.
	AssertCurrent() error
}

// Handler runs one operation. params is the call's JSON; the result is
// marshalled to JSON (it may cross the gateway socket).
type Handler func(ctx context.Context, env *Env, params json.RawMessage) (any, error)

// Method is a named operation.
type Method struct {
	Name string
	// Write is true for operations that change state; read-only ones never
	// create the home or the database.
	Write bool
	// Scope is the authorization scope a call needs (ScopeRead,
	// ScopeWrite or ScopeAdmin). Unset, it is ScopeRead for a read-only
	// method and ScopeAdmin, the default, for one that writes.
	Scope   string
	Handler Handler
	// Admit, when set, checks a write call's parameters and preconditions
	// (read-only: config, credentials) before the offline executor creates
	// the home or the database, so a command refused up front leaves
	// nothing behind. The handler still checks everything itself: Admit
	// only moves the refusal earlier.
	Admit func(home string, params json.RawMessage) error
	// FilesOnly marks an operation on the home's files alone (config.json,
	// credentials.json): the offline executor resolves no engine and opens
	// no database for it (env.Store is nil). The database settings are
	// themselves config, and its password may be a credentials entry, so
	// they can be written in any order, and fixed, while the configured
	// database is incomplete or unreachable.
	FilesOnly bool
}

// Authorization scopes of calls (the gateway checks them). A call that
// names no scopes has ScopeAdmin, the default; ScopeAdmin grants every
// scope and ScopeWrite grants ScopeRead.
const (
	ScopeRead  = "operator.read"
	ScopeWrite = "operator.write"
	ScopeAdmin = "operator.admin"
)

// NeedScope is the scope a call of m needs.
func (m Method) NeedScope() string {
	switch {
	case m.Scope != "":
		return m.Scope
	case !m.Write:
		return ScopeRead
	}
	return ScopeAdmin
}

// ScopeGranted reports whether a call carrying scopes may run an
// operation needing need. No scopes means the default, ScopeAdmin.
func ScopeGranted(scopes []string, need string) bool {
	if len(scopes) == 0 {
		scopes = []string{ScopeAdmin}
	}
	for _, s := range scopes {
		switch {
		case s == need, s == ScopeAdmin:
			return true
		case s == ScopeWrite && need == ScopeRead:
			return true
		}
	}
	return false
}

// Registry is the one table of operations both executors run.
type Registry struct {
	mu      sync.RWMutex
	methods map[string]Method
	// Starters run inside a gateway once it owns the state (recovery,
	// background pollers). They get the gateway's Env and its life's ctx.
	starters []func(ctx context.Context, env *Env)
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{methods: map[string]Method{}} }

// VersionedName is an operation's wire name: its name with an operation
// version suffix ".vN". A name registered without one is version 1
// ("config.set" is "config.set.v1"). The version changes whenever an
// operation's parameters or behaviour change incompatibly, so a CLI never
// has an older gateway run a call it would misunderstand: the gateway
// refuses a name it does not have, before any effect, and the CLI reports
// it as an outdated gateway (exit 3).
func VersionedName(name string) string {
	if i := strings.LastIndex(name, ".v"); i > 0 && i+2 < len(name) {
		if _, err := strconv.ParseUint(name[i+2:], 10, 32); err == nil {
			return name
		}
	}
	return name + ".v1"
}

// Register adds a method under its versioned name (VersionedName);
// registering a name twice is a programming error.
func (r *Registry) Register(m Method) {
	m.Name = VersionedName(m.Name)
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.methods[m.Name]; dup {
		panic(fmt.Sprintf("owner: method %s registered twice", m.Name))
	}
	r.methods[m.Name] = m
}

// OnGatewayStart adds a function the gateway runs (in its own goroutine)
// once it owns the state.
func (r *Registry) OnGatewayStart(f func(ctx context.Context, env *Env)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.starters = append(r.starters, f)
}

// Starters returns the gateway start hooks.
func (r *Registry) Starters() []func(ctx context.Context, env *Env) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return append([]func(context.Context, *Env){}, r.starters...)
}

// Lookup finds a method by name, with or without its version suffix
// (for callers in this process).
func (r *Registry) Lookup(name string) (Method, bool) {
	return r.LookupWire(VersionedName(name))
}

// LookupWire finds a method by its exact versioned wire name: what a
// gateway serves, so a call for another version is refused, not guessed.
func (r *Registry) LookupWire(name string) (Method, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	m, ok := r.methods[name]
	return m, ok
}

// Names lists registered methods.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]string, 0, len(r.methods))
	for n := range r.methods {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Env is what an operation gets.
type Env struct {
	Home     string
	Store    *store.Store
	Scope    Scope
	Now      func() time.Time
	Progress io.Writer // nil inside the gateway
	// Gateway is true when the operation runs inside a gateway.
	Gateway bool

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
			return errs.Refused("session_gone", "session %s of agent %s no longer exists", sessionKey, agentID)
		}
		if err := store.CheckSessionUsable(cur); err != nil {
			return err
		}
		if cur.Incarnation != inc {
			return errs.Refused("session_stale", "session %s of agent %s was reset (incarnation %d, now %d)", sessionKey, agentID, inc, cur.Incarnation).
				WithHint("start the operation again in the current session")
		}
		return nil
	})
	return sess, nil
}

// Fence is the owner fence alone (lock held, owner not retiring), without
// session checks: writer admission for the operation's database writes and
// file publications, which must stop the moment ownership ends.
func (e *Env) Fence() error {
	if e.scope == nil || e.scope.fence == nil {
		return nil
	}
	return e.scope.fence()
}

// scope combines the owner fence with any bound session checks.
type scope struct {
	fence  func() error
	mu     sync.Mutex
	checks []func() error
}

func (s *scope) add(f func() error) {
	s.mu.Lock()
	s.checks = append(s.checks, f)
	s.mu.Unlock()
}

func (s *scope) AssertCurrent() error {
	if err := s.fence(); err != nil {
		return err
	}
	s.mu.Lock()
	checks := append([]func() error{}, s.checks...)
	s.mu.Unlock()
	for _, c := range checks {
		if err := c(); err != nil {
			return err
		}
	}
	return nil
}

// NewEnv builds an operation Env whose Scope checks fence first.
func NewEnv(home string, st *store.Store, fence func() error, now func() time.Time, progress io.Writer, gateway bool) *Env {
	sc := &scope{fence: fence}
	return &Env{Home: home, Store: st, Scope: sc, Now: now, Progress: progress, Gateway: gateway, scope: sc}
}

// ErrRetired is the fence's refusal once ownership is gone.
func ErrRetired(why string) error {
	return errs.Refused("owner_retired", "this process no longer owns the clawkit state: %s", why).
		WithHint("nothing further was published; run the command again")
}
