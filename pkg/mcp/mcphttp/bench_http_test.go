package mcphttp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/clawkit/clawkit/pkg/mcp"
	"github.com/clawkit/clawkit/pkg/mcp/mcpstdio"

	mcpgoclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/clawkit/clawkit/pkg/fsx"
)

// startHTTPFake runs mcpfake's HTTP server MODE in a child process (this
// test binary) and returns its URL; it is killed when b ends.
func startHTTPFake(b *testing.B, mode string) string {
	b.Helper()
	self, _ := os.Executable()
	f := filepath.Join(b.TempDir(), "url")
	cmd := exec.Command(self, mode, f)
	cmd.Env = []string{"CLAWKIT_MCPFAKE=http"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); _ = cmd.Wait() })
	return awaitURL(b, f)
}

func awaitURL(b *testing.B, f string) string {
	for i := 0; i < 3000; i++ {
		if u, err := os.ReadFile(f); err == nil && len(u) > 0 {
			return strings.Fields(string(u))[0]
		}
		time.Sleep(5 * time.Millisecond)
	}
	b.Fatalf("no URL in %s", f)
	return ""
}

// cpuRoundTrips is roundTrips plus the CPU this process spent per call
// (user + system): with the server in another process that is the
// client's own cost, which machine load hardly changes, where calls/s
// and latency are mostly the server's and the scheduler's.
func cpuRoundTrips(b *testing.B, call func() error) {
	b.Helper()
	var r0, r1 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &r0)
	n0 := b.N
	roundTrips(b, call)
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &r1)
	cpu := time.Duration(r1.Utime.Nano()-r0.Utime.Nano()) + time.Duration(r1.Stime.Nano()-r0.Stime.Nano())
	// roundTrips made 50 warm-up calls besides b.N.
	b.ReportMetric(float64(cpu.Microseconds())/float64(n0+50), "cpu-µs/call")
}

// The versions a benchmark asks the clients to speak. A version is
// pinned: each client offers it and must have negotiated it. benchLegacy
// lets each client offer what it does by default (clawkit: auto) against
// a server that speaks only legacy versions, and checks that each landed
// on one. A fallback would compare different protocols.
const (
	benchLegacy = "legacy"
	benchModern = mcp.ModernProtocolVersion
)

// benchEraOK says whether a negotiated version is of the era asked.
func benchEraOK(version, got string) bool {
	if version == benchLegacy {
		return got != "" && !mcp.IsModernVersion(got)
	}
	return got == version
}

// benchOffer is the version a client is asked to speak.
func benchOffer(version, legacyDefault string) string {
	if version == benchLegacy {
		return legacyDefault
	}
	return version
}

// httpClients runs the same serial echo calls against url with this
// package's HTTP client, the Go SDK's streamable client and mcp-go's, all
// pinned to protocol version (benchLegacy or benchModern).
func httpClients(b *testing.B, url, token, version string) {
	hdr := http.Header{}
	if token != "" {
		hdr.Set("Authorization", "Bearer "+token)
	}
	b.Run("client=clawkit", func(b *testing.B) {
		c, err := Start(context.Background(), Options{URL: url, Header: hdr}, mcp.Options{ProtocolVersion: benchOffer(version, mcp.AutoProtocolVersion)})
		if err != nil {
			b.Fatal(err)
		}
		if got := c.Negotiated().Version; !benchEraOK(version, got) {
			b.Fatalf("clawkit's client negotiated %s, not %s", got, version)
		}
		defer func() {
			if _, err := c.Stop(); err != nil {
				b.Error(err)
			}
		}()
		cpuRoundTrips(b, func() error {
			params, _ := json.Marshal(map[string]any{"name": "echo", "arguments": map[string]any{"message": "hello"}})
			raw, err := c.Request(context.Background(), "tools/call", params)
			if err != nil {
				return err
			}
			var r echoResult
			return json.Unmarshal(raw, &r)
		})
	})
	// The floor: the same request as bare net/http POSTs on the session
	// clawkit's client opened (no JSON-RPC layer, the body read whole and
	// not parsed). No client that speaks HTTP through net/http can make a
	// call cheaper than this on this server; it bounds the ratio any
	// client can reach over another (docs/mcp.md, "Benchmarks").
	b.Run("client=net-http-floor", func(b *testing.B) {
		c, err := Start(context.Background(), Options{URL: url, Header: hdr}, mcp.Options{ProtocolVersion: benchOffer(version, mcp.AutoProtocolVersion)})
		if err != nil {
			b.Fatal(err)
		}
		defer func() {
			if _, err := c.Stop(); err != nil {
				b.Error(err)
			}
		}()
		hc := &http.Client{Transport: authRT{hdr}}
		body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hello"}}}`)
		if version == benchModern {
			body = []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hello"},"_meta":{"io.modelcontextprotocol/protocolVersion":"` + version + `","io.modelcontextprotocol/clientCapabilities":{}}}}`)
		}
		cpuRoundTrips(b, func() error {
			req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
			if err != nil {
				return err
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if sid := c.SessionID(); sid != "" {
				req.Header.Set("Mcp-Session-Id", sid)
			}
			req.Header.Set("MCP-Protocol-Version", c.Negotiated().Version)
			req.Header.Set("Mcp-Method", "tools/call")
			req.Header.Set("Mcp-Name", "echo")
			resp, err := hc.Do(req)
			if err != nil {
				return err
			}
			n, err := io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close() // read whole; nothing to lose
			if err == nil && (resp.StatusCode != http.StatusOK || n == 0) {
				err = fmt.Errorf("floor call: HTTP %d, %d bytes", resp.StatusCode, n)
			}
			return err
		})
	})
	b.Run("client=go-sdk", func(b *testing.B) {
		c := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, nil)
		cs, err := c.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: authRT{hdr}}, DisableStandaloneSSE: true}, &sdk.ClientSessionOptions{ProtocolVersion: benchOffer(version, "")})
		if err != nil {
			b.Fatal(err)
		}
		if got := cs.InitializeResult().ProtocolVersion; !benchEraOK(version, got) {
			b.Fatalf("the Go SDK's client negotiated %s, not %s", got, version)
		}
		defer func() {
			if err := cs.Close(); err != nil {
				b.Error(err)
			}
		}()
		cpuRoundTrips(b, func() error {
			_, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "hello"}})
			return err
		})
	})
	b.Run("client=mcp-go", func(b *testing.B) {
		c, err := mcpgoclient.NewStreamableHttpClient(url, mcpgoTransportHeaders(hdr))
		if err != nil {
			b.Fatal(err)
		}
		defer func() {
			if err := c.Close(); err != nil {
				b.Error(err)
			}
		}()
		if err := c.Start(context.Background()); err != nil {
			b.Fatal(err)
		}
		init := mcpgo.InitializeRequest{}
		init.Params.ProtocolVersion = benchOffer(version, mcp.DefaultProtocolVersion)
		init.Params.ClientInfo = mcpgo.Implementation{Name: "bench", Version: "1"}
		res, err := c.Initialize(context.Background(), init)
		if err != nil {
			b.Fatal(err)
		}
		if !benchEraOK(version, res.ProtocolVersion) {
			b.Fatalf("mcp-go's client negotiated %s, not %s", res.ProtocolVersion, version)
		}
		cpuRoundTrips(b, func() error {
			req := mcpgo.CallToolRequest{}
			req.Params.Name = "echo"
			req.Params.Arguments = map[string]any{"message": "hello"}
			_, err := c.CallTool(context.Background(), req)
			return err
		})
	})
}

type authRT struct{ h http.Header }

func (a authRT) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(a.h) > 0 {
		r = r.Clone(r.Context())
		for k, v := range a.h {
			r.Header[k] = v
		}
	}
	return http.DefaultTransport.RoundTrip(r)
}

// BenchmarkToolsCallHTTP: serial tools/call over Streamable HTTP against
// the same Go server (the Go SDK's streamable handler, in its own
// process) for clawkit's client, the Go SDK's and mcp-go's.
func BenchmarkToolsCallHTTP(b *testing.B) {
	b.Run("server=sse", func(b *testing.B) { httpClients(b, startHTTPFake(b, "gosdk"), "", benchLegacy) })
	b.Run("server=json", func(b *testing.B) { httpClients(b, startHTTPFake(b, "gosdk-json"), "", benchLegacy) })
	// A light hand-written server (mcpfake's echo: an SSE answer with a
	// notification before it), so that the clients' own costs weigh more.
	b.Run("server=light", func(b *testing.B) { httpClients(b, startHTTPFake(b, "echo"), "", benchLegacy) })
}

// BenchmarkToolsCallHTTP2026: the same three clients, each pinned to
// 2026-07-28 (stateless: server/discover, _meta on every request, the
// standard headers), against one server: the Go SDK's streamable handler
// in its stateless mode, in its own process.
func BenchmarkToolsCallHTTP2026(b *testing.B) {
	httpClients(b, startHTTPFake(b, "gosdk-stateless"), "", benchModern)
}

// BenchmarkRelayHTTP: the relay cost of `clawkit mcp proxy --listen` (the
// real binary, $CLAWKIT_BIN) in front of the Go SDK's server over stdio,
// against the same server's own HTTP mode; the same three clients, in both
// eras: legacy (a session, one child per client) against the stateful
// handler, 2026-07-28 (no session, the one shared child) against the
// stateless one.
func BenchmarkRelayHTTP(b *testing.B) {
	bin := os.Getenv("CLAWKIT_BIN")
	if bin == "" {
		b.Skip("CLAWKIT_BIN is not set (scripts/bench-mcp.sh sets it)")
	}
	for _, era := range []struct{ name, version, own string }{{"legacy", mcp.DefaultProtocolVersion, "gosdk"}, {"2026", benchModern, "gosdk-stateless"}} {
		b.Run("era="+era.name, func(b *testing.B) { relayHTTP(b, bin, era.version, era.own) })
	}
}

func relayHTTP(b *testing.B, bin, version, own string) {
	b.Run("server=own-http", func(b *testing.B) { httpClients(b, startHTTPFake(b, own), "", version) })
	b.Run("server=clawkit-proxy", func(b *testing.B) {
		self, _ := os.Executable()
		dir := b.TempDir()
		ready := filepath.Join(dir, "ready")
		cmd := exec.Command(bin, "--home", filepath.Join(dir, "home"), "mcp", "proxy", "--listen", "127.0.0.1:0", "--no-auth",
			"--rate", "1000000", "--burst", "1000000", "--ready-file", ready, "--env", "CLAWKIT_MCPFAKE=sdkstdio", "--", self)
		cmd.Stderr = io.Discard
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		defer func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() }()
		httpClients(b, awaitURL(b, ready), "", version)
	})
}

// BenchmarkProxySessionMemory: the proxy's own heap per open session
// (children excluded), at 1, 8 and 32 sessions: it should stay flat. One
// measurement per run whatever b.N (each session is a server process):
// run it with -benchtime 1x.
func BenchmarkProxySessionMemory(b *testing.B) {
	for _, n := range []int{1, 8, 32} {
		b.Run(fmt.Sprintf("sessions=%d", n), func(b *testing.B) {
			{
				fo := fakeOptions(b, "echo")
				ready := make(chan string, 1)
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan struct{})
				go func() {
					_, _ = ServeHTTP(ctx, mcpstdio.ProcessSpec{Command: fo.Command, Args: fo.Args, Env: fo.Env, EOFGrace: 100 * time.Millisecond, TermGrace: 100 * time.Millisecond},
						ListenOptions{Addr: "127.0.0.1:0", NoAuth: true, MaxSessions: n, OnListening: func(u string) { ready <- u }})
					close(done)
				}()
				u := <-ready
				runtime.GC()
				var m0, m1 runtime.MemStats
				runtime.ReadMemStats(&m0)
				for range n {
					req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"b","version":"1"}}}`))
					req.Header.Set("Content-Type", "application/json")
					req.Header.Set("Accept", "application/json, text/event-stream")
					resp, err := http.DefaultClient.Do(req)
					if err != nil {
						b.Fatal(err)
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					fsx.CloseRead(resp.Body)
				}
				runtime.GC()
				runtime.ReadMemStats(&m1)
				b.ReportMetric(float64(int64(m1.HeapInuse)-int64(m0.HeapInuse))/float64(n), "heap-B/session")
				cancel()
				<-done
				http.DefaultClient.CloseIdleConnections()
			}
		})
	}
}

func mcpgoTransportHeaders(h http.Header) transport.StreamableHTTPCOption {
	m := map[string]string{}
	for k := range h {
		m[k] = h.Get(k)
	}
	return transport.WithHTTPHeaders(m)
}
