// Package conformance runs OpenClaw's own code beside clawkit's on the same
// inputs and compares: the skill scanner, the MCP stdio client, the bounded
// line framer and the worker bundle producer, on every OpenClaw release
// installed under peers/ (the newest and the oldest supported at least).
// The Node drivers in drivers/ load each reference from a release by
// content; the Go tests feed them and clawkit the same inputs. What agrees,
// what differs and why is in docs/conformance.md.
//
// A reference a release is expected to ship and does not is a failure,
// never a skip. A missing peer is a skip with its reason locally and a
// failure in CI (CI set), as in the testscript peer guards.
package conformance
