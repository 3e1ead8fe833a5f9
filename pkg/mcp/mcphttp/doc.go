// Package mcphttp is MCP over HTTP (docs/mcp.md, "Over HTTP").
//
// Client connects to a remote server: Streamable HTTP as the spec's
// revisions since 2025-03-26 define it, and the HTTP+SSE transport of
// 2024-11-05, found by the spec's backwards-compatibility probe. It embeds
// the connection core (mcp.Core): the opening, ids, the pending bound and retirement
// are the stdio client's; only the carriage differs. Header values given
// with --header NAME=@PROFILE are secrets, removed from everything the
// server sends back. Dialer gives mcp.Call and mcp.Session a Client; the
// package's sse subpackage is the bounded Server-Sent Events reader.
//
// ServeHTTP is `clawkit mcp proxy --listen`: a Streamable HTTP (and, with
// --sse, legacy HTTP+SSE) endpoint on loopback in front of servers it runs
// over stdio with mcpstdio, one per session, with a bearer token, Origin
// and Host checks and bounded sessions. 2026-07-28 clients are served
// without a session by one child shared by all of them (httpstateless.go,
// docs/mcp.md "The proxy's eras"); the SEP-2243 header checks and the
// byte-level JSON edits that relay needs are in statelessjson.go.
package mcphttp
