package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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

// Options configure a Client; zero values take the defaults above.
type Options struct {
	Command string
	Args    []string
	// Env is the server's whole environment. Nothing is inherited.
	Env []string
	Dir string

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
	// Capabilities sent in initialize; {} when empty.
	Capabilities json.RawMessage

	StartupTimeout     time.Duration
	RequestTimeout     time.Duration
	MaxPendingRequests int
	// MaxFrameBytes bounds every message in both directions, its LF
	// included.
	MaxFrameBytes int

	// OnNotification is called for every server notification (progress,
	// logging, list changes) by the goroutine reading stdout at the time:
	// the client's reader or a caller of Request waiting for its answer.
	// It must not block for long (the server's next message waits for
	// it) and must not call Request. Over HTTP it is called by the
	// goroutines reading the streams, possibly two at once (a request's
	// stream and the GET stream).
	OnNotification func(method string, params json.RawMessage)
	// StderrTee receives a live copy of the server's stderr.
	StderrTee io.Writer
	// Subreaper: see ProcessSpec.Subreaper.
	Subreaper bool
	// OnConnected, when set, is called once the handshake is done, with
	// the server's identity and the negotiated protocol.
	OnConnected func(server Implementation, n Negotiated)

	// HTTP, when set, connects to a remote server instead of spawning one
	// (Connect, StartHTTP); Command and the process fields do not apply.
	HTTP *HTTPOptions

	// Stop timings; the defaults are 2 s, 2 s and 2 s.
	EOFGrace, TermGrace, KillDeadline time.Duration
}

func (o *Options) setDefaults() error {
	if o.Command == "" {
		return &Error{Class: ClassUnavailable, Code: CodeSpawnFailed, Message: "no server command given"}
	}
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
		o.Capabilities = json.RawMessage(`{}`)
	}
	return nil
}

// Client is one MCP connection to a server process it owns.
type Client struct {
	opts Options
	proc *Process

	wmu  sync.Mutex // one writer at a time; each message is one Write
	wbuf []byte

	mu      sync.Mutex
	pending map[int64]*call
	nextID  int64
	closed  bool
	fatal   *Error

	replies    chan []byte // answers to server requests, written in order
	readerDone chan struct{}

	// The reader baton (baton.go), under mu.
	rstate      batonState
	holder      *call // the caller holding the baton
	bgWhy       batonWhy
	bgWake      chan struct{}
	idle        *time.Timer
	idleArmed   bool
	idleDelay   time.Duration // batonIdleDelay; tests lengthen it
	freeAt      time.Time
	canDeadline bool
	// Owned by whoever holds the baton.
	framer   *LineFramer
	rbuf     []byte
	yield    func([]byte) error
	answered bool

	retired  chan struct{}
	stopping sync.Once

	eraState
}

type call struct {
	ch chan reply
}

type reply struct {
	result json.RawMessage
	err    *Error
}

// Start spawns the server and completes the handshake within
// StartupTimeout. On failure the process tree is already stopped.
func Start(ctx context.Context, opts Options) (*Client, error) {
	if err := opts.setDefaults(); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(opts.StartupTimeout)
	proc, err := StartProcess(ProcessSpec{
		Command: opts.Command, Args: opts.Args, Env: opts.Env, Dir: opts.Dir,
		StderrTee: opts.StderrTee, Subreaper: opts.Subreaper,
		EOFGrace: opts.EOFGrace, TermGrace: opts.TermGrace, KillDeadline: opts.KillDeadline,
	})
	if err != nil {
		return nil, err
	}
	c := &Client{
		opts: opts, proc: proc,
		pending:    make(map[int64]*call),
		nextID:     0, // the handshake's first request
		replies:    make(chan []byte, 64),
		readerDone: make(chan struct{}),
		retired:    make(chan struct{}),
		bgWake:     make(chan struct{}, 1),
		framer:     NewLineFramer(opts.MaxFrameBytes - 1), // the limit includes the LF
		rbuf:       make([]byte, 64<<10),
		idleDelay:  batonIdleDelay,
	}
	c.yield = c.handleLine
	// Callers may read for themselves only if a blocked read can be
	// interrupted.
	c.canDeadline = proc.Stdout().SetReadDeadline(time.Time{}) == nil
	c.idle = time.AfterFunc(time.Hour, c.idleTakeover)
	c.idle.Stop()
	c.mu.Lock()
	c.handToBackLocked(whyRead) // until the first caller takes it
	c.mu.Unlock()
	go c.readLoop()
	go c.replyLoop()
	go c.watchExit()

	if e := c.handshake(ctx, deadline); e != nil {
		c.retire(e)
		_, _ = c.Stop()
		return nil, startupExit(e)
	}
	if f := opts.OnConnected; f != nil {
		f(c.serverInfo, c.negotiated)
	}
	return c, nil
}

// startupExit marks a server that ended before it completed the handshake
// as a definitive failure: it is not a server that is busy or restarting
// but a command that does not serve MCP as given (it exits at once, like
// /bin/true, or its launcher cannot find a program). The hint fits what it
// left behind.
func startupExit(e *Error) *Error {
	if e.Code != CodeServerExited {
		return e
	}
	c := *e
	c.Definitive = true
	c.Delivered = false
	if c.Hint == "" {
		if strings.Contains(c.Message, "): ") {
			c.Hint = "the server ended before answering the handshake; its stderr tail ends the message"
		} else {
			c.Hint = "the server ended before answering the handshake and wrote nothing on stderr: check that the command is an MCP server over stdio (it must keep running and answer on stdout)"
		}
	}
	return &c
}

// takeID returns the next request id.
func (c *Client) takeID() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	id := c.nextID
	c.nextID++
	return id
}

// Negotiated is the protocol era and version the connection speaks.
func (c *Client) Negotiated() Negotiated { return c.negotiated }

// ServerInfo is the server's name and version from the handshake.
func (c *Client) ServerInfo() Implementation { return c.serverInfo }

// Pid is the server's pid (and process group id).
func (c *Client) Pid() int { return c.proc.Pid() }

// StderrTail returns the last 32 KiB of the server's stderr.
func (c *Client) StderrTail() []byte { return c.proc.StderrTail() }

// IsAvailable reports whether the connection still admits requests.
func (c *Client) IsAvailable() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.closed
}

// Err is the retained first fatal error, nil while the connection is up.
func (c *Client) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fatal == nil {
		return nil
	}
	return c.fatal
}

// Request sends one request and waits for its result. A JSON-RPC error
// answer fails only this request (unless it is timeout-coded); a timeout
// or ctx cancellation retires the whole connection.
func (c *Client) Request(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	return c.RequestTimeout(ctx, method, params, 0)
}

// RequestTimeout is Request with its own deadline instead of
// Options.RequestTimeout (when timeout > 0): a session line's timeoutMs.
// It fails as request_timeout, like the default deadline, and retires the
// connection the same way (docs/mcp.md, "mcp session").
func (c *Client) RequestTimeout(ctx context.Context, method string, params json.RawMessage, timeout time.Duration) (json.RawMessage, error) {
	id := c.takeID()
	if c.meta != nil {
		if p := firstByte(params); p == 0 || p == '{' || p == 'n' {
			params = c.withMeta(params)
		}
	}
	if timeout <= 0 {
		timeout = c.opts.RequestTimeout
	}
	res, err := c.do(ctx, id, method, params, timeout, func() *Error {
		return unavailable(CodeRequestTimeout, "request %s timed out after %dms", method, timeout.Milliseconds())
	})
	if err != nil {
		if err.RPC != nil && err.RPC.Code == codeMethodNotFound && c.negotiated.Era == EraModern &&
			(method == "ping" || method == "initialize" || strings.HasPrefix(method, "notifications/") || method == "logging/setLevel" || strings.HasPrefix(method, "resources/subscribe") || method == "resources/unsubscribe") {
			e := *err
			e.Hint = "protocol 2026-07-28 removed " + method + "; the server answers the new era's methods only (pass --protocol-version with a legacy revision to use it)"
			return nil, &e
		}
		return nil, err
	}
	return res, nil
}

func (c *Client) do(ctx context.Context, id int64, method string, params json.RawMessage, timeout time.Duration, onTimeout func() *Error) (json.RawMessage, *Error) {
	if len(params) > 0 {
		// Params must be one JSON value on one line; compacting also
		// validates it.
		if c := firstByte(params); c != '{' && c != '[' {
			return nil, protocolErr(errs.CodeInvalidParams, "params must be a JSON object or array")
		}
	}
	if err := ctx.Err(); err != nil {
		// Nothing was sent: no reason to retire the connection.
		if ctxTimedOut(ctx) {
			return nil, ctxError(ctx, method, onTimeout)
		}
		return nil, unavailable(CodeCancelled, "request %s was cancelled before it was sent: %v", method, context.Cause(ctx))
	}
	cl := &call{ch: make(chan reply, 1)}
	c.mu.Lock()
	if c.closed {
		e := c.fatal
		c.mu.Unlock()
		return nil, e.withDelivered(false)
	}
	if len(c.pending) >= c.opts.MaxPendingRequests {
		c.mu.Unlock()
		return nil, unavailable(CodeTooManyPending, "too many pending requests (limit %d)", c.opts.MaxPendingRequests)
	}
	c.pending[id] = cl
	c.mu.Unlock()

	delivered, werr := c.writeRequest(ctx, id, method, params, timeout, onTimeout)
	if werr != nil {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
		if werr.Class == ClassProtocol {
			// Refused before a byte was written: the connection is fine.
			return nil, werr.withDelivered(false)
		}
		// A failed write leaves the stream in an unknown state (part of a
		// message may be in the pipe): the connection retires with it.
		c.retire(werr.withDelivered(delivered))
		return nil, c.retainedFatal().withDelivered(delivered)
	}

	if c.tryTakeBaton(cl, timeout) {
		if res, e, done := c.readFor(ctx, cl, method, onTimeout); done {
			if e != nil {
				return nil, e
			}
			return res, nil
		}
		// stdout failed: the background goroutine decides how the server
		// ended; wait for the verdict like any other caller.
	}

	var t *time.Timer
	var tc <-chan time.Time
	if timeout > 0 {
		t = time.NewTimer(timeout)
		tc = t.C
		defer t.Stop()
	} else {
		// Startup budget already spent.
		closed := make(chan time.Time)
		close(closed)
		tc = closed
	}
	select {
	case r := <-cl.ch:
		if r.err != nil {
			return nil, r.err
		}
		return r.result, nil
	case <-tc:
		c.retire(onTimeout().withDelivered(true))
	case <-ctx.Done():
		c.retire(ctxError(ctx, method, onTimeout).withDelivered(true))
	}
	// retire rejected every pending call, ours included, with the first
	// fatal error; take it from our channel so the answer is consistent.
	r := <-cl.ch
	return nil, r.err
}

// Notify sends a notification (no answer expected).
func (c *Client) Notify(method string, params json.RawMessage) error {
	c.mu.Lock()
	if c.closed {
		e := c.fatal
		c.mu.Unlock()
		return e
	}
	c.mu.Unlock()
	line := appendNotification(nil, method, params)
	if len(line) > c.opts.MaxFrameBytes {
		return protocolErr(CodeFrameTooLarge, "notification exceeded the frame-size limit")
	}
	c.wmu.Lock()
	_, err := c.writeLocked(context.Background(), line, c.opts.RequestTimeout)
	c.wmu.Unlock()
	if err != nil {
		c.retire(c.writeError(context.Background(), method, err, func() *Error {
			return unavailable(CodeRequestTimeout, "notification %s timed out after %dms", method, c.opts.RequestTimeout.Milliseconds())
		}))
		return c.retainedFatal()
	}
	return nil
}

func (c *Client) retainedFatal() *Error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.fatal
}

// retire closes admission, keeps the first fatal error, rejects every
// pending request with it, and starts stopping the process tree.
func (c *Client) retire(e *Error) {
	c.mu.Lock()
	if c.fatal == nil {
		c.fatal = e
	}
	first := c.fatal
	if !c.closed {
		// Someone must read on (to EOF, as the background goroutine does
		// after a retirement); a caller blocked in a read is woken.
		switch c.rstate {
		case batonCaller:
			c.interruptLocked()
		case batonFree:
			c.handToBackLocked(whyRead)
		}
	}
	if !c.closed {
		// A writer blocked on a server that does not read is released.
		_ = c.proc.Stdin().SetWriteDeadline(pastDeadline)
	}
	c.closed = true
	pending := c.pending
	c.pending = make(map[int64]*call)
	c.mu.Unlock()
	for _, cl := range pending {
		cl.ch <- reply{err: first.withDelivered(true)}
	}
	c.stopping.Do(func() {
		if first.Class == ClassProtocol {
			// A server that wrote an oversized or malformed frame is not
			// waited for: OpenClaw's client terminates it at once too.
			c.proc.TerminatePromptly()
		}
		close(c.retired)
		go func() { _, _ = c.proc.Stop(c.readerDone) }()
	})
}

// Stop closes admission, rejects what is pending, and ends the process
// tree (EOF → SIGTERM → SIGKILL of the group), confirming it is gone. The
// CleanupResult is nil after an ordinary close.
func (c *Client) Stop() (*CleanupResult, error) {
	c.retire(unavailable(CodeClientStopped, "the client was stopped"))
	res, err := c.proc.Stop(c.readerDone)
	if err != nil {
		return res, err
	}
	return res, nil
}

func (c *Client) onStdoutEOF() {
	t := time.NewTimer(500 * time.Millisecond)
	defer t.Stop()
	select {
	case <-c.proc.Exited():
		c.retire(c.exitError())
	case <-c.retired:
	case <-t.C:
		c.retire(unavailable(CodeServerClosedStdout, "server closed its stdout"))
	}
}

// watchExit retires the connection when the main process ends, after
// giving the reader a moment to deliver what was written before the end.
// A descendant may hold stdout open, so EOF alone is not enough.
func (c *Client) watchExit() {
	select {
	case <-c.proc.Exited():
	case <-c.retired:
		return
	}
	t := time.NewTimer(250 * time.Millisecond)
	defer t.Stop()
	select {
	case <-c.readerDone:
	case <-t.C:
	}
	c.retire(c.exitError())
}

func (c *Client) exitError() *Error {
	return c.proc.exitedError(c.proc.exitTail(500 * time.Millisecond))
}

func (c *Client) handleLine(line []byte) error {
	if len(bytes.TrimSpace(line)) == 0 {
		return nil // empty lines are skipped
	}
	m, err := parseMessage(line)
	if err != nil {
		return err
	}
	switch m.kind {
	case kindResponse:
		c.mu.Lock()
		cl := c.pending[m.ID]
		delete(c.pending, m.ID)
		c.mu.Unlock()
		if cl == nil {
			return nil // an unknown id (late or invented) is ignored
		}
		if m.Error != nil {
			if m.Error.Code == codeRequestTimeout {
				e := &Error{Class: ClassUnavailable, Code: CodeServerTimeout, Message: "the server reported a timeout: " + m.Error.Message, RPC: m.Error, Delivered: true}
				// Put the call back so retire hands it the retained error.
				c.mu.Lock()
				if !c.closed {
					c.pending[m.ID] = cl
					c.mu.Unlock()
				} else {
					c.mu.Unlock()
					cl.ch <- reply{err: c.retainedFatal().withDelivered(true)}
				}
				c.retire(e)
				return nil
			}
			c.answered = true
			cl.ch <- reply{err: &Error{Class: ClassProtocol, Code: CodeRPCError, Message: "the server answered with an error: " + m.Error.Message, RPC: m.Error, Delivered: true}}
			return nil
		}
		c.answered = true
		cl.ch <- reply{result: m.Result}
	case kindRequest:
		var b []byte
		if m.Method == "ping" {
			b = append(b, `{"jsonrpc":"2.0","id":`...)
			b = append(b, m.RawID...)
			b = append(b, `,"result":{}}`+"\n"...)
		} else {
			b = append(b, `{"jsonrpc":"2.0","id":`...)
			b = append(b, m.RawID...)
			b = append(b, `,"error":{"code":-32601,"message":"Method not found"}}`+"\n"...)
		}
		select {
		case c.replies <- b:
		default:
			return protocolErr(CodeMalformedMessage, "the server sent requests faster than it reads their answers")
		}
	case kindNotification:
		if f := c.opts.OnNotification; f != nil {
			f(m.Method, m.Params)
		}
	}
	return nil
}

// replyLoop writes answers to server requests off the reader goroutine, so
// a server that is slow to read its stdin cannot deadlock our reader.
func (c *Client) replyLoop() {
	for {
		select {
		case b := <-c.replies:
			c.wmu.Lock()
			_, err := c.writeLocked(context.Background(), b, c.opts.RequestTimeout)
			c.wmu.Unlock()
			if err != nil {
				c.retire(c.writeError(context.Background(), "(answer to a server request)", err, func() *Error {
					return unavailable(CodeRequestTimeout, "an answer to a server request timed out after %dms", c.opts.RequestTimeout.Milliseconds())
				}))
				return
			}
		case <-c.retired:
			return
		}
	}
}

// ctxTimedOut reports whether ctx ended by its own deadline rather than a
// cancellation: a caller's deadline is a timeout and is reported as one
// (request_timeout), never as CodeCancelled.
func ctxTimedOut(ctx context.Context) bool {
	return errors.Is(context.Cause(ctx), context.DeadlineExceeded)
}

// ctxError is the error for a request whose ctx ended while it waited.
func ctxError(ctx context.Context, method string, onTimeout func() *Error) *Error {
	if ctxTimedOut(ctx) && onTimeout != nil {
		e := onTimeout()
		return &Error{Class: e.Class, Code: e.Code, Message: fmt.Sprintf("request %s timed out: the caller's deadline passed", method)}
	}
	return unavailable(CodeCancelled, "request %s was cancelled: %v", method, context.Cause(ctx))
}
