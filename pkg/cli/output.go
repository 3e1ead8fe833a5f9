package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/term"

	"github.com/clawkit/clawkit/pkg/errs"
)

// Env is what every leaf's Run receives: the process's side effects in one
// place so tests can swap them.
type Env struct {
	Ctx     context.Context
	Globals *Globals
	Stdin   io.Reader
	Out     *Output
	Now     func() time.Time
	Getenv  func(string) string
}

// Output prints results in human or JSON form and errors in the documented
// shape. Results go to stdout, diagnostics and progress to stderr.
type Output struct {
	Stdout   io.Writer
	Stderr   io.Writer
	JSON     bool
	Progress string // auto, always, never
}

// Result prints v as one JSON document when --json is set, else calls human.
func (o *Output) Result(v any, human func(w io.Writer)) error {
	if o.JSON {
		return o.PrintJSON(v)
	}
	if human != nil {
		human(o.Stdout)
	}
	return nil
}

// PrintJSON writes v as one indented JSON document and a newline.
func (o *Output) PrintJSON(v any) error {
	enc := json.NewEncoder(o.Stdout)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// Warnf prints a diagnostic line on stderr.
func (o *Output) Warnf(format string, args ...any) {
	fmt.Fprintf(o.Stderr, "clawkit: "+format+"\n", args...)
}

// ProgressWriter returns stderr when progress should be shown, else nil.
// auto shows progress only when stderr is a terminal.
func (o *Output) ProgressWriter() io.Writer {
	switch o.Progress {
	case "always":
		return o.Stderr
	case "never":
		return nil
	}
	if f, ok := o.Stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		return o.Stderr
	}
	return nil
}

// reportedError is a failure whose details the command already printed as
// its one JSON document (e.g. a lint report with ok:false): in JSON mode
// Error adds nothing, so stdout still holds exactly one document; the exit
// code still comes from the wrapped error.
type reportedError struct{ error }

func (e *reportedError) Unwrap() error { return e.error }

// jsonError is the documented machine form of a failure.
type jsonError struct {
	OK           bool   `json:"ok"`
	Code         string `json:"code"`
	Message      string `json:"message"`
	Hint         string `json:"hint,omitempty"`
	RetryAfterMs *int64 `json:"retryAfterMs,omitempty"`
}

// Error prints err in the documented form and returns its exit code.
func (o *Output) Error(err error) int {
	code := ExitCode(err)
	e := errs.As(err)
	msg, hint, ecode := err.Error(), "", errs.CodeOf(err)
	var retry *int64
	if e != nil {
		hint = e.Hint
		if e.RetryAfterMs > 0 {
			r := e.RetryAfterMs
			retry = &r
		}
	}
	if o.JSON {
		var done *reportedError
		if errors.As(err, &done) {
			return code // the command already printed its one JSON document
		}
		_ = o.PrintJSON(jsonError{OK: false, Code: ecode, Message: msg, Hint: hint, RetryAfterMs: retry})
		return code
	}
	fmt.Fprintf(o.Stderr, "clawkit: error: %s\n", msg)
	if hint != "" {
		fmt.Fprintf(o.Stderr, "clawkit: hint: %s\n", hint)
	}
	if retry != nil {
		fmt.Fprintf(o.Stderr, "clawkit: hint: retry after %dms\n", *retry)
	}
	return code
}
