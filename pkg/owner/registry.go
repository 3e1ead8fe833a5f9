package owner

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/clawkit/clawkit/pkg/config"
	"github.com/clawkit/clawkit/pkg/errs"
)

// Op is one operation: its parameters P and result R are Go values. The
// caller names it through its Handle (a typed name, research.OpStart);
// offline the value itself is handed over, and only a call routed to a
// gateway crosses the socket as JSON, encoded once and decoded once each
// way. docs/architecture.md describes the seam.
type Op[P, R any] struct {
	// Name is the operation's name; a domain's operation leaves it empty
	// and is registered through its handle (Handle.Register), which names
	// it. Register takes it as given (the tests' ad hoc operations).
	Name string
	// Write is true for operations that change state; read-only ones never
	// create the home, its lock or the database.
	Write bool
	// Scope is the authorization scope a call needs (ScopeRead,
	// ScopeWrite or ScopeAdmin). Unset, it is ScopeRead for a read-only
	// operation and ScopeAdmin, the default, for one that writes.
	Scope string
	// FilesOnly marks an operation on the home's files alone (config.json,
	// credentials.json): the offline executor resolves no engine and opens
	// no database for it (env.Store is nil). The database settings are
	// themselves config, and its password may be a credentials entry, so
	// they can be written in any order, and fixed, while the configured
	// database is incomplete or unreachable.
	FilesOnly bool
	// Env names the environment variables the operation reads. The
	// caller's values travel with the call (OpEnv.Getenv), so an operation
	// routed to a gateway sees the caller's environment, not the
	// gateway's.
	Env []string
	// Check holds every refusal that needs only the parameters, and
	// returns them normalised (a path cleaned, a default filled in): Admit
	// and Run see only what Check returned. It runs once on each side of
	// the socket: in the caller, before the home, its lock or the database
	// exist (so a write it refuses creates nothing), and again in a
	// gateway, which trusts no client.
	Check func(P) (P, error)
	// Admit, for a write, holds the refusals that read the home's config
	// and credentials without changing anything (is research enabled, is
	// the plugin installed): the offline executor runs it after Check and
	// before it takes the owner lock or creates anything; a gateway runs it
	// between its Check and Run (Method.Admit), so it runs once whether
	// the call is routed or not. Run re-checks only what can change under
	// the lock (config, session, authority).
	Admit func(pre Pre, p P) error
	// Run does the work. It trusts its P: it is called only with
	// parameters Check returned.
	Run func(ctx context.Context, env *OpEnv, p P) (R, error)
}

// Pre is what an Admit check may read: the home (which may not exist yet),
// its config as read for routing, and the caller's environment.
type Pre struct {
	Home      string
	Config    *config.Config
	ConfigErr error
	Getenv    func(string) string
}

// Method is an operation with its types erased: what the registry holds and
// both executors run.
type Method struct {
	Name      string
	Write     bool
	Scope     string
	FilesOnly bool
	Env       []string
	// Params is P (named when a caller hands over another type).
	Params reflect.Type

	decode func(dec *json.Decoder) (any, error)
	value  func(params any) (any, bool)
	check  func(p any) (any, error)
	admit  func(pre Pre, p any) error
	run    func(ctx context.Context, env *OpEnv, p any) (any, error)
}

// Register adds op to r under its versioned name (VersionedName);
// registering a name twice is a programming error.
func Register[P, R any](r *Registry, op Op[P, R]) {
	if op.Run == nil {
		panic(fmt.Sprintf("owner: operation %s has no Run", op.Name))
	}
	m := Method{Name: op.Name, Write: op.Write, Scope: op.Scope, FilesOnly: op.FilesOnly, Env: append([]string(nil), op.Env...),
		Params: reflect.TypeFor[P]()}
	m.decode = func(dec *json.Decoder) (any, error) { return decodeParams[P](dec) }
	m.value = func(params any) (any, bool) {
		switch v := params.(type) {
		case *P:
			if v != nil {
				return *v, true
			}
		case P:
			return v, true
		}
		return nil, false
	}
	m.check = func(p any) (any, error) {
		if op.Check == nil {
			return p, nil
		}
		return op.Check(p.(P))
	}
	if op.Admit != nil {
		m.admit = func(pre Pre, p any) error { return op.Admit(pre, p.(P)) }
	}
	m.run = func(ctx context.Context, env *OpEnv, p any) (any, error) {
		res, err := op.Run(ctx, env, p.(P))
		if err != nil {
			return nil, err
		}
		return res, nil
	}
	r.register(m)
}

// DecodeParams reads an operation's parameters strictly: one JSON object
// (or null, for an operation without parameters), no unknown fields,
// nothing after it. Neither a local caller nor a gateway's client is
// trusted more than the other.
func DecodeParams[P any](raw json.RawMessage) (P, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	v, err := decodeParams[P](dec)
	if err == nil && dec.More() {
		return v, errs.Usage(errs.CodeInvalidParams, "invalid parameters: data after the object")
	}
	return v, err
}

// decodeParams decodes one parameters value from dec, strictly: what a
// gateway does in the same pass as the call's envelope (ReadCall).
func decodeParams[P any](dec *json.Decoder) (P, error) {
	var v P
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		return v, errs.Usage(errs.CodeInvalidParams, "invalid parameters: %v", err)
	}
	return v, nil
}

// Decode reads m's parameters from JSON, strictly (DecodeParams).
func (m Method) Decode(raw json.RawMessage) (any, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	p, err := m.decode(dec)
	if err == nil && dec.More() {
		return nil, errs.Usage(errs.CodeInvalidParams, "invalid parameters: data after the object")
	}
	return p, err
}

// Check runs the operation's parameter checks and returns the normalised
// parameters.
func (m Method) Check(p any) (any, error) { return m.check(p) }

// Admit runs a write's Admit refusals against the executor's home, its
// config snapshot and the caller's variables (env): the gateway's step
// between Check and Run, as the offline executor's is between Check and
// the lock (Router.call). A read, or a write without Admit, passes.
func (m Method) Admit(env *OpEnv, p any) error {
	if !m.Write || m.admit == nil {
		return nil
	}
	cfg, err := env.Config()
	return m.admit(Pre{Home: env.Home, Config: cfg, ConfigErr: err, Getenv: env.Getenv}, p)
}

// Run runs the operation on parameters Check returned (the gateway's
// executor step).
func (m Method) Run(ctx context.Context, env *OpEnv, p any) (any, error) { return m.run(ctx, env, p) }

// Serve decodes JSON parameters, checks them, runs the operation and
// encodes its result: the gateway's steps on a raw body, for tests that
// drive an operation as a gateway would.
func (m Method) Serve(ctx context.Context, env *OpEnv, raw json.RawMessage) (json.RawMessage, error) {
	p, err := m.Decode(raw)
	if err != nil {
		return nil, err
	}
	res, err := Invoke(ctx, m, env, p)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(res)
	if err != nil {
		return nil, fmt.Errorf("encode %s result: %w", m.Name, err)
	}
	return b, nil
}

// Invoke checks and runs an operation in this process on its parameter
// value (P) and returns its result as a value.
func Invoke(ctx context.Context, m Method, env *OpEnv, params any) (any, error) {
	p, ok := m.value(params)
	if !ok {
		return nil, m.mistyped(params)
	}
	p, err := m.check(p)
	if err != nil {
		return nil, err
	}
	return m.run(ctx, env, p)
}

// mistyped is the error for parameters of another type than the
// operation's P: a programming error (the handles are typed), reported
// before anything is done.
func (m Method) mistyped(params any) error {
	return errs.Usage(errs.CodeInvalidParams, "operation %s takes %v, not %T", m.Name, m.Params, params)
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
	starters []func(ctx context.Context, env *OpEnv)
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

// register adds a method under its versioned name (VersionedName).
func (r *Registry) register(m Method) {
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
func (r *Registry) OnGatewayStart(f func(ctx context.Context, env *OpEnv)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.starters = append(r.starters, f)
}

// Starters returns the gateway start hooks.
func (r *Registry) Starters() []func(ctx context.Context, env *OpEnv) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return append([]func(context.Context, *OpEnv){}, r.starters...)
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

// Refusals is a Check for an operation whose parameters need no
// normalising: f's refusals, the parameters unchanged.
func Refusals[P any](f func(P) error) func(P) (P, error) {
	return func(p P) (P, error) { return p, f(p) }
}
