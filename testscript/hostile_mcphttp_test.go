package testscript

import (
	"net"
	"net/http"
	"sync"

	"github.com/clawkit/clawkit/pkg/mcp/mcpfake"
)

// Hostile MCP servers over HTTP (issue "MCP beyond stdio", item 4), served
// from this test process for the life of the suite: each case's URL is
// known when the catalogue is built.
var (
	mcpHTTPOnce sync.Once
	mcpHTTPURLs map[string]string
)

func mcpHTTPURL(mode string) string {
	mcpHTTPOnce.Do(func() {
		mcpHTTPURLs = map[string]string{}
		for _, m := range mcpfake.HTTPModeNames() {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				panic(err)
			}
			h, path := mcpfake.HTTPHandler(m, ln.Addr().String())
			go func() { _ = http.Serve(ln, h) }()
			mcpHTTPURLs[m] = "http://" + ln.Addr().String() + path
		}
	})
	return mcpHTTPURLs[mode]
}

// mcpHTTPHostileCases: every one is a clear error with its own code, in
// bounded memory (a 1 GiB event or body is refused at the frame limit
// while it streams), and leaves nothing written.
func mcpHTTPHostileCases() []hostileCase {
	call := func(mode string, extra ...string) []string {
		a := []string{"mcp", "call", "--url", mcpHTTPURL(mode), "--method", "tools/call", "--params", `{"name":"x"}`}
		return append(a, extra...)
	}
	mrtr := func(params string, extra ...string) []string {
		return append([]string{"mcp", "call", "--url", mcpHTTPURL("mrtr"), "--method", "tools/call", "--params", params}, extra...)
	}
	return []hostileCase{
		{name: "mcp-http/endless-sse-line", args: call("endless-line", "--max-frame-bytes", "65536"), exit: 1, code: "sse_line_too_long"},
		{name: "mcp-http/1gib-event", args: call("huge-event", "--max-frame-bytes", "1048576"), exit: 1, code: "frame_too_large"},
		{name: "mcp-http/1gib-json-body", args: call("huge-json", "--max-frame-bytes", "1048576"), exit: 1, code: "frame_too_large"},
		{name: "mcp-http/byte-cap", args: call("huge-event", "--max-response-bytes", "100000"), exit: 1, code: "response_cap_exceeded"},
		{name: "mcp-http/slowloris-server", args: call("slowloris", "--request-timeout", "300ms"), exit: 4, code: "request_timeout"},
		{name: "mcp-http/silent-stream", args: call("silent-stream", "--idle-timeout", "200ms"), exit: 4, code: "idle_timeout"},
		{name: "mcp-http/no-headers", args: call("slow-headers", "--header-timeout", "2s"), exit: 4, code: "header_timeout"},
		{name: "mcp-http/wrong-content-type", args: call("wrong-ctype"), exit: 1, code: "bad_content_type"},
		{name: "mcp-http/session-id-changes", args: call("session-change"), exit: 1, code: "session_id_changed"},
		{name: "mcp-http/redirect-other-host", args: call("redirect"), exit: 1, code: "redirect_refused"},
		{name: "mcp-http/session-expired", args: call("expire"), exit: 4, code: "session_expired"},
		{name: "mcp-http/nothing-listens", args: []string{"mcp", "call", "--url", "http://127.0.0.1:9/mcp", "--method", "ping"}, exit: 5, code: "connect_failed"},
		{name: "mcp-http/url-credentials", args: []string{"mcp", "call", "--url", "http://u:p4ssw0rd-x@127.0.0.1:9/mcp", "--method", "ping"}, exit: 2, code: "invalid_url"},
		{name: "mcp-http/header-in-clear", args: []string{"mcp", "call", "--url", "http://127.0.0.1:9/mcp", "--header", "Authorization=Bearer xyz", "--method", "ping"}, exit: 2, code: "invalid_header"},
		{name: "mcp-proxy/no-auth-off-loopback", args: []string{"mcp", "proxy", "--listen", "0.0.0.0:0", "--no-auth", "--", "mcpfake", "echo"}, exit: 2, code: "invalid_listen"},
		{name: "mcp-proxy/missing-server", args: []string{"mcp", "proxy", "--listen", "127.0.0.1:0", "--no-auth", "--", "$W/no/such/server"}, exit: 1, code: "spawn_failed"},
		// 2026-07-28 input_required results: a server that never stops
		// asking, one that asks for sampling, a malformed one.
		{name: "mcp-http/input-required-forever", args: mrtr(`{"name":"forever","arguments":{"inputRequests":{"r":{"method":"roots/list"}}}}`, "--max-input-rounds", "3"), exit: 1, code: "input_required_rounds"},
		{name: "mcp-http/input-required-sampling", args: mrtr(`{"name":"ask","arguments":{"inputRequests":{"q":{"method":"sampling/createMessage"}}}}`), exit: 1, code: "input_required_unanswered"},
		{name: "mcp-http/input-required-malformed", args: mrtr(`{"name":"raw","arguments":{"result":{"resultType":"input_required","inputRequests":{"a":"b"}}}}`), exit: 1, code: "invalid_input_required"},
		// Streams that end before their answer and cannot be resumed, and
		// 2026-07-28 servers at odds with their own tool definitions or
		// refusing every version.
		{name: "mcp-http/resume-brings-nothing", args: call("resume-lost"), exit: 4, code: "resume_failed"},
		{name: "mcp-http/resume-refused", args: call("resume-refused"), exit: 4, code: "resume_failed"},
		{name: "mcp-http/stream-ends-no-event-id", args: call("resume-no-id"), exit: 4, code: "stream_ended"},
		{name: "mcp-http/invalid-tool-headers", args: []string{"mcp", "call", "--url", mcpHTTPURL("modern-headers"), "--method", "tools/call", "--params", `{"name":"bad","arguments":{"data":{}}}`}, exit: 1, code: "invalid_tool_headers"},
		{name: "mcp-http/header-mismatch-forever", args: []string{"mcp", "call", "--url", mcpHTTPURL("modern-mismatch"), "--method", "tools/call", "--params", `{"name":"route","arguments":{"region":"eu"}}`}, exit: 1, code: "header_mismatch"},
		{name: "mcp-http/every-version-refused", args: []string{"mcp", "call", "--protocol-version", "2026-07-28", "--url", mcpHTTPURL("modern-reject-always"), "--method", "tools/list"}, exit: 1, code: "protocol_version_unsupported"},
		{name: "mcp-proxy/bad-listen", args: []string{"mcp", "proxy", "--listen", "nonsense", "--", "mcpfake", "echo"}, exit: 2, code: "invalid_listen"},
	}
}
