package cli

import "github.com/clawkit/clawkit/pkg/errs"

// Error codes of this package: public and stable (docs/errors.md lists
// them all with their exit codes).

const (
	// CodeConfigNotSet: … is not set
	CodeConfigNotSet errs.Code = "config_not_set"
	// CodeCreateFailed: cannot create …: …
	CodeCreateFailed errs.Code = "create_failed"
	// CodeDetachFailed: cannot find the clawkit binary: …
	CodeDetachFailed errs.Code = "detach_failed"
	// CodeEmptySecret: environment variable … is empty or unset
	CodeEmptySecret errs.Code = "empty_secret"
	// CodeInterrupted: (see the message)
	CodeInterrupted errs.Code = "interrupted"
	// CodeInvalidOut: cannot resolve --out …: …
	CodeInvalidOut errs.Code = "invalid_out"
	// CodeInvalidParams: --params is not valid JSON
	CodeInvalidParams errs.Code = "invalid_params"
	// CodeNoContent: no content for …: stdin is a terminal
	CodeNoContent errs.Code = "no_content"
	// CodeNotFound: --from …: no such file
	CodeNotFound errs.Code = "not_found"
	// CodeReadFailed: cannot read --from …: …
	CodeReadFailed errs.Code = "read_failed"
	// CodeReceiptUnreadable: cannot open …: …
	CodeReceiptUnreadable errs.Code = "receipt_unreadable"
	// CodeStdinFailed: cannot read standard input: …
	CodeStdinFailed errs.Code = "stdin_failed"
	// CodeStdinUnreadable: cannot read the request from stdin: …
	CodeStdinUnreadable errs.Code = "stdin_unreadable"
	// CodeStdoutFailed: cannot write the result: …
	CodeStdoutFailed errs.Code = "stdout_failed"
	// CodeTooLarge: standard input exceeds … bytes
	CodeTooLarge errs.Code = "too_large"
	// CodeUsage: an oauth profile takes its token from --token-stdin
	CodeUsage errs.Code = "usage"
	// CodeValidationFailed: … of … … failed validation (… profile)
	CodeValidationFailed errs.Code = "validation_failed"
	// CodeVerificationFailed: export … failed verification: … problem(s)…
	CodeVerificationFailed errs.Code = "verification_failed"
)

const (
	// CodeWriteFailed: cannot make the bundle: …
	CodeWriteFailed errs.Code = "write_failed"
)
