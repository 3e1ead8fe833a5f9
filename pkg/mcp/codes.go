package mcp

import "github.com/clawkit/clawkit/pkg/errs"

// Error codes of this package: public and stable (docs/errors.md lists
// them all with their exit codes).
const (
	// CodeEnvPassUnset: --env-pass …: the variable is not set in clawkit's environment
	CodeEnvPassUnset errs.Code = "env_pass_unset"
	// CodeHandshakeFailed: (see the message)
	CodeHandshakeFailed errs.Code = "handshake_failed"
	// CodeInvalidEnv: --env …: expected NAME=VALUE
	CodeInvalidEnv errs.Code = "invalid_env"
	// CodeInvalidSessionLine: stdin line …: …
	CodeInvalidSessionLine errs.Code = "invalid_session_line"
	// CodeMcpFailed: (see the message)
	CodeMcpFailed errs.Code = "mcp_failed"
	// CodeProbeDeclined: (see the message)
	CodeProbeDeclined errs.Code = "probe_declined"
	// CodeProtocolVersionMismatch: (see the message)
	CodeProtocolVersionMismatch errs.Code = "protocol_version_mismatch"
	// CodeProtocolVersionUnsupported: (see the message)
	CodeProtocolVersionUnsupported errs.Code = "protocol_version_unsupported"
	// CodeServerTimeout: (see the message)
	CodeServerTimeout errs.Code = "server_timeout"
	// CodeTooManyPending: (see the message)
	CodeTooManyPending errs.Code = "too_many_pending"
	// CodeInvalidElicitationAnswers: --elicitation-answers: …
	CodeInvalidElicitationAnswers errs.Code = "invalid_elicitation_answers"
	// CodeInvalidRoot: --root …: no such directory
	CodeInvalidRoot errs.Code = "invalid_root"
	// CodeInvalidInputRequired: malformed input_required result from the server: …
	CodeInvalidInputRequired errs.Code = "invalid_input_required"
	// CodeInputRequiredUnanswered: … needs input clawkit cannot give; …
	CodeInputRequiredUnanswered errs.Code = "input_required_unanswered"
	// CodeInputRequiredRounds: … still needs input after … rounds of answers; …
	CodeInputRequiredRounds errs.Code = "input_required_rounds"
)

// More error codes of this package (docs/errors.md lists them all).

// More error codes of this package (docs/errors.md lists them all).

// More error codes of this package (docs/errors.md lists them all).

// More error codes of this package (docs/errors.md lists them all).
