package mcphttp

// mcp proxy --listen: a stdio server served over Streamable HTTP (and,
// with LegacySSE, the 2024-11-05 HTTP+SSE transport), one child process
// tree per MCP session (docs/mcp.md, "mcp proxy --listen").

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/clawkit/clawkit/pkg/mcp"
	"github.com/clawkit/clawkit/pkg/mcp/mcpstdio"

	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/fsx"
	"github.com/clawkit/clawkit/pkg/netaddr"
	"github.com/clawkit/clawkit/pkg/termsafe"
)

// Defaults of ListenOptions (docs/mcp.md, "Limits").
const (
	DefaultMaxSessions     = 16
	DefaultSessionIdle     = 10 * time.Minute
	DefaultMaxHeaderBytes  = 16 << 10
	DefaultRatePerSecond   = 100
	DefaultRateBurst       = 200
	proxyStreamBuffer      = 256 // server messages queued per stream
	proxyReadHeaderTimeout = 10 * time.Second
	proxyReadTimeout       = 60 * time.Second
)

// ListenOptions configure ServeHTTP.
type ListenOptions struct {
	// Addr is host:port to listen on (port 0: any free port).
	Addr string
	// Listener, when set, is used instead of listening on Addr (tests).
	Listener net.Listener
	// Token is the bearer token every request must carry; empty only
	// with NoAuth, which the caller allows on a loopback address alone.
	Token  string
	NoAuth bool
	// AllowOrigins are the Origin values accepted besides the listener's
	// own loopback origins.
	AllowOrigins []string
	MaxSessions  int
	// IdleTimeout ends a session that had no request in flight and none
	// new for this long (an open GET stream does not count).
	IdleTimeout time.Duration
	// MaxBodyBytes bounds a request body (default MaxFrame).
	MaxBodyBytes   int64
	MaxHeaderBytes int
	// RatePerSecond and RateBurst bound each session's requests.
	RatePerSecond float64
	RateBurst     int
	// MaxFrame bounds every message in both directions (the child's
	// stdout lines included), its LF included.
	MaxFrame int
	// MaxPending bounds a session's requests in flight; one more is
	// answered with a JSON-RPC error and not forwarded.
	MaxPending int
	// RequestTimeout bounds the child's answer to one request; past it the
	// client gets a JSON-RPC timeout error (-32001).
	RequestTimeout time.Duration
	// HeaderTimeout bounds reading a request's headers (a slowloris
	// client); default 10 s.
	HeaderTimeout time.Duration
	// LegacySSE also serves the 2024-11-05 transport (GET /sse, POST
	// /message?sessionId=…).
	LegacySSE bool
	// OnListening is called once the listener accepts connections.
	OnListening func(url string)
	// inspect, set by this package's tests, sees the proxy as it starts.
	inspect func(*httpProxy)
	// OnEvent receives one line per session event (opened, closed, reaped,
	// refused), for the operator's log; never a token.
	OnEvent func(format string, args ...any)
}

// ListenReport summarises a proxy run.
type ListenReport struct {
	Sessions int `json:"sessions"`
	// Refused counts sessions refused at --max-sessions.
	Refused int `json:"refused"`
	// Unconfirmed lists the cleanups that could not be confirmed.
	Unconfirmed []string `json:"unconfirmed,omitempty"`
}

func (o *ListenOptions) setDefaults() {
	if o.MaxFrame <= 0 {
		o.MaxFrame = mcp.DefaultMaxFrameBytes
	}
	if o.MaxSessions <= 0 {
		o.MaxSessions = DefaultMaxSessions
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = DefaultSessionIdle
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = int64(o.MaxFrame)
	}
	if o.MaxHeaderBytes <= 0 {
		o.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	if o.RatePerSecond <= 0 {
		o.RatePerSecond = DefaultRatePerSecond
	}
	if o.RateBurst <= 0 {
		o.RateBurst = DefaultRateBurst
	}
	if o.MaxPending <= 0 {
		o.MaxPending = mcp.DefaultMaxPendingRequests
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = mcp.DefaultRequestTimeout
	}
	if o.HeaderTimeout <= 0 {
		o.HeaderTimeout = proxyReadHeaderTimeout
	}
}

// IsLoopbackAddr reports whether host:port (or a bare host) names a
// loopback address: 127.0.0.0/8, ::1 or localhost.
func IsLoopbackAddr(addr string) bool {
	host := addr
	if h, _, err := net.SplitHostPort(addr); err == nil {
		host = h
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// NewToken returns a fresh bearer token (256 random bits, hex).
func NewToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

type httpProxy struct {
	spec mcpstdio.ProcessSpec
	o    ListenOptions
	// host and port: the address it listens on (host "" when unspecified).
	host, port string

	mu       sync.Mutex
	sessions map[string]*proxySession
	opening  int // sessions being spawned, counted against MaxSessions
	closing  bool
	report   ListenReport
	stops    sync.WaitGroup

	// The 2026-07-28 era (httpstateless.go): one child shared by every
	// client of that era, started under slStart; slLegacy once it showed
	// it does not speak 2026-07-28.
	slStart  sync.Mutex
	sl       *statelessChild
	slLegacy bool
}

type proxySession struct {
	id string
	// n numbers the session in the log: its id is a credential of sorts
	// (with the token, it addresses the session) and is never printed.
	n      int
	p      *httpProxy
	proc   *mcpstdio.Process
	legacy bool

	wmu sync.Mutex // one writer of the child's stdin

	mu         sync.Mutex
	waiters    map[string]chan []byte
	streams    []chan []byte // open POST streams, oldest first
	get        chan []byte   // the GET stream (or the legacy stream)
	lastActive time.Time
	// fresh until the session's first request is answered: a session
	// still opening is never the one closed at MaxSessions. A legacy
	// session stays fresh (its stream is its life; docs/mcp.md, "Limits").
	fresh    bool
	tokens   float64
	tokensAt time.Time
	closed   bool

	done       chan struct{} // closed when the session ends
	readerDone chan struct{}
	endOnce    sync.Once
	// stopped is closed once the server's tree is stopped; stopErr says
	// whether that could be confirmed.
	stopped chan struct{}
	stopErr error
}

// ServeHTTP serves spec's server over HTTP until ctx ends, then drains:
// every session's child process tree is stopped and confirmed gone.
func ServeHTTP(ctx context.Context, spec mcpstdio.ProcessSpec, o ListenOptions) (*ListenReport, error) {
	o.setDefaults()
	if o.Token == "" && !o.NoAuth {
		return nil, mcp.ProtocolErr(errs.CodeInvalidParams, "a bearer token is required")
	}
	// A command that cannot be found fails now, not at every session.
	if path, err := mcpstdio.LookPath(spec.Command, spec.Env); err != nil {
		return nil, mcpstdio.SpawnError(spec, err)
	} else if fi, err := os.Stat(resolveDir(path, spec.Dir)); err != nil || fi.IsDir() {
		if err == nil {
			err = errors.New("is a directory")
		}
		return nil, mcpstdio.SpawnError(spec, err)
	}
	ln := o.Listener
	if ln == nil {
		var err error
		ln, err = net.Listen("tcp", o.Addr)
		if err != nil {
			return nil, &mcp.Error{Class: mcp.ClassUnavailable, Code: errs.CodeListenFailed, Message: fmt.Sprintf("cannot listen on %s: %v", o.Addr, err), Definitive: true}
		}
	}
	lhost, port, _ := net.SplitHostPort(ln.Addr().String())
	if ip := net.ParseIP(lhost); ip == nil || ip.IsUnspecified() {
		lhost = "" // 0.0.0.0 or :: names no host
	}
	p := &httpProxy{spec: spec, o: o, host: lhost, port: port, sessions: map[string]*proxySession{}}
	if o.inspect != nil {
		o.inspect(p)
	}
	// Connections beyond what the sessions can use wait in the kernel's
	// backlog: a flood of idle (slowloris) connections cannot exhaust us.
	ln = &limitListener{Listener: ln, sem: make(chan struct{}, 4*o.MaxSessions+32)}
	mux := http.NewServeMux()
	mux.HandleFunc("/mcp", p.serveStreamable)
	if o.LegacySSE {
		mux.HandleFunc("/sse", p.serveLegacyStream)
		mux.HandleFunc("/message", p.serveLegacyMessage)
	}
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: o.HeaderTimeout,
		ReadTimeout:       max(proxyReadTimeout, o.HeaderTimeout),
		IdleTimeout:       90 * time.Second,
		MaxHeaderBytes:    o.MaxHeaderBytes,
		ErrorLog:          nil,
	}
	srv.SetKeepAlivesEnabled(true)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	reaperDone := make(chan struct{})
	stopReaper := make(chan struct{})
	go func() { defer close(reaperDone); p.reap(stopReaper) }()
	if f := o.OnListening; f != nil {
		host := ln.Addr().String()
		f("http://" + host + "/mcp")
	}
	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-served:
	}
	// Drain: no new session, every session ended (its streams answered,
	// its child stopped), then the server closed.
	p.mu.Lock()
	p.closing = true
	all := make([]*proxySession, 0, len(p.sessions))
	for _, s := range p.sessions {
		all = append(all, s)
	}
	sl := p.sl
	p.mu.Unlock()
	if sl != nil {
		sl.end("the proxy is shutting down")
	}
	close(stopReaper)
	<-reaperDone
	for _, s := range all {
		s.end("the proxy is shutting down")
	}
	sctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	_ = srv.Shutdown(sctx)
	cancel()
	_ = srv.Close()
	p.stops.Wait()
	p.mu.Lock()
	rep := p.report
	p.mu.Unlock()
	if len(rep.Unconfirmed) > 0 {
		return &rep, &mcp.Error{Class: mcp.ClassUnavailable, Code: errs.CodeCleanupUnconfirmed,
			Message: "cleanup could not be confirmed for " + strings.Join(rep.Unconfirmed, "; ")}
	}
	if serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		return &rep, &mcp.Error{Class: mcp.ClassUnavailable, Code: errs.CodeListenFailed, Message: "the listener failed: " + serveErr.Error()}
	}
	return &rep, nil
}

func (p *httpProxy) event(format string, args ...any) {
	if f := p.o.OnEvent; f != nil {
		f(format, args...)
	}
}

// reap ends sessions idle for IdleTimeout.
func (p *httpProxy) reap(stop <-chan struct{}) {
	every := min(p.o.IdleTimeout/4, time.Second)
	t := time.NewTicker(max(every, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		var idle []*proxySession
		p.mu.Lock()
		for _, s := range p.sessions {
			s.mu.Lock()
			// An open GET stream alone does not keep a session: a client
			// that went away without closing it must not pin a server.
			if len(s.waiters) == 0 && len(s.streams) == 0 && time.Since(s.lastActive) > p.o.IdleTimeout {
				idle = append(idle, s)
			}
			s.mu.Unlock()
		}
		p.mu.Unlock()
		for _, s := range idle {
			p.event("session %d reaped after %s idle", s.n, p.o.IdleTimeout)
			s.end("idle")
		}
	}
}

// check applies what every request must pass: the Host (DNS rebinding),
// the Origin, and the bearer token. It answers and returns false when the
// request is refused.
func (p *httpProxy) check(w http.ResponseWriter, r *http.Request) bool {
	if IsLoopbackAddr(p.o.Addr) || p.o.Listener != nil {
		if !p.loopbackHost(r.Host) {
			httpError(w, http.StatusForbidden, "the Host header does not name this proxy")
			return false
		}
	}
	if o := r.Header.Get("Origin"); o != "" && !p.originAllowed(o) {
		httpError(w, http.StatusForbidden, "Origin not allowed")
		return false
	}
	if !p.o.NoAuth {
		auth := r.Header.Get("Authorization")
		tok, ok := strings.CutPrefix(auth, "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(tok), []byte(p.o.Token)) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="clawkit-mcp-proxy"`)
			httpError(w, http.StatusUnauthorized, "a valid bearer token is required")
			return false
		}
	}
	return true
}

func (p *httpProxy) loopbackHost(host string) bool {
	h, port, err := net.SplitHostPort(host)
	if err != nil || port != p.port {
		return false
	}
	// Exactly the names docs/mcp.md lists, and the address the proxy
	// listens on; not any loopback address (127.0.0.2 is another host's
	// name as far as a browser is concerned).
	return h == "localhost" || h == "127.0.0.1" || h == "::1" || (p.host != "" && h == p.host)
}
func (p *httpProxy) originAllowed(origin string) bool {
	for _, a := range p.o.AllowOrigins {
		if strings.EqualFold(a, origin) {
			return true
		}
	}
	// The proxy's own origin: it serves plain http, so an https origin
	// is another one; nothing but scheme, host and port.
	u, err := url.Parse(origin)
	if err != nil || u.Scheme != "http" || u.Path != "" || u.RawQuery != "" || u.User != nil {
		return false
	}
	return p.loopbackHost(u.Host)
}

// httpError answers a refusal as a JSON-RPC error body (id null), as the
// SDKs' servers do.
func httpError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": -32000, "message": msg}})
	_, _ = w.Write(b)
}

func (p *httpProxy) session(id string) *proxySession {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sessions[id]
}

// takeRateToken takes one request from the session's rate budget.
func (s *proxySession) takeRateToken() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	s.tokens = min(float64(s.p.o.RateBurst), s.tokens+now.Sub(s.tokensAt).Seconds()*s.p.o.RatePerSecond)
	s.tokensAt = now
	s.lastActive = now
	if s.tokens < 1 {
		return false
	}
	s.tokens--
	return true
}

// longestIdle picks, with p.mu held, the session idle longest that has no
// request in flight, no POST stream open and has answered a request
// (fresh: still opening); it is marked closed at once, under its own lock,
// so no request can start on it after the choice. Nil when all are busy.
func (p *httpProxy) longestIdle() (*proxySession, time.Duration) {
	var best *proxySession
	for _, s := range p.sessions {
		s.mu.Lock()
		if !s.closed && !s.fresh && len(s.waiters) == 0 && len(s.streams) == 0 && (best == nil || s.lastActive.Before(best.lastActive)) {
			best = s
		}
		s.mu.Unlock()
	}
	if best == nil {
		return nil, 0
	}
	best.mu.Lock()
	best.closed = true
	idle := time.Since(best.lastActive)
	best.mu.Unlock()
	return best, idle
}

// reserve takes a slot for one more process tree within MaxSessions
// (p.opening counts it until the caller registers the tree); status 0 when
// it did, else the HTTP status and why. The 2026-07-28 era's shared child
// holds a slot too.
func (p *httpProxy) reserve() (int, string) {
	p.mu.Lock()
	if p.closing {
		p.mu.Unlock()
		return http.StatusServiceUnavailable, "the proxy is shutting down"
	}
	var victim *proxySession
	var victimIdle time.Duration
	trees := len(p.sessions) + p.opening
	if p.sl != nil {
		trees++
	}
	if trees >= p.o.MaxSessions {
		// At the limit the longest-idle session makes room, so clients
		// that never end their sessions (the spec lets a client just go
		// away) cannot lock others out until the idle timeout; a session
		// with a request in flight, or one still opening, is never closed
		// (docs/mcp.md, "Limits"). Only when every session is busy is the
		// new one refused.
		victim, victimIdle = p.longestIdle()
		if victim == nil {
			p.report.Refused++
			p.mu.Unlock()
			return http.StatusServiceUnavailable, fmt.Sprintf("too many sessions (limit %d)", p.o.MaxSessions)
		}
	}
	p.opening++
	p.mu.Unlock()
	if victim != nil {
		victim.end(fmt.Sprintf("the longest idle at --max-sessions %d, idle %s, for a new session", p.o.MaxSessions, victimIdle.Round(time.Millisecond)))
		// The new tree starts once the old one is stopped, so there are
		// never more than MaxSessions trees at once.
		<-victim.stopped
	}
	return 0, ""
}

// open spawns a new session's child, within MaxSessions.
func (p *httpProxy) open(legacy bool) (*proxySession, int, string) {
	if status, why := p.reserve(); status != 0 {
		return nil, status, why
	}
	proc, err := mcpstdio.StartProcess(p.spec)
	p.mu.Lock()
	p.opening--
	if err != nil {
		p.mu.Unlock()
		p.event("session refused: %v", err)
		return nil, http.StatusInternalServerError, "the server could not be started"
	}
	s := &proxySession{id: NewToken()[:32], p: p, proc: proc, legacy: legacy,
		waiters: map[string]chan []byte{}, lastActive: time.Now(), fresh: true,
		tokens: float64(p.o.RateBurst), tokensAt: time.Now(),
		done: make(chan struct{}), readerDone: make(chan struct{}), stopped: make(chan struct{})}
	if p.closing {
		p.mu.Unlock()
		s.end("the proxy is shutting down")
		return nil, http.StatusServiceUnavailable, "the proxy is shutting down"
	}
	p.sessions[s.id] = s
	p.report.Sessions++
	s.n = p.report.Sessions
	p.mu.Unlock()
	p.event("session %d opened (pid %d)", s.n, proc.Pid())
	go s.read()
	go func() {
		select {
		case <-proc.Exited():
			s.end("the server exited")
		case <-s.done:
		}
	}()
	return s, 0, ""
}

// end closes the session once: streams and waiters are released, the
// child is stopped (EOF, SIGTERM, SIGKILL of its tree) and confirmed
// gone.
func (s *proxySession) end(why string) {
	s.endOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		close(s.done)
		p := s.p
		p.mu.Lock()
		delete(p.sessions, s.id)
		p.stops.Add(1)
		p.mu.Unlock()
		go func() {
			defer p.stops.Done()
			_, err := s.proc.Stop(s.readerDone)
			s.stopErr = err
			close(s.stopped)
			if err != nil {
				p.mu.Lock()
				p.report.Unconfirmed = append(p.report.Unconfirmed, fmt.Sprintf("session %d: %v", s.n, err))
				p.mu.Unlock()
			}
			p.event("session %d closed (%s)", s.n, why)
		}()
	})
}

// read takes the child's stdout line by line (each within MaxFrame) and
// routes it: a response to the stream that waits for it, anything else to
// the GET (or legacy) stream, else to the oldest open POST stream.
func (s *proxySession) read() {
	defer close(s.readerDone)
	fr := mcp.NewLineFramer(s.p.o.MaxFrame - 1)
	buf := make([]byte, 64<<10)
	out := s.proc.Stdout()
	for {
		n, err := out.Read(buf)
		if n > 0 {
			if ferr := fr.Push(buf[:n], s.route); ferr != nil {
				s.p.event("session %d: the server wrote a message over the frame limit; ended", s.n)
				s.proc.TerminatePromptly()
				s.end("frame limit")
				return
			}
		}
		if err != nil {
			s.end("the server closed its stdout")
			return
		}
	}
}

func (s *proxySession) route(line []byte) error {
	if len(bytes.TrimSpace(line)) == 0 {
		return nil
	}
	id, method, _ := mcp.FrameMembers(line)
	msg := bytes.Clone(line)
	s.mu.Lock()
	defer s.mu.Unlock()
	if method == nil && id != nil && !s.legacy {
		if ch := s.waiters[canonID(id)]; ch != nil {
			delete(s.waiters, canonID(id))
			ch <- msg
			return nil
		}
		return nil // an answer nobody waits for (cancelled, timed out)
	}
	// A message while a request is in flight goes on that request's
	// stream (the oldest), ahead of its answer, so a client sees a
	// request's progress before its result; the GET stream takes the
	// rest. On the GET stream it would race the answer on the POST.
	target := s.get
	if len(s.streams) > 0 {
		target = s.streams[0]
	}
	if target != nil {
		select {
		case target <- msg:
		default: // a client that does not read its stream loses messages, not our memory
		}
	}
	return nil
}

// canonID is a JSON-RPC id as a map key: compact JSON text.
func canonID(id json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, id) != nil {
		return string(id)
	}
	return b.String()
}

// write sends one message to the child.
func (s *proxySession) write(line []byte) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	in := s.proc.Stdin()
	_ = in.SetWriteDeadline(time.Now().Add(s.p.o.RequestTimeout))
	b := make([]byte, 0, len(line)+1)
	b = append(append(b, line...), '\n')
	_, err := in.Write(b)
	return err
}

func acceptsBoth(r *http.Request) bool {
	a := strings.Join(r.Header.Values("Accept"), ",")
	return strings.Contains(a, "application/json") && strings.Contains(a, "text/event-stream") ||
		strings.Contains(a, "*/*")
}

// serveStreamable is the Streamable HTTP endpoint.
func (p *httpProxy) serveStreamable(w http.ResponseWriter, r *http.Request) {
	if !p.check(w, r) {
		return
	}
	switch r.Method {
	case http.MethodPost:
		p.post(w, r)
	case http.MethodGet:
		p.getStream(w, r)
	case http.MethodDelete:
		s := p.session(r.Header.Get("Mcp-Session-Id"))
		if s == nil {
			httpError(w, http.StatusNotFound, "session not found")
			return
		}
		// Answered once the session's server tree is confirmed gone: a
		// client's DELETE that succeeded means nothing is left running.
		s.end("the client ended it")
		<-s.stopped
		if s.stopErr != nil {
			httpError(w, http.StatusInternalServerError, "the session's server could not be confirmed stopped")
			return
		}
		w.WriteHeader(http.StatusNoContent)
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		httpError(w, http.StatusMethodNotAllowed, "method not allowed")
	}
}

func (p *httpProxy) post(w http.ResponseWriter, r *http.Request) {
	if !acceptsBoth(r) {
		httpError(w, http.StatusNotAcceptable, "the client must accept both application/json and text/event-stream")
		return
	}
	if mt := strings.TrimSpace(strings.Split(r.Header.Get("Content-Type"), ";")[0]); !strings.EqualFold(mt, "application/json") {
		httpError(w, http.StatusUnsupportedMediaType, "Content-Type must be application/json")
		return
	}
	limit := min(p.o.MaxBodyBytes, int64(p.o.MaxFrame-1))
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			httpError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the message is larger than %d bytes", limit))
			return
		}
		httpError(w, http.StatusBadRequest, "cannot read the body")
		return
	}
	body = bytes.TrimSpace(body)
	if len(body) == 0 || body[0] != '{' || !json.Valid(body) {
		httpError(w, http.StatusBadRequest, "the body must be one JSON-RPC message (an object; batches are not relayed)")
		return
	}
	var compact bytes.Buffer
	if bytes.ContainsAny(body, "\r\n") {
		_ = json.Compact(&compact, body)
		body = compact.Bytes()
	}
	id, method, params := mcp.FrameMembers(body)
	var m string
	if method != nil {
		_ = json.Unmarshal(method, &m)
	}
	sid := r.Header.Get("Mcp-Session-Id")
	if hv := r.Header.Get(headerProtocolVersion); sid == "" && isModernPost(hv, params) && (m != "initialize" || hv != "") {
		// A 2026-07-28 client: no session (docs/mcp.md, "The proxy's
		// eras"). Its initialize, with the header naming 2026-07-28, is
		// the method that era removed (404), not a legacy handshake.
		p.postStateless(w, r, body, id, m, params)
		return
	}
	var s *proxySession
	if sid == "" {
		if m != "initialize" {
			httpError(w, http.StatusBadRequest, "no Mcp-Session-Id: open a session with initialize first")
			return
		}
		var status int
		var why string
		s, status, why = p.open(false)
		if s == nil {
			if status == http.StatusServiceUnavailable {
				w.Header().Set("Retry-After", "1")
			}
			httpError(w, status, why)
			return
		}
	} else if s = p.session(sid); s == nil || s.legacy {
		httpError(w, http.StatusNotFound, "session not found")
		return
	} else if m == "initialize" {
		httpError(w, http.StatusBadRequest, "the session is already initialized")
		return
	}
	if !s.takeRateToken() {
		w.Header().Set("Retry-After", "1")
		httpError(w, http.StatusTooManyRequests, "too many requests for this session")
		return
	}
	w.Header().Set("Mcp-Session-Id", s.id)
	if method == nil || id == nil {
		// A notification or a response to the server's request.
		if err := s.write(body); err != nil {
			s.end("the server stopped reading")
			httpError(w, http.StatusBadGateway, "the server does not accept the message")
			return
		}
		w.WriteHeader(http.StatusAccepted)
		return
	}
	key := canonID(id)
	ch := make(chan []byte, 1)
	stream := make(chan []byte, proxyStreamBuffer)
	s.mu.Lock()
	switch {
	case s.closed:
		s.mu.Unlock()
		httpError(w, http.StatusNotFound, "session not found")
		return
	case s.waiters[key] != nil:
		s.mu.Unlock()
		rpcAnswer(w, id, -32600, "a request with this id is already in flight")
		return
	case len(s.waiters) >= p.o.MaxPending:
		s.mu.Unlock()
		rpcAnswer(w, id, -32000, fmt.Sprintf("too many pending requests (limit %d)", p.o.MaxPending))
		return
	}
	s.waiters[key] = ch
	s.streams = append(s.streams, stream)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.waiters, key)
		for i, c := range s.streams {
			if c == stream {
				s.streams = append(s.streams[:i], s.streams[i+1:]...)
				break
			}
		}
		s.lastActive = time.Now()
		s.fresh = false
		s.mu.Unlock()
	}()
	if err := s.write(body); err != nil {
		s.end("the server stopped reading")
		rpcAnswer(w, id, -32000, "the server does not accept the request")
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	if fl != nil {
		fl.Flush()
	}
	t := time.NewTimer(p.o.RequestTimeout)
	defer t.Stop()
	for {
		select {
		case msg := <-ch:
			// What the server sent before its answer is already queued
			// (one reader routes in order): it goes first.
			for drained := false; !drained; {
				select {
				case m := <-stream:
					writeEvent(w, fl, m)
				default:
					drained = true
				}
			}
			writeEvent(w, fl, msg)
			return
		case msg := <-stream:
			writeEvent(w, fl, msg)
		case <-t.C:
			writeEvent(w, fl, rpcErrorBytes(id, mcp.RPCRequestTimeout, fmt.Sprintf("Request timed out after %dms", p.o.RequestTimeout.Milliseconds())))
			return
		case <-s.done:
			writeEvent(w, fl, rpcErrorBytes(id, -32000, "the server's session ended"))
			return
		case <-r.Context().Done():
			return
		}
	}
}

func writeEvent(w io.Writer, fl http.Flusher, msg []byte) {
	_, _ = io.WriteString(w, "event: message\ndata: ")
	_, _ = w.Write(msg)
	_, _ = io.WriteString(w, "\n\n")
	if fl != nil {
		fl.Flush()
	}
}

// rpcError is a JSON-RPC error answer, its members in the usual order.
type rpcError struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   rpcErrorObject  `json:"error"`
}

type rpcErrorObject struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

func rpcErrorBytes(id json.RawMessage, code int, msg string) []byte {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(rpcError{"2.0", id, rpcErrorObject{Code: code, Message: msg}})
	return b
}

func rpcAnswer(w http.ResponseWriter, id json.RawMessage, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(rpcErrorBytes(id, code, msg))
}

// getStream is the GET stream of server messages: one per session.
func (p *httpProxy) getStream(w http.ResponseWriter, r *http.Request) {
	if !strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
		httpError(w, http.StatusNotAcceptable, "the client must accept text/event-stream")
		return
	}
	s := p.session(r.Header.Get("Mcp-Session-Id"))
	if s == nil || s.legacy {
		httpError(w, http.StatusNotFound, "session not found")
		return
	}
	if !s.takeRateToken() {
		w.Header().Set("Retry-After", "1")
		httpError(w, http.StatusTooManyRequests, "too many requests for this session")
		return
	}
	stream := make(chan []byte, proxyStreamBuffer)
	s.mu.Lock()
	if s.get != nil {
		s.mu.Unlock()
		httpError(w, http.StatusConflict, "only one GET stream per session")
		return
	}
	s.get = stream
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		if s.get == stream {
			s.get = nil
		}
		s.lastActive = time.Now()
		s.mu.Unlock()
	}()
	p.serveStream(w, r, s, stream, "")
}

// serveStream writes stream's messages as SSE until the session or the
// client ends; first, when set, is an opening event (legacy: endpoint).
func (p *httpProxy) serveStream(w http.ResponseWriter, r *http.Request, s *proxySession, stream chan []byte, first string) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	if !s.legacy {
		w.Header().Set("Mcp-Session-Id", s.id)
	}
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	if first != "" {
		_, _ = io.WriteString(w, first)
	}
	if fl != nil {
		fl.Flush()
	}
	keep := time.NewTicker(15 * time.Second)
	defer keep.Stop()
	for {
		select {
		case msg := <-stream:
			writeEvent(w, fl, msg)
		case <-keep.C:
			_, _ = io.WriteString(w, ": keep-alive\n\n")
			if fl != nil {
				fl.Flush()
			}
		case <-s.done:
			return
		case <-r.Context().Done():
			return
		}
	}
}

// serveLegacyStream opens a 2024-11-05 session: the stream's first event
// names where its messages are posted; every answer comes on the stream.
// The session ends with the stream.
func (p *httpProxy) serveLegacyStream(w http.ResponseWriter, r *http.Request) {
	if !p.check(w, r) {
		return
	}
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", "GET")
		httpError(w, http.StatusMethodNotAllowed, "method not allowed")
		return
	}
	s, status, why := p.open(true)
	if s == nil {
		if status == http.StatusServiceUnavailable {
			w.Header().Set("Retry-After", "1")
		}
		httpError(w, status, why)
		return
	}
	stream := make(chan []byte, proxyStreamBuffer)
	s.mu.Lock()
	s.get = stream
	s.mu.Unlock()
	defer s.end("the client closed its stream")
	p.serveStream(w, r, s, stream, "event: endpoint\ndata: /message?sessionId="+s.id+"\n\n")
}

// serveLegacyMessage takes one message of a 2024-11-05 session.
func (p *httpProxy) serveLegacyMessage(w http.ResponseWriter, r *http.Request) {
	if !p.check(w, r) {
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		httpError(w, http.StatusMethodNotAllowed, "method not allowed")
		return
	}
	s := p.session(r.URL.Query().Get("sessionId"))
	if s == nil || !s.legacy {
		httpError(w, http.StatusNotFound, "session not found")
		return
	}
	if !s.takeRateToken() {
		w.Header().Set("Retry-After", "1")
		httpError(w, http.StatusTooManyRequests, "too many requests for this session")
		return
	}
	limit := min(p.o.MaxBodyBytes, int64(p.o.MaxFrame-1))
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		httpError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the message is larger than %d bytes", limit))
		return
	}
	body = bytes.TrimSpace(body)
	if len(body) == 0 || body[0] != '{' || !json.Valid(body) {
		httpError(w, http.StatusBadRequest, "the body must be one JSON-RPC message")
		return
	}
	if bytes.ContainsAny(body, "\r\n") {
		var c bytes.Buffer
		_ = json.Compact(&c, body)
		body = c.Bytes()
	}
	if err := s.write(body); err != nil {
		s.end("the server stopped reading")
		httpError(w, http.StatusBadGateway, "the server does not accept the message")
		return
	}
	w.WriteHeader(http.StatusAccepted)
	_, _ = io.WriteString(w, "Accepted")
}

// limitListener bounds the connections open at once.
type limitListener struct {
	net.Listener
	sem chan struct{}
}

func (l *limitListener) Accept() (net.Conn, error) {
	l.sem <- struct{}{}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		return nil, err
	}
	return &limitConn{Conn: c, release: func() { <-l.sem }}, nil
}

type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// SessionPids is the pids (= process groups) of the sessions' servers
// running now (for tests and diagnostics).
func (p *httpProxy) SessionPids() []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []int
	for _, s := range p.sessions {
		out = append(out, s.proc.Pid())
	}
	return out
}

// WriteTokenFile publishes the proxy's bearer token in home, mode 0600, as
// mcp-proxy-PORT.token (PORT from the listening URL), and returns its
// path. The token is printed nowhere: clients read the file.
//
// The file is always a new one: created exclusively under an unpredictable
// name beside its destination, with exactly mode 0600, and renamed into
// place. Whatever held the name before (a file of a wider mode, a symbolic
// link, a hard link to another file, the token of a proxy that was killed)
// is replaced, never written through, and its mode never kept.
func WriteTokenFile(home, listenURL, token string) (path string, err error) {
	port := "0"
	if u, err := url.Parse(listenURL); err == nil && u.Port() != "" {
		port = u.Port()
	}
	path = filepath.Join(home, "mcp-proxy-"+port+".token")
	fail := func(err error) (string, error) {
		return "", errs.Failed(CodeTokenWriteFailed, "cannot write the proxy's token file %s: %v", path, err).
			WithHint("the proxy does not serve without its token: check that the home folder is writable, or pass --no-auth on a loopback address")
	}
	f, err := fsx.TempSibling(path, 0o600)
	if err != nil {
		return fail(err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			_ = os.Remove(tmp) // our own temporary file, never published
		}
	}()
	// The umask may only narrow the mode; Chmod makes it exactly 0600.
	if err := f.Chmod(0o600); err != nil {
		_ = f.Close()
		return fail(err)
	}
	if err := fsx.WriteSyncClose(f, []byte(token+"\n")); err != nil {
		return fail(err)
	}
	// rename replaces the name itself: a link there is not followed.
	if err := os.Rename(tmp, path); err != nil {
		return fail(err)
	}
	if err := fsx.SyncDir(home); err != nil {
		return fail(err)
	}
	return path, nil
}

// CheckListen checks --listen ADDR: HOST:PORT, and serving without the
// token (noAuth) only on a loopback address, where no other machine can
// reach the proxy.
func CheckListen(addr string, noAuth bool) error {
	// The one listen-address check (pkg/netaddr): a port out of range, a
	// service name or unix:… is a usage error here, before anything binds,
	// not a failed bind.
	if err := netaddr.CheckTCPListen(addr); err != nil {
		return errs.Usage(CodeInvalidListen, "--listen %s: %v", termsafe.Text(addr), err).WithHint("e.g. --listen 127.0.0.1:8080 (port 0 picks a free one)")
	}
	if noAuth && !IsLoopbackAddr(addr) {
		return errs.Usage(CodeInvalidListen, "--no-auth is allowed only on a loopback address (127.0.0.1, ::1, localhost), not %s", termsafe.Text(addr)).
			WithHint("keep the bearer token, or listen on 127.0.0.1")
	}
	return nil
}

// resolveDir is path as the child will see it: relative to its working
// directory.
func resolveDir(path, dir string) string {
	if dir == "" || filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(dir, path)
}
