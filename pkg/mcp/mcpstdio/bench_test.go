package mcpstdio

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/clawkit/clawkit/pkg/mcp"

	mcpgoclient "github.com/mark3labs/mcp-go/client"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// roundTrips runs b.N serial calls and reports calls/s, p50 and p99.
func roundTrips(b *testing.B, call func() error) {
	b.Helper()
	for range 50 { // warm up: JIT-free, but page faults and buffers
		if err := call(); err != nil {
			b.Fatal(err)
		}
	}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		t0 := time.Now()
		if err := call(); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	el := time.Since(start)
	b.StopTimer()
	slices.Sort(lat)
	q := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Nanoseconds()) / 1e3 }
	b.ReportMetric(float64(b.N)/el.Seconds(), "calls/s")
	b.ReportMetric(q(0.50), "p50-µs")
	b.ReportMetric(q(0.99), "p99-µs")
}

type echoResult struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
}

// ourCall is what a user of this package writes: marshal the params, send,
// decode the result.
func ourCall(c *Client) func() error {
	return func() error {
		params, _ := json.Marshal(map[string]any{"name": "echo", "arguments": map[string]any{"message": "hello"}})
		raw, err := c.Request(context.Background(), "tools/call", params)
		if err != nil {
			return err
		}
		var r echoResult
		return json.Unmarshal(raw, &r)
	}
}

// BenchmarkToolsCall compares serial tools/call round trips against the
// same Go echo server (mcpfake echo, run from this test binary) for this
// package's client, the official Go SDK and mcp-go, and this client
// through the proxy relay.
func BenchmarkToolsCall(b *testing.B) {
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	b.Run("client=clawkit", func(b *testing.B) {
		c, err := startOpts(context.Background(), fakeOptions(b, "echo"))
		if err != nil {
			b.Fatal(err)
		}
		defer func() {
			if _, err := c.Stop(); err != nil {
				b.Error(err)
			}
		}()
		roundTrips(b, ourCall(c))
	})
	b.Run("client=go-sdk", func(b *testing.B) {
		cmd := exec.Command(self, "echo")
		cmd.Env = []string{"CLAWKIT_MCPFAKE=1"}
		client := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, nil)
		cs, err := client.Connect(context.Background(), &sdk.CommandTransport{Command: cmd}, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer func() {
			if err := cs.Close(); err != nil {
				b.Error(err)
			}
		}()
		roundTrips(b, func() error {
			_, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "hello"}})
			return err
		})
	})
	b.Run("client=mcp-go", func(b *testing.B) {
		c, err := mcpgoclient.NewStdioMCPClient(self, []string{"CLAWKIT_MCPFAKE=1"}, "echo")
		if err != nil {
			b.Fatal(err)
		}
		defer func() {
			if err := c.Close(); err != nil {
				b.Error(err)
			}
		}()
		init := mcpgo.InitializeRequest{}
		init.Params.ProtocolVersion = mcp.DefaultProtocolVersion
		init.Params.ClientInfo = mcpgo.Implementation{Name: "bench", Version: "1"}
		if _, err := c.Initialize(context.Background(), init); err != nil {
			b.Fatal(err)
		}
		roundTrips(b, func() error {
			req := mcpgo.CallToolRequest{}
			req.Params.Name = "echo"
			req.Params.Arguments = map[string]any{"message": "hello"}
			_, err := c.CallTool(context.Background(), req)
			return err
		})
	})
	// The 2026-07-28 era: stateless requests carrying _meta, against the
	// same Go server in its new-era mode.
	b.Run("client=clawkit/era=2026-07-28", func(b *testing.B) {
		o := fakeOptions(b, "modern")
		o.ProtocolVersion = mcp.ModernProtocolVersion
		c, err := startOpts(context.Background(), o)
		if err != nil {
			b.Fatal(err)
		}
		defer func() {
			if _, err := c.Stop(); err != nil {
				b.Error(err)
			}
		}()
		roundTrips(b, ourCall(c))
	})
	b.Run("client=go-sdk/era=2026-07-28", func(b *testing.B) {
		cmd := exec.Command(self, "modern")
		cmd.Env = []string{"CLAWKIT_MCPFAKE=1"}
		client := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, nil)
		cs, err := client.Connect(context.Background(), &sdk.CommandTransport{Command: cmd}, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer func() {
			if err := cs.Close(); err != nil {
				b.Error(err)
			}
		}()
		if v := cs.InitializeResult().ProtocolVersion; v != mcp.ModernProtocolVersion {
			b.Fatalf("the Go SDK negotiated %s", v)
		}
		roundTrips(b, func() error {
			_, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "hello"}})
			return err
		})
	})
	b.Run("client=mcp-go/era=2026-07-28", func(b *testing.B) {
		c, err := mcpgoclient.NewStdioMCPClient(self, []string{"CLAWKIT_MCPFAKE=1"}, "modern")
		if err != nil {
			b.Fatal(err)
		}
		defer func() {
			if err := c.Close(); err != nil {
				b.Error(err)
			}
		}()
		init := mcpgo.InitializeRequest{}
		init.Params.ClientInfo = mcpgo.Implementation{Name: "bench", Version: "1"}
		if _, err := c.Initialize(context.Background(), init); err != nil {
			b.Fatal(err)
		}
		roundTrips(b, func() error {
			req := mcpgo.CallToolRequest{}
			req.Params.Name = "echo"
			req.Params.Arguments = map[string]any{"message": "hello"}
			_, err := c.CallTool(context.Background(), req)
			return err
		})
	})
	b.Run("client=clawkit/via=proxy", func(b *testing.B) {
		// The relay in its own process, as `clawkit mcp proxy -- …` runs
		// it; with CLAWKIT_BIN set, the real binary is used instead.
		o := fakeOptions(b, "echo")
		o.Env = []string{"CLAWKIT_MCPFAKE=proxy"}
		o.Args = nil
		if bin := os.Getenv("CLAWKIT_BIN"); bin != "" {
			o.Command = bin
			o.Args = []string{"mcp", "proxy", "--env", "CLAWKIT_MCPFAKE=1", "--", self, "echo"}
			o.Env = []string{}
		}
		c, err := startOpts(context.Background(), o)
		if err != nil {
			b.Fatal(err)
		}
		defer func() {
			if _, err := c.Stop(); err != nil {
				b.Error(err)
			}
		}()
		roundTrips(b, ourCall(c))
	})
}

// BenchmarkToolsCallEverything measures the relay's cost against the real
// Node server-everything (when installed): echo tool, direct and through
// the real `clawkit mcp proxy` binary (CLAWKIT_BIN, else skipped), in
// interleaved batches over connections open side by side, so load on the
// machine hits both alike; it reports each p50 and their ratio.
// CLAWKIT_BIN_BEFORE (a list, like PATH) adds other builds of the proxy
// to the same rounds, each reported under its file name (before/after
// figures of one run).
func BenchmarkToolsCallEverything(b *testing.B) {
	node, err := exec.LookPath("node")
	if err != nil {
		b.Skip("node is not installed")
	}
	entry, _ := filepath.Abs("../../peers/node_modules/@modelcontextprotocol/server-everything/dist/index.js")
	if _, err := os.Stat(entry); err != nil {
		b.Skip("server-everything is not installed (make peers)")
	}
	bin := os.Getenv("CLAWKIT_BIN")
	if bin == "" {
		b.Skip("set CLAWKIT_BIN to a built clawkit")
	}
	server := []string{node, entry, "stdio"}
	relayRatio(b, server, bin, os.Getenv("CLAWKIT_BIN_BEFORE"), []string{})
}

// BenchmarkRelayEcho is BenchmarkToolsCallEverything against the Go echo
// server (mcpfake echo from this test binary).
func BenchmarkRelayEcho(b *testing.B) {
	bin := os.Getenv("CLAWKIT_BIN")
	if bin == "" {
		b.Skip("set CLAWKIT_BIN to a built clawkit")
	}
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	relayRatio(b, []string{self, "echo"}, bin, os.Getenv("CLAWKIT_BIN_BEFORE"), []string{"CLAWKIT_MCPFAKE=1"})
}

// relayRatio opens one connection to server direct and one through each
// proxy build, then runs b.N calls on each in interleaved batches of 100.
func relayRatio(b *testing.B, server []string, bin, before string, env []string) {
	type variant struct {
		name string
		c    *Client
		lat  []time.Duration
	}
	open := func(name string, cmd []string, env []string) *variant {
		c, err := startOpts(context.Background(), testOptions{ProcessSpec: ProcessSpec{Command: cmd[0], Args: cmd[1:], Env: env}, Options: mcp.Options{StartupTimeout: 30 * time.Second}})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() {
			if _, err := c.Stop(); err != nil {
				b.Error(err)
			}
		})
		return &variant{name: name, c: c, lat: make([]time.Duration, 0, b.N)}
	}
	proxied := func(bin string) []string {
		args := []string{bin, "mcp", "proxy"}
		for _, e := range env {
			args = append(args, "--env", e)
		}
		return append(append(args, "--"), server...)
	}
	vs := []*variant{open("direct", server, env), open("proxy", proxied(bin), []string{})}
	for _, other := range filepath.SplitList(before) {
		vs = append(vs, open("proxy-"+filepath.Base(other), proxied(other), []string{}))
	}
	// A long warm-up: each connection has its own server process, and a
	// Node server's JIT is still settling after the first hundreds.
	for _, v := range vs {
		call := ourCall(v.c)
		for range 1000 {
			if err := call(); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ResetTimer()
	// Per round, each variant's median over its batch against direct's:
	// the median of those ratios follows load that drifts between rounds
	// less than the ratio of the whole run's medians does.
	roundRatios := make([][]float64, len(vs))
	batch := make([]time.Duration, 0, 100)
	med := func(l []time.Duration) float64 {
		l = slices.Clone(l)
		slices.Sort(l)
		return float64(l[len(l)/2].Nanoseconds()) / 1e3
	}
	for round, done := 0, 0; done < b.N; round++ {
		n := min(100, b.N-done)
		meds := make([]float64, len(vs))
		for i := range vs { // each goes first in turn
			k := (round + i) % len(vs)
			v := vs[k]
			call := ourCall(v.c)
			batch = batch[:0]
			for range n {
				t0 := time.Now()
				if err := call(); err != nil {
					b.Fatal(err)
				}
				batch = append(batch, time.Since(t0))
			}
			v.lat = append(v.lat, batch...)
			meds[k] = med(batch)
		}
		for k := range vs[1:] {
			roundRatios[k+1] = append(roundRatios[k+1], meds[k+1]/meds[0])
		}
		done += n
	}
	b.StopTimer()
	direct := med(vs[0].lat)
	b.ReportMetric(direct, "direct-p50-µs")
	for k, v := range vs[1:] {
		p := med(v.lat)
		r := slices.Clone(roundRatios[k+1])
		slices.Sort(r)
		b.ReportMetric(p, v.name+"-p50-µs")
		b.ReportMetric(p/direct, v.name+"/direct")
		b.ReportMetric(r[len(r)/2], v.name+"/direct-per-round")
	}
}
