// Package mcpfake holds test-only MCP servers over stdio: one well-behaved
// echo server and a set of hostile ones, each a mode of Run. The pkg/mcp
// tests run them by re-executing their own test binary; testscript
// registers Main as the "mcpfake" helper command. It is test support only:
// nothing in the clawkit binary imports it.
package mcpfake

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Modes lists every server mode with what it does; Run's usage text.
var Modes = map[string]string{
	"echo":             "well-behaved server: tools echo, add, slow, fail, timeout-coded, crash, notify, later, gate, close-stdin, close-stdout, env, cwd; answers ping",
	"wrong-version":    "answers initialize with protocol version 1999-01-01",
	"garbage":          "answers every request after the handshake with a line that is not JSON",
	"oversized":        "answers tools/call with a line of exactly ARG bytes before its LF (default 2 MiB)",
	"split-utf8":       "answers tools/call one byte per write, with multi-byte UTF-8 text",
	"float-id":         "answers tools/call with id 1.5",
	"string-id":        "answers tools/call with a string id",
	"huge-id":          "answers tools/call with id 2^53+1",
	"no-jsonrpc":       "answers tools/call without jsonrpc \"2.0\"",
	"unknown-id":       "answers tools/call first to id 999999, then to the right id",
	"server-request":   "sends ping and sampling/createMessage requests before answering tools/call, and reports the answers",
	"notify-flood":     "sends ARG (default 20000) notifications before answering tools/call",
	"stderr-flood":     "writes ARG (default 2 MiB) to stderr, then answers tools/call",
	"exit-mid-request": "writes to stderr and exits 7 on tools/call",
	"no-init":          "reads stdin and never answers initialize",
	"ignore-term":      "serves echo, but ignores SIGTERM and stdin EOF",
	"fork-grandchild":  "serves echo once its grandchild holds stdout and ignores SIGTERM (the grandchild says so on a pipe); writes 'pid pgid grandchild' to ARG atomically first",
	"sock":             "serves echo on unix socket ARG, one goroutine per connection, until killed",
	"setsid-child":     "serves echo once its child, in a new session (setsid), holds stdout and stderr and ignores SIGTERM; writes 'pid pgid child' to ARG first",
	"setsid-orphan":    "like setsid-child, but the setsid process is a grandchild whose parent has exited (an orphan)",
	"stop-reading":     "answers initialize, then never reads stdin again (and ignores SIGTERM)",
	"bad-utf8":         "answers tools/call with a result holding a byte that is not UTF-8",
	"scalar-result":    "answers tools/call with result 42",
	"modern":           "speaks only 2026-07-28: answers server/discover, demands _meta (protocolVersion, clientCapabilities) on every request (-32022 for another version), refuses initialize; tool meta returns the _meta it got",
	"legacy-2024":      "answers initialize with 2024-11-05 whatever was asked, and server/discover with -32601",
	"silent-probe":     "a legacy server that never answers server/discover",
	"late-probe":       "a legacy server that answers server/discover (with -32601) only just before its answer to the next request, so always after a probe bound",
	"forge":            "a hostile echo server: its serverInfo name, notifications, tool results and error messages carry newlines, escape sequences and bidi overrides that forge a 'clawkit: error:' line",
	"pair":             "answers tools/call with a notification and the response, each ARG bytes long with its LF (default 1500), in one write of at most 4096 bytes (so one read)",
	"asks":             "a legacy server that asks its client: tools elicit (elicitation/create with arguments.params, else a form of defaults), roots (roots/list), sample (sampling/createMessage) and caps (the capabilities initialize gave) answer with what the client said",
	"mrtr":             "speaks only 2026-07-28 (as modern) and answers tools with input_required results (SEP-2322): ask, forever, raw, plain (asks.go)",
}

// Main is the helper command: mcpfake MODE [ARG]. With MCPFAKE_PIDFILE set
// in its environment, a server writes "pid pgid" there first; with
// MCPFAKE_CALLFILE set, the slow tool writes it when its call arrives.
//
// Readiness: a mode that must be in some state before a test acts on it
// (SIGTERM ignored, a grandchild forked and ready) reaches that state
// before it answers anything and before it publishes its pid file, so a
// test that waits for an answer or for the file never races it.
func Main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: mcpfake MODE [ARG]")
		os.Exit(2)
	}
	arg := ""
	if len(os.Args) > 2 {
		arg = os.Args[2]
	}
	os.Exit(Run(os.Args[1], arg))
}

// Run serves mode on stdin/stdout and returns the exit code.
func Run(mode, arg string) int {
	if _, ok := Modes[mode]; !ok && mode != "hold" && mode != "daemonize" {
		fmt.Fprintf(os.Stderr, "mcpfake: unknown mode %q\n", mode)
		return 2
	}
	if f := os.Getenv("MCPFAKE_PIDFILE"); f != "" && mode != "hold" && mode != "daemonize" {
		// "pid pgid", so a test can check that both are gone afterwards.
		pgid, _ := syscall.Getpgid(0)
		if err := writeFileAtomic(f, fmt.Sprintf("%d %d\n", os.Getpid(), pgid)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	switch mode {
	case "hold":
		// The grandchild: keep stdout open, ignore SIGTERM, live until
		// SIGKILL (or 10 minutes, so a broken test cannot leak forever).
		// Only once the signals are ignored does it tell its parent, on the
		// pipe at fd 3, that it is ready.
		signal.Ignore(syscall.SIGTERM, syscall.SIGHUP, syscall.SIGPIPE)
		if arg == "fd3" {
			ready := os.NewFile(3, "ready")
			_, _ = fmt.Fprintf(ready, "%d\n", os.Getpid())
			_ = ready.Close()
		}
		time.Sleep(10 * time.Minute)
		return 0
	case "sock":
		return serveSocket(arg)
	case "ignore-term":
		signal.Ignore(syscall.SIGTERM, syscall.SIGPIPE)
	case "daemonize":
		// The middle of setsid-orphan: start the holder in a new session,
		// hand it our readiness pipe (fd 3), and exit at once.
		cmd, err := holder(true, os.NewFile(3, "ready"))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		_ = cmd.Process.Release()
		return 0
	case "fork-grandchild", "setsid-child", "setsid-orphan":
		readyR, readyW, err := os.Pipe()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if mode == "setsid-orphan" {
			var cmd *exec.Cmd
			cmd, err = spawnSelf(false, readyW, "daemonize")
			if err == nil {
				err = cmd.Wait() // the holder is an orphan from here on
			}
		} else {
			_, err = holder(mode == "setsid-child", readyW)
		}
		_ = readyW.Close() // our copy; the holder writes to its own
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		// Wait until the holder ignores SIGTERM: before that, a stop would
		// kill it with SIGTERM and the test would see no escalation. It
		// says so with its pid.
		line, err := bufio.NewReader(readyR).ReadString('\n')
		_ = readyR.Close() // a read end, read
		holdPid, perr := strconv.Atoi(strings.TrimSpace(line))
		if err != nil || perr != nil {
			fmt.Fprintln(os.Stderr, "mcpfake: the holder did not become ready:", err, perr)
			return 1
		}
		pgid, _ := syscall.Getpgid(0)
		if arg != "" {
			line := fmt.Sprintf("%d %d %d\n", os.Getpid(), pgid, holdPid)
			if err := writeFileAtomic(arg, line); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
		}
	case "stop-reading":
		signal.Ignore(syscall.SIGTERM, syscall.SIGPIPE)
	}
	s := &server{mode: mode, arg: arg, w: bufio.NewWriterSize(os.Stdout, 64<<10)}
	s.serve(os.Stdin)
	if mode == "ignore-term" {
		time.Sleep(10 * time.Minute)
	}
	return 0
}

// spawnSelf starts this program as "mcpfake ARGS…" with the same stdout
// and stderr (so the child holds them open) and ready as its fd 3.
func spawnSelf(setsid bool, ready *os.File, args ...string) (*exec.Cmd, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, args...)
	cmd.Args[0] = "mcpfake" // testscript dispatches on argv[0]
	cmd.Env = os.Environ()
	cmd.Stdout = os.Stdout
	cmd.Stderr = os.Stderr
	cmd.ExtraFiles = []*os.File{ready}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: setsid}
	err = cmd.Start()
	return cmd, err
}

// holder starts "mcpfake hold fd3": it keeps stdout and stderr open,
// ignores SIGTERM, and writes its pid to ready once it does.
func holder(setsid bool, ready *os.File) (*exec.Cmd, error) {
	return spawnSelf(setsid, ready, "hold", "fd3")
}

// writeFileAtomic publishes name whole: a test waiting for the file to
// exist never reads it half-written.
func writeFileAtomic(name, content string) error {
	tmp := name + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, name)
}

type server struct {
	mode string
	arg  string
	mu   sync.Mutex
	w    *bufio.Writer
	// answers to our own requests (server-request mode)
	answers chan json.RawMessage
	// the _meta of the last request (modern mode)
	lastMeta map[string]json.RawMessage
	// the server/discover request held back (late-probe mode)
	heldProbe json.RawMessage
	// the capabilities initialize gave (asks mode)
	caps json.RawMessage
	// the rounds of the current input_required exchange (mrtr mode)
	rounds int
}

type msg struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   json.RawMessage `json:"error,omitempty"`
}

// The fake's writes to its client ignore their errors: a failed write
// means the client went away, and a server has no one to report it to.
func (s *server) send(v any) {
	b, _ := json.Marshal(v)
	s.mu.Lock()
	_, _ = s.w.Write(b)
	_ = s.w.WriteByte('\n')
	_ = s.w.Flush()
	s.mu.Unlock()
}

func (s *server) sendRaw(line string) {
	s.mu.Lock()
	_, _ = s.w.WriteString(line) // as in send
	_ = s.w.WriteByte('\n')
	_ = s.w.Flush()
	s.mu.Unlock()
}

func (s *server) result(id json.RawMessage, result any) {
	s.send(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
}

func (s *server) rpcError(id json.RawMessage, code int, message string) {
	s.send(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": message}})
}

func text(t string) map[string]any {
	return map[string]any{"content": []any{map[string]any{"type": "text", "text": t}}}
}

func (s *server) serve(r io.Reader) {
	s.answers = make(chan json.RawMessage, 4)
	// Small reads: a server that stops reading leaves what follows in the
	// pipe, where the client's writes pile up.
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4<<10), 64<<20)
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var m msg
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			fmt.Fprintf(os.Stderr, "mcpfake: bad line: %v\n", err)
			continue
		}
		if m.Method == "" { // an answer to one of our requests
			s.answers <- append(json.RawMessage(nil), sc.Bytes()...)
			continue
		}
		if m.ID == nil {
			continue // notification
		}
		if m.Method == "tools/call" && (s.mode == "server-request" || s.mode == "asks") {
			// Must not block the read loop: our answers arrive through it.
			go s.handle(m)
			continue
		}
		s.handle(m)
	}
}

// modernGate applies the 2026-07-28 rules to a request; false when it
// answered with an error.
func (s *server) modernGate(m msg) bool {
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	_ = json.Unmarshal(m.Params, &p)
	var v string
	_ = json.Unmarshal(p.Meta["io.modelcontextprotocol/protocolVersion"], &v)
	switch {
	case m.Method == "initialize":
		s.rpcError(m.ID, -32601, "initialize is not part of protocol 2026-07-28")
	case v == "":
		s.rpcError(m.ID, -32602, "missing _meta io.modelcontextprotocol/protocolVersion")
	case v != "2026-07-28":
		s.send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{
			"code": -32022, "message": "unsupported protocol version",
			"data": map[string]any{"supported": []string{"2026-07-28"}, "requested": v}}})
	case p.Meta["io.modelcontextprotocol/clientCapabilities"] == nil:
		s.rpcError(m.ID, -32602, "missing _meta io.modelcontextprotocol/clientCapabilities")
	default:
		s.lastMeta = p.Meta
		return true
	}
	return false
}

func (s *server) handle(m msg) {
	if (s.mode == "modern" || s.mode == "mrtr") && !s.modernGate(m) {
		return
	}
	if s.heldProbe != nil {
		s.rpcError(s.heldProbe, -32601, "Method not found: server/discover")
		s.heldProbe = nil
	}
	switch m.Method {
	case "server/discover":
		switch s.mode {
		case "modern", "mrtr":
			s.result(m.ID, map[string]any{
				"resultType":        "complete",
				"supportedVersions": []string{"2026-07-28"},
				"capabilities":      map[string]any{"tools": map[string]any{}},
				"_meta":             map[string]any{"io.modelcontextprotocol/serverInfo": map[string]any{"name": "mcpfake-modern", "version": "1.0.0"}},
			})
		case "silent-probe":
			// never answers
		case "late-probe":
			s.heldProbe = m.ID
		default:
			s.rpcError(m.ID, -32601, "Method not found: server/discover")
		}
	case "initialize":
		if s.mode == "no-init" {
			return
		}
		var p struct {
			ProtocolVersion string          `json:"protocolVersion"`
			Capabilities    json.RawMessage `json:"capabilities"`
		}
		_ = json.Unmarshal(m.Params, &p)
		s.caps = p.Capabilities
		v := p.ProtocolVersion
		switch s.mode {
		case "wrong-version":
			v = "1999-01-01"
		case "legacy-2024":
			v = "2024-11-05"
		}
		// A notification before the reply is tolerated by the client.
		s.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/message", "params": map[string]any{"level": "info", "data": "starting"}})
		s.result(m.ID, map[string]any{
			"protocolVersion": v,
			"capabilities":    map[string]any{"tools": map[string]any{}},
			"serverInfo":      map[string]any{"name": s.serverName(), "version": "1.0.0"},
		})
		if s.mode == "stop-reading" {
			time.Sleep(10 * time.Minute) // never read again
		}
	case "ping":
		s.result(m.ID, map[string]any{})
	case "tools/list":
		if s.hostile(m) {
			return
		}
		s.result(m.ID, map[string]any{"tools": []any{
			map[string]any{"name": "echo", "inputSchema": map[string]any{"type": "object"}},
			map[string]any{"name": "add", "inputSchema": map[string]any{"type": "object"}},
		}})
	case "tools/call":
		if s.hostile(m) {
			return
		}
		s.callTool(m)
	default:
		s.rpcError(m.ID, -32601, "Method not found: "+m.Method)
	}
}

// hostile applies the mode's misbehaviour; true when it answered.
func (s *server) hostile(m msg) bool {
	switch s.mode {
	case "garbage":
		s.sendRaw("this is not json")
	case "oversized":
		n := 2 << 20
		if s.arg != "" {
			n, _ = strconv.Atoi(s.arg)
		}
		// Exactly n bytes before the LF (when n is large enough).
		head := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"pad":"`, m.ID)
		const tail = `"}}`
		pad := strings.Repeat("x", max(n-len(head)-len(tail), 0))
		s.sendRaw(head + pad + tail)
	case "split-utf8":
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": text("héllo wörld ✓ 🦀 日本語")})
		b = append(b, '\n')
		s.mu.Lock()
		for i := range b {
			_, _ = os.Stdout.Write(b[i : i+1]) // as in send
			time.Sleep(200 * time.Microsecond)
		}
		s.mu.Unlock()
	case "float-id":
		s.sendRaw(`{"jsonrpc":"2.0","id":1.5,"result":{}}`)
	case "string-id":
		s.sendRaw(fmt.Sprintf(`{"jsonrpc":"2.0","id":"%s","result":{}}`, m.ID)) //nolint:gocritic // sprintfQuotedString: JSON text, the id's raw digits quoted
	case "huge-id":
		s.sendRaw(`{"jsonrpc":"2.0","id":9007199254740993,"result":{}}`)
	case "no-jsonrpc":
		s.sendRaw(fmt.Sprintf(`{"id":%s,"result":{}}`, m.ID))
	case "unknown-id":
		s.sendRaw(`{"jsonrpc":"2.0","id":999999,"result":{"wrong":true}}`)
		return false
	case "server-request":
		s.sendRaw(`{"jsonrpc":"2.0","id":"srv-ping","method":"ping"}`)
		s.sendRaw(`{"jsonrpc":"2.0","id":77,"method":"sampling/createMessage","params":{}}`)
		got := []string{}
		for range 2 {
			select {
			case a := <-s.answers:
				got = append(got, string(a))
			case <-time.After(5 * time.Second):
				got = append(got, "no answer")
			}
		}
		s.result(m.ID, text(strings.Join(got, " | ")))
	case "notify-flood":
		n := 20000
		if s.arg != "" {
			n, _ = strconv.Atoi(s.arg)
		}
		for i := range n {
			s.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/progress", "params": map[string]any{"progressToken": 1, "progress": i}})
		}
		return false
	case "stderr-flood":
		n := 2 << 20
		if s.arg != "" {
			n, _ = strconv.Atoi(s.arg)
		}
		line := strings.Repeat("e", 1023) + "\n"
		for w := 0; w < n; w += len(line) {
			_, _ = os.Stderr.WriteString(line) // as in send
		}
		_, _ = os.Stderr.WriteString("END-OF-FLOOD\n")
		return false
	case "bad-utf8":
		s.sendRaw(fmt.Sprintf("{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"caf\xe9\"}]}}", m.ID))
	case "scalar-result":
		s.sendRaw(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":42}`, m.ID))
	case "pair":
		n := 1500
		if s.arg != "" {
			n, _ = strconv.Atoi(s.arg)
		}
		pad := func(head, tail string) string {
			return head + strings.Repeat("x", max(n-1-len(head)-len(tail), 0)) + tail + "\n"
		}
		b := pad(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"`, `"}}`) +
			pad(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"`, m.ID), `"}]}}`)
		// One write up to PIPE_BUF is atomic: the client reads both at once.
		s.mu.Lock()
		_ = s.w.Flush() // as in send
		_, _ = os.Stdout.WriteString(b)
		s.mu.Unlock()
	case "exit-mid-request":
		fmt.Fprintln(os.Stderr, "mcpfake: dying in the middle of a request")
		os.Exit(7)
	default:
		return false
	}
	return true
}

func (s *server) callTool(m msg) {
	switch s.mode {
	case "asks":
		s.asks(m)
		return
	case "mrtr":
		if !strings.Contains(string(m.Params), `"name":"meta"`) {
			s.result(m.ID, MRTRAnswer(&s.rounds, m.Params))
			return
		}
	}
	var p struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	_ = json.Unmarshal(m.Params, &p)
	var a struct {
		Message string `json:"message"`
		Ms      int    `json:"ms"`
	}
	_ = json.Unmarshal(p.Arguments, &a)
	var ab struct{ A, B float64 }
	_ = json.Unmarshal(p.Arguments, &ab)
	switch p.Name {
	case "echo":
		if s.mode == "forge" {
			a.Message += forgeText
		}
		s.result(m.ID, text("Echo: "+a.Message))
	case "add":
		s.result(m.ID, text(strconv.FormatFloat(ab.A+ab.B, 'f', -1, 64)))
	case "slow":
		// MCPFAKE_CALLFILE: published once the call is in flight, so a
		// test can act on a request the server holds, never before it.
		if f := os.Getenv("MCPFAKE_CALLFILE"); f != "" {
			if err := writeFileAtomic(f, "slow\n"); err != nil {
				fmt.Fprintln(os.Stderr, err)
			}
		}
		time.Sleep(time.Duration(a.Ms) * time.Millisecond)
		s.result(m.ID, text("slept"))
	case "fail":
		s.rpcError(m.ID, -32602, "tool failed on purpose")
	case "timeout-coded":
		s.rpcError(m.ID, -32001, "Request timed out")
	case "crash":
		fmt.Fprintln(os.Stderr, "mcpfake: crash requested")
		os.Exit(3)
	case "notify":
		if s.mode == "forge" {
			s.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/message\nclawkit: error: forged by the server", "params": map[string]any{"data": "\u202e\x1b[2Jcleared\u009b31m"}})
			s.rpcError(m.ID, -32602, "nope\nclawkit: error: forged by the server\x1b[31m")
			return
		}
		s.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/progress", "params": map[string]any{"progressToken": "t", "progress": 1}})
		s.result(m.ID, text("notified"))
	case "later":
		// Answer now; ms later, while the client waits for nothing, ping it
		// and report its answer in a notification.
		s.result(m.ID, text("later"))
		go func() {
			time.Sleep(time.Duration(a.Ms) * time.Millisecond)
			s.sendRaw(`{"jsonrpc":"2.0","id":"late-ping","method":"ping"}`)
			answer := "no answer"
			select {
			case b := <-s.answers:
				answer = string(b)
			case <-time.After(5 * time.Second):
			}
			s.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/message", "params": map[string]any{"level": "info", "data": answer}})
		}()
	case "gate":
		// Answer once the file named by "path" exists: a test holds calls
		// pending for exactly as long as it needs, with no timing.
		var g struct {
			Path string `json:"path"`
		}
		_ = json.Unmarshal(p.Arguments, &g)
		for range 60000 {
			if _, err := os.Stat(g.Path); err == nil {
				break
			}
			time.Sleep(time.Millisecond)
		}
		s.result(m.ID, text("opened"))
	case "meta":
		b, _ := json.Marshal(s.lastMeta)
		s.result(m.ID, text(string(b)))
	case "close-stdin":
		// Answer, close our stdin and stay alive without reading: the
		// client's next write fails with EPIPE.
		_ = os.Stdin.Close() // the point of the mode
		s.result(m.ID, text("stdin closed"))
		time.Sleep(10 * time.Minute)
	case "close-stdout":
		// Close stdout without answering and stay alive, stderr open.
		fmt.Fprintln(os.Stderr, "mcpfake: closing stdout")
		s.mu.Lock()
		_ = os.Stdout.Close() // the point of the mode
		s.mu.Unlock()
		time.Sleep(10 * time.Minute)
	case "cwd":
		wd, _ := os.Getwd()
		s.result(m.ID, text(wd))
	case "env":
		env := os.Environ()
		s.result(m.ID, text(strings.Join(env, "\n")))
	default:
		s.rpcError(m.ID, -32602, "unknown tool: "+p.Name)
	}
}

func serveSocket(path string) int {
	l, err := net.Listen("unix", path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = l.Close() }() // a listener: nothing to lose
	n := 0
	for {
		c, err := l.Accept()
		if err != nil {
			return 1
		}
		n++
		fmt.Fprintf(os.Stderr, "mcpfake: connection %d\n", n)
		go func() {
			defer func() { _ = c.Close() }() // as in send
			s := &server{mode: "echo", w: bufio.NewWriter(c)}
			s.serve(c)
		}()
	}
}

// forgeText is what the forge mode puts wherever a server's text reaches a
// terminal: a newline and a line of ours, an escape sequence, a C1 CSI
// and a right-to-left override.
const forgeText = "\nclawkit: error: forged by the server\x1b[31m\u009b2J\u202e"

func (s *server) serverName() string {
	if s.mode == "forge" {
		return "mcpfake" + forgeText
	}
	return "mcpfake-" + s.mode
}
