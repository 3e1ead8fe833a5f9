// Package mcpstdio is MCP over stdio (docs/mcp.md): a server process
// clawkit starts and owns, in the manner of OpenClaw's createMcpStdioClient.
//
// A Process runs in its own process group with exactly the environment it
// was given; Stop escalates EOF → SIGTERM → SIGKILL on the group and
// confirms that nothing of it is left (with a child subreaper and a /proc
// scan on Linux), reporting an mcp.CleanupResult when it had to force.
//
// A Client speaks MCP over the process's stdin and stdout: it embeds the
// connection core (mcp.Core) for ids, the pending bound, retirement and the opening,
// checks every message against the frame limit before its bytes are kept
// (mcp.LineFramer), and reads stdout with a reader baton (baton.go) so that
// a caller waiting for its answer reads it itself. Dialer gives mcp.Call
// and mcp.Session a Client.
//
// Relay, RunProxy and RunConnect are `clawkit mcp proxy`: the bounded
// verbatim relay between a client's stdio and a server (or a service's unix
// socket), with the proxy's own server/discover probe and the 2026-07-28
// pending bound. The HTTP proxy (mcphttp) starts its servers with this package.
//
// The package uses process groups and signals and so builds on Unix only.
package mcpstdio
