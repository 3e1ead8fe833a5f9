package mcpstdio

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/clawkit/clawkit/pkg/errs"

	"github.com/clawkit/clawkit/pkg/mcp"
)

// Client is one MCP connection to a server process it owns.
type Client struct {
	mcp.Core
	proc *Process

	wmu  sync.Mutex // one writer at a time; each message is one Write
	wbuf []byte

	replies    chan []byte // answers to server requests, written in order
	readerDone chan struct{}

	// The reader baton (baton.go), under Mu.
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
	framer   *mcp.LineFramer
	rbuf     []byte
	yield    func([]byte) error
	answered bool

	retired  chan struct{}
	stopping sync.Once
}

// call is one request waiting for its answer; its channel is the one
// registered in the core's pending table.
type call struct {
	ch chan mcp.Reply
}

// Dialer starts spec's server for mcp.Call and mcp.Session.
func Dialer(spec ProcessSpec) mcp.Dialer {
	return func(ctx context.Context, opts mcp.Options) (mcp.Conn, error) {
		c, err := Start(ctx, spec, opts)
		if err != nil {
			return nil, err
		}
		return c, nil
	}
}

// Start spawns the server spec names and completes the handshake within
// StartupTimeout. On failure the process tree is already stopped.
func Start(ctx context.Context, spec ProcessSpec, opts mcp.Options) (*Client, error) {
	if spec.Command == "" {
		return nil, &mcp.Error{Class: mcp.ClassUnavailable, Code: CodeSpawnFailed, Message: "no server command given"}
	}
	if err := opts.SetDefaults(); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(opts.StartupTimeout)
	proc, err := StartProcess(spec)
	if err != nil {
		return nil, err
	}
	c := &Client{
		proc:       proc,
		replies:    make(chan []byte, 64),
		readerDone: make(chan struct{}),
		retired:    make(chan struct{}),
		bgWake:     make(chan struct{}, 1),
		framer:     mcp.NewLineFramer(opts.MaxFrameBytes - 1), // the limit includes the LF
		rbuf:       make([]byte, 64<<10),
		idleDelay:  batonIdleDelay,
	}
	c.Init(opts) // the handshake's first request is id 0
	c.yield = c.handleLine
	// Callers may read for themselves only if a blocked read can be
	// interrupted.
	c.canDeadline = proc.Stdout().SetReadDeadline(time.Time{}) == nil
	c.idle = time.AfterFunc(time.Hour, c.idleTakeover)
	c.idle.Stop()
	c.Mu.Lock()
	c.handToBackLocked(whyRead) // until the first caller takes it
	c.Mu.Unlock()
	go c.readLoop()
	go c.replyLoop()
	go c.watchExit()

	if e := c.handshake(ctx, deadline); e != nil {
		c.retire(e)
		_, _ = c.Stop()
		return nil, startupExit(e)
	}
	if f := opts.OnConnected; f != nil {
		f(c.ServerInfo(), c.Negotiated())
	}
	return c, nil
}

// startupExit marks a server that ended before it completed the handshake
// as a definitive failure: it is not a server that is busy or restarting
// but a command that does not serve MCP as given (it exits at once, like
// /bin/true, or its launcher cannot find a program). The hint fits what it
// left behind.
func startupExit(e *mcp.Error) *mcp.Error {
	if e.Code != CodeServerExited {
		return e
	}
	c := *e
	c.Definitive = true
	c.Delivered = false
	if c.Hint == "" {
		if len(c.StderrTail) > 0 {
			c.Hint = "the server ended before answering the handshake; its stderr tail follows"
		} else {
			c.Hint = "the server ended before answering the handshake and wrote nothing on stderr: check that the command is an MCP server over stdio (it must keep running and answer on stdout)"
		}
	}
	return &c
}

// Pid is the server's pid (and process group id).
func (c *Client) Pid() int { return c.proc.Pid() }

// StderrTail returns the last 32 KiB of the server's stderr.
func (c *Client) StderrTail() []byte { return c.proc.StderrTail() }

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
	id := c.TakeID()
	params, timeout, onTimeout := c.PrepareRequest(method, params, timeout)
	res, err := c.do(ctx, id, method, params, timeout, onTimeout)
	if err != nil {
		return nil, c.RemovedMethodHint(method, err)
	}
	return res, nil
}

func (c *Client) do(ctx context.Context, id int64, method string, params json.RawMessage, timeout time.Duration, onTimeout func() *mcp.Error) (json.RawMessage, *mcp.Error) {
	// Params must be one JSON value on one line; writeRequest compacts
	// and so validates them.
	if e := mcp.CheckParams(params); e != nil {
		return nil, e
	}
	if ctx.Err() != nil {
		// Nothing was sent: no reason to retire the connection.
		return nil, mcp.NotSent(ctx, method, onTimeout)
	}
	cl := &call{ch: make(chan mcp.Reply, 1)}
	if e := c.AddPending(id, cl.ch); e != nil {
		return nil, e
	}

	delivered, werr := c.writeRequest(ctx, id, method, params, timeout, onTimeout)
	if werr != nil {
		c.Forget(id)
		if werr.Class == mcp.ClassProtocol {
			// Refused before a byte was written: the connection is fine.
			return nil, werr.WithDelivered(false)
		}
		// A failed write leaves the stream in an unknown state (part of a
		// message may be in the pipe): the connection retires with it.
		c.retire(werr.WithDelivered(delivered))
		return nil, c.RetainedFatal().WithDelivered(delivered)
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
		if r.Err != nil {
			return nil, r.Err
		}
		return r.Result, nil
	case <-tc:
		c.retire(onTimeout().WithDelivered(true))
	case <-ctx.Done():
		c.retire(mcp.CtxError(ctx, method, onTimeout).WithDelivered(true))
	}
	// retire rejected every pending call, ours included, with the first
	// fatal error; take it from our channel so the answer is consistent.
	r := <-cl.ch
	return nil, r.Err
}

// Notify sends a notification (no answer expected).
func (c *Client) Notify(method string, params json.RawMessage) error {
	if !c.IsAvailable() {
		return c.RetainedFatal()
	}
	line := mcp.AppendNotification(nil, method, params)
	if len(line) > c.Opts.MaxFrameBytes {
		return mcp.ProtocolErr(errs.CodeFrameTooLarge, "notification exceeded the frame-size limit")
	}
	c.wmu.Lock()
	_, err := c.writeLocked(context.Background(), line, c.Opts.RequestTimeout)
	c.wmu.Unlock()
	if err != nil {
		c.retire(c.writeError(context.Background(), method, err, func() *mcp.Error {
			return mcp.Unavailable(errs.CodeRequestTimeout, "notification %s timed out after %dms", method, c.Opts.RequestTimeout.Milliseconds())
		}))
		return c.RetainedFatal()
	}
	return nil
}

// retire stops taking requests, keeps the first fatal error, rejects every
// pending request with it, and starts stopping the process tree.
func (c *Client) retire(e *mcp.Error) {
	c.Mu.Lock()
	open := !c.ClosedLocked()
	if open {
		// Someone must read on (to EOF, as the background goroutine does
		// after a retirement); a caller blocked in a read is woken.
		switch c.rstate {
		case batonCaller:
			c.interruptLocked()
		case batonFree:
			c.handToBackLocked(whyRead)
		}
	}
	if open {
		// A writer blocked on a server that does not read is released.
		_ = c.proc.Stdin().SetWriteDeadline(pastDeadline)
	}
	first, _, pending := c.RetireLocked(e)
	c.Mu.Unlock()
	mcp.Reject(pending, first)
	c.stopping.Do(func() {
		if first.Class == mcp.ClassProtocol {
			// A server that wrote an oversized or malformed frame is not
			// waited for: OpenClaw's client terminates it at once too.
			c.proc.TerminatePromptly()
		}
		close(c.retired)
		go func() { _, _ = c.proc.Stop(c.readerDone) }()
	})
}

// Stop stops taking requests, rejects what is pending, and ends the process
// tree (EOF → SIGTERM → SIGKILL of the group), confirming it is gone. The
// CleanupResult is nil after an ordinary close.
func (c *Client) Stop() (*mcp.CleanupResult, error) {
	c.retire(mcp.Unavailable(errs.CodeClientStopped, "the client was stopped"))
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
		c.retire(mcp.Unavailable(CodeServerClosedStdout, "server closed its stdout"))
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

func (c *Client) exitError() *mcp.Error {
	return c.proc.exitedError(c.proc.exitTail(500 * time.Millisecond))
}

func (c *Client) handleLine(line []byte) error {
	if len(bytes.TrimSpace(line)) == 0 {
		return nil // empty lines are skipped
	}
	m, err := mcp.DecodeMessage(line)
	if err != nil {
		return err
	}
	switch m.Kind {
	case mcp.KindResponse:
		ch := c.TakePending(m.ID)
		if ch == nil {
			return nil // an unknown id (late or invented) is ignored
		}
		if m.Error != nil {
			e, fatal := mcp.ResponseError(m.Error)
			if fatal {
				// Put the call back so retire hands it the retained error.
				c.Mu.Lock()
				if c.RestoreLocked(m.ID, ch) {
					c.Mu.Unlock()
				} else {
					c.Mu.Unlock()
					ch <- mcp.Reply{Err: c.RetainedFatal().WithDelivered(true)}
				}
				c.retire(e)
				return nil
			}
			c.answered = true
			ch <- mcp.Reply{Err: e}
			return nil
		}
		c.answered = true
		ch <- mcp.Reply{Result: m.Result}
	case mcp.KindRequest:
		b := append(c.AnswerServerRequest(m.RawID, m.Method, m.Params), '\n')
		select {
		case c.replies <- b:
		default:
			return mcp.ProtocolErr(errs.CodeMalformedMessage, "the server sent requests faster than it reads their answers")
		}
	case mcp.KindNotification:
		if f := c.Opts.OnNotification; f != nil {
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
			_, err := c.writeLocked(context.Background(), b, c.Opts.RequestTimeout)
			c.wmu.Unlock()
			if err != nil {
				c.retire(c.writeError(context.Background(), "(answer to a server request)", err, func() *mcp.Error {
					return mcp.Unavailable(errs.CodeRequestTimeout, "an answer to a server request timed out after %dms", c.Opts.RequestTimeout.Milliseconds())
				}))
				return
			}
		case <-c.retired:
			return
		}
	}
}

// handshake runs the opening (mcp.Core.Handshake) over stdio.
func (c *Client) handshake(ctx context.Context, deadline time.Time) *mcp.Error {
	return c.Handshake(ctx, deadline, mcp.Carrier{Do: c.do, Notify: c.Notify, Probe: c.probe})
}

// probe sends server/discover for the auto mode and waits for its answer:
// up to DefaultProbeTimeout (Options.ProbeTimeout) after the server has
// read it, and never past the startup deadline. A probe that goes
// unanswered is withdrawn without retiring the connection (its answer, if
// it ever comes, is an unknown id and ignored).
func (c *Client) probe(ctx context.Context, deadline time.Time) (json.RawMessage, *mcp.Error, bool) {
	id := c.TakeID()
	cl := &call{ch: make(chan mcp.Reply, 1)}
	c.Mu.Lock()
	if !c.RestoreLocked(id, cl.ch) {
		c.Mu.Unlock()
		return nil, c.RetainedFatal().WithDelivered(false), true
	}
	c.Mu.Unlock()
	params := c.WithMeta(nil)
	delivered, werr := c.writeRequest(ctx, id, "server/discover", params, time.Until(deadline), nil)
	if werr != nil {
		c.Forget(id)
		if werr.Class != mcp.ClassProtocol {
			c.retire(werr.WithDelivered(delivered))
		}
		return nil, werr, true
	}
	// Hand reading to the background goroutine for the probe.
	c.Mu.Lock()
	if c.rstate == batonFree {
		c.handToBackLocked(whyRead)
	}
	c.Mu.Unlock()
	startup := time.NewTimer(time.Until(deadline))
	defer startup.Stop()
	var bound <-chan time.Time
	consumed := time.NewTicker(2 * time.Millisecond)
	defer consumed.Stop()
	for {
		select {
		case r := <-cl.ch:
			return r.Result, r.Err, true
		case <-consumed.C:
			if pipeEmpty(c.proc.Stdin()) {
				consumed.Stop()
				t := time.NewTimer(c.Opts.ProbeTimeout)
				defer t.Stop() //nolint:gocritic // deferInLoop: at most once per call (consumed fires once)
				bound = t.C
			}
		case <-bound:
			c.Forget(id)
			return nil, nil, false
		case <-startup.C:
			c.retire(mcp.Unavailable(errs.CodeInitializeTimeout, "server/discover timed out after %dms", c.Opts.StartupTimeout.Milliseconds()))
			r := <-cl.ch
			return nil, r.Err.WithDelivered(false), true
		case <-ctx.Done():
			c.retire(mcp.CtxError(ctx, "server/discover", func() *mcp.Error {
				return mcp.Unavailable(errs.CodeInitializeTimeout, "server/discover timed out")
			}))
			r := <-cl.ch
			return nil, r.Err.WithDelivered(false), true
		}
	}
}

// Transport is "stdio".
func (c *Client) Transport() string { return "stdio" }
