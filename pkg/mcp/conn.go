package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/clawkit/clawkit/pkg/errs"
)

// Defaults (docs/mcp.md).
const (
	DefaultProtocolVersion    = "2025-11-25"
	DefaultStartupTimeout     = 10 * time.Second
	DefaultRequestTimeout     = 60 * time.Second
	DefaultMaxPendingRequests = 64
	DefaultMaxFrameBytes      = 16 << 20
)

// Implementation names a client or server in the handshake.
type Implementation struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// Options configure a connection of either transport; zero values take
// the defaults above. What only one transport needs is given to it
// directly: the process to start (mcpstdio.ProcessSpec) or the URL and
// HTTP limits (mcphttp.Options).
type Options struct {
	ClientInfo Implementation
	// ProtocolVersion is the exact version the server must speak: a legacy
	// revision (initialize handshake) or 2026-07-28 (server/discover, then
	// stateless requests carrying _meta). "auto" negotiates instead, as the
	// CLI does by default: a server/discover probe, and on an error or no
	// answer within ProbeTimeout the legacy handshake accepting any of
	// LegacyProtocolVersions. Empty means DefaultProtocolVersion.
	ProtocolVersion string
	// ProbeTimeout bounds the auto mode's probe once the server has read
	// it (default DefaultProbeTimeout).
	ProbeTimeout time.Duration
	// Capabilities sent in initialize (and in the stateless era's
	// _meta); when empty, those Requests can honour
	// (ServerRequests.Capabilities).
	Capabilities json.RawMessage
	// Requests is how the server's own requests are answered, and the
	// input requests of input_required results (docs/mcp.md, "Server
	// requests"); the zero value declines elicitation, lists no roots and
	// refuses sampling.
	Requests ServerRequests

	StartupTimeout     time.Duration
	RequestTimeout     time.Duration
	MaxPendingRequests int
	// MaxFrameBytes bounds every message in both directions, its LF
	// included.
	MaxFrameBytes int

	// OnNotification is called for every server notification (progress,
	// logging, list changes) by the goroutine reading at the time: over
	// stdio the client's reader or a caller of Request waiting for its
	// answer; over HTTP the goroutines reading the streams, possibly two
	// at once (a request's stream and the GET stream). It must not block
	// for long (the server's next message waits for it) and must not call
	// Request.
	OnNotification func(method string, params json.RawMessage)
	// OnConnected, when set, is called once the handshake is done, with
	// the server's identity and the negotiated protocol.
	OnConnected func(server Implementation, n Negotiated)
}

// SetDefaults fills the zero values and checks the frame limit.
func (o *Options) SetDefaults() error {
	if o.ProtocolVersion == "" {
		o.ProtocolVersion = DefaultProtocolVersion
	}
	if o.ProbeTimeout <= 0 {
		o.ProbeTimeout = DefaultProbeTimeout
	}
	if o.StartupTimeout <= 0 {
		o.StartupTimeout = DefaultStartupTimeout
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = DefaultRequestTimeout
	}
	if o.MaxPendingRequests <= 0 {
		o.MaxPendingRequests = DefaultMaxPendingRequests
	}
	if o.MaxFrameBytes <= 0 {
		o.MaxFrameBytes = DefaultMaxFrameBytes
	}
	if o.MaxFrameBytes < 2 {
		return &Error{Class: ClassProtocol, Code: errs.CodeInvalidLimit, Message: "the frame limit must be at least 2 bytes"}
	}
	if o.ClientInfo.Name == "" {
		o.ClientInfo = Implementation{Name: "clawkit", Version: "dev"}
	}
	if len(o.Capabilities) == 0 {
		o.Capabilities = o.Requests.Capabilities()
	}
	return nil
}

// Reply is the outcome of one request: its result or its error.
type Reply struct {
	Result json.RawMessage
	Err    *Error
}

// Core is the connection state both clients share, whatever carries the
// messages: the options, request ids, the table of pending requests, the
// retirement state with the first fatal error (retirement), and what the
// opening learned (era.go). The transports embed it.
//
// Mu guards the core's state; a transport may guard its own state with
// it too, so that a retirement changes both at once.
type Core struct {
	Opts Options
	Mu   sync.Mutex

	pending map[int64]chan Reply
	nextID  int64
	closed  bool
	fatal   *Error

	era eraState
}

// Init prepares the core for opts (defaults already applied).
func (c *Core) Init(opts Options) {
	c.Opts = opts
	c.pending = make(map[int64]chan Reply)
}

// TakeID returns the next request id.
func (c *Core) TakeID() int64 {
	c.Mu.Lock()
	defer c.Mu.Unlock()
	id := c.nextID
	c.nextID++
	return id
}

// Negotiated is the protocol era and version the connection speaks.
func (c *Core) Negotiated() Negotiated { return c.era.negotiated }

// ServerInfo is the server's name and version from the opening.
func (c *Core) ServerInfo() Implementation { return c.era.serverInfo }

// IsAvailable reports whether the connection still admits requests.
func (c *Core) IsAvailable() bool {
	c.Mu.Lock()
	defer c.Mu.Unlock()
	return !c.closed
}

// ClosedLocked reports whether the connection is retired; Mu is held.
func (c *Core) ClosedLocked() bool { return c.closed }

// Err is the retained first fatal error, nil while the connection is up.
func (c *Core) Err() error {
	c.Mu.Lock()
	defer c.Mu.Unlock()
	if c.fatal == nil {
		return nil
	}
	return c.fatal
}

// RetainedFatal is the first fatal error (nil while the connection is up).
func (c *Core) RetainedFatal() *Error {
	c.Mu.Lock()
	defer c.Mu.Unlock()
	return c.fatal
}

// AddPending registers a request's reply channel under id: refused with the
// retained error once the connection is retired, and past
// MaxPendingRequests.
func (c *Core) AddPending(id int64, ch chan Reply) *Error {
	c.Mu.Lock()
	defer c.Mu.Unlock()
	if c.closed {
		return c.fatal.WithDelivered(false)
	}
	if len(c.pending) >= c.Opts.MaxPendingRequests {
		return Unavailable(CodeTooManyPending, "too many pending requests (limit %d)", c.Opts.MaxPendingRequests)
	}
	c.pending[id] = ch
	return nil
}

// Forget drops a request from the pending table.
func (c *Core) Forget(id int64) {
	c.Mu.Lock()
	delete(c.pending, id)
	c.Mu.Unlock()
}

// TakePending removes and returns the reply channel waiting for id (nil
// for an id nobody waits for: a late or invented answer).
func (c *Core) TakePending(id int64) chan Reply {
	c.Mu.Lock()
	defer c.Mu.Unlock()
	ch := c.pending[id]
	delete(c.pending, id)
	return ch
}

// RestoreLocked puts a reply channel back under id unless the connection
// is retired (Mu held); it reports whether it did.
func (c *Core) RestoreLocked(id int64, ch chan Reply) bool {
	if c.closed {
		return false
	}
	c.pending[id] = ch
	return true
}

// RetireLocked stops taking requests, keeping the first fatal error (Mu
// held). It returns that first error, whether the connection was open
// until now, and the pending requests, which the caller rejects with
// Reject once it has released Mu.
func (c *Core) RetireLocked(e *Error) (first *Error, wasOpen bool, pending map[int64]chan Reply) {
	if c.fatal == nil {
		c.fatal = e
	}
	wasOpen = !c.closed
	c.closed = true
	pending = c.pending
	c.pending = make(map[int64]chan Reply)
	return c.fatal, wasOpen, pending
}

// Reject hands every pending request the retained error.
func Reject(pending map[int64]chan Reply, first *Error) {
	for _, ch := range pending {
		select {
		case ch <- Reply{Err: first.WithDelivered(true)}:
		default: // already answered
		}
	}
}

// PrepareRequest is what every request does before it is carried: the
// stateless era's _meta joins params (an object or none), a zero timeout
// becomes Options.RequestTimeout, and the timeout's error is built.
func (c *Core) PrepareRequest(method string, params json.RawMessage, timeout time.Duration) (json.RawMessage, time.Duration, func() *Error) {
	if c.era.meta != nil {
		if p := FirstByte(params); p == 0 || p == '{' || p == 'n' {
			params = c.era.withMeta(params)
		}
	}
	if timeout <= 0 {
		timeout = c.Opts.RequestTimeout
	}
	return params, timeout, func() *Error {
		return Unavailable(errs.CodeRequestTimeout, "request %s timed out after %dms", method, timeout.Milliseconds())
	}
}

// RemovedMethodHint explains a method-not-found answer to a method that
// protocol 2026-07-28 removed, when the connection speaks that era.
func (c *Core) RemovedMethodHint(method string, err *Error) *Error {
	if err.RPC != nil && err.RPC.Code == RPCMethodNotFound && c.era.negotiated.Era == EraModern &&
		(method == "ping" || method == "initialize" || strings.HasPrefix(method, "notifications/") || method == "logging/setLevel" || strings.HasPrefix(method, "resources/subscribe") || method == "resources/unsubscribe") {
		e := *err
		e.Hint = "protocol 2026-07-28 removed " + method + "; the server answers the new era's methods only (pass --protocol-version with a legacy revision to use it)"
		return &e
	}
	return err
}

// ResponseError classifies a server's JSON-RPC error answer: the SDKs'
// request-timeout code retires the connection (fatal: the server is in an
// unknown state); any other error fails only its request.
func ResponseError(rpc *RPCError) (e *Error, fatal bool) {
	if rpc.Code == RPCRequestTimeout {
		return &Error{Class: ClassUnavailable, Code: CodeServerTimeout, Message: "the server reported a timeout: " + rpc.Message, RPC: rpc, Delivered: true}, true
	}
	return &Error{Class: ClassProtocol, Code: errs.CodeRPCError, Message: "the server answered with an error: " + rpc.Message, RPC: rpc, Delivered: true}, false
}

// CheckParams refuses params that are not one JSON object or array.
func CheckParams(params json.RawMessage) *Error {
	if len(params) > 0 {
		if b := FirstByte(params); b != '{' && b != '[' {
			return ProtocolErr(errs.CodeInvalidParams, "params must be a JSON object or array")
		}
	}
	return nil
}

// CtxTimedOut reports whether ctx ended by its own deadline rather than a
// cancellation: a caller's deadline is a timeout and is reported as one
// (request_timeout), never as errs.CodeCancelled.
func CtxTimedOut(ctx context.Context) bool {
	return errors.Is(context.Cause(ctx), context.DeadlineExceeded)
}

// CtxError is the error for a request whose ctx ended while it waited.
func CtxError(ctx context.Context, method string, onTimeout func() *Error) *Error {
	if CtxTimedOut(ctx) && onTimeout != nil {
		e := onTimeout()
		return &Error{Class: e.Class, Code: e.Code, Message: fmt.Sprintf("request %s timed out: the caller's deadline passed", method)}
	}
	return Unavailable(errs.CodeCancelled, "request %s was cancelled: %v", method, context.Cause(ctx))
}

// NotSent is the error for a request whose ctx ended before a byte was
// written: nothing was sent, so the connection need not retire.
func NotSent(ctx context.Context, method string, onTimeout func() *Error) *Error {
	if CtxTimedOut(ctx) {
		return CtxError(ctx, method, onTimeout)
	}
	return Unavailable(errs.CodeCancelled, "request %s was cancelled before it was sent: %v", method, context.Cause(ctx))
}

// PendingLocked is the number of requests waiting for an answer (Mu
// held).
func (c *Core) PendingLocked() int { return len(c.pending) }
