package mcphttp

import (
	"context"

	"encoding/json"
	"errors"
	"os"
	"slices"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/clawkit/clawkit/pkg/mcp"
	"github.com/clawkit/clawkit/pkg/mcp/mcpfake"
	"github.com/clawkit/clawkit/pkg/mcp/mcpstdio"
)

// The test binary doubles as the MCP servers under test: with
// CLAWKIT_MCPFAKE=1 in its (exact) environment it runs mcpfake MODE ARG
// over stdio (what the HTTP proxy serves); with CLAWKIT_MCPFAKE=http it
// runs mcpfake's HTTP servers: http MODE URLFILE.
func TestMain(m *testing.M) {
	switch os.Getenv("CLAWKIT_MCPFAKE") {
	case "1":
		arg := ""
		if len(os.Args) > 2 {
			arg = os.Args[2]
		}
		os.Exit(mcpfake.Run(os.Args[1], arg))
	case "http":
		os.Exit(mcpfake.RunHTTP(os.Args[1], os.Args[2]))
	case "sdkstdio":
		// The Go SDK's server over stdio, for the relay benchmarks.
		if err := mcpfake.SDKServer().Run(context.Background(), &sdk.StdioTransport{}); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// fakeOptions runs mcpfake MODE [ARG] from the test binary.
func fakeOptions(t testing.TB, mode string, arg ...string) mcpstdio.ProcessSpec {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return mcpstdio.ProcessSpec{
		Command: self,
		Args:    append([]string{mode}, arg...),
		Env:     []string{"CLAWKIT_MCPFAKE=1"},
	}
}

func callTool(name string, args any) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"name": name, "arguments": args})
	return b
}

func mcpErr(t *testing.T, err error) *mcp.Error {
	t.Helper()
	var me *mcp.Error
	if !errors.As(err, &me) {
		t.Fatalf("error %v (%T) is not an *mcp.Error", err, err)
	}
	return me
}

type echoResult struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
}

// roundTrips runs b.N serial calls and reports calls/s, p50 and p99.
func roundTrips(b *testing.B, call func() error) {
	b.Helper()
	for range 50 { // warm up: page faults and buffers
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
