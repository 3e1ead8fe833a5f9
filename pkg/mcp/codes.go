package mcp

import "github.com/clawkit/clawkit/pkg/errs"

// Error codes of this package: public and stable (docs/errors.md lists
// them all with their exit codes).
const (
	// CodeCancelled: (see the message)
	CodeCancelled errs.Code = "cancelled"
	// CodeCleanupUnconfirmed: (see the message)
	CodeCleanupUnconfirmed errs.Code = "cleanup_unconfirmed"
	// CodeClientStopped: (see the message)
	CodeClientStopped errs.Code = "client_stopped"
	// CodeConnectFailed: (see the message)
	CodeConnectFailed errs.Code = "connect_failed"
	// CodeEnvPassUnset: --env-pass …: the variable is not set in clawkit's environment
	CodeEnvPassUnset errs.Code = "env_pass_unset"
	// CodeFrameTooLarge: (see the message)
	CodeFrameTooLarge errs.Code = "frame_too_large"
	// CodeHandshakeFailed: (see the message)
	CodeHandshakeFailed errs.Code = "handshake_failed"
	// CodeInitializeTimeout: (see the message)
	CodeInitializeTimeout errs.Code = "initialize_timeout"
	// CodeInvalidConnect: --connect …: expected unix:PATH
	CodeInvalidConnect errs.Code = "invalid_connect"
	// CodeInvalidEnv: --env …: expected NAME=VALUE
	CodeInvalidEnv errs.Code = "invalid_env"
	// CodeInvalidResponseID: (see the message)
	CodeInvalidResponseID errs.Code = "invalid_response_id"
	// CodeInvalidSessionLine: stdin line …: …
	CodeInvalidSessionLine errs.Code = "invalid_session_line"
	// CodeMalformedMessage: (see the message)
	CodeMalformedMessage errs.Code = "malformed_message"
	// CodeMcpFailed: (see the message)
	CodeMcpFailed errs.Code = "mcp_failed"
	// CodeProbeDeclined: (see the message)
	CodeProbeDeclined errs.Code = "probe_declined"
	// CodeProtocolVersionMismatch: (see the message)
	CodeProtocolVersionMismatch errs.Code = "protocol_version_mismatch"
	// CodeProtocolVersionUnsupported: (see the message)
	CodeProtocolVersionUnsupported errs.Code = "protocol_version_unsupported"
	// CodeRequestTimeout: (see the message)
	CodeRequestTimeout errs.Code = "request_timeout"
	// CodeRPCError: (see the message)
	CodeRPCError errs.Code = "rpc_error"
	// CodeServerClosedStdout: (see the message)
	CodeServerClosedStdout errs.Code = "server_closed_stdout"
	// CodeServerExited: (see the message)
	CodeServerExited errs.Code = "server_exited"
	// CodeServerTimeout: (see the message)
	CodeServerTimeout errs.Code = "server_timeout"
	// CodeServiceClosed: (see the message)
	CodeServiceClosed errs.Code = "service_closed"
	// CodeSpawnFailed: no server command given
	CodeSpawnFailed errs.Code = "spawn_failed"
	// CodeTooManyPending: (see the message)
	CodeTooManyPending errs.Code = "too_many_pending"
)

// More error codes of this package (docs/errors.md lists them all).
const (
	// CodeBadContentType: (see the message)
	CodeBadContentType errs.Code = "bad_content_type"
	// CodeHeaderTimeout: (see the message)
	CodeHeaderTimeout errs.Code = "header_timeout"
	// CodeHTTPStatus: (see the message)
	CodeHTTPStatus errs.Code = "http_status"
	// CodeHTTPUnauthorized: (see the message)
	CodeHTTPUnauthorized errs.Code = "http_unauthorized"
	// CodeIdleTimeout: (see the message)
	CodeIdleTimeout errs.Code = "idle_timeout"
	// CodeInvalidEndpoint: (see the message)
	CodeInvalidEndpoint errs.Code = "invalid_endpoint"
	// CodeInvalidURL: (see the message)
	CodeInvalidURL errs.Code = "invalid_url"
	// CodeRedirectRefused: (see the message)
	CodeRedirectRefused errs.Code = "redirect_refused"
	// CodeResponseCapExceeded: (see the message)
	CodeResponseCapExceeded errs.Code = "response_cap_exceeded"
	// CodeSessionExpired: (see the message)
	CodeSessionExpired errs.Code = "session_expired"
	// CodeSessionIDChanged: (see the message)
	CodeSessionIDChanged errs.Code = "session_id_changed"
	// CodeSseLineTooLong: (see the message)
	CodeSseLineTooLong errs.Code = "sse_line_too_long"
	// CodeStreamEnded: (see the message)
	CodeStreamEnded errs.Code = "stream_ended"
)

// More error codes of this package (docs/errors.md lists them all).
const (
	// CodeTokenWriteFailed: cannot write the proxy's token file …: …
	CodeTokenWriteFailed errs.Code = "token_write_failed"
)

// More error codes of this package (docs/errors.md lists them all).
const (
	// CodeInvalidListen: --listen …: expected HOST:PORT
	CodeInvalidListen errs.Code = "invalid_listen"
)

// More error codes of this package (docs/errors.md lists them all).
const (
	// CodeTLSFailed: (see the message)
	CodeTLSFailed errs.Code = "tls_failed"
)
