package mcpstdio

import (
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/clawkit/clawkit/pkg/mcp"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/clawkit/clawkit/pkg/mcp/mcpfake"
)

// The test binary doubles as the MCP servers under test: with
// CLAWKIT_MCPFAKE=1 in its (exact) environment it runs mcpfake MODE ARG;
// with CLAWKIT_MCPFAKE=proxy it runs the proxy relay in front of
// "mcpfake echo", which is what `clawkit mcp proxy -- …` runs.
func TestMain(m *testing.M) {
	switch os.Getenv("CLAWKIT_MCPFAKE") {
	case "1":
		arg := ""
		if len(os.Args) > 2 {
			arg = os.Args[2]
		}
		os.Exit(mcpfake.Run(os.Args[1], arg))
	case "sigpipe":
		// Write to a stdout whose reader is gone: with survivePipeErrors
		// this is an EPIPE error (exit 42), without it a SIGPIPE death.
		survivePipeErrors()
		for range 100 {
			if _, err := os.Stdout.Write([]byte("x\n")); err != nil {
				os.Exit(42)
			}
		}
		os.Exit(0)
	case "http":
		// mcpfake's HTTP servers: http MODE URLFILE.
		os.Exit(mcpfake.RunHTTP(os.Args[1], os.Args[2]))
	case "sdkstdio":
		// The Go SDK's server (the one the gosdk HTTP modes serve) over
		// stdio, for the relay benchmarks.
		if err := mcpfake.SDKServer().Run(context.Background(), &sdk.StdioTransport{}); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	case "proxy":
		self, _ := os.Executable()
		spec := ProcessSpec{Command: self, Args: []string{"echo"}, Env: []string{"CLAWKIT_MCPFAKE=1"}, StderrTee: os.Stderr}
		if _, err := RunProxy(context.Background(), spec, ProxyOptions{}, os.Stdin, os.Stdout); err != nil {
			_, _ = os.Stderr.WriteString(err.Error() + "\n") // exiting 1 says it anyway
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// fakeOptions runs mcpfake MODE [ARG] from the test binary.
func fakeOptions(t testing.TB, mode string, arg ...string) testOptions {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return testOptions{ProcessSpec: ProcessSpec{
		Command: self,
		Args:    append([]string{mode}, arg...),
		Env:     []string{"CLAWKIT_MCPFAKE=1"},
	}}
}

// testOptions is a server to start and the connection's options, as the
// tests build them.
type testOptions struct {
	ProcessSpec
	mcp.Options
}

func startOpts(ctx context.Context, o testOptions) (*Client, error) {
	return Start(ctx, o.ProcessSpec, o.Options)
}

func callOpts(ctx context.Context, o testOptions, method string, params json.RawMessage) (*mcp.CallReport, error) {
	return mcp.Call(ctx, Dialer(o.ProcessSpec), o.Options, method, params)
}
