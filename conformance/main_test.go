package conformance

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/clawkit/clawkit/pkg/mcp/mcpfake"
)

// The test binary doubles as the hostile MCP servers: with
// CLAWKIT_MCPFAKE=1 in its (exact) environment it runs mcpfake MODE ARG,
// for OpenClaw's client and clawkit's alike.
func TestMain(m *testing.M) {
	if os.Getenv("CLAWKIT_MCPFAKE") == "1" {
		arg := ""
		if len(os.Args) > 2 {
			arg = os.Args[2]
		}
		os.Exit(mcpfake.Run(os.Args[1], arg))
	}
	// With CLAWKIT_CONFORMANCE_CASE set it is clawkit's side of one MCP
	// case, alone in its process as `clawkit mcp call` is (the process is
	// a child subreaper, which claims orphans for its one server).
	if os.Getenv("CLAWKIT_CONFORMANCE_CASE") == "stdin" {
		var mc mcpCase
		if err := json.NewDecoder(os.Stdin).Decode(&mc); err != nil {
			_, _ = os.Stderr.WriteString(err.Error() + "\n") // exiting 2 says it anyway
			os.Exit(2)
		}
		mc.argFile = os.Getenv("CLAWKIT_CONFORMANCE_ARGFILE") == "1"
		self, _ := os.Executable()
		b, _ := json.Marshal(clawkitCall(self, mc))
		if _, err := os.Stdout.Write(append(b, '\n')); err != nil {
			os.Exit(2)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}
