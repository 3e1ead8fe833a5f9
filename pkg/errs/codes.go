package errs

// Error codes raised by more than one package: each is declared here, once
// (a code raised by one package alone is declared in that package's
// codes.go). docs/errors.md lists them all with their exit codes.

const (
	// CodeFailed: an error that carries no code of its own
	CodeFailed Code = "failed"
)
