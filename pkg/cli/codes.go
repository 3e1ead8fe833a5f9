package cli

import "github.com/clawkit/clawkit/pkg/errs"

// Error codes of this package: public and stable (docs/errors.md lists
// them all with their exit codes).
const (
	// CodeConfigNotSet: … is not set
	CodeConfigNotSet errs.Code = "config_not_set"
	// CodeCreateFailed: cannot create …: …
	CodeCreateFailed errs.Code = "create_failed"
	// CodeNoContent: no content for …: stdin is a terminal
	CodeNoContent errs.Code = "no_content"
	// CodeStdinUnreadable: cannot read the request from stdin: …
	CodeStdinUnreadable errs.Code = "stdin_unreadable"
	// CodeStdoutFailed: cannot write the result: …
	CodeStdoutFailed errs.Code = "stdout_failed"
	// CodeValidationFailed: … of … … failed validation (… profile)
	CodeValidationFailed errs.Code = "validation_failed"
	// CodeVerificationFailed: export … failed verification: … problem(s)…
	CodeVerificationFailed errs.Code = "verification_failed"
)

// More error codes of this package (docs/errors.md lists them all).
const (
	// CodeUsage: bad flags or arguments
	CodeUsage errs.Code = "usage"
)
