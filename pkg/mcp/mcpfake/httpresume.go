package mcpfake

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
)

// The modes of this file: 2025-11-25 servers that close a tools/call
// stream before its answer (resume*), and 2026-07-28 servers whose tools
// carry x-mcp-header annotations (modern-*). docs/mcp.md, "Resuming
// streams" and "Mcp-Param headers".
var resumeModes = map[string]string{
	"resume":               "tools/call: an SSE stream with a priming event (id, retry: 200) closed before the answer, which a GET with Last-Event-ID then brings; the answer says how many times the call was posted",
	"resume-lost":          "resume, but the GET with Last-Event-ID brings nothing and ends, every time",
	"resume-refused":       "resume, but GET answers 405",
	"resume-no-id":         "tools/call: an SSE stream closed before the answer without any event id",
	"modern-headers":       "2026-07-28 (server/discover): tools route (x-mcp-header Region, Priority, Debug), plain and bad (x-mcp-header on an object); tools/call answers with the Mcp-Param headers it got, or 400 -32020 when they do not match the arguments; tools/call lists (not listed) says how many tools/list it was asked",
	"modern-reject-once":   "modern-headers, but the first request is refused with 400 -32022 listing 2026-07-28 (the version asked for)",
	"modern-reject-always": "modern-headers, but every server/discover is refused with 400 -32022 listing 2026-07-28; the refusal counts them",
	"modern-mismatch":      "modern-headers, but every tools/call is refused with 400 -32020, and from the second tools/list on route's Region header is named Zone",
}

func isResumeMode(mode string) bool { _, ok := resumeModes[mode]; return ok }

// HTTPModeNames names every mode HTTPHandler serves: HTTPModes and this
// file's.
func HTTPModeNames() []string {
	var names []string
	for _, m := range []map[string]string{HTTPModes, resumeModes} {
		for k := range m {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	return names
}

type resumeHTTP struct {
	mode    string
	mu      sync.Mutex
	posts   int             // tools/call POSTs
	rejects int             // -32022 refusals (modern-reject-*)
	pending json.RawMessage // the id of the tools/call waiting for its answer
	lists   int             // tools/list requests (modern)
}

const routeTools = `{"tools":[` +
	`{"name":"route","inputSchema":{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},"priority":{"type":"integer","x-mcp-header":"Priority"},"debug":{"type":"boolean","x-mcp-header":"Debug"},"query":{"type":"string"}},"required":["region"]}},` +
	`{"name":"plain","inputSchema":{"type":"object","properties":{"q":{"$ref":"#/$defs/q"}},"$defs":{"q":{"type":"string"}}}},` +
	`{"name":"bad","inputSchema":{"type":"object","properties":{"data":{"type":"object","x-mcp-header":"Data"}}}}` +
	`],"resultType":"complete"}`

func (f *resumeHTTP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(f.mode, "modern-") {
		f.serveModern(w, r)
		return
	}
	flusher, _ := w.(http.Flusher)
	switch r.Method {
	case http.MethodDelete:
		w.WriteHeader(http.StatusOK)
		return
	case http.MethodGet:
		leid := r.Header.Get("Last-Event-ID")
		if f.mode == "resume-refused" || leid == "" {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		if f.mode == "resume-lost" {
			return // nothing new, and the stream ends
		}
		f.mu.Lock()
		id, posts := f.pending, f.posts
		f.pending = nil
		f.mu.Unlock()
		if id == nil {
			return
		}
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "result": map[string]any{"content": []any{map[string]any{"type": "text",
			"text": fmt.Sprintf("resumed after %s; tools/call posted %d time(s)", leid, posts)}}}})
		_, _ = fmt.Fprintf(w, "id: p-2\ndata: %s\n\n", b)
		flusher.Flush()
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
	w.Header().Set("Mcp-Session-Id", "resume-session")
	answer := func(result string) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, m.ID, result)
	}
	switch m.Method {
	case "server/discover":
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"Method not found"}}`, m.ID)
	case "initialize":
		answer(`{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"mcpfake-http-` + f.mode + `","version":"1.0.0"}}`)
	case "tools/call":
		f.mu.Lock()
		f.posts++
		f.pending = m.ID
		f.mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		if f.mode == "resume-no-id" {
			_, _ = io.WriteString(w, "retry: 200\ndata: \n\n")
		} else {
			_, _ = io.WriteString(w, "id: p-1\nretry: 200\ndata: \n\n")
		}
		flusher.Flush()
		// The stream ends here, before the answer.
	default:
		answer(`{}`)
	}
}

// serveModern is a 2026-07-28 server: no session, server/discover, and
// tools whose x-mcp-header annotations it checks as a server must.
func (f *resumeHTTP) serveModern(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	var m msg
	if json.Unmarshal(body, &m) != nil || m.ID == nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	answer := func(result string) {
		_, _ = fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, m.ID, result)
	}
	mismatch := func(why string) {
		w.WriteHeader(http.StatusBadRequest)
		b, _ := json.Marshal(why)
		_, _ = fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32020,"message":%s}}`, m.ID, b)
	}
	if f.mode == "modern-reject-once" || (f.mode == "modern-reject-always" && m.Method == "server/discover") {
		f.mu.Lock()
		f.rejects++
		n := f.rejects
		f.mu.Unlock()
		if f.mode == "modern-reject-always" || n == 1 {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32022,"message":"Unsupported protocol version (refusal %d)","data":{"supported":["2026-07-28"],"requested":%q}}}`,
				m.ID, n, r.Header.Get("MCP-Protocol-Version"))
			return
		}
	}
	switch m.Method {
	case "server/discover":
		answer(`{"supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"mcpfake-http-` + f.mode + `","version":"1.0.0"}}}`)
	case "tools/list":
		f.mu.Lock()
		f.lists++
		n := f.lists
		f.mu.Unlock()
		if f.mode == "modern-mismatch" && n > 1 {
			// The annotations changed since the first listing: the
			// client calls once more with the new headers.
			answer(strings.Replace(routeTools, `"x-mcp-header":"Region"`, `"x-mcp-header":"Zone"`, 1))
			return
		}
		answer(routeTools)
	case "tools/call":
		var p struct {
			Name      string                     `json:"name"`
			Arguments map[string]json.RawMessage `json:"arguments"`
		}
		_ = json.Unmarshal(m.Params, &p)
		f.mu.Lock()
		lists := f.lists
		f.mu.Unlock()
		if f.mode == "modern-mismatch" {
			mismatch(fmt.Sprintf("Mcp-Param headers do not match the body (tools/list asked %d times)", lists))
			return
		}
		if p.Name == "lists" {
			answer(fmt.Sprintf(`{"content":[{"type":"text","text":"tools/list asked %d times"}],"resultType":"complete"}`, lists))
			return
		}
		var got []string
		for k, v := range r.Header {
			if strings.HasPrefix(k, "Mcp-Param-") {
				got = append(got, k+": "+v[0])
			}
		}
		sort.Strings(got)
		if p.Name == "route" {
			for _, c := range [][2]string{{"region", "Region"}, {"priority", "Priority"}, {"debug", "Debug"}} {
				v, ok := p.Arguments[c[0]]
				h := r.Header.Get("Mcp-Param-" + c[1])
				if !ok || string(v) == "null" {
					if h != "" {
						mismatch("unexpected Mcp-Param-" + c[1])
						return
					}
					continue
				}
				want := strings.Trim(string(v), `"`)
				if dec, ok := strings.CutPrefix(h, "=?base64?"); ok {
					b, _ := base64.StdEncoding.DecodeString(strings.TrimSuffix(dec, "?="))
					h = string(b)
				}
				if h != want {
					mismatch(fmt.Sprintf("Mcp-Param-%s is %q, the body says %q", c[1], h, want))
					return
				}
			}
		}
		b, _ := json.Marshal(fmt.Sprintf("%s got [%s]", p.Name, strings.Join(got, "; ")))
		answer(`{"content":[{"type":"text","text":` + string(b) + `}],"resultType":"complete"}`)
	default:
		answer(`{"resultType":"complete"}`)
	}
}
