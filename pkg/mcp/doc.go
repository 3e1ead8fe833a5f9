// Package mcp runs Model Context Protocol servers over stdio with hard
// limits, in the manner of OpenClaw's createMcpStdioClient (docs/mcp.md).
//
// A Client owns its server: the process runs in its own process group with
// exactly the environment it was given, every message is checked against a
// frame limit before its bytes are kept (LineFramer), responses are
// validated as JSON-RPC 2.0 with safe-integer ids, the handshake demands the
// exact protocol version asked for, requests are bounded in number and time,
// and a timeout or cancellation retires the whole connection with the first
// fatal error. Stop escalates EOF → SIGTERM → SIGKILL on the group and
// confirms that nothing of it is left, reporting a CleanupResult when it had
// to force.
//
// Failures are *Error values of two classes, unavailable and protocol;
// Coded maps them to the project's exit-code kinds. Call, Session, RunProxy
// and RunConnect are the operations behind `clawkit mcp call|session|proxy`.
//
// The package uses process groups and signals and so builds on Unix only.
package mcp
