package testscript

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/clawkit/clawkit/pkg/fsx"
	"github.com/clawkit/clawkit/pkg/mcp/mcpfake"
	"github.com/clawkit/clawkit/pkg/mcp/mcpstdio"
	"github.com/clawkit/clawkit/pkg/owner"
)

func mcpKit() scriptKit {
	return scriptKit{
		programs: map[string]func(){
			// mcpfake MODE [ARG]: the well-behaved and hostile servers.
			"mcpfake": mcpfake.Main,
			// mcphttpfake MODE URLFILE: MCP servers over HTTP (go-sdk, hostile).
			"mcphttpfake":  mcpfake.HTTPMain,
			"mcpgone":      mcpGone,
			"mcpsdkclient": mcpSDKClient,
			"mcpfeed":      mcpFeed,
			"mcpclient":    mcpClient,
			"mcpwithin":    mcpWithin,
		},
		cmds: map[string]scriptCmd{
			"free-port":     cmdFreePort,
			"await-port":    cmdAwaitPort,
			"mcp-http-post": cmdMCPHTTPPost,
		},
		conditions: map[string]func() (bool, error){
			// Real MCP servers from the npm registry (peers/package.json), one
			// condition each: of the current legacy revision (filesystem, memory),
			// of 2024-11-05 only (server-github 2025.4.8), and of 2026-07-28 (the
			// TypeScript SDK v2 in context7-mcp).
			"server-filesystem": peerCondition("@modelcontextprotocol/server-filesystem/package.json"),
			"server-memory":     peerCondition("@modelcontextprotocol/server-memory/package.json"),
			"server-github":     peerCondition("@modelcontextprotocol/server-github/package.json"),
			"context7":          peerCondition("@upstash/context7-mcp/package.json"),
		},
	}
}

// mcpWithin DURATION CMD ARGS…: run CMD with our stdio and exit with its
// code, but fail (exit 124, CMD killed) if it has not returned within
// DURATION. "Never hangs" is asserted by waiting on the process with a
// generous bound, never by sleeping.
func mcpWithin() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: mcpwithin DURATION CMD ARGS…")
		os.Exit(2)
	}
	d, err := time.ParseDuration(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	cmd := exec.Command(os.Args[2], os.Args[3:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			os.Exit(ee.ExitCode())
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	case <-time.After(d):
		_ = cmd.Process.Kill()
		fmt.Fprintf(os.Stderr, "mcpwithin: %s did not return within %v\n", os.Args[2], d)
		os.Exit(124)
	}
}

// mcpClient FILE -- CMD ARGS…: a client that waits for answers. It starts
// CMD (a proxy, usually), writes FILE's lines to it one by one and, after
// each request (a line with an id and a method), waits for the response
// with that id before it goes on; then it closes CMD's stdin. CMD's stdout
// is copied to ours, its stderr to ours, and its exit code is ours. A test
// that needs the server in some state before the client goes away (a
// grandchild that ignores SIGTERM) gets it from the server's answers, never
// from a race.
func mcpClient() {
	args := os.Args[1:]
	if len(args) < 3 || args[1] != "--" {
		fmt.Fprintln(os.Stderr, "usage: mcpclient FILE -- CMD ARGS…")
		os.Exit(2)
	}
	b, err := os.ReadFile(args[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	cmd := exec.Command(args[2], args[3:]...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	answered := make(chan string, 64)
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		defer close(answered)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64<<10), 64<<20)
		for sc.Scan() {
			fmt.Printf("%s\n", sc.Bytes())
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			if json.Unmarshal(sc.Bytes(), &m) == nil && m.ID != nil && m.Method == "" {
				answered <- string(m.ID)
			}
		}
	}()
	for _, line := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		if _, err := io.WriteString(in, line+"\n"); err != nil {
			fmt.Fprintln(os.Stderr, "mcpclient: write:", err)
			break
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal([]byte(line), &m) != nil || m.ID == nil || m.Method == "" {
			continue
		}
		for got := range answered {
			if got == string(m.ID) {
				break
			}
		}
	}
	go func() {
		for range answered { // later answers: keep the copier going
		}
	}()
	if err := in.Close(); err != nil {
		die("%v", err)
	}
	<-copied
	if err := cmd.Wait(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			os.Exit(ee.ExitCode())
		}
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
}

// mcpFeed FILE: a client that writes FILE to stdout and then keeps its
// side open, writing an empty line every 50 ms until the reader goes away
// (or 60 s pass): "still connected" without a fixed sleep.
func mcpFeed() {
	b, err := os.ReadFile(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if _, err := os.Stdout.Write(b); err != nil {
		os.Exit(0)
	}
	for range 1200 {
		time.Sleep(50 * time.Millisecond)
		if _, err := os.Stdout.Write([]byte("\n")); err != nil {
			os.Exit(0)
		}
	}
}

// mcpGone FILE...: each FILE holds pids (the first is also the process
// group); exit 1 naming every one that is still alive (zombies count as
// gone: they hold nothing but a pid).
func mcpGone() {
	var alive []string
	for _, f := range os.Args[1:] {
		b, err := os.ReadFile(f)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		fields := strings.Fields(string(b))
		if len(fields) == 0 {
			fmt.Fprintf(os.Stderr, "%s: no pids\n", f)
			os.Exit(2)
		}
		for i, s := range fields {
			pid, err := strconv.Atoi(s)
			if err != nil || pid <= 1 {
				fmt.Fprintf(os.Stderr, "%s: bad pid %q\n", f, s)
				os.Exit(2)
			}
			if i == 1 { // the process group id
				if mcpstdio.GroupAlive(pid) {
					alive = append(alive, "pgid "+s)
				}
				continue
			}
			if owner.PIDAlive(pid) {
				alive = append(alive, "pid "+s)
			}
		}
	}
	if len(alive) > 0 {
		fmt.Fprintf(os.Stderr, "still alive: %s\n", strings.Join(alive, ", "))
		os.Exit(1)
	}
	fmt.Println("all gone")
}

// mcpSDKClient [-echo MSG] [-tool NAME -args JSON] -- CMD ARGS…: the
// official Go SDK as a real client on the other side of `clawkit mcp
// proxy`: connect over stdio (the SDK probes server/discover, then falls
// back to initialize), list tools, call one (echo by default), close.
func mcpSDKClient() {
	fs := flag.NewFlagSet("mcpsdkclient", flag.ExitOnError)
	msg := fs.String("echo", "hello", "message for the echo tool")
	tool := fs.String("tool", "echo", "tool to call (its arguments: -args, else {message: -echo}); none: call no tool")
	targs := fs.String("args", "", "the tool's arguments as a JSON object")
	_ = fs.Parse(os.Args[1:])
	args := fs.Args()
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "usage: mcpsdkclient [-echo MSG] -- CMD ARGS…")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := sdk.NewClient(&sdk.Implementation{Name: "mcpsdkclient", Version: "1.0.0"}, nil)
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stderr = os.Stderr
	cs, err := client.Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "connect:", err)
		cancel()
		os.Exit(1) //nolint:gocritic // exitAfterDefer: cancel ran right above
	}
	ir := cs.InitializeResult()
	name := ""
	if ir.ServerInfo != nil {
		name = ir.ServerInfo.Name
	}
	fmt.Printf("server: %s\nprotocol: %s\n", name, ir.ProtocolVersion)
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "tools/list:", err)
		os.Exit(1)
	}
	var names []string
	for _, t := range tools.Tools {
		names = append(names, t.Name)
	}
	fmt.Printf("tools: %s\n", strings.Join(names, " "))
	if *tool == "none" {
		if err := cs.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "close:", err)
			os.Exit(1)
		}
		fmt.Println("closed")
		return
	}
	var arguments any = map[string]any{"message": *msg}
	if *targs != "" {
		arguments = json.RawMessage(*targs)
	}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: *tool, Arguments: arguments})
	if err != nil {
		fmt.Fprintln(os.Stderr, "tools/call:", err)
		os.Exit(1)
	}
	for _, c := range res.Content {
		if t, ok := c.(*sdk.TextContent); ok {
			fmt.Printf("%s: %s\n", *tool, t.Text)
		}
	}
	if err := cs.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "close:", err)
		os.Exit(1)
	}
	fmt.Println("closed")
}

// free-port VAR: sets VAR to a TCP port on 127.0.0.1 that was free a
// moment ago, for a peer server that takes its port from the environment
// (server-everything's PORT). The port is released before the command
// returns, so another process may take it first: the peer then fails to
// start and await-port says so.
func cmdFreePort(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: free-port VAR")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	ts.Check(err)
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	ts.Check(ln.Close())
	ts.Setenv(args[0], port)
}

// await-port PORT TIMEOUT: waits until 127.0.0.1:PORT accepts a
// connection (a background server is ready), or fails after TIMEOUT.
func cmdAwaitPort(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: await-port PORT TIMEOUT")
	}
	d, err := time.ParseDuration(args[1])
	ts.Check(err)
	deadline := time.Now().Add(d)
	for {
		c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", args[0]), time.Second)
		if err == nil {
			fsx.CloseRead(c) // a probe: nothing written
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("nothing listens on 127.0.0.1:%s after %s: %v", args[0], d, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// mcp-http-post [-session ID] [-n N] URL BODY: POSTs BODY to URL as an MCP
// client would (JSON, accepting JSON and SSE), N times at once (default 1),
// and prints how many answers had each status ("200=8 503=992"), sorted by
// status. A hostile client's moves: guessing a session id, opening many
// sessions at once.
func cmdMCPHTTPPost(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! mcp-http-post")
	}
	session, n := "", 1
	for len(args) > 2 && strings.HasPrefix(args[0], "-") {
		switch args[0] {
		case "-session":
			session = args[1]
		case "-n":
			n = intArg(ts, "mcp-http-post", "count", args[1], 1)
		default:
			ts.Fatalf("mcp-http-post: unknown flag %s", args[0])
		}
		args = args[2:]
	}
	if len(args) != 2 {
		ts.Fatalf("usage: mcp-http-post [-session ID] [-n N] URL BODY")
	}
	if n > 5000 {
		ts.Fatalf("mcp-http-post: at most 5000 requests")
	}
	tr := &http.Transport{MaxConnsPerHost: 64}
	defer tr.CloseIdleConnections()
	cl := &http.Client{Transport: tr, Timeout: 2 * time.Minute}
	var mu sync.Mutex
	counts := map[int]int{}
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest(http.MethodPost, args[0], strings.NewReader(args[1]))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if session != "" {
				req.Header.Set("Mcp-Session-Id", session)
			}
			status := -1
			if resp, err := cl.Do(req); err == nil {
				_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
				fsx.CloseRead(resp.Body)
				status = resp.StatusCode
			}
			mu.Lock()
			counts[status]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	var keys []int
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%d=%d", k, counts[k]))
	}
	_, _ = fmt.Fprintln(ts.Stdout(), strings.Join(parts, " ")) // the script's stdout buffer: cannot fail
}
