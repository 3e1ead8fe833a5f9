package testscript

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// mcpRound4HostileCases are issue 39's MCP cases: a server that echoes the
// caller's secret (item 1), a proxy whose token file cannot be written
// (item 7), and a legacy fallback that fails on its own (item 10). The
// Origin/Host refusals (item 8) are HTTP requests to a running proxy:
// pkg/mcp/mcphttp's TestProxyListenRefusals.
func mcpRound4HostileCases() []hostileCase {
	const secret = "s3cret-round4-token"
	profile := func(t *testing.T, w string) {
		t.Helper()
		cmd := exec.Command("clawkit", "--home", filepath.Join(w, "home"), "auth", "add", "mcp:tok", "--provider", "mcp", "--kind", "bearer", "--api-key-stdin")
		cmd.Stdin = strings.NewReader(secret + "\n")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("auth add: %v\n%s", err, out)
		}
	}
	echo := mcpHTTPURL("echo-secret")
	session := []string{"mcp", "session", "--url", echo, "--header", "Authorization=@mcp:tok"}
	lines := `{"method":"ping"}` + "\n" + `{"method":"tools/call","params":{"name":"auth-error"}}` + "\n"
	// The token file's name is taken by a folder: a port chosen now, the
	// folder planted by setup.
	port := freePortNow()
	tokenDir := func(t *testing.T, w string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(w, "home", "mcp-proxy-"+port+".token"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Join(w, "home"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	fallback := func(mode string, extra ...string) []string {
		return append([]string{"mcp", "call", "--url", mcpHTTPURL(mode), "--method", "ping"}, extra...)
	}
	return []hostileCase{
		{name: "mcp-secret/session-echoed-in-error-and-server-info", setup: profile, args: session, stdin: lines, exit: 1, code: "rpc_error", lacks: secret},
		{name: "mcp-secret/session-echoed-human", setup: profile, args: session, stdin: lines, exit: 1, lacks: secret, human: true},
		{name: "mcp-secret/call-server-info", setup: profile, args: []string{"mcp", "call", "--url", echo, "--header", "Authorization=@mcp:tok", "--method", "ping"}, exit: 0, has: "REDACTED", lacks: secret},
		{name: "mcp-secret/call-error", setup: profile, args: []string{"mcp", "call", "--url", echo, "--header", "Authorization=@mcp:tok", "--method", "tools/call", "--params", `{"name":"auth-error"}`}, exit: 1, code: "rpc_error", lacks: secret},
		{name: "mcp-proxy/token-file-unwritable", setup: tokenDir, args: []string{"mcp", "proxy", "--listen", "127.0.0.1:" + port, "--ready-file", "$W/ready", "--", "mcpfake", "echo"}, exit: 1, code: "token_write_failed", lacks: "without authentication"},
		{name: "mcp-http/legacy-fallback-off-origin-endpoint", args: fallback("legacy-bad-endpoint"), exit: 1, code: "invalid_endpoint"},
		{name: "mcp-http/legacy-fallback-endless-line", args: fallback("legacy-long-line", "--max-frame-bytes", "65536"), exit: 1, code: "sse_line_too_long"},
		// A server that dies at start-up with a multi-line, hostile stderr:
		// human mode fails on any raw control byte or a second error line;
		// the tail comes as lines of its own, never a literal \n.
		{name: "mcp-stdio/startup-exit-stderr-lines", args: []string{"mcp", "call", "--method", "ping", "--", "sh", "-c", `printf 'one\n\033]0;title\a\nclawkit: error: forged\n' >&2; exit 3`}, exit: 1, lacks: `one\n`, human: true},
		{name: "mcp-stdio/startup-exit-stderr-json", args: []string{"mcp", "call", "--method", "ping", "--", "sh", "-c", `printf 'one\ntwo\n' >&2; exit 3`}, exit: 1, code: "server_exited", has: `"stderrTail": [`},
		{name: "mcp-http/legacy-fallback-no-endpoint", args: fallback("legacy-no-endpoint", "--startup-timeout", "1s"), exit: 5, code: "initialize_timeout"},
	}
}

// freePortNow is a port nothing listens on at the moment the catalogue is
// built (the kernel's choice for an ephemeral listener, closed at once).
func freePortNow() string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	_ = ln.Close() // only its number was wanted
	return port
}
