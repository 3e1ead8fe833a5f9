package mcphttp

import "github.com/clawkit/clawkit/pkg/errs"

// Error codes of this package: public and stable (docs/errors.md lists
// them all with their exit codes).
const (
	// CodeBadContentType: (see the message)
	CodeBadContentType errs.Code = "bad_content_type"
	// CodeHeaderMismatch: a 2026-07-28 server refused a tools/call with -32020 HeaderMismatch, again after the tools were listed once more
	CodeHeaderMismatch errs.Code = "header_mismatch"
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
	// CodeInvalidToolHeaders: tool … is not called: its x-mcp-header annotations are invalid (…)
	CodeInvalidToolHeaders errs.Code = "invalid_tool_headers"
	// CodeInvalidListen: --listen …: expected HOST:PORT
	CodeInvalidListen errs.Code = "invalid_listen"
	// CodeInvalidURL: --url …: expected an http:// or https:// URL with a host
	CodeInvalidURL errs.Code = "invalid_url"
	// CodeRedirectRefused: (see the message)
	CodeRedirectRefused errs.Code = "redirect_refused"
	// CodeResponseCapExceeded: (see the message)
	CodeResponseCapExceeded errs.Code = "response_cap_exceeded"
	// CodeResumeFailed: the server's stream ended before it answered request …; … attempts in a row to resume it …
	CodeResumeFailed errs.Code = "resume_failed"
	// CodeSessionExpired: (see the message)
	CodeSessionExpired errs.Code = "session_expired"
	// CodeSessionIDChanged: (see the message)
	CodeSessionIDChanged errs.Code = "session_id_changed"
	// CodeSseLineTooLong: (see the message)
	CodeSseLineTooLong errs.Code = "sse_line_too_long"
	// CodeStreamEnded: (see the message)
	CodeStreamEnded errs.Code = "stream_ended"
	// CodeTLSFailed: (see the message)
	CodeTLSFailed errs.Code = "tls_failed"
	// CodeTokenWriteFailed: cannot write the proxy's token file …: …
	CodeTokenWriteFailed errs.Code = "token_write_failed"
)
