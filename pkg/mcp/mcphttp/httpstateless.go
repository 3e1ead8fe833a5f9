package mcphttp

// mcp proxy --listen's 2026-07-28 era (docs/mcp.md, "The proxy's eras").
//
// 2026-07-28 has no session: every request names its protocol version and
// the client's capabilities in params._meta, and a server may answer any
// request from anyone. The proxy serves such clients with ONE shared child
// (started at the first such request, and probed with server/discover):
// a single server process is what such a server is, and what makes its
// state (tool lists, the key that signs input_required request states,
// subscriptions) one for every client. Each request gets an id of the
// proxy's own on the child's stdin, so clients' ids never collide, and its
// answer goes back under the client's id. A child that does not speak
// 2026-07-28 makes the proxy answer such requests -32022 with the legacy
// versions, and the client falls back to initialize and a session.
//
// What HTTP adds to the protocol is the proxy's to check, the child never
// sees headers: MCP-Protocol-Version against _meta, Mcp-Method and
// Mcp-Name against the body, Mcp-Param-* against the tool's x-mcp-header
// annotations (SEP-2243), and the HTTP status of error answers (SEP-2575).

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/clawkit/clawkit/pkg/mcp"
	"github.com/clawkit/clawkit/pkg/mcp/mcpstdio"
	"github.com/clawkit/clawkit/pkg/termsafe"
)

const (
	// statelessProbeTimeout bounds the child's answer to the proxy's own
	// server/discover; a child silent that long is taken for a legacy one.
	statelessProbeTimeout = 20 * time.Second
	// toolsRefetchEvery bounds how often a call naming a tool the proxy
	// does not know makes it list the tools again.
	toolsRefetchEvery = time.Second
	maxToolPages      = 64
)

// statelessChild is the child shared by every 2026-07-28 client.
type statelessChild struct {
	p    *httpProxy
	proc *mcpstdio.Process

	wmu sync.Mutex

	mu      sync.Mutex
	calls   map[int64]*statelessCall
	next    int64
	listens int
	// own counts the proxy's own requests (the probe, tools/list): they
	// are not the clients' and do not count against MaxPending.
	own int
	// version is the 2026-07-28-era version the child speaks (for the
	// proxy's own requests); supported, all it speaks.
	version   string
	supported []string
	// tools holds each tool's x-mcp-header bindings; nil until listed,
	// and again after notifications/tools/list_changed.
	tools   map[string][]headerBinding
	toolsAt time.Time

	done       chan struct{}
	readerDone chan struct{}
	stopped    chan struct{}
	endOnce    sync.Once
}

// statelessCall is one request in flight on the shared child.
type statelessCall struct {
	// clientID is the client's id; nil for the proxy's own requests.
	clientID json.RawMessage
	// token is the client's progressToken (nil: none); the child sees
	// the proxy's id in its place.
	token  json.RawMessage
	logs   bool // the request asked for notifications/message
	listen bool // subscriptions/listen: open until the client goes
	stream chan []byte
	answer chan []byte
}

// unsupportedAnswer is the -32022 for a 2026-07-28 request the proxy
// cannot serve that way: the child speaks only the legacy versions.
func unsupportedAnswer(id json.RawMessage, requested string) []byte {
	b, _ := json.Marshal(rpcError{"2.0", id, rpcErrorObject{Code: codeUnsupportedVersion,
		Message: "the server behind this proxy speaks only the legacy protocol versions: open a session with initialize",
		Data: struct {
			Supported []string `json:"supported"`
			Requested string   `json:"requested"`
		}{mcp.LegacyProtocolVersions, requested}}})
	return b
}

// writeAnswer answers a request with one JSON-RPC message as
// application/json under status.
func writeAnswer(w http.ResponseWriter, status int, msg []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(msg)
}

// stateless returns the shared child, starting and probing it when there
// is none; nil and the answer to give when it cannot serve the era.
func (p *httpProxy) stateless(id json.RawMessage, requested string) (*statelessChild, int, []byte) {
	p.slStart.Lock()
	defer p.slStart.Unlock()
	p.mu.Lock()
	if c := p.sl; c != nil {
		p.mu.Unlock()
		return c, 0, nil
	}
	legacy, closing := p.slLegacy, p.closing
	p.mu.Unlock()
	if closing {
		return nil, http.StatusServiceUnavailable, rpcErrorBytes(id, -32000, "the proxy is shutting down")
	}
	if legacy {
		return nil, http.StatusBadRequest, unsupportedAnswer(id, requested)
	}
	if status, why := p.reserve(); status != 0 {
		return nil, status, rpcErrorBytes(id, -32000, why)
	}
	proc, err := mcpstdio.StartProcess(p.spec)
	if err != nil {
		p.mu.Lock()
		p.opening--
		p.mu.Unlock()
		p.event("the 2026-07-28 server could not be started: %v", err)
		return nil, http.StatusBadGateway, rpcErrorBytes(id, -32000, "the server could not be started")
	}
	c := &statelessChild{p: p, proc: proc, calls: map[int64]*statelessCall{},
		done: make(chan struct{}), readerDone: make(chan struct{}), stopped: make(chan struct{})}
	p.mu.Lock()
	p.opening--
	if p.closing {
		p.mu.Unlock()
		c.end("the proxy is shutting down")
		return nil, http.StatusServiceUnavailable, rpcErrorBytes(id, -32000, "the proxy is shutting down")
	}
	p.sl = c
	p.mu.Unlock()
	go c.read()
	go func() {
		select {
		case <-proc.Exited():
			c.end("the server exited")
		case <-c.done:
		}
	}()
	// The proxy's own server/discover says whether the child speaks
	// 2026-07-28 at all.
	params := []byte(`{"_meta":{"` + metaProtocolVersion + `":"` + mcp.ModernProtocolVersion + `","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"clawkit-proxy","version":"1"}}}`)
	ans, err := c.request("server/discover", params, statelessProbeTimeout)
	var versions []string
	if err == nil {
		_ = json.Unmarshal(getPath(ans, "result", "supportedVersions"), &versions)
	}
	var modern string
	for _, v := range versions {
		if mcp.IsModernVersion(v) && (modern == "" || v == mcp.ModernProtocolVersion) {
			modern = v
		}
	}
	if modern == "" {
		why := "it answered server/discover with no 2026-07-28 version"
		if err != nil {
			why = err.Error()
		}
		p.event("the server does not speak 2026-07-28 (%s); such clients get -32022 and open sessions", why)
		p.mu.Lock()
		p.slLegacy = err == nil || !errors.Is(err, errChildEnded)
		p.mu.Unlock()
		c.end("it does not speak 2026-07-28")
		return nil, http.StatusBadRequest, unsupportedAnswer(id, requested)
	}
	c.mu.Lock()
	c.version, c.supported = modern, versions
	c.mu.Unlock()
	p.event("2026-07-28 server opened (pid %d), shared by every client of that era", proc.Pid())
	return c, 0, nil
}

var errChildEnded = errors.New("the server ended")

// end stops the shared child once; the next 2026-07-28 request starts a
// new one.
func (c *statelessChild) end(why string) {
	c.endOnce.Do(func() {
		close(c.done)
		p := c.p
		p.mu.Lock()
		if p.sl == c {
			p.sl = nil
		}
		p.stops.Add(1)
		p.mu.Unlock()
		go func() {
			defer p.stops.Done()
			_, err := c.proc.Stop(c.readerDone)
			close(c.stopped)
			if err != nil {
				p.mu.Lock()
				p.report.Unconfirmed = append(p.report.Unconfirmed, fmt.Sprintf("the 2026-07-28 server: %v", err))
				p.mu.Unlock()
			}
			p.event("2026-07-28 server closed (%s)", why)
		}()
	})
}

func (c *statelessChild) write(line []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	in := c.proc.Stdin()
	_ = in.SetWriteDeadline(time.Now().Add(c.p.o.RequestTimeout))
	_, err := in.Write(line)
	return err
}

// register puts call in flight under a fresh id of the proxy's; ok false
// past the limits (MaxPending calls, MaxSessions listen streams).
func (c *statelessChild) register(call *statelessCall) (int64, string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case <-c.done:
		return 0, "the server's session ended"
	default:
	}
	if call.listen {
		if c.listens >= c.p.o.MaxSessions {
			return 0, fmt.Sprintf("too many subscriptions/listen streams (limit %d, --max-sessions)", c.p.o.MaxSessions)
		}
		c.listens++
	} else if call.clientID != nil && len(c.calls)-c.listens-c.own >= c.p.o.MaxPending {
		return 0, fmt.Sprintf("too many pending requests (limit %d)", c.p.o.MaxPending)
	}
	if call.clientID == nil {
		c.own++
	}
	c.next++
	c.calls[c.next] = call
	return c.next, ""
}

// uncount undoes register's counts for a call leaving flight (c.mu held).
func (c *statelessChild) uncount(call *statelessCall) {
	switch {
	case call == nil:
	case call.listen:
		c.listens--
	case call.clientID == nil:
		c.own--
	}
}

// forget takes call n out of flight; cancel also tells the child.
func (c *statelessChild) forget(n int64, cancel bool) {
	c.mu.Lock()
	call := c.calls[n]
	delete(c.calls, n)
	c.uncount(call)
	c.mu.Unlock()
	if call != nil && cancel {
		var b []byte
		b = mcp.AppendNotification(b, "notifications/cancelled", []byte(`{"requestId":`+strconv.FormatInt(n, 10)+`,"reason":"the client went away"}`))
		_ = c.write(b)
	}
}

// request is the proxy's own request to the child; it returns the answer.
func (c *statelessChild) request(method string, params []byte, timeout time.Duration) ([]byte, error) {
	call := &statelessCall{answer: make(chan []byte, 1)}
	n, why := c.register(call)
	if why != "" {
		return nil, errors.New(why)
	}
	if err := c.write(mcp.AppendRequest(nil, n, method, params)); err != nil {
		c.forget(n, false)
		return nil, errChildEnded
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case a := <-call.answer:
		if _, isErr := errorCode(a); isErr {
			// The server's text, bounded and made harmless for a terminal.
			return a, fmt.Errorf("%s: %s", method, termsafe.Text(mcp.Clip(getPath(a, "error", "message"), 200)))
		}
		return a, nil
	case <-t.C:
		c.forget(n, true)
		return nil, fmt.Errorf("no answer to %s in %s", method, timeout)
	case <-c.done:
		return nil, errChildEnded
	}
}

// meta is the _meta of the proxy's own requests.
func (c *statelessChild) meta() []byte {
	c.mu.Lock()
	v := c.version
	c.mu.Unlock()
	return []byte(`{"` + metaProtocolVersion + `":` + string(mcp.AppendJSONString(nil, v)) + `,"io.modelcontextprotocol/clientCapabilities":{}}`)
}

// toolBindings is the x-mcp-header bindings of tool name; known false
// when the proxy cannot say (the server did not list it).
func (c *statelessChild) toolBindings(name string) ([]headerBinding, bool) {
	c.mu.Lock()
	b, ok := c.tools[name]
	stale := !ok && time.Since(c.toolsAt) > toolsRefetchEvery
	c.mu.Unlock()
	if ok || !stale {
		return b, ok
	}
	tools := map[string][]headerBinding{}
	cursor := []byte(nil)
	for range maxToolPages {
		params := []byte(`{"_meta":` + string(c.meta()) + `}`)
		if cursor != nil {
			params = setMember(params, "cursor", cursor)
		}
		ans, err := c.request("tools/list", params, c.p.o.RequestTimeout)
		if err != nil {
			break
		}
		var list []struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"inputSchema"`
		}
		_ = json.Unmarshal(getPath(ans, "result", "tools"), &list)
		for _, t := range list {
			tools[t.Name] = paramBindings(t.InputSchema)
		}
		cursor = getPath(ans, "result", "nextCursor")
		if mcp.FirstByte(cursor) != '"' {
			break
		}
	}
	c.mu.Lock()
	c.tools, c.toolsAt = tools, time.Now()
	c.mu.Unlock()
	b, ok = tools[name]
	return b, ok
}

// read routes the child's stdout, line by line within MaxFrame.
func (c *statelessChild) read() {
	defer close(c.readerDone)
	fr := mcp.NewLineFramer(c.p.o.MaxFrame - 1)
	buf := make([]byte, 64<<10)
	out := c.proc.Stdout()
	for {
		n, err := out.Read(buf)
		if n > 0 {
			if ferr := fr.Push(buf[:n], c.route); ferr != nil {
				c.p.event("the 2026-07-28 server wrote a message over the frame limit; ended")
				c.proc.TerminatePromptly()
				c.end("frame limit")
				return
			}
		}
		if err != nil {
			c.end("the server closed its stdout")
			return
		}
	}
}

// route sends one line of the child's to the request it belongs to: an
// answer by its id, progress by its token, a subscription's notification
// by its subscription id (the listen request's id), a log message to the
// oldest request that asked for logs. The rest is for no one.
func (c *statelessChild) route(line []byte) error {
	line = bytes.TrimSpace(line)
	if len(line) == 0 || !json.Valid(line) || line[0] != '{' {
		return nil
	}
	id, method, params := mcp.FrameMembers(line)
	if method == nil {
		n, ok := mcp.SafeIntegerID(id)
		if !ok {
			return nil
		}
		c.mu.Lock()
		call := c.calls[n]
		delete(c.calls, n)
		c.uncount(call)
		c.mu.Unlock()
		if call == nil {
			return nil
		}
		msg := bytes.Clone(line)
		if call.clientID != nil {
			msg = setMember(msg, "id", call.clientID)
			if call.listen {
				msg = setPath(msg, call.clientID, "result", "_meta", metaSubscriptionID)
			}
		}
		call.answer <- msg
		return nil
	}
	m, _ := jsonStringValue(method)
	if id != nil {
		// A request of the server's: 2026-07-28 has none on this
		// transport (input_required results replace them), and no
		// client could be asked.
		b := rpcErrorBytes(bytes.Clone(id), mcp.RPCMethodNotFound, "the proxy serves 2026-07-28 clients statelessly: a server request has no client to go to")
		go func() { _ = c.write(append(b, '\n')) }()
		return nil
	}
	if m == "notifications/tools/list_changed" {
		c.mu.Lock()
		c.tools, c.toolsAt = nil, time.Time{}
		c.mu.Unlock()
	}
	var call *statelessCall
	var msg []byte
	c.mu.Lock()
	if tok := getMember(params, "progressToken"); m == "notifications/progress" && tok != nil {
		if n, ok := mcp.SafeIntegerID(tok); ok {
			if call = c.calls[n]; call != nil && call.token != nil {
				msg = setPath(bytes.Clone(line), call.token, "params", "progressToken")
			} else {
				call = nil
			}
		}
	} else if sub := getPath(params, "_meta", metaSubscriptionID); sub != nil {
		if n, ok := mcp.SafeIntegerID(sub); ok {
			if call = c.calls[n]; call != nil && call.listen && call.clientID != nil {
				msg = setPath(bytes.Clone(line), call.clientID, "params", "_meta", metaSubscriptionID)
			} else {
				call = nil
			}
		}
	} else if m == "notifications/message" {
		var oldest int64
		for n, k := range c.calls {
			if k.logs && (oldest == 0 || n < oldest) {
				oldest, call = n, k
			}
		}
		msg = bytes.Clone(line)
	}
	c.mu.Unlock()
	if call != nil && call.stream != nil {
		select {
		case call.stream <- msg:
		default: // a client that does not read loses messages, not our memory
		}
	}
	return nil
}

// isModernPost says whether a POST without a session belongs to the
// 2026-07-28 era: its MCP-Protocol-Version is not a legacy one, or, with
// none, its _meta names a version.
func isModernPost(headerVersion string, params []byte) bool {
	if headerVersion != "" {
		return !slices.Contains(mcp.LegacyProtocolVersions, headerVersion)
	}
	return getPath(params, "_meta", metaProtocolVersion) != nil
}

// postStateless serves one 2026-07-28 POST (docs/mcp.md, "The proxy's
// eras"). body is one valid JSON object.
func (p *httpProxy) postStateless(w http.ResponseWriter, r *http.Request, body, id []byte, m string, params []byte) {
	if id == nil {
		// A notification (cancellation is the closing of a request's
		// stream in this era) or a response (there are no server
		// requests): nothing to relay.
		w.WriteHeader(http.StatusAccepted)
		return
	}
	if m == "" {
		httpError(w, http.StatusBadRequest, "the body must be a JSON-RPC request")
		return
	}
	hv := r.Header.Get(headerProtocolVersion)
	metaV, _ := jsonStringValue(getPath(params, "_meta", metaProtocolVersion))
	switch {
	case hv == "":
		writeAnswer(w, http.StatusBadRequest, rpcErrorBytes(id, codeHeaderMismatch, "the MCP-Protocol-Version header is required for requests carrying _meta "+metaProtocolVersion))
		return
	case metaV == "":
		writeAnswer(w, http.StatusBadRequest, rpcErrorBytes(id, codeInvalidParams, "missing or invalid _meta field "+metaProtocolVersion))
		return
	case hv != metaV:
		writeAnswer(w, http.StatusBadRequest, rpcErrorBytes(id, codeHeaderMismatch, fmt.Sprintf("the MCP-Protocol-Version header %q does not match _meta %s %q", hv, metaProtocolVersion, metaV)))
		return
	}
	if why := checkStandardHeaders(r.Header, m, params); why != "" {
		writeAnswer(w, http.StatusBadRequest, rpcErrorBytes(id, codeHeaderMismatch, why))
		return
	}
	c, status, refusal := p.stateless(id, metaV)
	if c == nil {
		if status == http.StatusServiceUnavailable {
			w.Header().Set("Retry-After", "1")
		}
		writeAnswer(w, status, refusal)
		return
	}
	if m == "tools/call" {
		name, _ := jsonStringValue(getMember(params, "name"))
		if b, ok := c.toolBindings(name); ok && len(b) > 0 {
			if why := checkParamHeaders(r.Header, params, b); why != "" {
				writeAnswer(w, http.StatusBadRequest, rpcErrorBytes(id, codeHeaderMismatch, why))
				return
			}
		}
	}
	call := &statelessCall{clientID: bytes.Clone(id), listen: m == "subscriptions/listen",
		logs:   getPath(params, "_meta", metaLogLevel) != nil,
		stream: make(chan []byte, proxyStreamBuffer), answer: make(chan []byte, 1)}
	tok := getPath(params, "_meta", "progressToken")
	if tok != nil {
		call.token = bytes.Clone(tok)
	}
	n, why := c.register(call)
	if why != "" {
		w.Header().Set("Retry-After", "1")
		writeAnswer(w, http.StatusServiceUnavailable, rpcErrorBytes(id, -32000, why))
		return
	}
	nid := strconv.AppendInt(nil, n, 10)
	out := setMember(body, "id", nid)
	if tok != nil {
		out = setPath(out, nid, "params", "_meta", "progressToken")
	}
	if err := c.write(append(out, '\n')); err != nil {
		c.forget(n, false)
		c.end("the server stopped reading")
		writeAnswer(w, http.StatusBadGateway, rpcErrorBytes(id, -32000, "the server does not accept the request"))
		return
	}
	var timeout <-chan time.Time
	if !call.listen {
		t := time.NewTimer(p.o.RequestTimeout)
		defer t.Stop()
		timeout = t.C
	}
	keep := time.NewTicker(15 * time.Second)
	defer keep.Stop()
	// The first message decides the form: an answer alone is one JSON
	// body under its status (SEP-2575: 404 for an unknown method, 400 for
	// a bad request); anything before it opens an SSE stream.
	var fl http.Flusher
	streaming := false
	startStream := func() {
		streaming = true
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		w.WriteHeader(http.StatusOK)
		fl, _ = w.(http.Flusher)
	}
	finish := func(msg []byte) {
		if streaming {
			writeEvent(w, fl, msg)
			return
		}
		writeAnswer(w, modernErrorStatus(msg), msg)
	}
	for {
		select {
		case msg := <-call.answer:
			for drained := false; !drained; {
				select {
				case s := <-call.stream:
					if !streaming {
						startStream()
					}
					writeEvent(w, fl, s)
				default:
					drained = true
				}
			}
			finish(msg)
			return
		case s := <-call.stream:
			if !streaming {
				startStream()
			}
			writeEvent(w, fl, s)
		case <-keep.C:
			if streaming {
				writeComment(w, fl)
			}
		case <-timeout:
			c.forget(n, true)
			finish(rpcErrorBytes(id, mcp.RPCRequestTimeout, fmt.Sprintf("Request timed out after %dms", p.o.RequestTimeout.Milliseconds())))
			return
		case <-c.done:
			c.forget(n, false)
			finish(rpcErrorBytes(id, -32000, "the server's session ended"))
			return
		case <-r.Context().Done():
			c.forget(n, true)
			return
		}
	}
}

func writeComment(w http.ResponseWriter, fl http.Flusher) {
	_, _ = w.Write([]byte(": keep-alive\n\n"))
	if fl != nil {
		fl.Flush()
	}
}
