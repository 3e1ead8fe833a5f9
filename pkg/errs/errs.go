// Package errs defines the coded error every clawkit operation returns.
//
// Business packages classify their failures with a Kind; the CLI turns a Kind
// into a process exit code in exactly one place (pkg/cli.ExitCode), and the
// gateway carries Kind, Code and MutationAccepted across the socket so that a
// routed command exits exactly as the same command run offline would.
package errs

import (
	"errors"
	"fmt"
)

// Kind is the class of an outcome. Its numeric value is the documented exit
// code, so the mapping cannot drift between packages.
type Kind int

// The kinds; docs/errors.md lists them with their exit codes.
const (
	// KindFailed: a definitive failure; nothing was left half-done.
	KindFailed Kind = 1
	// KindUsage: bad flags, arguments or request shape.
	KindUsage Kind = 2
	// KindRefused: authority, ownership or policy; no effect was attempted.
	KindRefused Kind = 3
	// KindUnknown: a mutation may have happened; inspect before retrying.
	KindUnknown Kind = 4
	// KindUnavailable: temporarily unavailable; retry later.
	KindUnavailable Kind = 5
)

func (k Kind) String() string {
	switch k {
	case KindFailed:
		return "failed"
	case KindUsage:
		return "usage"
	case KindRefused:
		return "refused"
	case KindUnknown:
		return "outcome_unknown"
	case KindUnavailable:
		return "unavailable"
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// Error is a classified error with a stable snake_case code, a message that
// says what happened and an optional hint that says what to do next.
type Error struct {
	Kind    Kind
	Code    Code
	Message string
	Hint    string
	// RetryAfterMs is set only for temporary refusals when the wait is known.
	RetryAfterMs int64
	// Err is the underlying cause, kept for errors.Is/As; its text is not
	// shown separately (Message already says what happened).
	Err error
	// Fields are what a script needs from the failure besides its code
	// (the job, the path, the resource it is about), so it never parses
	// the message: fields of the --json error document.
	Fields
}

// Fields are the error document's fields naming what a failure is about
// (docs/errors.md, "The error document"); each is set where it is known.
type Fields struct {
	// JobID is the research job the failure is about (a script continues
	// with it: `research show`, `approve`, `wait`).
	JobID string `json:"jobId,omitempty"`
	// Path is the file or folder the failure is about, as the user named it.
	Path string `json:"path,omitempty"`
	// Resource is the other named thing the failure is about (a plugin, a
	// skill, a session, a profile), as "KIND:NAME".
	Resource string `json:"resource,omitempty"`
	// StderrTail is the last lines a child process wrote on its stderr
	// (an MCP server that ended), one string a line, as it wrote them:
	// text from outside, escaped line by line when printed on a terminal
	// (docs/errors.md, "The error document").
	StderrTail []string `json:"stderrTail,omitempty"`
}

func (e *Error) Error() string { return e.Message }
func (e *Error) Unwrap() error { return e.Err }

// WithHint returns a copy of e with the hint set.
func (e *Error) WithHint(format string, args ...any) *Error {
	c := *e
	c.Hint = fmt.Sprintf(format, args...)
	return &c
}

// WithRetryAfter returns a copy of e carrying retryAfterMs.
func (e *Error) WithRetryAfter(ms int64) *Error {
	c := *e
	c.RetryAfterMs = ms
	return &c
}

// WithJob returns a copy of e naming the research job it is about.
func (e *Error) WithJob(id string) *Error {
	c := *e
	c.JobID = id
	return &c
}

// WithPath returns a copy of e naming the path it is about.
func (e *Error) WithPath(p string) *Error {
	c := *e
	c.Path = p
	return &c
}

// WithResource returns a copy of e naming the resource (KIND:NAME) it is
// about.
func (e *Error) WithResource(kind, name string) *Error {
	c := *e
	c.Resource = kind + ":" + name
	return &c
}

// Wrap returns a copy of e whose cause is err.
func (e *Error) Wrap(err error) *Error {
	c := *e
	c.Err = err
	return &c
}

// Code is a stable public error code: snake_case, declared once as a
// constant (the codes.go of the one package that raises it, or this
// package's codes.go when several do) and listed in docs/errors.md with its
// exit codes; TestCatalog keeps the three in step and refuses a literal
// code at a call site. It is a distinct type, so a code cannot be mixed up
// with a message or any other string (docs/errors.md).
type Code string

func newf(k Kind, code Code, format string, args ...any) *Error {
	return &Error{Kind: k, Code: code, Message: fmt.Sprintf(format, args...)}
}

// Failed builds a KindFailed error.
func Failed(code Code, format string, args ...any) *Error {
	return newf(KindFailed, code, format, args...)
}

// Usage builds a KindUsage error.
func Usage(code Code, format string, args ...any) *Error {
	return newf(KindUsage, code, format, args...)
}

// Refused builds a KindRefused error.
func Refused(code Code, format string, args ...any) *Error {
	return newf(KindRefused, code, format, args...)
}

// Unknown builds a KindUnknown error (outcome unknown).
func Unknown(code Code, format string, args ...any) *Error {
	return newf(KindUnknown, code, format, args...)
}

// Unavailable builds a KindUnavailable error.
func Unavailable(code Code, format string, args ...any) *Error {
	return newf(KindUnavailable, code, format, args...)
}

// As returns the *Error in err's chain, or nil.
func As(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return nil
}

// KindOf returns the Kind of err; unclassified errors are KindFailed.
func KindOf(err error) Kind {
	if e := As(err); e != nil {
		return e.Kind
	}
	return KindFailed
}

// CodeOf returns the stable code of err, CodeFailed when unclassified.
func CodeOf(err error) Code {
	if e := As(err); e != nil && e.Code != "" {
		return e.Code
	}
	return CodeFailed
}
