// Package mcp is the Model Context Protocol core that both transports share
// (docs/mcp.md; docs/architecture.md has the package map):
//
//   - messages: ParseMessage validates one JSON-RPC 2.0 message (safe-integer
//     ids, exact member names, valid UTF-8); AppendRequest and
//     AppendNotification build them;
//   - LineFramer splits a stream into lines under a hard frame limit;
//   - protocol eras: the legacy initialize handshake and the stateless
//     2026-07-28 era (server/discover, _meta on every request), and the auto
//     mode's probe between them (era.go);
//   - Error, its two classes (unavailable, protocol), Coded, which maps it to
//     the project's exit codes, and the error codes (codes.go);
//   - Core, the connection core both clients embed: the options and their
//     defaults, request ids, the pending table and its bound, retirement with
//     the first fatal error, and the opening (Core.Handshake) over whatever
//     carries the messages;
//   - ServerRequests, how a client with no user answers the server's own
//     requests (elicitation, roots, sampling) and the input requests of
//     2026-07-28 input_required results, which RequestResolved answers
//     and retries (serverreq.go, inputreq.go; docs/mcp.md, "Server
//     requests");
//   - Call and Session, the operations behind `clawkit mcp call|session`,
//     over a Conn that a Dialer opens.
//
// The transports live in their own packages: mcpstdio runs a server process
// and speaks over its stdio (the process tree, its stop, the stdio client,
// the relay and `mcp proxy`); mcphttp speaks Streamable HTTP and the legacy
// HTTP+SSE transport (the HTTP client and `mcp proxy --listen`). This
// package imports neither.
package mcp
