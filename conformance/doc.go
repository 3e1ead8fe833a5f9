// Package conformance runs OpenClaw's own code beside clawkit's on the same
// inputs and compares: the skill scanner, the MCP stdio client, the bounded
// line framer and the worker bundle producer, on every OpenClaw release
// installed under peers/ (the newest and the oldest supported at least).
// The Node drivers in drivers/ load each reference from a release by
// content; the Go tests feed them and clawkit the same inputs. What agrees,
// what differs and why is in docs/conformance.md.
//
// TestMCPSuite runs the MCP project's own conformance suite (two pinned
// releases under peers/mcp-conformance) against clawkit's HTTP client
// (through the suiteclient adapter) and `mcp proxy --listen`, beside the Go
// SDK's conformance client and server; mcpsuite-baseline.txt lists the
// expected failures, each with its reason.
//
// A reference a release is expected to ship and does not is a failure,
// never a skip. A missing peer is a skip with its reason locally and a
// failure in CI (CI set), as in the testscript peer guards.
package conformance
