package owner

import (
	"context"
	"fmt"
	"reflect"
)

// Handle names an operation with its types: a call site writes
// research.OpStart.Call(ctx, env, p) and gets the operation's R back,
// never a string name or an untyped result (docs/architecture.md). A
// domain declares each handle beside its Op and registers the Op through
// it (Handle.Register), so the compiler holds the handle's P and R to the
// Op's and the operation's name is written once.
type Handle[P, R any] struct {
	// Name is the operation's name (VersionedName adds the version).
	Name string
}

// Register adds op to r under the handle's name: the one way a domain
// registers an operation its callers reach through a handle. op.Name is
// left empty (the handle names it).
func (h Handle[P, R]) Register(r *Registry, op Op[P, R]) {
	if op.Name != "" && op.Name != h.Name {
		panic(fmt.Sprintf("owner: operation %s registered through the handle of %s", op.Name, h.Name))
	}
	op.Name = h.Name
	Register(r, op)
}

// Caller routes a call: *Router, or a command's environment that builds
// one (pkg/cli's Env).
type Caller interface {
	// Route checks and runs the operation named name on p. A call run in
	// this process answers its result as a value; a call routed to a
	// gateway decodes the answer into into instead (one decode) and
	// answers nil.
	Route(ctx context.Context, name string, p any, into Reply) (any, error)
}

// Call runs the operation through c and returns its result.
func (h Handle[P, R]) Call(ctx context.Context, c Caller, p P) (R, error) {
	var rep replyOf[R]
	res, err := c.Route(ctx, h.Name, p, &rep)
	if err != nil || rep.OK {
		return rep.Result, err
	}
	if res == nil {
		var zero R
		return zero, nil
	}
	r, ok := res.(R)
	if !ok {
		// A handle whose R is not the registered Op's: only a handle
		// made apart from its Op's registration (Handle.Register) can.
		return r, fmt.Errorf("owner: operation %s answered %T, its handle expects %v", h.Name, res, reflect.TypeFor[R]())
	}
	return r, nil
}

// Reply is the body a gateway answers a call with, decoded in one pass:
// CallReply keeps the result as JSON, a handle's reply decodes it straight
// into R.
type Reply interface {
	head() (ok bool, e *CallError)
}

// replyOf is a gateway's answer with its result typed.
type replyOf[R any] struct {
	OK     bool       `json:"ok"`
	Result R          `json:"result"`
	Error  *CallError `json:"error,omitempty"`
}

func (r *replyOf[R]) head() (bool, *CallError) { return r.OK, r.Error }

func (r *CallReply) head() (bool, *CallError) { return r.OK, r.Error }
