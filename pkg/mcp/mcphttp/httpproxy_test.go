package mcphttp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/clawkit/clawkit/pkg/mcp"
	"github.com/clawkit/clawkit/pkg/mcp/mcpstdio"

	"github.com/clawkit/clawkit/pkg/fsx"
)

// startListen runs ServeHTTP in front of mcpfake MODE and returns its URL
// and the proxy; the cleanup stops it and checks that every server
// process group is gone.
func startListen(t *testing.T, o ListenOptions, mode string) (string, *httpProxy, func()) {
	t.Helper()
	fo := fakeOptions(t, mode)
	spec := mcpstdio.ProcessSpec{Command: fo.Command, Args: fo.Args, Env: fo.Env, EOFGrace: 200 * time.Millisecond, TermGrace: 200 * time.Millisecond}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	o.Listener, o.Addr = ln, ln.Addr().String()
	var px *httpProxy
	o.inspect = func(p *httpProxy) { px = p }
	ready := make(chan string, 1)
	o.OnListening = func(u string) { ready <- u }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := ServeHTTP(ctx, spec, o)
		done <- err
	}()
	u := <-ready
	var seen []int
	var mu sync.Mutex
	stop := func() {
		mu.Lock()
		seen = append(seen, px.SessionPids()...)
		mu.Unlock()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("proxy: %v", err)
		}
		for _, pid := range seen {
			if mcpstdio.GroupAlive(pid) {
				t.Errorf("process group %d is still alive after the proxy stopped", pid)
			}
		}
	}
	return u, px, func() {
		mu.Lock()
		seen = append(seen, px.SessionPids()...)
		mu.Unlock()
		stop()
	}
}

func proxyClient(t *testing.T, u, token string) *Client {
	t.Helper()
	h := Options{URL: u, Header: http.Header{}}
	o := mcp.Options{ProtocolVersion: mcp.AutoProtocolVersion}
	if token != "" {
		h.Header.Set("Authorization", "Bearer "+token)
	}
	c, err := Start(context.Background(), h, o)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	return c
}

func TestProxyListenSession(t *testing.T) {
	tok := NewToken()
	u, px, stop := startListen(t, ListenOptions{Token: tok}, "echo")
	defer stop()
	c := proxyClient(t, u, tok)
	if c.Negotiated().Era != mcp.EraLegacy || c.ServerInfo().Name != "mcpfake-echo" {
		t.Fatalf("opening: %+v %+v", c.Negotiated(), c.ServerInfo())
	}
	res, err := c.Request(context.Background(), "tools/call", callTool("echo", map[string]any{"message": "via proxy"}))
	if err != nil || !strings.Contains(string(res), "Echo: via proxy") {
		t.Fatalf("call: %s %v", res, err)
	}
	// A server notification during a request reaches the client.
	var got []string
	var gmu sync.Mutex
	c.Opts.OnNotification = func(m string, _ json.RawMessage) { gmu.Lock(); got = append(got, m); gmu.Unlock() }
	if _, err := c.Request(context.Background(), "tools/call", callTool("notify", nil)); err != nil {
		t.Fatal(err)
	}
	gmu.Lock()
	if len(got) == 0 || got[len(got)-1] != "notifications/progress" {
		t.Errorf("notifications: %v", got)
	}
	gmu.Unlock()
	pids := px.SessionPids()
	if len(pids) != 1 {
		t.Fatalf("sessions: %v", pids)
	}
	cr, err := c.Stop()
	if err != nil || cr == nil || cr.Session == nil || !cr.Session.Deleted {
		t.Fatalf("stop: %+v %v", cr, err)
	}
	// DELETE reaped the session's server.
	waitGone(t, pids[0])
}

func waitGone(t *testing.T, pgid int) {
	t.Helper()
	for i := 0; i < 500 && mcpstdio.GroupAlive(pgid); i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if mcpstdio.GroupAlive(pgid) {
		t.Fatalf("process group %d still alive", pgid)
	}
}

func rawPost(t *testing.T, u string, hdr map[string]string, body string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	fsx.CloseRead(resp.Body)
	return resp
}

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// The refusals of the HTTP front: token, Origin, Host, a guessed session
// id, a body over the limit, a wrong Content-Type.
func TestProxyListenRefusals(t *testing.T) {
	tok := NewToken()
	u, _, stop := startListen(t, ListenOptions{Token: tok, MaxBodyBytes: 4096}, "echo")
	defer stop()
	auth := "Bearer " + tok
	for _, tc := range []struct {
		name   string
		hdr    map[string]string
		body   string
		status int
	}{
		{"no token", nil, initBody, 401},
		{"wrong token", map[string]string{"Authorization": "Bearer " + NewToken()}, initBody, 401},
		{"foreign origin", map[string]string{"Authorization": auth, "Origin": "http://evil.example"}, initBody, 403},
		{"rebinding host", map[string]string{"Authorization": auth, "Host": "evil.example:80"}, initBody, 403},
		{"guessed session", map[string]string{"Authorization": auth, "Mcp-Session-Id": strings.Repeat("a", 32)}, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, 404},
		{"no session", map[string]string{"Authorization": auth}, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, 400},
		{"too large", map[string]string{"Authorization": auth}, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"x":"` + strings.Repeat("x", 5000) + `"}}`, 413},
		{"wrong type", map[string]string{"Authorization": auth, "Content-Type": "text/plain"}, initBody, 415},
		{"batch", map[string]string{"Authorization": auth}, `[` + initBody + `]`, 400},
	} {
		resp := rawPost(t, u, tc.hdr, tc.body)
		if resp.StatusCode != tc.status {
			t.Errorf("%s: status %d, want %d", tc.name, resp.StatusCode, tc.status)
		}
	}
	// The proxy's own loopback origin is accepted.
	resp := rawPost(t, u, map[string]string{"Authorization": auth, "Origin": strings.TrimSuffix(u, "/mcp")}, initBody)
	if resp.StatusCode != 200 || resp.Header.Get("Mcp-Session-Id") == "" {
		t.Errorf("own origin: %d", resp.StatusCode)
	}
}

// 1,000 sessions opened at once against MaxSessions 8: at most 8 servers
// run, the others are refused with 503 and a Retry-After, and the proxy
// stops every server it started.
func TestProxyListenMaxSessions(t *testing.T) {
	u, px, stop := startListen(t, ListenOptions{NoAuth: true, MaxSessions: 8}, "echo")
	var mu sync.Mutex
	statuses := map[int]int{}
	most := 0
	var wg sync.WaitGroup
	tr := &http.Transport{MaxConnsPerHost: 64}
	cl := &http.Client{Transport: tr}
	for i := 0; i < 1000; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(initBody))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			resp, err := cl.Do(req)
			if err != nil {
				mu.Lock()
				statuses[-1]++
				mu.Unlock()
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			fsx.CloseRead(resp.Body)
			n := len(px.SessionPids())
			mu.Lock()
			statuses[resp.StatusCode]++
			most = max(most, n)
			mu.Unlock()
		}()
	}
	wg.Wait()
	tr.CloseIdleConnections()
	if statuses[200] < 1 || statuses[200] > 8 || statuses[200]+statuses[503] != 1000 || most > 8 {
		t.Fatalf("statuses %v, most sessions at once %d", statuses, most)
	}
	stop()
}

// Idle sessions are reaped: their server is stopped and their id is
// forgotten (a raw initialize, so no client step can race the reaper).
func TestProxyListenIdleReap(t *testing.T) {
	u, px, stop := startListen(t, ListenOptions{NoAuth: true, IdleTimeout: 100 * time.Millisecond}, "echo")
	defer stop()
	resp := rawPost(t, u, nil, initBody)
	sid := resp.Header.Get("Mcp-Session-Id")
	pids := px.SessionPids()
	if resp.StatusCode != 200 || sid == "" || len(pids) != 1 {
		t.Fatalf("initialize: %d %q %v", resp.StatusCode, sid, pids)
	}
	waitGone(t, pids[0])
	if r := rawPost(t, u, map[string]string{"Mcp-Session-Id": sid}, `{"jsonrpc":"2.0","id":2,"method":"ping"}`); r.StatusCode != 404 {
		t.Fatalf("after reaping: %d", r.StatusCode)
	}
}

// A slowloris client (headers never finished) is disconnected after the
// header timeout; the proxy goes on serving.
func TestProxyListenSlowlorisClient(t *testing.T) {
	u, _, stop := startListen(t, ListenOptions{NoAuth: true, HeaderTimeout: time.Second}, "echo")
	defer stop()
	host := strings.TrimSuffix(strings.TrimPrefix(u, "http://"), "/mcp")
	conn, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	defer fsx.CloseRead(conn) // a hostile client: what it wrote does not matter
	_, _ = conn.Write([]byte("POST /mcp HTTP/1.1\r\nHost: " + host + "\r\nX-Slow: "))
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	_, err = bufio.NewReader(conn).ReadByte()
	if err == nil {
		// The server may answer 408 before closing; then it closes.
		_, err = io.ReadAll(conn)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("the proxy kept a slowloris connection open")
	}
	c := proxyClient(t, u, "")
	_, _ = c.Stop()
}

// The client leaves no goroutine behind, whatever the server did.
func TestHTTPClientNoGoroutineLeft(t *testing.T) {
	u, _, stop := startListen(t, ListenOptions{NoAuth: true}, "echo")
	defer stop()
	before := runtime.NumGoroutine()
	for i := 0; i < 5; i++ {
		c := proxyClient(t, u, "")
		if _, err := c.Request(context.Background(), "ping", nil); err != nil {
			t.Fatal(err)
		}
		_, _ = c.Stop()
	}
	http.DefaultClient.CloseIdleConnections()
	n := runtime.NumGoroutine()
	for i := 0; i < 300 && n > before+2; i++ {
		time.Sleep(10 * time.Millisecond)
		n = runtime.NumGoroutine()
	}
	if n > before+2 {
		buf := make([]byte, 1<<20)
		t.Fatalf("goroutines: %d before, %d after\n%s", before, n, buf[:runtime.Stack(buf, true)])
	}
}

// The per-session rate limit answers 429 with Retry-After; a header block
// over the limit is 431; both leave the session usable.
func TestProxyListenRateAndHeaderLimits(t *testing.T) {
	u, _, stop := startListen(t, ListenOptions{NoAuth: true, RatePerSecond: 0.001, RateBurst: 3, MaxHeaderBytes: 4096}, "echo")
	defer stop()
	resp := rawPost(t, u, nil, initBody)
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != 200 || sid == "" {
		t.Fatalf("initialize: %d", resp.StatusCode)
	}
	var codes []int
	for i := 0; i < 4; i++ {
		r := rawPost(t, u, map[string]string{"Mcp-Session-Id": sid}, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		codes = append(codes, r.StatusCode)
		if r.StatusCode == 429 && r.Header.Get("Retry-After") == "" {
			t.Error("429 without Retry-After")
		}
	}
	// The burst of 3 was one initialize and two notifications.
	if codes[0] != 202 || codes[1] != 202 || codes[2] != 429 || codes[3] != 429 {
		t.Errorf("statuses %v, want 202 202 429 429", codes)
	}
	r := rawPost(t, u, map[string]string{"X-Big": strings.Repeat("x", 32<<10)}, initBody)
	if r.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("big header block: %d", r.StatusCode)
	}
}
