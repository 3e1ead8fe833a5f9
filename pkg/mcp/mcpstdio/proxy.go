package mcpstdio

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/clawkit/clawkit/pkg/mcp"

	"golang.org/x/sys/unix"

	"github.com/clawkit/clawkit/pkg/errs"
)

// relayError says which side of a relay failed.
type relayError struct {
	side  string // "read" or "write"
	err   error
	frame bool
}

func (e *relayError) Error() string { return e.side + ": " + e.err.Error() }
func (e *relayError) Unwrap() error { return e.err }

// Relay copies LF-framed messages from src to dst. Every message, its LF
// included, must fit in maxFrame bytes; only complete lines are forwarded,
// so the far side never sees part of an oversized or unterminated message.
// Lines are passed on verbatim (no decoding, CR and empty lines kept). It
// returns nil at src's EOF; an incomplete final line is dropped.
func Relay(dst io.Writer, src io.Reader, maxFrame int) error {
	return relay(dst, src, maxFrame, nil)
}

// relay is Relay with a per-line hook: onLine sees each complete line
// before it is forwarded and says whether to forward it.
func relay(dst io.Writer, src io.Reader, maxFrame int, onLine func(line []byte) bool) error {
	fw := newLineForwarder(maxFrame, onLine)
	buf := make([]byte, 64<<10)
	// forward frames one chunk and writes its complete lines in one Write.
	forward := func(chunk []byte) error {
		lines, ferr := fw.frame(chunk)
		if len(lines) > 0 {
			if _, werr := dst.Write(lines); werr != nil {
				return &relayError{side: "write", err: werr}
			}
		}
		fw.shrink()
		if ferr != nil {
			return &relayError{side: "read", err: ferr, frame: true}
		}
		return nil
	}
	if f, ok := src.(*os.File); ok {
		if done, err := relayPolled(f, buf, forward); done {
			return err
		}
	}
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if ferr := forward(buf[:n]); ferr != nil {
				return ferr
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return &relayError{side: "read", err: err}
		}
	}
}

// relayEnd is how the server side of the proxy's relay ended: err (nil at
// EOF) is set before done is closed.
type relayEnd struct {
	done chan struct{}
	err  error
}

// lineForwarder is one direction of a relay: it frames chunks as they are
// read and collects their complete lines (those onLine lets through, each
// with its LF) for one write.
type lineForwarder struct {
	framer *mcp.LineFramer
	onLine func(line []byte) bool
	out    []byte
}

func newLineForwarder(maxFrame int, onLine func(line []byte) bool) *lineForwarder {
	return &lineForwarder{framer: mcp.NewLineFramer(maxFrame - 1), onLine: onLine, out: make([]byte, 0, 64<<10)}
}

// frame returns chunk's complete lines to forward (valid until the next
// call) and the framer's error, after which nothing more may be framed.
func (f *lineForwarder) frame(chunk []byte) ([]byte, error) {
	f.out = f.out[:0]
	err := f.framer.Push(chunk, func(line []byte) error {
		if f.onLine == nil || f.onLine(line) {
			f.out = append(f.out, line...)
			f.out = append(f.out, '\n')
		}
		return nil
	})
	return f.out, err
}

// shrink drops a buffer that one large message grew.
func (f *lineForwarder) shrink() {
	if cap(f.out) > 1<<20 {
		f.out = make([]byte, 0, 64<<10)
	}
}

// relayPolled reads a non-blocking pipe (the server's stdout) inside one
// raw read of the runtime poller, so that a short read, which leaves the
// pipe empty, waits for the next readiness event directly: os.File.Read
// would first try another read that fails with EAGAIN, one wasted
// syscall per message. (A new raw read would have to read first: it
// resets the readiness the poller recorded.) A spurious wake-up is still
// answered by EAGAIN and another wait. It reports done=false, having read
// nothing, when f is not a non-blocking file (stdin inherited blocking:
// its reads block in the kernel and never fail with EAGAIN).
func relayPolled(f *os.File, buf []byte, forward func([]byte) error) (done bool, err error) {
	rc, cerr := f.SyscallConn()
	if cerr != nil {
		return false, nil
	}
	nonblocking := false
	if rc.Control(func(fd uintptr) {
		fl, ferr := unix.FcntlInt(fd, unix.F_GETFL, 0)
		nonblocking = ferr == nil && fl&unix.O_NONBLOCK != 0
	}) != nil || !nonblocking {
		return false, nil
	}
	var result error
	rerr := rc.Read(func(fd uintptr) bool {
		for {
			n, err := unix.Read(int(fd), buf)
			switch {
			case err == unix.EINTR:
				continue
			case err == unix.EAGAIN:
				return false
			case err != nil:
				result = &relayError{side: "read", err: &os.PathError{Op: "read", Path: f.Name(), Err: err}}
				return true
			case n == 0:
				return true // EOF
			}
			if ferr := forward(buf[:n]); ferr != nil {
				result = ferr
				return true
			}
			if n < len(buf) {
				return false // drained: wait for more
			}
		}
	})
	if rerr != nil && result == nil {
		result = &relayError{side: "read", err: rerr}
	}
	return true, result
}

func isFrameErr(err error) bool {
	var re *relayError
	return errors.As(err, &re) && re.frame
}

func isWriteErr(err error) bool {
	var re *relayError
	return errors.As(err, &re) && re.side == "write"
}

// lockedWriter serialises whole writes: the relay's chunks and the
// pendingBound's own answers share the client's stdout.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// pendingBound bounds the requests of a 2026-07-28 client in flight through
// the relay, as the client library bounds its own (maxPendingRequests):
// one more is answered at once with an error and not forwarded; the
// others go on. A request belongs to the new era when its params._meta
// names a protocol version of 2026-07-28 or later; legacy traffic is
// relayed exactly as before, without decoding.
type pendingBound struct {
	max     int
	out     io.Writer
	mu      sync.Mutex
	pending map[string]struct{}
	n       atomic.Int64
}

var metaVersionKey = []byte(`"` + mcp.MetaProtocolVersion + `"`)

// metaVersion is params._meta's protocol version, found by scanning the
// two objects' members instead of decoding them (the line is valid JSON);
// ok is false when either is not an object or the version not a string.
// Like a decoder, the last of repeated members wins.
func metaVersion(params []byte) (v string, ok bool) {
	member := func(obj []byte, name string) []byte {
		var val []byte
		if len(obj) == 0 || obj[0] != '{' {
			return nil
		}
		_ = mcp.TopLevelMembersRaw(obj, func(k, v []byte) error {
			if string(k) == name {
				val = v
			}
			return nil
		})
		return val
	}
	return mcp.JSONString(member(member(params, "_meta"), mcp.MetaProtocolVersion))
}

// clientLine is the up relay's hook.
func (a *pendingBound) clientLine(line []byte) bool {
	if !bytes.Contains(line, metaVersionKey) || !json.Valid(line) {
		return true
	}
	id, method, params := mcp.FrameMembers(line)
	if id == nil || method == nil {
		return true // a notification or a response: not counted
	}
	if v, ok := metaVersion(params); !ok || !mcp.IsModernVersion(v) {
		return true
	}
	key := string(id)
	a.mu.Lock()
	if len(a.pending) >= a.max {
		a.mu.Unlock()
		b := fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32000,"message":"too many pending requests (limit %d)"}}`+"\n", id, a.max)
		_, _ = a.out.Write(b)
		return false
	}
	a.pending[key] = struct{}{}
	a.n.Store(int64(len(a.pending)))
	a.mu.Unlock()
	return true
}

// serverLine is the down relay's hook: an answer frees its request.
func (a *pendingBound) serverLine(line []byte) bool {
	if a.n.Load() == 0 || !json.Valid(line) {
		return true
	}
	id, method, _ := mcp.FrameMembers(line)
	if id != nil && method == nil {
		a.mu.Lock()
		delete(a.pending, string(id))
		a.n.Store(int64(len(a.pending)))
		a.mu.Unlock()
	}
	return true
}

// ProxyReport is what RunProxy reports once the relay ended.
type ProxyReport struct {
	// Server and Protocol are what the proxy's own probe found (absent
	// when it did not probe or the relay ended first).
	Server        *mcp.Implementation `json:"server,omitempty"`
	Protocol      *mcp.Negotiated     `json:"protocol,omitempty"`
	CleanupResult *mcp.CleanupResult  `json:"cleanupResult,omitempty"`
	Exit          mcp.ExitInfo        `json:"exit"`
}

// RunProxy starts spec's server and relays stdin → server and server →
// stdout until the client goes away (stdin EOF), the server ends, a frame
// breaks the limit, or ctx ends; then it stops the whole process tree.
// The server's stderr goes to spec.StderrTee as it is written. With
// o.ProtocolVersion set it first probes the server (see proxyProbe); the
// client's messages wait in its pipe meanwhile, the server's go on.
func RunProxy(ctx context.Context, spec ProcessSpec, o ProxyOptions, stdin io.Reader, stdout io.Writer) (*ProxyReport, error) {
	if o.MaxFrame == 0 {
		o.MaxFrame = mcp.DefaultMaxFrameBytes
	}
	if o.MaxFrame < 2 {
		return nil, errs.Usage(errs.CodeInvalidLimit, "the frame limit must be at least 2 bytes")
	}
	if o.MaxPending <= 0 {
		o.MaxPending = mcp.DefaultMaxPendingRequests
	}
	if o.ProbeTimeout <= 0 {
		o.ProbeTimeout = mcp.DefaultProbeTimeout
	}
	if o.StartupTimeout <= 0 {
		o.StartupTimeout = mcp.DefaultStartupTimeout
	}
	maxFrame := o.MaxFrame
	proc, err := StartProcess(spec)
	if err != nil {
		return nil, mcp.Coded(err)
	}
	out := &lockedWriter{w: stdout}
	adm := &pendingBound{max: o.MaxPending, out: out, pending: map[string]struct{}{}}
	serverLine := adm.serverLine
	var probe *proxyProbe
	if o.ProtocolVersion == mcp.AutoProtocolVersion || mcp.IsModernVersion(o.ProtocolVersion) {
		probe = newProxyProbe()
		serverLine = func(line []byte) bool { return probe.serverLine(line) && adm.serverLine(line) }
	}
	// Both directions on one thread where the platform allows it (see
	// pollRelay), else one goroutine each; the client's side starts once
	// the probe is done.
	var down *relayEnd
	loop, polled := newPollRelay(stdin, proc, out, maxFrame, adm.clientLine, serverLine)
	if polled {
		down = &loop.downEnd
		go loop.run()
		// After Stop (deferred calls run last first, so after the done
		// channel below is closed too): the server's stdout may still be
		// held open by a descendant that left the group.
		defer loop.stop()
	} else {
		down = &relayEnd{done: make(chan struct{})}
		go func() {
			down.err = relay(out, proc.Stdout(), maxFrame, serverLine)
			close(down.done)
		}()
	}
	downDone := down.done

	done := make(chan struct{})
	defer close(done)
	outGone := watchPeerClosed(stdout, done)
	rep := &ProxyReport{}
	var result error
	switch {
	case probe != nil:
		info, n, perr, ok := probe.run(ctx, proc, o, mergeDone(downDone, outGone, done))
		switch {
		case perr != nil:
			result = perr
		case ok:
			rep.Server, rep.Protocol = &info, &n
			if o.OnConnected != nil {
				o.OnConnected(info, n)
			}
		}
	case o.ProtocolVersion != "":
		// An explicit legacy version: the client's initialize negotiates.
		rep.Protocol = &mcp.Negotiated{Era: mcp.EraLegacy, Version: o.ProtocolVersion}
		if o.OnConnected != nil {
			o.OnConnected(mcp.Implementation{}, *rep.Protocol)
		}
	}
	if result != nil {
		cr, _ := proc.Stop(downDone)
		rep.CleanupResult, rep.Exit = cr, proc.Exit()
		return rep, mcp.Coded(result)
	}
	var up <-chan error
	if polled {
		up = loop.startUp()
	} else {
		ch := make(chan error, 1)
		go func() { ch <- relay(proc.Stdin(), stdin, maxFrame, adm.clientLine) }()
		up = ch
	}

	select {
	case <-outGone:
		// The client closed our stdout (it went away); it may never write
		// again, so don't wait for its stdin to end.
	case err := <-up:
		switch {
		case isFrameErr(err):
			result = mcp.ProtocolErr(errs.CodeFrameTooLarge, "the client sent a message over the frame-size limit (%d bytes); the relay was closed", maxFrame)
		case err != nil && isWriteErr(err):
			// The server stopped reading: it is ending; see below.
			result = waitExitErr(proc, downDone)
		}
		// Plain EOF: the client went away; Stop closes the server's stdin.
	case <-downDone:
		switch {
		case isFrameErr(down.err):
			result = mcp.ProtocolErr(errs.CodeFrameTooLarge, "the server sent a message over the frame-size limit (%d bytes); the relay was closed", maxFrame)
		case isWriteErr(down.err):
			// Our stdout is gone: the client went away.
		default:
			result = waitExitErr(proc, downDone)
		}
	case <-proc.Exited():
		result = waitExitErr(proc, downDone)
	case <-ctx.Done():
		// Asked to stop (SIGINT/SIGTERM): the client is going away.
	}
	cr, serr := proc.Stop(downDone)
	if result == nil {
		// The server may break the limit while finishing after the
		// client's EOF; that is still a failed relay.
		select {
		case <-downDone:
			if isFrameErr(down.err) {
				result = mcp.ProtocolErr(errs.CodeFrameTooLarge, "the server sent a message over the frame-size limit (%d bytes); the relay was closed", maxFrame)
			}
		default:
		}
	}
	rep.CleanupResult, rep.Exit = cr, proc.Exit()
	if result != nil {
		return rep, mcp.Coded(result)
	}
	if serr != nil {
		return rep, mcp.Coded(serr)
	}
	return rep, nil
}

// mergeDone is closed when any of chs is.
func mergeDone(chs ...<-chan struct{}) <-chan struct{} {
	m := make(chan struct{})
	var once sync.Once
	for _, ch := range chs {
		go func() {
			select {
			case <-ch:
				once.Do(func() { close(m) })
			case <-m:
			}
		}()
	}
	return m
}

// waitExitErr describes a server that ended while the client was still
// connected.
func waitExitErr(proc *Process, downDone <-chan struct{}) *mcp.Error {
	t := time.NewTimer(500 * time.Millisecond)
	defer t.Stop()
	select {
	case <-proc.Exited():
	case <-t.C:
		return mcp.Unavailable(CodeServerClosedStdout, "server closed its stdout")
	}
	select {
	case <-downDone:
	case <-t.C:
	}
	return proc.exitedError(proc.exitTail(500 * time.Millisecond))
}

// ParseConnect checks a --connect address: unix:PATH.
func ParseConnect(addr string) (string, error) {
	p, ok := strings.CutPrefix(addr, "unix:")
	if !ok || p == "" {
		return "", errs.Usage(CodeInvalidConnect, "--connect %q: expected unix:PATH", addr).WithHint("give the service's socket as unix:/path/to/socket")
	}
	return p, nil
}

// ConnectDrain is how long the relay keeps reading the service's answers
// after the client's EOF before it closes the socket.
const ConnectDrain = 2 * time.Second

// RunConnect relays stdin/stdout to a service already listening on a unix
// socket. It never stops that service: on the client's EOF it half-closes
// the socket, reads the remaining answers (up to ConnectDrain) and closes.
func RunConnect(ctx context.Context, path string, maxFrame int, stdin io.Reader, stdout io.Writer) error {
	if maxFrame < 2 {
		return errs.Usage(errs.CodeInvalidLimit, "the frame limit must be at least 2 bytes")
	}
	survivePipeErrors() // a vanished client is EPIPE, not a SIGPIPE death
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return mcp.Coded(&mcp.Error{Class: mcp.ClassUnavailable, Code: errs.CodeConnectFailed, Message: "cannot connect to " + path + ": " + errText(err), Err: err})
	}
	uc := conn.(*net.UnixConn)
	defer func() { _ = uc.Close() }() // the relay reported its own errors
	up := make(chan error, 1)
	go func() { up <- Relay(uc, stdin, maxFrame) }()
	down := make(chan error, 1)
	go func() { down <- Relay(stdout, uc, maxFrame) }()
	done := make(chan struct{})
	defer close(done)
	select {
	case <-watchPeerClosed(stdout, done):
		return nil // the client went away
	case err := <-up:
		if isFrameErr(err) {
			return mcp.Coded(mcp.ProtocolErr(errs.CodeFrameTooLarge, "the client sent a message over the frame-size limit (%d bytes); the connection was closed", maxFrame))
		}
		if err != nil && isWriteErr(err) {
			return mcp.Coded(mcp.Unavailable(CodeServiceClosed, "the service closed the connection"))
		}
		_ = uc.CloseWrite()
		t := time.NewTimer(ConnectDrain)
		defer t.Stop()
		select {
		case derr := <-down:
			if isFrameErr(derr) {
				return mcp.Coded(mcp.ProtocolErr(errs.CodeFrameTooLarge, "the service sent a message over the frame-size limit (%d bytes); the connection was closed", maxFrame))
			}
		case <-t.C:
		case <-ctx.Done():
		}
		return nil
	case derr := <-down:
		switch {
		case isFrameErr(derr):
			return mcp.Coded(mcp.ProtocolErr(errs.CodeFrameTooLarge, "the service sent a message over the frame-size limit (%d bytes); the connection was closed", maxFrame))
		case isWriteErr(derr):
			return nil // the client went away
		}
		return mcp.Coded(mcp.Unavailable(CodeServiceClosed, "the service closed the connection"))
	case <-ctx.Done():
		return nil
	}
}

func errText(err error) string {
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Err != nil {
		return oe.Err.Error()
	}
	return err.Error()
}

// watchPeerClosed returns a channel closed when w is a pipe or socket whose
// reading side has gone away (poll reports POLLERR or POLLHUP on it), so a
// relay notices a vanished client even when it has nothing to write. For
// anything else it returns a channel that is never closed. The watcher
// polls in 1 s slices so that it ends with done.
func watchPeerClosed(w io.Writer, done <-chan struct{}) <-chan struct{} {
	gone := make(chan struct{})
	f, ok := w.(*os.File)
	if !ok {
		return gone
	}
	fi, err := f.Stat()
	if err != nil || fi.Mode()&(os.ModeNamedPipe|os.ModeSocket) == 0 {
		return gone
	}
	fd := int(f.Fd())
	if watchPeerEpoll(fd, gone, done) {
		return gone
	}
	go func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			// Events 0: only POLLERR, POLLHUP and POLLNVAL are reported.
			pfd := []unix.PollFd{{Fd: int32(fd), Events: 0}}
			n, err := unix.Poll(pfd, 1000)
			if err != nil && !errors.Is(err, unix.EINTR) {
				return
			}
			if n > 0 && pfd[0].Revents&(unix.POLLERR|unix.POLLHUP|unix.POLLNVAL) != 0 {
				close(gone)
				return
			}
		}
	}()
	return gone
}
