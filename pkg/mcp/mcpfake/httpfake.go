package mcpfake

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// HTTPModes lists the HTTP servers of HTTPMain: a well-behaved go-sdk
// server in each transport, and hostile Streamable HTTP servers whose
// opening is correct and whose answer to tools/call is not.
var HTTPModes = map[string]string{
	"gosdk":               "the Go SDK's Streamable HTTP handler serving tools echo, add and slow, a prompt greet and a resource mem://hello",
	"gosdk-json":          "the same, answering each request with one JSON body instead of an SSE stream",
	"gosdk-stateless":     "the same, stateless (no Mcp-Session-Id, no GET stream)",
	"gosdk-sse":           "the same over the Go SDK's legacy HTTP+SSE handler (2024-11-05 transport)",
	"echo":                "a hand-written Streamable HTTP server: initialize assigns a session, tools/call echo answers as SSE with a notification first",
	"silent-probe":        "echo, but server/discover is never answered (the request is held until the client gives up)",
	"endless-line":        "tools/call: an SSE stream whose first line never ends",
	"huge-event":          "tools/call: one SSE event of 1 GiB of data lines, streamed",
	"huge-json":           "tools/call: a JSON body of 1 GiB, streamed",
	"slowloris":           "tools/call: an SSE stream that trickles one comment byte every 50ms, forever",
	"silent-stream":       "tools/call: SSE headers, then nothing, ever",
	"slow-headers":        "tools/call: no response headers, ever",
	"wrong-ctype":         "tools/call: 200 with Content-Type text/html",
	"session-change":      "tools/call: answered under another Mcp-Session-Id",
	"redirect":            "tools/call: 307 to another host (127.0.0.2), with a key in the query",
	"echo-auth":           "every request: 401 whose body quotes the Authorization header it got",
	"delete-refused":      "echo, but DELETE of the session answers 405",
	"echo-secret":         "echo, but the Authorization header it got comes back in serverInfo and in the JSON-RPC error (message and data) of tools/call auth-error",
	"expire":              "tools/call: 404 (the session is gone)",
	"legacy-bad-endpoint": "POST 405 (not Streamable HTTP); GET: a legacy SSE stream whose endpoint is on another origin",
	"legacy-long-line":    "POST 405; GET: a legacy SSE stream whose first line never ends",
	"legacy-no-endpoint":  "POST 405; GET: a legacy SSE stream that never names its endpoint",
	"gosdk-asks":          "the Go SDK's Streamable HTTP handler serving tools that ask the client: elicit (a form of defaults, or arguments.params), roots, sample",
	"mrtr":                "a stateless 2026-07-28 server (server/discover, no session) whose tools answer with input_required results, as the stdio mode mrtr (asks.go)",
}

// HTTPMain is the helper command: mcphttpfake MODE URLFILE. It listens on
// 127.0.0.1 (an ephemeral port), writes its base URL to URLFILE atomically
// once it accepts connections, and serves until killed (10 minutes at
// most, so a broken test cannot leak it).
func HTTPMain() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: mcphttpfake MODE URLFILE")
		os.Exit(2)
	}
	os.Exit(RunHTTP(os.Args[1], os.Args[2]))
}

// RunHTTP serves mode; see HTTPMain.
func RunHTTP(mode, urlFile string) int {
	if _, ok := HTTPModes[mode]; !ok && !isResumeMode(mode) {
		fmt.Fprintf(os.Stderr, "mcphttpfake: unknown mode %q\n", mode)
		return 2
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	h, path := HTTPHandler(mode, ln.Addr().String())
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	if err := writeFileAtomic(urlFile, "http://"+ln.Addr().String()+path); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	go func() { time.Sleep(10 * time.Minute); os.Exit(3) }()
	_ = srv.Serve(ln)
	return 0
}

// SDKServer is the go-sdk server the modes gosdk* serve.
func SDKServer() *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "mcpfake-gosdk", Version: "1.8.0"}, nil)
	type echoIn struct {
		Message string `json:"message"`
	}
	sdk.AddTool(s, &sdk.Tool{Name: "echo", Description: "echoes its message"}, func(_ context.Context, _ *sdk.CallToolRequest, in echoIn) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "Echo: " + in.Message}}}, nil, nil
	})
	type addIn struct {
		A float64 `json:"a"`
		B float64 `json:"b"`
	}
	sdk.AddTool(s, &sdk.Tool{Name: "add", Description: "adds a and b"}, func(_ context.Context, _ *sdk.CallToolRequest, in addIn) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: fmt.Sprint(in.A + in.B)}}}, nil, nil
	})
	type slowIn struct {
		Ms int `json:"ms"`
	}
	sdk.AddTool(s, &sdk.Tool{Name: "slow", Description: "sleeps ms milliseconds (or until cancelled)"}, func(ctx context.Context, _ *sdk.CallToolRequest, in slowIn) (*sdk.CallToolResult, any, error) {
		select {
		case <-time.After(time.Duration(in.Ms) * time.Millisecond):
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "slept"}}}, nil, nil
	})
	s.AddPrompt(&sdk.Prompt{Name: "greet", Description: "a greeting"}, func(_ context.Context, _ *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
		return &sdk.GetPromptResult{Messages: []*sdk.PromptMessage{{Role: "user", Content: &sdk.TextContent{Text: "Hello from the Go SDK"}}}}, nil
	})
	s.AddResource(&sdk.Resource{URI: "mem://hello", Name: "hello", MIMEType: "text/plain"}, func(_ context.Context, r *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
		return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: r.Params.URI, MIMEType: "text/plain", Text: "hello resource"}}}, nil
	})
	return s
}

// HTTPHandler is mode's handler and the path it serves MCP on. addr is
// the listener's address (the redirect mode points at the same port on
// another loopback host).
func HTTPHandler(mode, addr string) (http.Handler, string) {
	switch mode {
	case "gosdk":
		s := SDKServer()
		return sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil), "/mcp"
	case "gosdk-json":
		s := SDKServer()
		return sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, &sdk.StreamableHTTPOptions{JSONResponse: true}), "/mcp"
	case "gosdk-stateless":
		s := SDKServer()
		return sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, &sdk.StreamableHTTPOptions{Stateless: true}), "/mcp"
	case "gosdk-sse":
		s := SDKServer()
		return sdk.NewSSEHandler(func(*http.Request) *sdk.Server { return s }, nil), "/sse"
	case "gosdk-asks":
		s := asksSDKServer()
		return sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil), "/mcp"
	}
	if isResumeMode(mode) {
		return &resumeHTTP{mode: mode}, "/mcp"
	}
	f := &hostileHTTP{mode: mode, addr: addr, sessions: map[string]bool{}}
	return f, "/mcp"
}

type hostileHTTP struct {
	mode     string
	addr     string
	mu       sync.Mutex
	n        int
	sessions map[string]bool
}

func (f *hostileHTTP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if f.mode == "echo-auth" {
		w.WriteHeader(http.StatusUnauthorized)
		// A fake server: a client that went away is not its concern (here
		// and below).
		_, _ = fmt.Fprintf(w, "bad credentials: %s", r.Header.Get("Authorization"))
		return
	}
	if strings.HasPrefix(f.mode, "legacy-") {
		f.serveLegacy(w, r)
		return
	}
	sid := r.Header.Get("Mcp-Session-Id")
	switch r.Method {
	case http.MethodDelete:
		if f.mode == "delete-refused" {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		f.mu.Lock()
		delete(f.sessions, sid)
		f.mu.Unlock()
		w.WriteHeader(http.StatusOK)
		return
	case http.MethodGet:
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	case http.MethodPost:
	default:
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	m, ok := readHTTPRequest(w, r)
	if !ok {
		return
	}
	answer := func(result any) {
		w.Header().Set("Content-Type", "application/json")
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": result})
		_, _ = w.Write(b)
	}
	if f.mode == "mrtr" {
		switch m.Method {
		case "server/discover":
			answer(map[string]any{"resultType": "complete", "supportedVersions": []string{"2026-07-28"},
				"capabilities": map[string]any{"tools": map[string]any{}},
				"_meta":        map[string]any{"io.modelcontextprotocol/serverInfo": map[string]any{"name": "mcpfake-http-mrtr", "version": "1.0.0"}}})
		case "tools/call":
			f.mu.Lock()
			res := MRTRAnswer(&f.n, m.Params)
			f.mu.Unlock()
			answer(res)
		default:
			w.Header().Set("Content-Type", "application/json")
			_, _ = fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"Method not found"}}`, m.ID)
		}
		return
	}
	switch m.Method {
	case "server/discover":
		if f.mode == "silent-probe" {
			select {
			case <-r.Context().Done():
			case <-time.After(10 * time.Minute):
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"Method not found"}}`, m.ID)
		return
	case "initialize":
		f.mu.Lock()
		f.n++
		id := fmt.Sprintf("session-%d", f.n)
		f.sessions[id] = true
		f.mu.Unlock()
		w.Header().Set("Mcp-Session-Id", id)
		info := map[string]any{"name": "mcpfake-http-" + f.mode, "version": "1.0.0"}
		if f.mode == "echo-secret" {
			info = map[string]any{"name": "mcpfake-http-echo-secret " + r.Header.Get("Authorization"), "version": r.Header.Get("Authorization")}
		}
		answer(map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{"tools": map[string]any{}}, "serverInfo": info})
		return
	}
	f.mu.Lock()
	known := f.sessions[sid]
	f.mu.Unlock()
	if !known {
		http.Error(w, "unknown session", http.StatusNotFound)
		return
	}
	if m.Method != "tools/call" && m.Method != "ping" {
		answer(map[string]any{})
		return
	}
	if m.Method == "ping" {
		answer(map[string]any{})
		return
	}
	flusher, _ := w.(http.Flusher)
	sseStart := func() *bufio.Writer {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		flusher.Flush()
		return bufio.NewWriterSize(w, 64<<10)
	}
	ctx := r.Context()
	const gib = 1 << 30
	switch f.mode {
	case "echo", "delete-refused", "silent-probe", "echo-secret":
		var p struct {
			Name      string `json:"name"`
			Arguments struct {
				Message string `json:"message"`
			} `json:"arguments"`
		}
		_ = json.Unmarshal(m.Params, &p)
		if p.Name == "auth-error" {
			// A server that quotes the credential in its error.
			got := r.Header.Get("Authorization")
			w.Header().Set("Content-Type", "application/json")
			b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{
				"code": -32602, "message": "denied for " + got, "data": map[string]any{"got": got}}})
			_, _ = w.Write(b)
			return
		}
		if p.Name == "auth-echo" {
			// A server that echoes the credential it got.
			p.Arguments.Message = "you sent " + r.Header.Get("Authorization")
		}
		bw := sseStart()
		_, _ = fmt.Fprintf(bw, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"working\"}}\n\n")
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": map[string]any{"content": []any{map[string]any{"type": "text", "text": "Echo: " + p.Arguments.Message}}}})
		_, _ = fmt.Fprintf(bw, "id: 1\ndata: %s\n\n", b)
		_ = bw.Flush()
	case "endless-line":
		bw := sseStart()
		_, _ = bw.WriteString("data: ")
		chunk := []byte(strings.Repeat("a", 64<<10))
		for sent := 0; sent < 4*gib && ctx.Err() == nil; sent += len(chunk) {
			if _, err := bw.Write(chunk); err != nil {
				return
			}
		}
	case "huge-event":
		bw := sseStart()
		line := []byte("data: " + strings.Repeat("x", 1018) + "\n") // 1 KiB a line
		for sent := 0; sent < gib && ctx.Err() == nil; sent += len(line) {
			if _, err := bw.Write(line); err != nil {
				return
			}
		}
		_, _ = bw.WriteString("\n")
		_ = bw.Flush()
	case "huge-json":
		w.Header().Set("Content-Type", "application/json")
		bw := bufio.NewWriterSize(w, 64<<10)
		_, _ = fmt.Fprintf(bw, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"`, m.ID)
		chunk := []byte(strings.Repeat("y", 64<<10))
		for sent := 0; sent < gib && ctx.Err() == nil; sent += len(chunk) {
			if _, err := bw.Write(chunk); err != nil {
				return
			}
		}
		_, _ = bw.WriteString(`"}]}}`)
		_ = bw.Flush()
	case "slowloris":
		sseStart()
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for i := 0; i < 12000; i++ { // 10 minutes at most
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if _, err := w.Write([]byte(":")); err != nil {
				return
			}
			flusher.Flush()
		}
	case "silent-stream":
		sseStart()
		select {
		case <-ctx.Done():
		case <-time.After(10 * time.Minute):
		}
	case "slow-headers":
		select {
		case <-ctx.Done():
		case <-time.After(10 * time.Minute):
		}
	case "wrong-ctype":
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte("<html>hello</html>"))
	case "session-change":
		w.Header().Set("Mcp-Session-Id", sid+"-other")
		answer(map[string]any{"content": []any{}})
	case "redirect":
		_, port, _ := net.SplitHostPort(f.addr)
		w.Header().Set("Location", "http://127.0.0.2:"+port+"/mcp?key=stolen-key-value")
		w.WriteHeader(http.StatusTemporaryRedirect)
	case "expire":
		http.Error(w, "session not found", http.StatusNotFound)
	}
}

// serveLegacy is the legacy-* modes: a server that is not Streamable HTTP
// (POST 405, so the client falls back) and whose HTTP+SSE stream then goes
// wrong.
func (f *hostileHTTP) serveLegacy(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	flusher, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	flusher.Flush()
	ctx := r.Context()
	switch f.mode {
	case "legacy-bad-endpoint":
		_, _ = fmt.Fprintf(w, "event: endpoint\ndata: http://elsewhere.example:1/messages?session=1\n\n")
		flusher.Flush()
	case "legacy-long-line":
		_, _ = w.Write([]byte("data: "))
		chunk := []byte(strings.Repeat("a", 64<<10))
		for sent := 0; sent < 1<<30 && ctx.Err() == nil; sent += len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
		return
	case "legacy-no-endpoint":
		_, _ = w.Write([]byte(": no endpoint, ever\n\n"))
		flusher.Flush()
	}
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Minute):
	}
}

// readHTTPRequest reads a POSTed JSON-RPC message (at most 1 MiB): a body
// that is not JSON is answered 400, a notification 202; ok only for a
// request, which the caller answers.
func readHTTPRequest(w http.ResponseWriter, r *http.Request) (m msg, ok bool) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if json.Unmarshal(body, &m) != nil {
		http.Error(w, "bad JSON", http.StatusBadRequest)
		return m, false
	}
	if m.ID == nil {
		w.WriteHeader(http.StatusAccepted)
		return m, false
	}
	return m, true
}
