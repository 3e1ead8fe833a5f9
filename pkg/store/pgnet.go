package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/clawkit/clawkit/pkg/errs"
)

// The network side of the PostgreSQL engine (docs/scale-out.md,
// "Partitions"): bounded waits, keepalives, the send fence of an owner
// whose lease deadline passed, and the classification of a server that
// cannot be reached.

// Client-side network bounds. A silent partition (no RST, no ICMP) must
// turn into an error within a few seconds so that a routed call answers
// exit 5 quickly, and a dead server's sockets must not be kept for hours.
const (
	// DefaultConnectTimeout bounds one connection attempt (a URL's
	// connect_timeout wins).
	DefaultConnectTimeout = 3 * time.Second
	// TCPUserTimeout bounds how long data sent on a connection may stay
	// unacknowledged before the kernel drops the connection (TCP_USER_TIMEOUT):
	// a statement written into a partition fails after this, and its bytes
	// are discarded instead of arriving whenever the link heals. The server
	// acknowledges a statement's bytes on receipt, so a long-running
	// statement is not affected.
	TCPUserTimeout = 3 * time.Second
	// retryConnectTimeout bounds a connection attempt right after the
	// server could not be reached (a failure in the last 5 s, no success
	// since): an operation whose first statement failed on a dead
	// connection then fails its next one within a second, so the whole
	// call stays within about 5 s.
	retryConnectTimeout = time.Second
	// Keepalives on idle client connections: a dead path is noticed after
	// idle + count×interval (5 + 3×2 = 11 s).
	keepAliveIdle     = 5 * time.Second
	keepAliveInterval = 2 * time.Second
	keepAliveCount    = 3
)

// serverParams are the session settings every connection asks for unless
// the URL sets them: the server reaps the backends of a client that went
// away (a partitioned host) within about a minute instead of the
// operating system's two hours, and a transaction left open by a client
// that cannot reach the server does not hold its locks for long.
var serverParams = map[string]string{
	"tcp_keepalives_idle":                 "15",
	"tcp_keepalives_interval":             "5",
	"tcp_keepalives_count":                "3",
	"tcp_user_timeout":                    "15000",
	"idle_in_transaction_session_timeout": "30000",
	"statement_timeout":                   "120000",
}

// ErrSendFenced is the refusal of a statement (or a connection) by an
// owner whose lease deadline passed: nothing is sent to the server after
// that instant.
var ErrSendFenced = errors.New("the owner lease deadline passed: nothing further is sent to PostgreSQL")

// netState is the engine's connection bookkeeping.
type netState struct {
	mu       sync.Mutex
	conns    map[*fencedConn]struct{}
	deadline time.Time // monotonic; zero: no lease deadline
	tripped  bool
	timer    *time.Timer

	lastOK    atomic.Int64 // unix nanos of the last statement that reached the server
	lastFail  atomic.Int64 // unix nanos of the last failure to reach it
	lastReset atomic.Int64 // unix nanos of the last pool reset after a failure

	lastDialFail atomic.Int64 // unix nanos of the last failed connection attempt
	lastDialErr  atomic.Value // its error, a dialErr
}

// dialErr boxes an error for atomic.Value, which needs one concrete type.
type dialErr struct{ err error }

// pingTimeout bounds the liveness check of a connection that sat idle (a
// healthy server answers at once).
const pingTimeout = time.Second

// shouldPing checks a connection idle for over a second before it is
// handed out, within pingTimeout, and records the result; a dead one is
// handed back to the pool's own ping, which then fails at once and
// destroys it.
func (e *Postgres) shouldPing(ctx context.Context, p pgxpool.ShouldPingParams) bool {
	if p.IdleDuration <= time.Second {
		return false
	}
	pctx, cancel := context.WithTimeout(ctx, pingTimeout)
	err := p.Conn.Ping(pctx)
	cancel()
	e.noteResult(err)
	return err != nil
}

// SetSendDeadline fences this engine's connections at t (the owner
// lease's local deadline, already with its safety margin): from then on no
// byte is written and every open connection is reset, so nothing queued
// in a socket before the deadline can reach the server after it. A later
// call (a renewed lease) moves the deadline; a passed deadline is final.
func (e *Postgres) SetSendDeadline(t time.Time) {
	n := &e.net
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.tripped {
		return
	}
	n.deadline = t
	if n.timer != nil {
		n.timer.Stop()
	}
	n.timer = time.AfterFunc(time.Until(t), e.checkDeadline)
}

// Fenced reports whether the send fence has tripped.
func (e *Postgres) Fenced() bool {
	e.net.mu.Lock()
	defer e.net.mu.Unlock()
	return e.net.tripped
}

func (e *Postgres) checkDeadline() { _ = e.sendAllowed() }

// sendAllowed trips the fence once the deadline passed.
func (e *Postgres) sendAllowed() error {
	n := &e.net
	n.mu.Lock()
	if n.tripped {
		n.mu.Unlock()
		return ErrSendFenced
	}
	if n.deadline.IsZero() || time.Now().Before(n.deadline) {
		n.mu.Unlock()
		return nil
	}
	n.tripped = true
	conns := make([]*fencedConn, 0, len(n.conns))
	for c := range n.conns {
		conns = append(conns, c)
	}
	n.mu.Unlock()
	for _, c := range conns {
		c.reset()
	}
	return ErrSendFenced
}

// fencedConn is one connection to the server, refused once the fence
// trips.
type fencedConn struct {
	net.Conn
	e    *Postgres
	once sync.Once
}

func (c *fencedConn) Write(b []byte) (int, error) {
	if err := c.e.sendAllowed(); err != nil {
		c.reset()
		return 0, err
	}
	return c.Conn.Write(b)
}

func (c *fencedConn) Close() error {
	c.e.net.mu.Lock()
	delete(c.e.net.conns, c)
	c.e.net.mu.Unlock()
	return c.Conn.Close()
}

// reset drops the connection with a RST (SO_LINGER 0): the kernel
// discards whatever is still queued to send, where a plain close would
// keep retransmitting it into a partition and deliver it once the link
// heals.
func (c *fencedConn) reset() {
	c.once.Do(func() {
		if tc, ok := c.Conn.(*net.TCPConn); ok {
			_ = tc.SetLinger(0)
		}
		_ = c.Close()
	})
}

// dial opens a connection with keepalives, a user timeout and the fence.
func (e *Postgres) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	if err := e.sendAllowed(); err != nil {
		return nil, err
	}
	d := net.Dialer{
		KeepAliveConfig: net.KeepAliveConfig{Enable: true, Idle: keepAliveIdle, Interval: keepAliveInterval, Count: keepAliveCount},
	}
	if e.unreachableWithin(5 * time.Second) {
		d.Timeout = retryConnectTimeout
		// A connection attempt failed less than a second ago and nothing
		// got through since: fail at once with that failure, so that an
		// operation's further statements do not each wait again.
		if f := e.net.lastDialFail.Load(); f > e.net.lastOK.Load() && time.Since(time.Unix(0, f)) < time.Second {
			if prev, ok := e.net.lastDialErr.Load().(dialErr); ok {
				return nil, fmt.Errorf("not retried within a second of the last attempt: %w", prev.err)
			}
		}
	}
	if network == "tcp" || network == "tcp4" || network == "tcp6" {
		d.Control = func(_, _ string, rc syscall.RawConn) error { return setUserTimeout(rc, TCPUserTimeout) }
	}
	conn, err := d.DialContext(ctx, network, addr)
	if err != nil {
		if Unreachable(err) {
			e.net.lastDialErr.Store(dialErr{err})
			e.net.lastDialFail.Store(time.Now().UnixNano())
			e.net.lastFail.Store(time.Now().UnixNano())
		}
		return nil, err
	}
	fc := &fencedConn{Conn: conn, e: e}
	n := &e.net
	n.mu.Lock()
	if n.tripped {
		n.mu.Unlock()
		fc.reset()
		return nil, ErrSendFenced
	}
	if n.conns == nil {
		n.conns = map[*fencedConn]struct{}{}
	}
	n.conns[fc] = struct{}{}
	n.mu.Unlock()
	return fc, nil
}

// applyNetConfig puts the dialer, the bounds and the session settings on
// a parsed pool config; what the URL set explicitly wins.
func (e *Postgres) applyNetConfig(cc *pgx.ConnConfig) {
	cc.ConnectTimeout = cmpDuration(cc.ConnectTimeout, DefaultConnectTimeout)
	cc.DialFunc = e.dial
	if cc.RuntimeParams == nil {
		cc.RuntimeParams = map[string]string{}
	}
	for k, v := range serverParams {
		if _, ok := cc.RuntimeParams[k]; !ok {
			cc.RuntimeParams[k] = v
		}
	}
}

// noteResult records whether a statement reached the server.
func (e *Postgres) noteResult(err error) {
	now := time.Now().UnixNano()
	switch {
	case err == nil:
		e.net.lastOK.Store(now)
	case Unreachable(err):
		e.net.lastFail.Store(now)
		// Every idle connection is likely dead too: drop them at once,
		// or each would be tried (and time out) in turn by the next
		// callers (docs/scale-out.md, "Waits are bounded").
		if last := e.net.lastReset.Load(); now-last > int64(time.Second) && e.net.lastReset.CompareAndSwap(last, now) {
			if p := e.pool; p != nil {
				go p.Reset()
			}
		}
	default:
		// The server answered (with an error): it is reachable.
		var pe *pgconn.PgError
		if errors.As(err, &pe) {
			e.net.lastOK.Store(now)
		}
	}
}

// RecentlyUnreachable reports whether this engine's last contact with the
// server, within the last 30 s, was a failure to reach it.
func (e *Postgres) RecentlyUnreachable() bool { return e.unreachableWithin(30 * time.Second) }

func (e *Postgres) unreachableWithin(d time.Duration) bool {
	f, ok := e.net.lastFail.Load(), e.net.lastOK.Load()
	return f > ok && time.Since(time.Unix(0, f)) < d
}

// Unreachable reports whether err says the server could not be reached
// (or the connection to it broke): a temporary condition, never a verdict
// on the request.
func Unreachable(err error) bool {
	if err == nil || errors.Is(err, ErrSendFenced) {
		return false
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case len(pe.Code) == 5 && pe.Code[:2] == "08": // connection exception
			return true
		case pe.Code == "57P01", pe.Code == "57P02", pe.Code == "57P03", pe.Code == "53300":
			// admin or crash shutdown, cannot connect now, too many connections
			return true
		}
		return false
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) || pgconn.Timeout(err) {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return true
	}
	for _, en := range []syscall.Errno{syscall.ECONNRESET, syscall.ECONNREFUSED, syscall.ETIMEDOUT, syscall.EHOSTUNREACH, syscall.ENETUNREACH, syscall.EPIPE} {
		if errors.Is(err, en) {
			return true
		}
	}
	return false
}

// UnavailableRetryMs is the retryAfterMs of a server that cannot be
// reached.
const UnavailableRetryMs = 5000

// UnreachableError is the classified form of a failure to reach the
// server. effect says whether the operation may already have written
// (a statement that changes state was sent): then the outcome is unknown
// (exit 4); otherwise nothing happened and the call may be retried
// (exit 5, retryAfterMs).
func UnreachableError(err error, effect bool) *errs.Error {
	if effect {
		return errs.Unknown(CodeDatabaseUnavailable, "the connection to PostgreSQL failed after a write was sent; it may have been applied: %v", err).Wrap(err).
			WithHint("check the result (for example with a show or list command) before running it again")
	}
	return errs.Unavailable(CodeDatabaseUnavailable, "cannot reach PostgreSQL: %v", err).Wrap(err).
		WithRetryAfter(UnavailableRetryMs).
		WithHint("nothing was changed; retry once the database server is reachable again")
}

// connTracer feeds noteResult from every query, batch and connection
// attempt (besides counting round trips).
type connTracer struct {
	rtCounter
	e *Postgres
}

func (t connTracer) TraceQueryEnd(_ context.Context, _ *pgx.Conn, d pgx.TraceQueryEndData) {
	t.e.noteResult(d.Err)
}
func (t connTracer) TraceBatchEnd(_ context.Context, _ *pgx.Conn, d pgx.TraceBatchEndData) {
	t.e.noteResult(d.Err)
}
func (t connTracer) TraceConnectStart(ctx context.Context, _ pgx.TraceConnectStartData) context.Context {
	return ctx
}
func (t connTracer) TraceConnectEnd(_ context.Context, d pgx.TraceConnectEndData) {
	t.e.noteResult(d.Err)
}

// ApplicationName names an owner's connections on the server
// (pg_stat_activity, the server log): the sweep of the other gateways
// terminates the backends of an owner whose lease is gone by it.
func ApplicationName(incarnation int64) string {
	return fmt.Sprintf("clawkit-owner-%d", incarnation)
}

// ClassifyUnreachable turns an operation's failure to reach PostgreSQL
// into UnreachableError (exit 5 with retryAfterMs when it admitted no
// write, outcome unknown when it may have written); refusals, usage
// errors, temporary errors and an operation's own "outcome unknown" are
// its verdict and kept. A definitive-looking failure while the engine's
// last contact with the server failed is taken for that failure (not
// every caller wraps the driver's error). SQLite errors are returned
// unchanged.
func ClassifyUnreachable(s *Store, err error, effect bool) error {
	if err == nil || s == nil {
		return err
	}
	pg, ok := s.engine.(*Postgres)
	if !ok {
		return err
	}
	switch errs.KindOf(err) {
	case errs.KindUsage, errs.KindRefused, errs.KindUnavailable:
		return err
	case errs.KindUnknown:
		if errs.As(err) != nil {
			return err
		}
	}
	if Unreachable(err) || (errs.As(err) == nil || errs.KindOf(err) == errs.KindFailed) && pg.RecentlyUnreachable() {
		return UnreachableError(err, effect)
	}
	return err
}
