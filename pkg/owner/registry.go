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
// router decodes P once, strictly (DecodeParams), so a domain never sees
// JSON; offline the value itself is handed over, and only a call routed to
// a gateway crosses the socket as JSON. docs/architecture.md describes the
// seam.
type Op[P, R any] struct {
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
	// caller's values travel with the call (Env.Getenv), so an operation
	// routed to a gateway sees the caller's environment, not the
	// gateway's.
	Env []string
	// Check holds every refusal that needs no state: it sees only the
	// parameters. It runs first, in the caller, before the home, its lock
	// or the database exist (and again in a gateway, which trusts no
	// client), so a write it refuses creates nothing.
	Check func(P) error
	// Admit, for a write, holds the refusals that read the home's files
	// without changing them (config.json, credentials.json, a plugin's
	// manifest): the offline executor runs it after Check and before it
	// takes the owner lock or creates anything. Run still checks
	// everything itself with the config admitted after ownership: Admit
	// only moves the refusal earlier.
	Admit func(pre Pre, p P) error
	// Run does the work. It is called only with parameters Check accepted.
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

	decode func(raw json.RawMessage) (any, error)
	value  func(params any) (any, bool)
	check  func(p any) error
	admit  func(pre Pre, p any) error
	run    func(ctx context.Context, env *OpEnv, p any) (any, error)
}

// Register adds op to r under its versioned name (VersionedName);
// registering a name twice is a programming error.
func Register[P, R any](r *Registry, op Op[P, R]) {
	if op.Run == nil {
		panic(fmt.Sprintf("owner: operation %s has no Run", op.Name))
	}
	m := Method{Name: op.Name, Write: op.Write, Scope: op.Scope, FilesOnly: op.FilesOnly, Env: append([]string(nil), op.Env...)}
	m.decode = func(raw json.RawMessage) (any, error) { return DecodeParams[P](raw) }
	m.value = func(params any) (any, bool) {
		switch v := params.(type) {
		case P:
			return v, true
		case *P:
			if v != nil {
				return *v, true
			}
		}
		return nil, false
	}
	m.check = func(p any) error {
		if op.Check == nil {
			return nil
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

// CodeInvalidParams is the one refusal for parameters that do not decode:
// the same whether they came from this process or through a gateway.
const CodeInvalidParams = "invalid_params"

// DecodeParams reads an operation's parameters strictly: one JSON object
// (or null, for an operation without parameters), no unknown fields,
// nothing after it. Neither a local caller nor a gateway's client is
// trusted more than the other.
func DecodeParams[P any](raw json.RawMessage) (P, error) {
	var v P
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		return v, errs.Usage(errs.CodeInvalidParams, "invalid parameters: %v", err)
	}
	if dec.More() {
		return v, errs.Usage(errs.CodeInvalidParams, "invalid parameters: data after the object")
	}
	return v, nil
}

// params turns what a caller in this process passed into the operation's
// P: the value itself when it has that type, else through its JSON form,
// decoded as strictly as a gateway would.
func (m Method) params(params any) (any, error) {
	if p, ok := m.value(params); ok {
		return p, nil
	}
	var raw json.RawMessage
	switch v := params.(type) {
	case json.RawMessage:
		raw = v
	case nil:
	default:
		b, err := json.Marshal(params)
		if err != nil {
			return nil, fmt.Errorf("encode %s params: %w", m.Name, err)
		}
		raw = b
	}
	return m.decode(raw)
}

// Check runs the operation's stateless checks on decoded parameters.
func (m Method) Check(p any) error { return m.check(p) }

// Serve is the gateway's executor step: decode the call's JSON, check it,
// run it and encode the result.
func (m Method) Serve(ctx context.Context, env *OpEnv, raw json.RawMessage) (json.RawMessage, error) {
	p, err := m.decode(raw)
	if err != nil {
		return nil, err
	}
	if err := m.check(p); err != nil {
		return nil, err
	}
	res, err := m.run(ctx, env, p)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(res)
	if err != nil {
		return nil, fmt.Errorf("encode %s result: %w", m.Name, err)
	}
	return b, nil
}

// Invoke runs an operation in this process on parameters given as a value
// (or JSON, decoded strictly) and returns its result as a value.
func Invoke(ctx context.Context, m Method, env *OpEnv, params any) (any, error) {
	p, err := m.params(params)
	if err != nil {
		return nil, err
	}
	if err := m.check(p); err != nil {
		return nil, err
	}
	return m.run(ctx, env, p)
}

// assign stores an operation's result into the caller's result pointer:
// directly when the types fit (the offline executor passes values), else
// through JSON (a caller decoding into a shape of its own).
func assign(method string, result, res any) error {
	if result == nil || res == nil {
		return nil
	}
	dst := reflect.ValueOf(result)
	if dst.Kind() == reflect.Pointer && !dst.IsNil() {
		src := reflect.ValueOf(res)
		t := dst.Elem().Type()
		switch {
		case src.Type().AssignableTo(t):
			dst.Elem().Set(src)
			return nil
		case src.Kind() == reflect.Pointer && !src.IsNil() && src.Elem().Type().AssignableTo(t):
			dst.Elem().Set(src.Elem())
			return nil
		}
	}
	b, err := json.Marshal(res)
	if err != nil {
		return fmt.Errorf("encode %s result: %w", method, err)
	}
	return decodeResult(method, b, result)
}

func decodeResult(method string, b []byte, result any) error {
	if result == nil || len(b) == 0 {
		return nil
	}
	if err := json.Unmarshal(b, result); err != nil {
		return fmt.Errorf("decode %s result: %w", method, err)
	}
	return nil
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
