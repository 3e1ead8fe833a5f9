package mcphttp

// The client over HTTP (docs/mcp.md, "Over HTTP"): Streamable HTTP as the
// spec's revisions since 2025-03-26 define it, and the HTTP+SSE transport
// of 2024-11-05, found by the spec's backwards-compatibility probe. The
// opening (era.go) and the classification of failures are the stdio
// client's; only the carriage differs.

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/clawkit/clawkit/pkg/mcp"

	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/fsx"
	"github.com/clawkit/clawkit/pkg/mcp/mcphttp/sse"
	"github.com/clawkit/clawkit/pkg/oauth"
	"github.com/clawkit/clawkit/pkg/redact"
	"github.com/clawkit/clawkit/pkg/termsafe"
)

// Transports of Options.Transport.
const (
	TransportAuto       = "auto"
	TransportStreamable = "streamable"
	TransportSSE        = "sse"
)

// HTTP defaults (docs/mcp.md, "Limits").
const (
	DefaultConnectTimeout   = 10 * time.Second
	DefaultHeaderTimeout    = 60 * time.Second
	DefaultIdleTimeout      = 60 * time.Second
	DefaultMaxResponseBytes = 1 << 30
	// maxSessionIDBytes bounds an Mcp-Session-Id (the spec asks for
	// visible ASCII; the SDKs' ids are UUIDs or shorter).
	maxSessionIDBytes = 1024
	// maxSmallBody bounds a body clawkit reads only to show or discard
	// (an error page, a 202's body).
	maxSmallBody = 4 << 10
	// maxServerRequestsInFlight bounds the answers to server requests
	// being posted at once; past it the server is flooding.
	maxServerRequestsInFlight = 16
	// deleteTimeout bounds the DELETE that ends a session.
	deleteTimeout = 10 * time.Second
)

// Options configure a connection to a remote server (Options.HTTP).
type Options struct {
	URL string
	// Header holds extra request headers. Their values are secrets: they
	// are never printed, and removed from every message (redact.Values).
	Header http.Header
	// Auth, when set, supplies the Authorization header from an OAuth
	// profile and reacts to the server's 401 and 403 (pkg/oauth's
	// Authorizer; docs/mcp.md, "Login").
	Auth HTTPAuth
	// Transport is TransportAuto (Streamable HTTP, else the legacy
	// HTTP+SSE after the spec's probe), TransportStreamable or
	// TransportSSE.
	Transport        string
	ConnectTimeout   time.Duration
	HeaderTimeout    time.Duration
	IdleTimeout      time.Duration
	MaxResponseBytes int64
	// MaxLineBytes bounds one SSE line (default MaxFrameBytes + 64).
	MaxLineBytes int
	// RoundTripper replaces the transport (tests); nil builds one with TLS
	// verification and the HTTPS_PROXY/NO_PROXY environment.
	RoundTripper http.RoundTripper
	// Warn, when set, is told what the client decided on its own that the
	// user should know (a tool left out of tools/list because its
	// x-mcp-header annotations are invalid). The text holds the server's
	// names, quoted; the caller escapes it for a terminal.
	Warn func(msg string)
}

// Client is one MCP connection to a remote server.
type Client struct {
	mcp.Core
	h    Options
	hc   *http.Client
	base *url.URL

	bg       context.Context
	bgCancel context.CancelFunc
	wg       sync.WaitGroup // the streams and the answers to server requests
	answers  chan struct{}  // slots for answers to server requests

	// Under Mu:
	sessionID string
	legacy    bool     // the 2024-11-05 HTTP+SSE transport
	endpoint  *url.URL // legacy: where messages are posted
	protoHdr  string   // MCP-Protocol-Version once negotiated
	getOpen   bool
	// tools: the x-mcp-header annotations of the tools listed so far
	// (2026-07-28 only; paramheaders.go).
	tools map[string]toolHeaders

	total   atomic.Int64
	secrets []string
}

func (o *Options) setDefaults(frame int) {
	if o.Transport == "" {
		o.Transport = TransportAuto
	}
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = DefaultConnectTimeout
	}
	if o.HeaderTimeout <= 0 {
		o.HeaderTimeout = DefaultHeaderTimeout
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	if o.MaxResponseBytes <= 0 {
		o.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if o.MaxLineBytes <= 0 {
		o.MaxLineBytes = frame + 64
	}
}

// ParseURL checks a server URL: http or https, a host, no userinfo
// (credentials come from auth profiles, never from the command line).
func ParseURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errs.Usage(CodeInvalidURL, "--url %s: expected an http:// or https:// URL with a host", redact.URL(raw)).
			WithHint("e.g. --url http://127.0.0.1:8080/mcp")
	}
	if u.User != nil {
		return nil, errs.Usage(CodeInvalidURL, "--url %s: credentials in the URL are refused", redact.URL(raw)).
			WithHint("store the credential in an auth profile and pass it with --header NAME=@PROFILE")
	}
	u.Fragment = ""
	return u, nil
}

// Dialer connects to h.URL for mcp.Call and mcp.Session.
func Dialer(h Options) mcp.Dialer {
	return func(ctx context.Context, opts mcp.Options) (mcp.Conn, error) {
		c, err := Start(ctx, h, opts)
		if err != nil {
			return nil, err
		}
		return c, nil
	}
}

// HTTPAuth is an OAuth profile's part in the requests: Wrap sends them
// with its token (renewed, stepped up), Secrets are the values to redact.
type HTTPAuth interface {
	Wrap(http.RoundTripper) http.RoundTripper
	Secrets() []string
}

func wrapAuth(a HTTPAuth, rt http.RoundTripper) http.RoundTripper {
	if a == nil {
		return rt
	}
	return a.Wrap(rt)
}

// Start connects to h.URL and completes the opening within
// StartupTimeout.
func Start(ctx context.Context, h Options, opts mcp.Options) (*Client, error) {
	if err := opts.SetDefaults(); err != nil {
		return nil, err
	}
	h.setDefaults(opts.MaxFrameBytes)
	u, err := ParseURL(h.URL)
	if err != nil {
		return nil, err
	}
	rt := h.RoundTripper
	if rt == nil {
		rt = &http.Transport{
			Proxy:                  http.ProxyFromEnvironment,
			DialContext:            (&net.Dialer{Timeout: h.ConnectTimeout, KeepAlive: 30 * time.Second}).DialContext,
			TLSHandshakeTimeout:    h.ConnectTimeout,
			TLSClientConfig:        &tls.Config{MinVersion: tls.VersionTLS12},
			ResponseHeaderTimeout:  h.HeaderTimeout,
			MaxResponseHeaderBytes: 64 << 10,
			MaxIdleConnsPerHost:    8,
			IdleConnTimeout:        90 * time.Second,
			// Streams are read as they come; a compressed one would be
			// buffered by the decompressor.
			DisableCompression: true,
			ForceAttemptHTTP2:  true,
		}
	}
	c := &Client{
		h: h, base: u,
		hc: &http.Client{Transport: wrapAuth(h.Auth, rt), CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse // refused: see redirectError
		}},
		answers: make(chan struct{}, maxServerRequestsInFlight),
	}
	for _, vs := range h.Header {
		for _, v := range vs {
			// A server may echo the token without its scheme.
			c.secrets = append(c.secrets, v)
			if _, tok, ok := strings.Cut(v, " "); ok {
				c.secrets = append(c.secrets, tok)
			}
		}
	}
	c.Init(opts)
	c.bg, c.bgCancel = context.WithCancel(context.Background())
	deadline := time.Now().Add(opts.StartupTimeout)
	e := c.open(ctx, deadline)
	if e != nil {
		c.retire(e)
		_, _ = c.Stop()
		return nil, c.scrub(e)
	}
	if f := opts.OnConnected; f != nil {
		f(c.ServerInfo(), c.Negotiated())
	}
	return c, nil
}

// open runs the opening on the transport the options name; in auto mode
// a Streamable HTTP opening refused with 400, 404 or 405 before a session
// exists falls back to the legacy transport (the spec's
// backwards-compatibility probe), where the opening runs again.
func (c *Client) open(ctx context.Context, deadline time.Time) *mcp.Error {
	if c.h.Transport == TransportSSE {
		if e := c.openLegacy(ctx, deadline); e != nil {
			return e
		}
		return c.handshake(ctx, deadline)
	}
	e := c.handshake(ctx, deadline)
	if e == nil {
		c.Mu.Lock()
		c.protoHdr = c.Negotiated().Version
		c.Mu.Unlock()
		if c.Negotiated().Era == mcp.EraLegacy {
			// A server sends its own requests (elicitation, roots) on the
			// GET stream and drops them while none is open: the first
			// request waits for the stream's headers, a little.
			ready := c.openGetStream()
			t := time.NewTimer(min(time.Until(deadline), getStreamWait))
			select {
			case <-ready:
			case <-t.C:
			case <-ctx.Done():
			}
			t.Stop()
		}
		return nil
	}
	c.Mu.Lock()
	noSession := c.sessionID == ""
	c.Mu.Unlock()
	if c.h.Transport != TransportAuto || !noSession || !fallbackStatus(e.HTTPStatus) {
		return e
	}
	c.ResetEra()
	if le := c.openLegacy(ctx, deadline); le != nil {
		if le.HTTPStatus != 0 || le.Code == CodeBadContentType {
			// The legacy stream was refused too: neither transport,
			// and the first answer says most.
			return e
		}
		// The server took the legacy request (it opened the stream, or
		// held it): what went wrong there is the error, not the probe's
		// refusal (an off-origin endpoint, an endless line, no endpoint
		// in time).
		return le
	}
	return c.handshake(ctx, deadline)
}

// handshake runs the opening (mcp.Core.Handshake) over HTTP.
func (c *Client) handshake(ctx context.Context, deadline time.Time) *mcp.Error {
	return c.Handshake(ctx, deadline, mcp.Carrier{Do: c.do, Notify: c.Notify, Probe: c.probe})
}

func fallbackStatus(s int) bool { return s == 400 || s == 404 || s == 405 }

// SessionID is the server's Mcp-Session-Id ("" when it gave none).
func (c *Client) SessionID() string {
	c.Mu.Lock()
	defer c.Mu.Unlock()
	return c.sessionID
}

// Legacy reports whether the connection uses the 2024-11-05 HTTP+SSE
// transport.
func (c *Client) Legacy() bool {
	c.Mu.Lock()
	defer c.Mu.Unlock()
	return c.legacy
}

// Request sends one request and waits for its result (Client.Request).
func (c *Client) Request(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	return c.RequestTimeout(ctx, method, params, 0)
}

// RequestTimeout is Client.RequestTimeout over HTTP. In the 2026-07-28
// era a tools/call carries the Mcp-Param headers its tool's schema asks
// for, and a tools/list result leaves out the tools whose annotations are
// invalid (docs/mcp.md, "Mcp-Param headers").
func (c *Client) RequestTimeout(ctx context.Context, method string, params json.RawMessage, timeout time.Duration) (json.RawMessage, error) {
	var res json.RawMessage
	var err *mcp.Error
	switch {
	case method == "tools/call" && c.mirrorsParams():
		res, err = c.callTool(ctx, params, timeout)
	case method == "tools/list" && c.mirrorsParams():
		res, err = c.request(ctx, method, params, timeout)
		if err == nil {
			res = c.takeTools(res, true)
		}
	default:
		res, err = c.request(ctx, method, params, timeout)
	}
	if err != nil {
		return nil, c.scrub(err)
	}
	return c.scrubBytes(res), nil
}

// request sends one request as the caller gave it and waits for its
// answer.
func (c *Client) request(ctx context.Context, method string, params json.RawMessage, timeout time.Duration) (json.RawMessage, *mcp.Error) {
	params, timeout, onTimeout := c.PrepareRequest(method, params, timeout)
	return c.do(ctx, c.TakeID(), method, params, timeout, onTimeout)
}

// mirrorsParams reports whether tools/call carries Mcp-Param headers:
// Streamable HTTP in the 2026-07-28 era.
func (c *Client) mirrorsParams() bool {
	return !c.Legacy() && c.Negotiated().Era == mcp.EraModern
}

// takeTools keeps the annotations of a tools/list result's tools and
// returns the result without the invalid ones; warn says whether the user
// is told about them (a listing of clawkit's own, before a call, is not
// shown to anyone).
func (c *Client) takeTools(res json.RawMessage, warn bool) json.RawMessage {
	out, tools, dropped := filterTools(res)
	c.Mu.Lock()
	if c.tools == nil {
		c.tools = make(map[string]toolHeaders, len(tools))
	}
	for name, th := range tools {
		c.tools[name] = th
	}
	c.Mu.Unlock()
	if warn && c.h.Warn != nil {
		for _, d := range dropped {
			c.h.Warn("left out of tools/list: " + d + " (MCP 2026-07-28 x-mcp-header rules); clawkit will not call it")
		}
	}
	return out
}

// toolHeaders is what the listings said about tool name.
func (c *Client) toolHeaders(name string) (toolHeaders, bool) {
	c.Mu.Lock()
	defer c.Mu.Unlock()
	th, ok := c.tools[name]
	return th, ok
}

// maxListPages bounds the pages of a listing clawkit makes on its own.
const maxListPages = 100

// listTools lists every tool (following nextCursor) to learn their
// header annotations.
func (c *Client) listTools(ctx context.Context, timeout time.Duration) *mcp.Error {
	c.Mu.Lock()
	c.tools = nil // a new listing replaces the old one
	c.Mu.Unlock()
	var cursor string
	for page := 0; page < maxListPages; page++ {
		var params json.RawMessage
		if cursor != "" {
			params, _ = json.Marshal(map[string]string{"cursor": cursor})
		}
		res, err := c.request(ctx, "tools/list", params, timeout)
		if err != nil {
			return err
		}
		c.takeTools(res, false)
		var next struct {
			NextCursor string `json:"nextCursor"`
		}
		_ = json.Unmarshal(res, &next)
		if next.NextCursor == "" || next.NextCursor == cursor {
			return nil
		}
		cursor = next.NextCursor
	}
	return nil
}

// paramHeadersKey carries a tools/call's Mcp-Param headers to the request
// that posts it.
type paramHeadersKey struct{}

// callTool sends a tools/call with the Mcp-Param headers of its tool's
// annotations, listing the tools first when the tool was not listed yet.
// A tool with invalid annotations is refused, never called. On -32020
// (HeaderMismatch) the tools are listed again once and the call repeated
// only if the annotations changed: the server refused it before acting on
// it. A second refusal, or unchanged annotations, is header_mismatch.
func (c *Client) callTool(ctx context.Context, params json.RawMessage, timeout time.Duration) (json.RawMessage, *mcp.Error) {
	var p struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if mcp.FirstByte(params) != '{' || json.Unmarshal(params, &p) != nil {
		return c.request(ctx, "tools/call", params, timeout) // the server judges it
	}
	th, ok := c.toolHeaders(p.Name)
	if !ok {
		if e := c.listTools(ctx, timeout); e != nil && e.RPC == nil {
			return nil, e // a server that refuses tools/list gets the call as is
		}
		if th, ok = c.toolHeaders(p.Name); !ok {
			// Not listed: called without headers, and not listed for
			// again on every call.
			c.Mu.Lock()
			if c.tools == nil {
				c.tools = map[string]toolHeaders{}
			}
			c.tools[p.Name] = toolHeaders{}
			c.Mu.Unlock()
		}
	}
	hdr, e := c.checkedHeaders(p.Name, th, p.Arguments)
	if e != nil {
		return nil, e
	}
	res, err := c.request(context.WithValue(ctx, paramHeadersKey{}, hdr), "tools/call", params, timeout)
	if err == nil || err.RPC == nil || err.RPC.Code != rpcHeaderMismatch {
		return res, err
	}
	if e := c.listTools(ctx, timeout); e != nil {
		return nil, e
	}
	th2, _ := c.toolHeaders(p.Name)
	hdr2, e := c.checkedHeaders(p.Name, th2, p.Arguments)
	if e != nil {
		return nil, e
	}
	if !slices.Equal(hdr, hdr2) {
		res, err = c.request(context.WithValue(ctx, paramHeadersKey{}, hdr2), "tools/call", params, timeout)
		if err == nil || err.RPC == nil || err.RPC.Code != rpcHeaderMismatch {
			return res, err
		}
	}
	return nil, &mcp.Error{Class: mcp.ClassProtocol, Code: CodeHeaderMismatch, RPC: err.RPC, Delivered: true, Hint: hintMismatch,
		Message: fmt.Sprintf("the server refused tools/call %s: its Mcp-Param headers do not match the arguments (-32020 HeaderMismatch: %s), though they follow the tool's x-mcp-header annotations as listed again",
			quoteClip(p.Name), mcp.Clip([]byte(err.RPC.Message), 200))}
}

// checkedHeaders refuses a tool whose annotations are invalid and builds
// the headers of a valid one.
func (c *Client) checkedHeaders(name string, th toolHeaders, args json.RawMessage) ([][2]string, *mcp.Error) {
	if th.invalid != "" {
		e := mcp.ProtocolErr(CodeInvalidToolHeaders, "tool %s is not called: its x-mcp-header annotations are invalid (%s)", quoteClip(name), th.invalid)
		e.Hint = hintToolHeaders
		return nil, e
	}
	hdr, err := th.headers(name, args)
	if err != nil {
		return nil, mcp.ProtocolErr(errs.CodeInvalidParams, "%v", err)
	}
	return hdr, nil
}

// allSecrets are the header values and, with an OAuth profile, its
// current tokens (a renewal changes them).
func (c *Client) allSecrets() []string {
	if c.h.Auth == nil {
		return c.secrets
	}
	return append(append([]string(nil), c.secrets...), c.h.Auth.Secrets()...)
}

// scrubBytes replaces the caller's header values in a server's message
// (a result, a notification's params) with the mask: a server that echoes
// a credential back does not get it printed or stored. Only the exact
// values are replaced (the mask keeps JSON valid); nothing else of the
// server's data changes.
func (c *Client) scrubBytes(b []byte) []byte {
	secrets := c.allSecrets()
	if len(secrets) == 0 {
		return b
	}
	return redact.Bytes(b, secrets...)
}

// scrub removes the caller's header values from an error: its message and
// the server's JSON-RPC error object (message and data), which `mcp
// session` prints as the line's answer. A server may echo them, and no
// secret is ever printed.
func (c *Client) scrub(e *mcp.Error) *mcp.Error {
	secrets := c.allSecrets()
	if e == nil || len(secrets) == 0 {
		return e
	}
	d := *e
	d.Message = redact.Values(e.Message, secrets...)
	if e.RPC != nil {
		rpc := *e.RPC
		rpc.Message = redact.Values(rpc.Message, secrets...)
		rpc.Data = c.scrubBytes(rpc.Data)
		d.RPC = &rpc
	}
	return &d
}

// ServerInfo is the server's name and version from the opening, without
// the caller's header values (a server may echo them there too).
func (c *Client) ServerInfo() mcp.Implementation {
	s := c.Core.ServerInfo()
	if secrets := c.allSecrets(); len(secrets) > 0 {
		s.Name = redact.Values(s.Name, secrets...)
		s.Version = redact.Values(s.Version, secrets...)
	}
	return s
}

// Negotiated is the protocol the connection speaks, without the caller's
// header values in the versions the server listed.
func (c *Client) Negotiated() mcp.Negotiated {
	n := c.Core.Negotiated()
	if secrets := c.allSecrets(); len(secrets) > 0 && len(n.SupportedVersions) > 0 {
		vs := make([]string, len(n.SupportedVersions))
		for i, v := range n.SupportedVersions {
			vs[i] = redact.Values(v, secrets...)
		}
		n.SupportedVersions = vs
	}
	return n
}

// errRequestDeadline is the cause of a request context that ran out;
// errProbeBound that of an auto-mode probe left unanswered.
var (
	errRequestDeadline = errors.New("request deadline")
	errProbeBound      = errors.New("probe bound")
)

func (c *Client) do(ctx context.Context, id int64, method string, params json.RawMessage, timeout time.Duration, onTimeout func() *mcp.Error) (json.RawMessage, *mcp.Error) {
	if e := mcp.CheckParams(params); e != nil {
		return nil, e
	}
	if len(params) > 0 {
		var buf bytes.Buffer
		if err := json.Compact(&buf, params); err != nil {
			return nil, mcp.ProtocolErr(errs.CodeInvalidParams, "params are not valid JSON: %v", err)
		}
		params = buf.Bytes()
	}
	if ctx.Err() != nil {
		return nil, mcp.NotSent(ctx, method, onTimeout)
	}
	body := mcp.AppendRequest(nil, id, method, params)
	if len(body) > c.Opts.MaxFrameBytes {
		return nil, mcp.ProtocolErr(errs.CodeFrameTooLarge, "request exceeded the frame-size limit (%d bytes > %d)", len(body), c.Opts.MaxFrameBytes)
	}
	ch := make(chan mcp.Reply, 1)
	if e := c.AddPending(id, ch); e != nil {
		return nil, e
	}
	defer c.Forget(id)
	if timeout <= 0 {
		timeout = time.Millisecond // the startup budget is spent: one try
	}
	rctx, cancel := context.WithTimeoutCause(ctx, timeout, errRequestDeadline)
	defer cancel()
	stop := context.AfterFunc(c.bg, cancel)
	defer stop()

	var e *mcp.Error
	var fatal bool
	if c.Legacy() {
		e, fatal = c.postLegacy(rctx, body, true)
	} else {
		e, fatal = c.postStreamMsg(rctx, body, id, ch, method, params)
	}
	if e == nil {
		select {
		case r := <-ch:
			return r.Result, r.Err
		case <-rctx.Done():
		}
	}
	select {
	case r := <-ch: // the answer came first
		return r.Result, r.Err
	default:
	}
	if e == nil || rctx.Err() != nil {
		// The deadline, the caller's context, or a retirement.
		switch {
		case c.bg.Err() != nil:
			return nil, c.RetainedFatal().WithDelivered(true)
		case errors.Is(context.Cause(rctx), errRequestDeadline):
			e = onTimeout()
		default:
			e = mcp.CtxError(ctx, method, onTimeout)
		}
		fatal = true
		e.Delivered = true
	}
	if fatal {
		c.retire(e)
		return nil, c.RetainedFatal().WithDelivered(e.Delivered)
	}
	return nil, e
}

// Notify sends a notification.
func (c *Client) Notify(method string, params json.RawMessage) error {
	if !c.IsAvailable() {
		return c.RetainedFatal()
	}
	body := mcp.AppendNotification(nil, method, params)
	if len(body) > c.Opts.MaxFrameBytes {
		return mcp.ProtocolErr(errs.CodeFrameTooLarge, "notification exceeded the frame-size limit")
	}
	ctx, cancel := context.WithTimeoutCause(c.bg, c.Opts.RequestTimeout, errRequestDeadline)
	defer cancel()
	var e *mcp.Error
	var fatal bool
	if c.Legacy() {
		e, fatal = c.postLegacy(ctx, body, false)
	} else {
		// Mcp-Method is on notifications too (2026-07-28).
		e, fatal = c.postStreamMsg(ctx, body, -1, nil, method, params)
	}
	if e == nil {
		return nil
	}
	if errors.Is(context.Cause(ctx), errRequestDeadline) {
		e, fatal = mcp.Unavailable(errs.CodeRequestTimeout, "notification %s timed out after %dms", method, c.Opts.RequestTimeout.Milliseconds()), true
	}
	if fatal {
		c.retire(e)
		return c.scrub(c.RetainedFatal())
	}
	return c.scrub(e)
}

// newRequest builds a request to u with the caller's headers and the
// transport's own.
func (c *Client) newRequest(ctx context.Context, method string, u *url.URL, body []byte, accept string) *http.Request {
	return c.newMessageRequest(ctx, method, u, body, accept, "", nil)
}

// newMessageRequest is newRequest for a JSON-RPC request to rpcMethod: in
// the 2026-07-28 era the method, and the name a tools/call, prompts/get or
// resources/read addresses, are repeated in Mcp-Method and Mcp-Name (the
// Go SDK refuses requests without them).
func (c *Client) newMessageRequest(ctx context.Context, method string, u *url.URL, body []byte, accept, rpcMethod string, params json.RawMessage) *http.Request {
	// Built directly rather than from u.String(): no URL is parsed again
	// for every message.
	uc := *u
	req := (&http.Request{Method: method, URL: &uc, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: make(http.Header, len(c.h.Header)+4), Host: u.Host}).WithContext(ctx)
	if body != nil {
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.ContentLength = int64(len(body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	for k, vs := range c.h.Header {
		req.Header[http.CanonicalHeaderKey(k)] = append([]string(nil), vs...)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", accept)
	c.Mu.Lock()
	if c.sessionID != "" && !c.legacy {
		req.Header.Set("Mcp-Session-Id", c.sessionID)
	}
	v := c.protoHdr
	c.Mu.Unlock()
	if v == "" {
		v = c.MetaVersion()
	}
	if v != "" {
		req.Header.Set("MCP-Protocol-Version", v)
	}
	if rpcMethod != "" && mcp.IsModernVersion(v) {
		req.Header.Set("Mcp-Method", headerSafe(rpcMethod))
		if name := addressedName(rpcMethod, params); name != "" {
			req.Header.Set("Mcp-Name", headerSafe(name))
		}
		if rpcMethod == "tools/call" {
			hdr, _ := ctx.Value(paramHeadersKey{}).([][2]string)
			for _, h := range hdr {
				req.Header[http.CanonicalHeaderKey(h[0])] = []string{h[1]}
			}
		}
	}
	return req
}

// addressedName is the tool, prompt or resource a request names.
func addressedName(method string, params json.RawMessage) string {
	var p struct {
		Name string `json:"name"`
		URI  string `json:"uri"`
	}
	switch method {
	case "tools/call", "prompts/get":
		_ = json.Unmarshal(params, &p)
		return p.Name
	case "resources/read":
		_ = json.Unmarshal(params, &p)
		return p.URI
	}
	return ""
}

// headerSafe is s as a header value: as is when it is printable ASCII
// without edge blanks, else in the =?base64?…?= form the 2026-07-28
// HTTP transport defines.
func headerSafe(s string) string {
	plain := s != "" && s[0] != ' ' && s[len(s)-1] != ' ' && !(strings.HasPrefix(s, "=?base64?") && strings.HasSuffix(s, "?="))
	for i := 0; plain && i < len(s); i++ {
		plain = s[i] >= 0x20 && s[i] <= 0x7e
	}
	if plain {
		return s
	}
	return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(s)) + "?="
}

// send performs req; a transport failure is classified (connect, header
// timeout, the request's own deadline).
func (c *Client) send(req *http.Request) (*http.Response, *mcp.Error, bool) {
	resp, err := c.hc.Do(req)
	if err == nil {
		return resp, nil, false
	}
	if ae, ok := oauth.AsAuthError(err); ok {
		// The OAuth profile's own refusal (expired login, missing scope):
		// its code and hint reach the user as they are.
		return nil, &mcp.Error{Class: mcp.ClassProtocol, Code: CodeHTTPUnauthorized, Definitive: true, Message: ae.Error(), Err: ae}, true
	}
	if req.Context().Err() != nil {
		return nil, mcp.Unavailable(errs.CodeCancelled, "%s", "interrupted"), false // the caller classifies
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err // its text names the URL, secret parameters included
	}
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Op == "dial" {
		return nil, &mcp.Error{Class: mcp.ClassUnavailable, Code: errs.CodeConnectFailed,
			Message: fmt.Sprintf("cannot connect to %s: %v", c.where(), oe.Err)}, true
	}
	var certErr *tls.CertificateVerificationError
	var uaErr x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	if errors.As(err, &certErr) || errors.As(err, &uaErr) || errors.As(err, &hostErr) {
		// A certificate that does not verify is a definite answer:
		// retrying will not change it, and clawkit never skips the check.
		return nil, &mcp.Error{Class: mcp.ClassProtocol, Code: CodeTLSFailed, Definitive: true,
			Message: fmt.Sprintf("the TLS certificate of %s does not verify: %v", c.where(), err)}, true
	}
	if strings.Contains(err.Error(), "timeout awaiting response headers") {
		return nil, mcp.Unavailable(CodeHeaderTimeout, "%s sent no response headers within %dms", c.where(), c.h.HeaderTimeout.Milliseconds()).WithDelivered(true), true
	}
	var te interface{ Timeout() bool }
	if errors.As(err, &te) && te.Timeout() {
		return nil, &mcp.Error{Class: mcp.ClassUnavailable, Code: errs.CodeConnectFailed,
			Message: fmt.Sprintf("cannot connect to %s: timed out after %dms", c.where(), c.h.ConnectTimeout.Milliseconds())}, true
	}
	return nil, &mcp.Error{Class: mcp.ClassUnavailable, Code: errs.CodeConnectFailed, Delivered: true,
		Message: fmt.Sprintf("HTTP request to %s failed: %v", c.where(), err)}, true
}

// where names the server without secrets.
func (c *Client) where() string { return redact.URL(c.base.String()) }

// statusError classifies an HTTP error status.
func (c *Client) statusError(resp *http.Response, what string) (*mcp.Error, bool) {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxSmallBody))
	c.total.Add(int64(len(body)))
	detail := strings.TrimSpace(string(body))
	if m := rpcErrorMessage(body); m != "" {
		detail = m
	}
	if len(detail) > 200 {
		detail = detail[:200] + "…"
	}
	if detail != "" {
		detail = ": " + detail
	}
	s := resp.StatusCode
	c.Mu.Lock()
	hadSession := c.sessionID != "" && !c.legacy
	c.Mu.Unlock()
	switch {
	case s >= 300 && s < 400:
		loc := resp.Header.Get("Location")
		return &mcp.Error{Class: mcp.ClassProtocol, Code: CodeRedirectRefused, HTTPStatus: s, Delivered: true,
			Message: fmt.Sprintf("%s answered %s with a redirect (%d) to %s; clawkit follows no redirect", c.where(), what, s, redact.URL(loc))}, true
	case s == 404 && hadSession:
		e := mcp.Unavailable(CodeSessionExpired, "the server no longer knows this session (404 to %s)%s", what, detail).WithDelivered(true)
		e.HTTPStatus = s
		return e, true
	case s == 401 || s == 403:
		return &mcp.Error{Class: mcp.ClassProtocol, Code: CodeHTTPUnauthorized, HTTPStatus: s, Definitive: true,
			Message: fmt.Sprintf("%s refused %s: HTTP %d%s", c.where(), what, s, detail)}, true
	case s >= 500 || s == 429 || s == 408:
		e := mcp.Unavailable(CodeHTTPStatus, "%s answered %s with HTTP %d%s", c.where(), what, s, detail).WithDelivered(true)
		e.HTTPStatus = s
		return e, false
	}
	if rpc := rpcErrorBody(body); rpc != nil && s == http.StatusBadRequest {
		// A 2026-07-28 server refuses a request with 400 and the
		// JSON-RPC error (-32022, -32020, …): the error is the answer.
		e, _ := mcp.ResponseError(rpc)
		e.HTTPStatus = s
		return e, false
	}
	return &mcp.Error{Class: mcp.ClassProtocol, Code: CodeHTTPStatus, HTTPStatus: s,
		Message: fmt.Sprintf("%s answered %s with HTTP %d%s", c.where(), what, s, detail)}, false
}

// rpcErrorBody is the error object of a JSON-RPC error response body.
func rpcErrorBody(b []byte) *mcp.RPCError {
	var m struct {
		JSONRPC string        `json:"jsonrpc"`
		Error   *mcp.RPCError `json:"error"`
	}
	if json.Unmarshal(b, &m) != nil || m.JSONRPC != "2.0" || m.Error == nil || m.Error.Code == 0 {
		return nil
	}
	return m.Error
}

// rpcErrorMessage is the message of a JSON-RPC error body, if it is one.
func rpcErrorMessage(b []byte) string {
	var m struct {
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(b, &m) == nil && m.Error != nil {
		return m.Error.Message
	}
	return ""
}

// postStream posts one message on Streamable HTTP and, for a request
// (id ≥ 0), reads the answer: one JSON body or an SSE stream, whose
// messages are dispatched until ch holds the answer. The bool says
// whether the failure retires the connection.
func (c *Client) postStream(ctx context.Context, body []byte, id int64, ch chan mcp.Reply) (*mcp.Error, bool) {
	return c.postStreamMsg(ctx, body, id, ch, "", nil)
}

func (c *Client) postStreamMsg(ctx context.Context, body []byte, id int64, ch chan mcp.Reply, rpcMethod string, params json.RawMessage) (*mcp.Error, bool) {
	what := "a notification"
	if id >= 0 {
		what = "a request"
	}
	req := c.newMessageRequest(ctx, http.MethodPost, c.base, body, "application/json, text/event-stream", rpcMethod, params)
	resp, e, fatal := c.send(req)
	if e != nil {
		if ctx.Err() != nil {
			return nil, false // the caller names the deadline
		}
		return e, fatal
	}
	defer fsx.CloseRead(resp.Body)
	if resp.StatusCode >= 300 {
		return c.statusError(resp, what)
	}
	if e := c.takeSessionID(resp); e != nil {
		return e, true
	}
	if id < 0 || resp.StatusCode == http.StatusAccepted {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxSmallBody))
		if id >= 0 {
			return &mcp.Error{Class: mcp.ClassProtocol, Code: CodeBadContentType, Delivered: true,
				Message: fmt.Sprintf("%s answered a request with %d and no message", c.where(), resp.StatusCode)}, true
		}
		return nil, false
	}
	switch mediaType(resp) {
	case "application/json":
		b, err := io.ReadAll(io.LimitReader(c.counted(resp.Body), int64(c.Opts.MaxFrameBytes)+1))
		if e := c.readError(err, ctx); e != nil {
			return e, e.Code != "request_timeout"
		}
		if len(b) > c.Opts.MaxFrameBytes {
			return &mcp.Error{Class: mcp.ClassProtocol, Code: errs.CodeFrameTooLarge, Delivered: true,
				Message: fmt.Sprintf("response exceeded the frame-size limit (more than %d bytes)", c.Opts.MaxFrameBytes)}, true
		}
		if e := c.dispatch(b); e != nil {
			return e, true
		}
		select {
		case r := <-ch:
			ch <- r
			return nil, false
		default:
			return mcp.ProtocolErr(errs.CodeInvalidResponseID, "the server's JSON answer is not the response to request %d", id).WithDelivered(true), true
		}
	case "text/event-stream":
		var pos streamPos
		e, fatal := c.readStream(ctx, resp.Body, ch, true, &pos)
		if e == nil {
			drain(resp.Body)
			return nil, false
		}
		if e.Code == CodeStreamEnded && id >= 0 && pos.id != "" && c.resumable() {
			// The server closed the stream before the answer, after an
			// event with an id: the answer is fetched through GET with
			// Last-Event-ID; the request itself is never sent again.
			fsx.CloseRead(resp.Body)
			return c.resume(ctx, id, ch, &pos)
		}
		return e, fatal
	default:
		return &mcp.Error{Class: mcp.ClassProtocol, Code: CodeBadContentType, Delivered: true,
			Message: fmt.Sprintf("%s answered with Content-Type %q; expected application/json or text/event-stream", c.where(), mcp.Clip([]byte(resp.Header.Get("Content-Type")), 80))}, true
	}
}

// drain reads what is left of an answered stream, which servers end right
// after the answer, so that the connection is kept for the next request;
// a stream that goes on is closed after a short bound instead.
func drain(body io.ReadCloser) {
	t := time.AfterFunc(50*time.Millisecond, func() { _ = body.Close() })
	_, _ = io.CopyN(io.Discard, body, maxSmallBody)
	t.Stop()
}

func mediaType(resp *http.Response) string {
	mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if err != nil {
		return ""
	}
	return strings.ToLower(mt)
}

// takeSessionID keeps the session id the server assigns (on the opening's
// answer) and refuses one that changes mid-session.
func (c *Client) takeSessionID(resp *http.Response) *mcp.Error {
	sid := resp.Header.Get("Mcp-Session-Id")
	if sid == "" {
		return nil
	}
	if len(sid) > maxSessionIDBytes || !visibleASCII(sid) {
		return mcp.ProtocolErr(errs.CodeMalformedMessage, "the server's Mcp-Session-Id is not visible ASCII of at most %d bytes", maxSessionIDBytes).WithDelivered(true)
	}
	c.Mu.Lock()
	defer c.Mu.Unlock()
	switch {
	case c.sessionID == "" && c.Negotiated().Version == "":
		c.sessionID = sid
	case c.sessionID != sid:
		return mcp.ProtocolErr(CodeSessionIDChanged, "the server changed its Mcp-Session-Id mid-session").WithDelivered(true)
	}
	return nil
}

func visibleASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// readError classifies a failed body read.
func (c *Client) readError(err error, ctx context.Context) *mcp.Error {
	if err == nil {
		return nil
	}
	var le *sse.LimitError
	switch {
	case errors.Is(err, errTotalBytes):
		return &mcp.Error{Class: mcp.ClassProtocol, Code: CodeResponseCapExceeded, Delivered: true,
			Message: fmt.Sprintf("the server sent more than %d bytes on this connection (--max-response-bytes)", c.h.MaxResponseBytes)}
	case errors.Is(err, errIdle):
		return mcp.Unavailable(CodeIdleTimeout, "the server's stream was idle for %dms", c.h.IdleTimeout.Milliseconds()).WithDelivered(true)
	case errors.As(err, &le) && errors.Is(err, sse.ErrLineTooLong):
		return &mcp.Error{Class: mcp.ClassProtocol, Code: CodeSseLineTooLong, Delivered: true,
			Message: fmt.Sprintf("an SSE line exceeded %d bytes", le.Limit)}
	case errors.As(err, &le):
		return &mcp.Error{Class: mcp.ClassProtocol, Code: errs.CodeFrameTooLarge, Delivered: true,
			Message: fmt.Sprintf("an SSE event exceeded the frame-size limit (%d bytes)", le.Limit)}
	case ctx != nil && ctx.Err() != nil:
		return mcp.Unavailable(errs.CodeRequestTimeout, "interrupted").WithDelivered(true)
	}
	return mcp.Unavailable(CodeStreamEnded, "the server's stream failed: %v", err).WithDelivered(true)
}

var (
	errTotalBytes = errors.New("response byte cap reached")
	errIdle       = errors.New("idle stream")
)

// counted charges reads to the connection's response byte cap.
func (c *Client) counted(r io.Reader) io.Reader { return &countReader{r: r, c: c} }

type countReader struct {
	r io.Reader
	c *Client
}

func (r *countReader) Read(b []byte) (int, error) {
	n, err := r.r.Read(b)
	if r.c.total.Add(int64(n)) > r.c.h.MaxResponseBytes {
		return n, errTotalBytes
	}
	return n, err
}

// idleReader fails with errIdle when no byte came for d; it closes the
// body to wake the blocked read.
type idleReader struct {
	r     io.ReadCloser
	t     *time.Timer
	fired atomic.Bool
	d     time.Duration
}

func newIdleReader(r io.ReadCloser, d time.Duration) *idleReader {
	ir := &idleReader{r: r, d: d}
	ir.t = time.AfterFunc(d, func() { ir.fired.Store(true); _ = r.Close() })
	return ir
}

func (r *idleReader) Read(b []byte) (int, error) {
	n, err := r.r.Read(b)
	if r.fired.Load() {
		return n, errIdle
	}
	if n > 0 {
		r.t.Reset(r.d)
	}
	return n, err
}

func (r *idleReader) stop() { r.t.Stop() }

// readStream reads an SSE stream, dispatching each message, until ch
// holds the answer (ch nil: until the stream ends). idle applies the idle
// timeout.
func (c *Client) readStream(ctx context.Context, body io.ReadCloser, ch chan mcp.Reply, idle bool, pos *streamPos) (*mcp.Error, bool) {
	var src io.Reader = body
	if idle {
		ir := newIdleReader(body, c.h.IdleTimeout)
		defer ir.stop()
		src = ir
	}
	rd := sse.NewReader(c.counted(src), c.h.MaxLineBytes, c.Opts.MaxFrameBytes)
	if pos != nil {
		rd.SetLastEventID(pos.id)
		defer pos.take(rd)
	}
	for {
		ev, err := rd.Next()
		if err != nil {
			if ch != nil {
				select {
				case r := <-ch:
					ch <- r
					return nil, false
				default:
				}
			}
			if errors.Is(err, io.EOF) {
				if ch == nil {
					return nil, false
				}
				return mcp.Unavailable(CodeStreamEnded, "the server ended its stream before it answered the request").WithDelivered(true), false
			}
			if ctx.Err() != nil && !errors.Is(err, errIdle) {
				return nil, false
			}
			e := c.readError(err, ctx)
			return e, e.Code != "stream_ended"
		}
		if ev.Type != "" && ev.Type != "message" {
			continue // an event type MCP does not define is not a message
		}
		if e := c.dispatch(ev.Data); e != nil {
			return e, true
		}
		if ch != nil {
			select {
			case r := <-ch:
				ch <- r
				return nil, false
			default:
			}
		}
	}
}

// dispatch handles one message from the server: a response goes to its
// request, a server request is answered, a notification is passed on.
func (c *Client) dispatch(b []byte) *mcp.Error {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil
	}
	m, err := mcp.DecodeMessage(b)
	if err != nil {
		var me *mcp.Error
		if !errors.As(err, &me) {
			me = mcp.ProtocolErr(errs.CodeMalformedMessage, "malformed message from server: %v", err)
		}
		return me.WithDelivered(true)
	}
	switch m.Kind {
	case mcp.KindResponse:
		ch := c.TakePending(m.ID)
		if ch == nil {
			return nil // an unknown id is ignored
		}
		if m.Error != nil {
			e, fatal := mcp.ResponseError(m.Error)
			if fatal {
				c.retire(e)
				ch <- mcp.Reply{Err: c.RetainedFatal().WithDelivered(true)}
				return nil
			}
			ch <- mcp.Reply{Err: e}
			return nil
		}
		ch <- mcp.Reply{Result: m.Result}
	case mcp.KindRequest:
		b := c.AnswerServerRequest(m.RawID, m.Method, c.scrubBytes(m.Params))
		select {
		case c.answers <- struct{}{}:
		default:
			return mcp.ProtocolErr(errs.CodeMalformedMessage, "the server sent requests faster than it reads their answers")
		}
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			defer func() { <-c.answers }()
			ctx, cancel := context.WithTimeout(c.bg, c.Opts.RequestTimeout)
			defer cancel()
			if c.Legacy() {
				_, _ = c.postLegacy(ctx, b, false)
			} else {
				_, _ = c.postStream(ctx, b, -1, nil)
			}
		}()
	case mcp.KindNotification:
		if f := c.Opts.OnNotification; f != nil {
			f(m.Method, c.scrubBytes(m.Params))
		}
	}
	return nil
}

// getStreamWait bounds how long the opening waits for the GET stream's
// headers.
const getStreamWait = 3 * time.Second

// openGetStream opens the GET stream for server messages where the
// server offers one (405 or an error: it does not; nothing fails). When
// the server closes it, it is opened again after the server's retry
// interval with Last-Event-ID, as long as the server keeps it going
// (docs/mcp.md, "Resuming streams"). The returned channel is closed once
// the first GET has its answer's headers (or failed).
func (c *Client) openGetStream() <-chan struct{} {
	ready := make(chan struct{})
	c.Mu.Lock()
	if c.getOpen || c.ClosedLocked() {
		c.Mu.Unlock()
		close(ready)
		return ready
	}
	c.getOpen = true
	c.Mu.Unlock()
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer func() { // stopped before the first GET: nobody waits on it
			select {
			case <-ready:
			default:
				close(ready)
			}
		}()
		var pos streamPos
		failures := 0
		for attempt := 0; c.bg.Err() == nil && failures < maxResumeAttempts; attempt++ {
			if attempt > 0 && !sleepCtx(c.bg, pos.delay(minGetRetry)) {
				return
			}
			req := c.newRequest(c.bg, http.MethodGet, c.base, nil, "text/event-stream")
			if pos.id != "" {
				req.Header.Set("Last-Event-ID", pos.id)
			}
			resp, e, _ := c.send(req)
			if attempt == 0 {
				close(ready)
			}
			if e != nil {
				failures++
				continue
			}
			if resp.StatusCode != http.StatusOK || mediaType(resp) != "text/event-stream" {
				fsx.CloseRead(resp.Body)
				return // the server offers no stream (or no longer)
			}
			before := pos.id
			e, fatal := c.readStream(c.bg, resp.Body, nil, false, &pos)
			fsx.CloseRead(resp.Body)
			if e != nil && fatal {
				if c.bg.Err() == nil {
					c.retire(e)
				}
				return
			}
			if pos.id != "" && pos.id != before {
				failures = 0 // the stream went on: the server polls this way
			} else {
				failures++
			}
		}
	}()
	return ready
}

// Resuming streams (MCP 2025-11-25, "Resumability and Redelivery";
// docs/mcp.md, "Resuming streams"): a server may close an SSE stream after
// an event with an id, asking the client to come back after its retry
// interval with Last-Event-ID. 2026-07-28 removed resumability.
const (
	// defaultRetry is the wait before reconnecting when the server named
	// no retry interval.
	defaultRetry = time.Second
	// maxRetry bounds the server's retry interval: a stream that asks for
	// an hour is not waited for.
	maxRetry = 30 * time.Second
	// minGetRetry keeps the GET stream's reconnections apart when a server
	// asks for no wait at all and closes at once, forever.
	minGetRetry = 100 * time.Millisecond
	// maxResumeAttempts bounds the reconnections in a row that bring
	// nothing new (no event with a new id).
	maxResumeAttempts = 5
)

// streamPos is where a server's stream stands: its last event ID and the
// retry interval it set, if any.
type streamPos struct {
	id       string
	retry    time.Duration
	hasRetry bool
}

// take records what rd read. An id that cannot be sent back as a header
// value (a control byte) makes the stream not resumable.
func (p *streamPos) take(rd *sse.Reader) {
	if id := rd.LastEventID(); id != p.id {
		p.id = ""
		if len(id) <= maxEventIDBytes && validHeaderValue(id) {
			p.id = id
		}
	}
	if ms, ok := rd.Retry(); ok {
		p.retry, p.hasRetry = time.Duration(min(ms, int64(maxRetry/time.Millisecond)))*time.Millisecond, true
	}
}

// delay is the wait before the next reconnection: the server's retry
// interval (at most maxRetry), else defaultRetry; at least floor.
func (p *streamPos) delay(floor time.Duration) time.Duration {
	d := defaultRetry
	if p.hasRetry {
		d = p.retry
	}
	return max(min(d, maxRetry), floor)
}

// maxEventIDBytes bounds an event id clawkit sends back.
const maxEventIDBytes = 1024

// validHeaderValue: visible ASCII and inner blanks (RFC 9110 field value).
func validHeaderValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if (s[i] < 0x20 && s[i] != '\t') || s[i] == 0x7f || s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// sleepCtx waits d unless ctx ends first; it reports whether d passed.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// resumable reports whether a stream may be resumed: Streamable HTTP
// before 2026-07-28.
func (c *Client) resumable() bool {
	c.Mu.Lock()
	legacy, v := c.legacy, c.protoHdr
	c.Mu.Unlock()
	if v == "" {
		v = c.MetaVersion()
	}
	return !legacy && !mcp.IsModernVersion(v)
}

// resume fetches the answer to request id, whose POST stream ended
// before it, through GET with Last-Event-ID after the server's retry
// interval, again while the server keeps sending new events, at most
// maxResumeAttempts times in a row without one. The request is never
// sent again.
func (c *Client) resume(ctx context.Context, id int64, ch chan mcp.Reply, pos *streamPos) (*mcp.Error, bool) {
	failures := 0
	why := "the stream ended again without it"
	for failures < maxResumeAttempts {
		t := time.NewTimer(pos.delay(0))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, false // the caller names the deadline
		case r := <-ch: // the answer came on the GET stream meanwhile
			t.Stop()
			ch <- r
			return nil, false
		case <-t.C:
		}
		req := c.newRequest(ctx, http.MethodGet, c.base, nil, "text/event-stream")
		req.Header.Set("Last-Event-ID", pos.id)
		resp, e, fatal := c.send(req)
		if e != nil {
			if ctx.Err() != nil {
				return nil, false
			}
			if e.Code != errs.CodeConnectFailed && e.Code != CodeHeaderTimeout {
				return e.WithDelivered(true), fatal
			}
			failures, why = failures+1, e.Message
			continue
		}
		switch {
		case resp.StatusCode == http.StatusMethodNotAllowed:
			fsx.CloseRead(resp.Body)
			e := mcp.Unavailable(CodeResumeFailed, "the server's stream ended before it answered request %d, and the server does not let clients resume it (GET answered 405)", id).WithDelivered(true)
			e.Hint = hintResumeFailed
			return e, false
		case resp.StatusCode >= 300:
			se, sfatal := c.statusError(resp, "the GET resuming a stream")
			fsx.CloseRead(resp.Body)
			if se.Class != mcp.ClassUnavailable || sfatal {
				return se.WithDelivered(true), sfatal
			}
			failures, why = failures+1, se.Message
			continue
		case mediaType(resp) != "text/event-stream":
			fsx.CloseRead(resp.Body)
			return &mcp.Error{Class: mcp.ClassProtocol, Code: CodeBadContentType, Delivered: true,
				Message: fmt.Sprintf("%s answered the GET resuming a stream with Content-Type %q", c.where(), mcp.Clip([]byte(resp.Header.Get("Content-Type")), 80))}, true
		}
		before := pos.id
		e, fatal = c.readStream(ctx, resp.Body, ch, true, pos)
		if e == nil {
			drain(resp.Body)
			fsx.CloseRead(resp.Body)
			return nil, false
		}
		fsx.CloseRead(resp.Body)
		if e.Code != CodeStreamEnded {
			return e, fatal
		}
		if pos.id != "" && pos.id != before {
			failures = 0
		} else {
			failures, why = failures+1, "the stream ended again without it"
		}
		if pos.id == "" {
			break
		}
	}
	e := mcp.Unavailable(CodeResumeFailed, "the server's stream ended before it answered request %d; %d attempts in a row to resume it (GET with Last-Event-ID) brought nothing new (%s)", id, failures, why).WithDelivered(true)
	e.Hint = hintResumeFailed
	return e, false
}

// The hints of this file's codes.
const (
	hintResumeFailed = "the request reached the server and may have taken effect; clawkit does not send it again (check the server's state before repeating it)"
	hintToolHeaders  = "the server's tool definition breaks the MCP 2026-07-28 x-mcp-header rules; ask its author to fix it (if the server also speaks a legacy revision, --protocol-version 2025-11-25 calls it without Mcp-Param headers)"
	hintMismatch     = "the server disagrees with its own tool definition; the call was not carried out (check the server, or its proxy, for a header it rewrites)"
)

// openLegacy opens the 2024-11-05 transport: a GET stream whose first
// event, "endpoint", names where messages are posted; every answer comes
// on the stream. The endpoint must be on the server's origin.
func (c *Client) openLegacy(ctx context.Context, deadline time.Time) *mcp.Error {
	req := c.newRequest(c.bg, http.MethodGet, c.base, nil, "text/event-stream")
	req.Header.Del("MCP-Protocol-Version")
	t := time.AfterFunc(time.Until(deadline), c.bgCancel)
	stopCtx := context.AfterFunc(ctx, c.bgCancel)
	resp, e, _ := c.send(req)
	if e != nil {
		t.Stop()
		stopCtx()
		if c.bg.Err() != nil {
			return mcp.Unavailable(errs.CodeInitializeTimeout, "the legacy SSE stream did not open within %dms", c.Opts.StartupTimeout.Milliseconds())
		}
		return e
	}
	fail := func(e *mcp.Error) *mcp.Error {
		t.Stop()
		stopCtx()
		fsx.CloseRead(resp.Body)
		return e
	}
	if resp.StatusCode >= 300 {
		e, _ := c.statusError(resp, "the SSE stream request")
		return fail(e)
	}
	if mediaType(resp) != "text/event-stream" {
		return fail(&mcp.Error{Class: mcp.ClassProtocol, Code: CodeBadContentType,
			Message: fmt.Sprintf("%s answered the SSE stream request with Content-Type %q", c.where(), mcp.Clip([]byte(resp.Header.Get("Content-Type")), 80))})
	}
	rd := sse.NewReader(c.counted(resp.Body), c.h.MaxLineBytes, c.Opts.MaxFrameBytes)
	var ev sse.Event
	var err error
	for {
		ev, err = rd.Next()
		if err != nil || ev.Type == "endpoint" {
			break
		}
	}
	if err != nil {
		if c.bg.Err() != nil {
			return fail(mcp.Unavailable(errs.CodeInitializeTimeout, "the legacy SSE stream sent no endpoint within %dms", c.Opts.StartupTimeout.Milliseconds()))
		}
		return fail(c.readError(err, nil))
	}
	t.Stop()
	stopCtx()
	ep, perr := c.base.Parse(strings.TrimSpace(string(ev.Data)))
	if perr != nil || ep.Scheme != c.base.Scheme || ep.Host != c.base.Host || ep.User != nil {
		fsx.CloseRead(resp.Body)
		return mcp.ProtocolErr(CodeInvalidEndpoint, "the legacy SSE stream named a message endpoint off the server's origin (%s); refused", redact.URL(string(mcp.Clip(ev.Data, 200))))
	}
	c.Mu.Lock()
	c.legacy, c.endpoint = true, ep
	c.Mu.Unlock()
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer fsx.CloseRead(resp.Body)
		for {
			ev, err := rd.Next()
			if err != nil {
				if c.bg.Err() == nil {
					e := c.readError(err, nil)
					if errors.Is(err, io.EOF) {
						e = mcp.Unavailable(CodeStreamEnded, "the server closed its SSE stream").WithDelivered(true)
					}
					c.retire(e)
				}
				return
			}
			if ev.Type != "" && ev.Type != "message" {
				continue
			}
			if e := c.dispatch(ev.Data); e != nil {
				c.retire(e)
				return
			}
		}
	}()
	return nil
}

// postLegacy posts one message to the legacy endpoint; the answer comes
// on the stream.
func (c *Client) postLegacy(ctx context.Context, body []byte, isRequest bool) (*mcp.Error, bool) {
	c.Mu.Lock()
	ep := c.endpoint
	c.Mu.Unlock()
	req := c.newRequest(ctx, http.MethodPost, ep, body, "application/json, text/event-stream")
	req.Header.Del("MCP-Protocol-Version")
	resp, e, fatal := c.send(req)
	if e != nil {
		if ctx.Err() != nil {
			return nil, false
		}
		return e, fatal
	}
	defer fsx.CloseRead(resp.Body)
	if resp.StatusCode >= 300 {
		return c.statusError(resp, "a message")
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(c.counted(resp.Body), maxSmallBody))
	return nil, false
}

// retire stops taking requests, keeps the first fatal error, rejects every
// pending request with it and ends the streams.
func (c *Client) retire(e *mcp.Error) {
	c.Mu.Lock()
	first, _, pending := c.RetireLocked(c.scrub(e))
	c.Mu.Unlock()
	mcp.Reject(pending, first)
	c.bgCancel()
}

// Stop ends the connection: pending requests are rejected, the streams
// closed, and a session the server assigned is ended with DELETE. The
// CleanupResult says whether the server confirmed it; nil when there was
// no session to end.
func (c *Client) Stop() (*mcp.CleanupResult, error) {
	t0 := time.Now()
	c.retire(mcp.Unavailable(errs.CodeClientStopped, "the client was stopped"))
	c.Mu.Lock()
	sid, legacy := c.sessionID, c.legacy
	c.Mu.Unlock()
	var res *mcp.CleanupResult
	if sid != "" && !legacy {
		sc := &mcp.SessionCleanup{Transport: TransportStreamable}
		// A server may stop a whole process tree before it answers (as
		// mcp proxy --listen does: EOF, SIGTERM and SIGKILL graces,
		// 2 s each by default): deleteTimeout leaves room for them.
		ctx, cancel := context.WithTimeout(context.Background(), deleteTimeout)
		req := c.newRequest(ctx, http.MethodDelete, c.base, nil, "application/json, text/event-stream")
		resp, err := c.hc.Do(req)
		cancel()
		switch {
		case err != nil:
			var ue *url.Error
			if errors.As(err, &ue) {
				err = ue.Err
			}
			sc.Error = redact.Values(err.Error(), c.allSecrets()...)
		default:
			sc.Status = resp.StatusCode
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxSmallBody))
			fsx.CloseRead(resp.Body)
			sc.Deleted = resp.StatusCode >= 200 && resp.StatusCode < 300
			if resp.StatusCode == http.StatusMethodNotAllowed {
				sc.Error = "the server does not let clients end sessions (405)"
			}
		}
		res = &mcp.CleanupResult{Reason: "session-delete", Session: sc, DurationMs: time.Since(t0).Milliseconds()}
	}
	done := make(chan struct{})
	go func() { c.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
	}
	c.hc.CloseIdleConnections()
	return res, nil
}

// probe sends server/discover for the auto mode over HTTP. An HTTP error
// status (but an authorisation refusal or a redirect) is a refusal of the
// method, as a JSON-RPC error would be; no answer within the probe bound
// declines without retiring the connection.
func (c *Client) probe(ctx context.Context, deadline time.Time) (json.RawMessage, *mcp.Error, bool) {
	id := c.TakeID()
	body := mcp.AppendRequest(nil, id, "server/discover", c.WithMeta(nil))
	ch := make(chan mcp.Reply, 1)
	c.Mu.Lock()
	if !c.RestoreLocked(id, ch) {
		c.Mu.Unlock()
		return nil, c.RetainedFatal().WithDelivered(false), true
	}
	c.Mu.Unlock()
	defer c.Forget(id)
	// The probe bound counts from the moment the request was written, as
	// on stdio from the moment the server read it: a slow connection is not
	// taken for a legacy server.
	sctx, scancel := context.WithDeadlineCause(ctx, deadline, errRequestDeadline)
	defer scancel()
	rctx, cancel := context.WithCancelCause(sctx)
	defer cancel(nil)
	var bound *time.Timer
	var bmu sync.Mutex
	defer func() {
		bmu.Lock()
		if bound != nil {
			bound.Stop()
		}
		bmu.Unlock()
	}()
	rctx = httptrace.WithClientTrace(rctx, &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) {
		bmu.Lock()
		if bound == nil {
			bound = time.AfterFunc(c.Opts.ProbeTimeout, func() { cancel(errProbeBound) })
		}
		bmu.Unlock()
	}})
	stop := context.AfterFunc(c.bg, func() { cancel(nil) })
	defer stop()
	var e *mcp.Error
	var fatal bool
	if c.Legacy() {
		e, fatal = c.postLegacy(rctx, body, true)
	} else {
		e, fatal = c.postStreamMsg(rctx, body, id, ch, "server/discover", nil)
	}
	select {
	case r := <-ch:
		return r.Result, r.Err, true
	default:
	}
	if e != nil {
		if e.HTTPStatus != 0 && e.Code == "http_status" {
			return nil, &mcp.Error{Class: mcp.ClassProtocol, Code: errs.CodeRPCError, Message: e.Message, HTTPStatus: e.HTTPStatus,
				RPC: &mcp.RPCError{Code: -32600, Message: e.Message}}, true
		}
		if fatal {
			c.retire(e)
		}
		return nil, e.WithDelivered(false), true
	}
	select {
	case r := <-ch:
		return r.Result, r.Err, true
	case <-rctx.Done():
	}
	switch {
	case errors.Is(context.Cause(rctx), errProbeBound):
		return nil, nil, false
	case c.bg.Err() != nil:
		return nil, c.RetainedFatal().WithDelivered(false), true
	case ctx.Err() != nil && !errors.Is(context.Cause(rctx), errRequestDeadline):
		e := mcp.CtxError(ctx, "server/discover", func() *mcp.Error { return mcp.Unavailable(errs.CodeInitializeTimeout, "server/discover timed out") })
		c.retire(e)
		return nil, e, true
	case time.Now().After(deadline):
		e := mcp.Unavailable(errs.CodeInitializeTimeout, "server/discover timed out after %dms", c.Opts.StartupTimeout.Milliseconds())
		c.retire(e)
		return nil, e, true
	}
	return nil, nil, false
}

// Transport is TransportStreamable or TransportSSE (the legacy one).
func (c *Client) Transport() string {
	if c.Legacy() {
		return TransportSSE
	}
	return TransportStreamable
}

// ParseHeaderSpec reads --header NAME=@PROFILE. A value given in clear is
// refused: a header sent to a server is a credential more often than not,
// and a command line is visible to every user of the machine (ps) and kept
// in shell histories. Headers the transport owns may not be set.
func ParseHeaderSpec(spec string) (name, profile string, err error) {
	n, v, ok := strings.Cut(spec, "=")
	if !ok || n == "" || !validToken(n) {
		return "", "", errs.Usage(errs.CodeInvalidHeader, "--header %s: expected NAME=@PROFILE", termsafe.Text(redact.Values(spec, v))).
			WithHint("e.g. --header Authorization=@my-bearer-profile (clawkit auth add my-bearer-profile --provider mcp --kind bearer --api-key-stdin)")
	}
	if !strings.HasPrefix(v, "@") || len(v) < 2 {
		return "", "", errs.Usage(errs.CodeInvalidHeader, "--header %s: header values come from auth profiles (NAME=@PROFILE), never from the command line", n).
			WithHint("store the value: clawkit auth add PROFILE --provider mcp --kind header --api-key-stdin, then --header %s=@PROFILE", n)
	}
	switch http.CanonicalHeaderKey(n) {
	case "Host", "Content-Type", "Content-Length", "Accept", "Mcp-Session-Id", "Mcp-Protocol-Version", "Connection", "Transfer-Encoding", "Last-Event-Id", "Te", "Upgrade":
		return "", "", errs.Usage(errs.CodeInvalidHeader, "--header %s: the transport sets this header itself", n)
	}
	return n, v[1:], nil
}

// validToken: an HTTP field name (RFC 9110 token).
func validToken(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return s != ""
}
