package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/clawkit/clawkit/pkg/fsx"
	"github.com/clawkit/clawkit/pkg/mcp"
	"github.com/clawkit/clawkit/pkg/mcp/mcpfake"
	"github.com/clawkit/clawkit/pkg/mcp/mcphttp"
	"github.com/clawkit/clawkit/pkg/mcp/mcpstdio"
)

// MCP over HTTP (docs/conformance.md, "MCP over HTTP"): the SDKs' own
// clients against `mcp proxy --listen` in front of server-everything over
// stdio, beside the same server's own HTTP modes; clawkit's client against
// server-everything's HTTP modes and the Go SDK's streamable handler.

// httpSteps are what every client does, in order.
var httpSteps = []string{"initialize", "tools/list", "tools/call", "resources", "prompts", "notifications", "cancellation", "after-cancel", "session-end"}

// httpDifferences are the steps where a client's outcome through the proxy
// differs from the server's own HTTP mode, each judged (none today).
var httpDifferences = map[string]string{}

// everythingHTTP starts server-everything in MODE (streamableHttp, sse) on
// a free loopback port and returns its URL. It is stopped (its process
// group killed) at the end of the test.
func everythingHTTP(t *testing.T, node, mode string) string {
	t.Helper()
	entry := needPeer(t, "@modelcontextprotocol/server-everything/dist/index.js")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, entry, mode)
	cmd.Env = append(os.Environ(), "PORT="+port)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	for i := 0; ; i++ {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+port, time.Second)
		if err == nil {
			fsx.CloseRead(c) // a probe: nothing written
			break
		}
		if i > 600 {
			t.Fatalf("server-everything %s did not listen on %s: %s", mode, port, logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	path := "/mcp"
	if mode == "sse" {
		path = "/sse"
	}
	return "http://127.0.0.1:" + port + path
}

// clawkitProxy serves server-everything (stdio) with mcphttp.ServeHTTP, as
// `clawkit mcp proxy --listen --sse` does; it returns the streamable and
// legacy URLs and the token, and checks at the end that every server
// process is gone.
func clawkitProxy(t *testing.T, node string) (streamable, legacy, token string) {
	t.Helper()
	entry := needPeer(t, "@modelcontextprotocol/server-everything/dist/index.js")
	token = mcphttp.NewToken()
	ready := make(chan string, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := mcphttp.ServeHTTP(ctx, mcpstdio.ProcessSpec{Command: node, Args: []string{entry, "stdio"}, Env: []string{"PATH=" + filepath.Dir(node)},
			EOFGrace: 500 * time.Millisecond, TermGrace: 500 * time.Millisecond},
			mcphttp.ListenOptions{Addr: "127.0.0.1:0", Token: token, LegacySSE: true, OnListening: func(u string) { ready <- u }})
		done <- err
	}()
	u := <-ready
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("the proxy's drain: %v", err)
		}
	})
	return u, strings.TrimSuffix(u, "/mcp") + "/sse", token
}

type stepOutcome struct {
	OK     bool            `json:"ok"`
	Detail json.RawMessage `json:"detail"`
	Error  string          `json:"error"`
}

func tsClient(t *testing.T, node, url, token string, sse bool) map[string]stepOutcome {
	t.Helper()
	sdkDir := filepath.Dir(needPeer(t, "@modelcontextprotocol/sdk/package.json"))
	args := []string{filepath.Join(repoRoot(), "conformance", "drivers", "mcphttpclient.mjs"), sdkDir, url, token}
	if sse {
		args = append(args, "sse")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("TS SDK client against %s: %v\n%s", url, err, stderr.String())
	}
	var m map[string]stepOutcome
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatalf("TS SDK client output: %v\n%s", err, out)
	}
	return m
}

// goClient runs the same steps with the Go SDK's streamable client.
func goClient(t *testing.T, url, token string) map[string]stepOutcome {
	t.Helper()
	out := map[string]stepOutcome{}
	step := func(name string, f func() (any, error)) {
		v, err := f()
		if err != nil {
			out[name] = stepOutcome{Error: err.Error()}
			return
		}
		b, _ := json.Marshal(v)
		out[name] = stepOutcome{OK: true, Detail: b}
	}
	hc := &http.Client{Transport: headerRT{token: token}}
	progress := make(chan struct{}, 64)
	c := sdk.NewClient(&sdk.Implementation{Name: "gosdk-conformance", Version: "1"}, &sdk.ClientOptions{
		ProgressNotificationHandler: func(context.Context, *sdk.ProgressNotificationClientRequest) {
			select {
			case progress <- struct{}{}:
			default:
			}
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var cs *sdk.ClientSession
	step("initialize", func() (any, error) {
		var err error
		cs, err = c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, nil)
		if err != nil {
			return nil, err
		}
		return cs.InitializeResult().ServerInfo.Name, nil
	})
	if cs == nil {
		return out
	}
	step("tools/list", func() (any, error) {
		r, err := cs.ListTools(ctx, nil)
		if err != nil {
			return nil, err
		}
		return len(r.Tools) > 0, nil
	})
	echo := func(msg string) (any, error) {
		r, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "echo", Arguments: map[string]any{"message": msg}})
		if err != nil {
			return nil, err
		}
		return r.Content[0].(*sdk.TextContent).Text, nil
	}
	step("tools/call", func() (any, error) { return echo("conformance") })
	step("resources", func() (any, error) {
		l, err := cs.ListResources(ctx, nil)
		if err != nil || len(l.Resources) == 0 {
			return nil, err
		}
		r, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: l.Resources[0].URI})
		if err != nil {
			return nil, err
		}
		return len(r.Contents) > 0, nil
	})
	step("prompts", func() (any, error) {
		p, err := cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: "simple-prompt"})
		if err != nil {
			return nil, err
		}
		return len(p.Messages) > 0, nil
	})
	step("notifications", func() (any, error) {
		p := &sdk.CallToolParams{Name: "trigger-long-running-operation", Arguments: map[string]any{"duration": 1, "steps": 2}}
		p.SetProgressToken("p1")
		if _, err := cs.CallTool(ctx, p); err != nil {
			return nil, err
		}
		select {
		case <-progress:
			return true, nil
		default:
			return false, nil
		}
	})
	step("cancellation", func() (any, error) {
		cctx, ccancel := context.WithCancel(ctx)
		time.AfterFunc(300*time.Millisecond, ccancel)
		_, err := cs.CallTool(cctx, &sdk.CallToolParams{Name: "trigger-long-running-operation", Arguments: map[string]any{"duration": 30, "steps": 30}})
		if err == nil {
			return "not cancelled", nil
		}
		return "cancelled", nil
	})
	step("after-cancel", func() (any, error) { return echo("still here") })
	step("session-end", func() (any, error) { return true, cs.Close() })
	return out
}

type headerRT struct{ token string }

func (h headerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	if h.token != "" {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+h.token)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// compareSteps checks that the proxy gives every step the reference's
// outcome (a listed difference excepted) and that the reference passes.
func compareSteps(t *testing.T, who string, ref, got map[string]stepOutcome) {
	t.Helper()
	for _, s := range httpSteps {
		r, g := ref[s], got[s]
		if !r.OK {
			t.Errorf("%s: the reference fails step %s: %s", who, s, r.Error)
		}
		if why, listed := httpDifferences[who+"/"+s]; listed {
			if r.OK == g.OK && string(r.Detail) == string(g.Detail) {
				t.Errorf("%s: listed difference at %s no longer happens (%s)", who, s, why)
			}
			continue
		}
		if r.OK != g.OK || string(r.Detail) != string(g.Detail) {
			t.Errorf("%s: step %s through clawkit's proxy: %+v; the server's own HTTP mode: %+v", who, s, g, r)
		}
	}
}

func TestMCPHTTPSDKClientsThroughProxy(t *testing.T) {
	node := node24(t)
	refStream := everythingHTTP(t, node, "streamableHttp")
	refSSE := everythingHTTP(t, node, "sse")
	px, pxSSE, token := clawkitProxy(t, node)

	compareSteps(t, "ts-sdk/streamable", tsClient(t, node, refStream, "", false), tsClient(t, node, px, token, false))
	compareSteps(t, "ts-sdk/sse", tsClient(t, node, refSSE, "", true), tsClient(t, node, pxSSE, token, true))
	compareSteps(t, "go-sdk/streamable", goClient(t, refStream, ""), goClient(t, px, token))

	// Without the token the proxy refuses the SDK's client outright.
	if got := tsClient(t, node, px, "", false); got["initialize"].OK || !strings.Contains(got["initialize"].Error, "a valid bearer token is required") {
		t.Errorf("TS SDK client without the token: %+v", got["initialize"])
	}
}

// clawkit's client against server-everything's HTTP modes and the Go
// SDK's streamable handler: the opening, a call, a resource, a prompt,
// and the session's end (DELETE confirmed where there is a session).
func TestMCPHTTPClawkitClient(t *testing.T) {
	node := node24(t)
	h, path := mcpfake.HTTPHandler("gosdk", "")
	srv := &http.Server{Handler: h}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	defer func() {
		if err := srv.Close(); err != nil {
			t.Error(err)
		}
	}()
	for _, tc := range []struct {
		name, url, transport, echoTool string
		session                        bool
	}{
		{"server-everything/streamableHttp", everythingHTTP(t, node, "streamableHttp"), "streamable", "echo", true},
		{"server-everything/sse", everythingHTTP(t, node, "sse"), "sse", "echo", false},
		{"go-sdk/streamable", "http://" + ln.Addr().String() + path, "streamable", "echo", true},
	} {
		c, err := mcphttp.Start(context.Background(), mcphttp.Options{URL: tc.url}, mcp.Options{ProtocolVersion: mcp.AutoProtocolVersion})
		if err != nil {
			t.Errorf("%s: connect: %v", tc.name, err)
			continue
		}
		if c.Transport() != tc.transport {
			t.Errorf("%s: transport %s, want %s", tc.name, c.Transport(), tc.transport)
		}
		for _, r := range []struct{ method, params, want string }{
			{"tools/list", `{}`, `"name":"echo"`},
			{"tools/call", `{"name":"echo","arguments":{"message":"clawkit"}}`, `Echo: clawkit`},
			{"resources/list", `{}`, `"resources":[`},
			{"prompts/list", `{}`, `"prompts":[`},
		} {
			res, err := c.Request(context.Background(), r.method, json.RawMessage(r.params))
			if err != nil || !strings.Contains(string(res), r.want) {
				t.Errorf("%s: %s: %.200s %v", tc.name, r.method, res, err)
			}
		}
		cr, err := c.Stop()
		if err != nil {
			t.Errorf("%s: stop: %v", tc.name, err)
		}
		if tc.session != (cr != nil && cr.Session != nil && cr.Session.Deleted) {
			t.Errorf("%s: session end: %+v", tc.name, cr)
		}
	}
}

// httpHostileDifferences are the hostile servers where the TypeScript
// SDK's client ends otherwise than clawkit's, judged.
var httpHostileDifferences = map[string]string{
	"session-change": "the TypeScript client accepts an answer under another Mcp-Session-Id; clawkit refuses it (session_id_changed): stricter",
}

// Hostile HTTP servers (pkg/mcp/mcpfake's HTTP modes) through the
// TypeScript SDK's client and clawkit's: both end in an error unless the
// difference is listed. The endless line and the 1 GiB event are not run
// through the TypeScript client here: it holds the stream in memory and
// aborts (docs/conformance.md).
func TestMCPHTTPHostileBesideTSClient(t *testing.T) {
	node := node24(t)
	sdkDir := filepath.Dir(needPeer(t, "@modelcontextprotocol/sdk/package.json"))
	for _, mode := range []string{"wrong-ctype", "session-change", "redirect", "expire", "echo"} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		h, path := mcpfake.HTTPHandler(mode, ln.Addr().String())
		srv := &http.Server{Handler: h}
		go func() { _ = srv.Serve(ln) }()
		u := "http://" + ln.Addr().String() + path

		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		out, err := exec.CommandContext(ctx, node, filepath.Join(repoRoot(), "conformance", "drivers", "mcphttphostile.mjs"), sdkDir, u).Output()
		cancel()
		if err != nil {
			t.Fatalf("%s: TS client: %v", mode, err)
		}
		tsOK := strings.TrimSpace(string(out)) == "ok"

		ours := true
		c, err := mcphttp.Start(context.Background(), mcphttp.Options{URL: u}, mcp.Options{ProtocolVersion: mcp.AutoProtocolVersion, RequestTimeout: 5 * time.Second})
		if err != nil {
			ours = false
		} else {
			if _, err := c.Request(context.Background(), "tools/call", json.RawMessage(`{"name":"echo","arguments":{"message":"x"}}`)); err != nil {
				ours = false
			}
			_, _ = c.Stop()
		}
		_ = srv.Close()
		if mode == "echo" {
			if !tsOK || !ours {
				t.Errorf("the well-behaved fake: TS %v, clawkit %v (%s)", tsOK, ours, out)
			}
			continue
		}
		if ours {
			t.Errorf("%s: clawkit's client accepted a hostile answer", mode)
		}
		if why, listed := httpHostileDifferences[mode]; listed {
			if !tsOK {
				t.Errorf("%s: listed difference no longer happens (%s)", mode, why)
			}
		} else if tsOK {
			t.Errorf("%s: the TypeScript client accepts what clawkit refuses, not listed", mode)
		}
	}
}
