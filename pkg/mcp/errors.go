package mcp

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/clawkit/clawkit/pkg/errs"
)

// Class is the coarse classification of every client failure (docs/mcp.md).
type Class string

const (
	// ClassUnavailable covers process, lifecycle, pending-bound, deadline or
	// cancellation. Retrying later may work.
	ClassUnavailable Class = "unavailable"
	// ClassProtocol covers malformed frames, JSON-RPC errors, handshake
	// violations. The server said something definite (or nonsensical);
	// retrying the same thing will not help.
	ClassProtocol Class = "protocol"
)

// Error is what the client returns for every failure. It stays separate
// from errs.Error because its exit code is not known where it is raised:
// the same code (request_timeout) is exit 4 when the request reached the
// server and 5 when it did not, and only the caller knows its own request's
// delivery (withDelivered). Coded turns it into an errs.Error at the
// command's edge; its codes are declared in codes.go and listed in
// docs/errors.md like every other.
type Error struct {
	Class Class
	// Code is a stable snake_case identifier (frame_too_large,
	// server_exited, request_timeout, ...).
	Code    errs.Code
	Message string
	// Delivered is set when the failed request was (at least partly)
	// written to the server, so it may have taken effect.
	Delivered bool
	// RPC is the server's JSON-RPC error object, when it answered with one.
	RPC *RPCError
	// Hint, when set, replaces the code's usual hint (a more specific
	// diagnosis, such as a server that could not find a program).
	Hint string
	// Definitive marks an unavailable-class failure that retrying will not
	// cure: a command that does not exist or cannot be executed, a server
	// that ends before it answers the handshake. The CLI exits 1 for it,
	// not 5 (docs/mcp.md, "Exit codes").
	Definitive bool
	// HTTPStatus is the HTTP status that caused the failure (HTTP only).
	HTTPStatus int
	// StderrTail is the end of a stdio server's stderr, a string a line,
	// when it ended (server_exited): printed as lines of their own, never
	// folded into Message.
	StderrTail []string
	Err        error
}

func (e *Error) Error() string { return e.Message }
func (e *Error) Unwrap() error { return e.Err }

// WithDelivered returns a copy of e carrying the caller's delivery state:
// one retained fatal error is handed to every pending request, each of
// which knows for itself whether its bytes were written.
func (e *Error) WithDelivered(d bool) *Error {
	c := *e
	c.Delivered = d
	return &c
}

// Unavailable is an unavailable-class error.
func Unavailable(code errs.Code, format string, args ...any) *Error {
	return &Error{Class: ClassUnavailable, Code: code, Message: fmt.Sprintf(format, args...)}
}

// ProtocolErr is a protocol-class error.
func ProtocolErr(code errs.Code, format string, args ...any) *Error {
	return &Error{Class: ClassProtocol, Code: code, Message: fmt.Sprintf(format, args...)}
}

// RPCError is a JSON-RPC 2.0 error object.
type RPCError struct {
	Code    int64           `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *RPCError) Error() string { return fmt.Sprintf("JSON-RPC error %d: %s", e.Code, e.Message) }

// JSON-RPC and MCP error codes the client treats specially.
const (
	// RPCMethodNotFound is JSON-RPC's "method not found".
	RPCMethodNotFound = -32601
	// RPCRequestTimeout is the MCP SDKs' "request timed out" code. A
	// server that reports its own timeout is in an unknown state, so the
	// connection is retired rather than reused.
	RPCRequestTimeout = -32001
)

// hints say what to do next for each stable code.
var hints = map[errs.Code]string{
	"spawn_failed":                 "check the command and its arguments; the server's PATH is the one given with --env/--env-pass, else clawkit's own",
	"initialize_timeout":           "the server did not finish the handshake in time; raise --startup-timeout or check its stderr",
	"protocol_version_mismatch":    "--protocol-version auto (the default) accepts any version clawkit speaks; an explicit version must be answered exactly",
	"protocol_version_unsupported": "pass one of the versions the server speaks with --protocol-version, or use --protocol-version auto",
	"handshake_failed":             "the server refused the handshake; check its stderr, or try --protocol-version auto",
	"server_exited":                "the server process ended; its stderr tail, if it wrote any, follows the message",
	"server_closed_stdout":         "the server closed its stdout while still running",
	"too_many_pending":             "raise --max-pending or send fewer concurrent requests",
	"request_timeout":              "raise --request-timeout; the request may have taken effect on the server",
	"server_timeout":               "the server reported its own timeout; the request may have taken effect",
	"cancelled":                    "the request was interrupted; it may have taken effect on the server",
	"frame_too_large":              "raise --max-frame-bytes if such large messages are expected",
	"malformed_message":            "the peer wrote something that is not a JSON-RPC 2.0 message; check that it speaks MCP over stdio",
	"invalid_response_id":          "the server answered with an id that is not a safe integer; it does not follow JSON-RPC",
	"rpc_error":                    "the server rejected the request; check the method name and params",
	"client_stopped":               "the connection was closed before the request finished",
	"write_failed":                 "the server stopped reading its stdin; the connection was retired",
	"cleanup_unconfirmed":          "a process of the server's tree may still be running; the message lists what was done and what is left (inspect with ps -o pid,pgid,sid,stat,cmd -p PIDS)",
	"connect_failed":               "check that the service is running and listening on that address",
	"invalid_url":                  "give --url an http:// or https:// URL; credentials go in auth profiles (--header NAME=@PROFILE)",
	"http_status":                  "the server refused the request over HTTP; the message carries its status and reason",
	"http_unauthorized":            "the server wants credentials: store them in an auth profile and pass --header Authorization=@PROFILE",
	"redirect_refused":             "clawkit follows no redirect; give --url the address the server redirects to if you trust it",
	"session_expired":              "the server ended the session; start a new one",
	"session_id_changed":           "the server changed its Mcp-Session-Id mid-session, which the spec forbids",
	"bad_content_type":             "the server answered with something other than application/json or text/event-stream; check that the URL is an MCP endpoint",
	"response_cap_exceeded":        "raise --max-response-bytes if so much data is expected",
	"sse_line_too_long":            "raise --max-line-bytes if such long SSE lines are expected",
	"idle_timeout":                 "the server's stream went silent; raise --idle-timeout for slow tools",
	"header_timeout":               "the server took too long to answer; raise --header-timeout",
	"stream_ended":                 "the server ended its stream before answering; the request may have taken effect",
	"tls_failed":                   "the server's certificate is not trusted by this system; install its CA in the system store (there is no switch to skip the check)",
	"invalid_endpoint":             "a legacy SSE server must name a message endpoint on its own origin",
	"service_closed":               "the service closed the connection; a request in flight may have taken effect",
	"invalid_input_required":       "the server's input_required result breaks the 2026-07-28 rules (SEP-2322); nothing was retried",
}

// Coded maps a client error to the project's coded error: protocol → exit
// 1; unavailable → exit 5, or exit 4 when the request may have been
// delivered. Errors that already are *errs.Error pass through.
func Coded(err error) error {
	if err == nil {
		return nil
	}
	if e := errs.As(err); e != nil {
		return err
	}
	var me *Error
	if !errors.As(err, &me) {
		return errs.Failed(CodeMcpFailed, "%s", err.Error()).Wrap(err)
	}
	var ce *errs.Error
	switch {
	case me.Class == ClassProtocol, me.Definitive:
		ce = errs.Failed(me.Code, "%s", me.Message)
	case me.Delivered:
		ce = errs.Unknown(me.Code, "%s", me.Message)
	default:
		ce = errs.Unavailable(me.Code, "%s", me.Message)
	}
	if h := me.Hint; h != "" {
		ce = ce.WithHint("%s", h)
	} else if h := hints[me.Code]; h != "" {
		ce = ce.WithHint("%s", h)
	}
	ce.StderrTail = me.StderrTail
	return ce.Wrap(me)
}
