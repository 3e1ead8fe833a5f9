package mcpstdio

import "github.com/clawkit/clawkit/pkg/errs"

// Error codes of this package: public and stable (docs/errors.md lists
// them all with their exit codes).
const (
	// CodeInvalidConnect: --connect …: expected unix:PATH
	CodeInvalidConnect errs.Code = "invalid_connect"
	// CodeServerClosedStdout: (see the message)
	CodeServerClosedStdout errs.Code = "server_closed_stdout"
	// CodeServerExited: (see the message)
	CodeServerExited errs.Code = "server_exited"
	// CodeServiceClosed: (see the message)
	CodeServiceClosed errs.Code = "service_closed"
	// CodeSpawnFailed: no server command given
	CodeSpawnFailed errs.Code = "spawn_failed"
)
