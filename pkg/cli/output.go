package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	"golang.org/x/term"

	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/termsafe"
)

// Output prints results in human or JSON form and errors in the documented
// shape. Results go to stdout, diagnostics and progress to stderr.
type Output struct {
	Stdout   io.Writer
	Stderr   io.Writer
	JSON     bool
	Progress string // auto, always, never
	// observe, when set (MainObserved), is told each failure's code and
	// exit code.
	observe func(code errs.Code, exit int)
}

// Result prints v as one JSON document when --json is set, else calls
// human, and returns the first error of human's writes.
func (o *Output) Result(v any, human func(w *Printer)) error {
	if o.JSON {
		return o.PrintJSON(v)
	}
	if human != nil {
		p := &Printer{w: o.Stdout}
		human(p)
		return p.err
	}
	return nil
}

// Printer is the writer of a command's human output. It keeps the first
// write error and writes nothing after it; Result returns that error, so
// the lines of a result are not checked one by one (docs/architecture.md,
// "Checks").
type Printer struct {
	w   io.Writer
	err error
}

// Write writes b unless an earlier write failed.
func (p *Printer) Write(b []byte) (int, error) {
	if p.err != nil {
		return 0, p.err
	}
	n, err := p.w.Write(b)
	p.err = err
	return n, err
}

// Table returns a Printer that aligns tab-separated columns (text/tabwriter
// with these settings, padded with spaces) until Flush writes them to p.
func (p *Printer) Table(minwidth, tabwidth, padding int) *Printer {
	return &Printer{w: tabwriter.NewWriter(p, minwidth, tabwidth, padding, ' ', 0)}
}

// Flush writes a Table's lines; an error stays in the Printer it was
// made from (and in this one).
func (p *Printer) Flush() {
	if tw, ok := p.w.(*tabwriter.Writer); ok && p.err == nil {
		p.err = tw.Flush()
	}
}

// PrintJSON writes v as one indented JSON document and a newline: the
// one writer of every --json result (and of --help --json).
func (o *Output) PrintJSON(v any) error {
	return writeJSON(o.Stdout, v, "", "  ")
}

// PrintJSONLine writes v as one compact JSON line: a stream of results
// (mcp session's default output), one line each.
func (o *Output) PrintJSONLine(v any) error {
	return writeJSON(o.Stdout, v, "", "")
}

// writeJSON is the one JSON encoding of stdout: HTML characters kept as
// they are, every line after the first starting with prefix, nested
// levels indented by indent (both empty: one line), newline-terminated.
func writeJSON(w io.Writer, v any, prefix, indent string) error {
	enc := json.NewEncoder(w)
	enc.SetIndent(prefix, indent)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// Warnf prints a diagnostic line on stderr.
func (o *Output) Warnf(format string, args ...any) {
	// Diagnostics on stderr are best effort: there is nowhere left to
	// report a failed write to (here and in Error).
	_, _ = fmt.Fprintf(o.Stderr, "clawkit: %s\n", termsafe.Text(fmt.Sprintf(format, args...)))
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
	OK           bool      `json:"ok"`
	Code         errs.Code `json:"code"`
	Message      string    `json:"message"`
	Hint         string    `json:"hint,omitempty"`
	RetryAfterMs *int64    `json:"retryAfterMs,omitempty"`
	// jobId, path, resource: what the failure is about, when known.
	errs.Fields
}

// jsonErrorOf is err's documented machine form: the one place an error
// document is built (the streamed and mcp documents embed it).
func jsonErrorOf(err error) jsonError {
	je := jsonError{OK: false, Code: errs.CodeOf(err), Message: err.Error()}
	if e := errs.As(err); e != nil {
		je.Hint = e.Hint
		je.Fields = e.Fields
		if e.RetryAfterMs > 0 {
			r := e.RetryAfterMs
			je.RetryAfterMs = &r
		}
	}
	return je
}

// Error prints err in the documented form and returns its exit code.
func (o *Output) Error(err error) int {
	code := ExitCode(err)
	je := jsonErrorOf(err)
	if o.observe != nil {
		o.observe(je.Code, code)
	}
	if o.JSON {
		var done *reportedError
		if errors.As(err, &done) {
			return code // the command already printed its one JSON document
		}
		_ = o.PrintJSON(je)
		return code
	}
	// A message or hint may quote text from outside (a provider's error,
	// a server's name, an archive entry): on a terminal it is escaped so
	// it cannot forge a line or move the cursor (docs/design.md).
	_, _ = fmt.Fprintf(o.Stderr, "clawkit: error: %s\n", termsafe.Text(je.Message))
	if je.Hint != "" {
		_, _ = fmt.Fprintf(o.Stderr, "clawkit: hint: %s\n", termsafe.Text(je.Hint))
	}
	if je.RetryAfterMs != nil {
		_, _ = fmt.Fprintf(o.Stderr, "clawkit: hint: retry after %dms\n", *je.RetryAfterMs)
	}
	// A server's own stderr: its lines as lines, each escaped, so a
	// multi-line traceback reads as one and cannot forge a clawkit line.
	for _, l := range je.StderrTail {
		_, _ = fmt.Fprintf(o.Stderr, "clawkit: server stderr: %s\n", termsafe.Text(l))
	}
	return code
}

// JSONStream writes one JSON document whose first field is an array
// streamed element by element ({"NAME": [ … ], more fields…}), so a command
// reporting on many items keeps memory flat and still prints exactly one
// document, also when it fails half-way (Fail closes it as an error
// document with every field of the usual one). It is the one writer of
// streamed --json output.
type JSONStream struct {
	w io.Writer
	n int
}

// StreamJSON opens a streamed document whose array field is name.
func (o *Output) StreamJSON(name string) (*JSONStream, error) {
	nb, _ := json.Marshal(name)
	_, err := fmt.Fprintf(o.Stdout, "{\n  %s: [", nb)
	return &JSONStream{w: o.Stdout}, err
}

// Item appends one element to the array.
func (s *JSONStream) Item(v any) error {
	b, err := marshalIndent(v, "    ")
	if err != nil {
		return err
	}
	sep := ","
	if s.n == 0 {
		sep = ""
	}
	s.n++
	_, err = fmt.Fprintf(s.w, "%s\n    %s", sep, b)
	return err
}

// Field is one field after the array.
type Field struct {
	Name  string
	Value any
}

// Close ends the array and the document with fields.
func (s *JSONStream) Close(fields ...Field) error {
	if _, err := fmt.Fprint(s.w, "\n  ]"); err != nil {
		return err
	}
	for _, f := range fields {
		nb, _ := json.Marshal(f.Name)
		vb, err := marshalIndent(f.Value, "  ")
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(s.w, ",\n  %s: %s", nb, vb); err != nil {
			return err
		}
	}
	_, err := fmt.Fprint(s.w, "\n}\n")
	return err
}

// Fail ends the document as the error document of err (code, message,
// hint, retryAfterMs, ok:false) and returns err marked as already
// reported, so Output.Error prints nothing more on stdout.
func (s *JSONStream) Fail(err error) error {
	je := jsonErrorOf(err)
	fields := []Field{{"code", je.Code}, {"message", je.Message}}
	if je.Hint != "" {
		fields = append(fields, Field{"hint", je.Hint})
	}
	if je.RetryAfterMs != nil {
		fields = append(fields, Field{"retryAfterMs", *je.RetryAfterMs})
	}
	fields = append(fields, Field{"ok", false})
	_ = s.Close(fields...)
	return &reportedError{err}
}

func marshalIndent(v any, prefix string) ([]byte, error) {
	var b bytes.Buffer
	if err := writeJSON(&b, v, prefix, "  "); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}
