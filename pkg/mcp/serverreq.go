package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/clawkit/clawkit/pkg/errs"
)

// Server requests (docs/mcp.md, "Server requests"). A server may ask its
// client for things: a user's input (elicitation/create), the client's
// roots (roots/list), a completion from the client's model
// (sampling/createMessage). clawkit is a command-line client with no user
// at hand and no model, so it answers by a policy fixed before the
// connection opens: elicitation is declined, accepted with the schema's
// defaults (SEP-1034), or accepted with answers from a file; roots are the
// directories given with --root; sampling is refused. The same policy
// answers the input requests embedded in a 2026-07-28 input_required
// result (inputreq.go).

// Elicitation policies.
const (
	// ElicitDecline declines every elicitation (the default).
	ElicitDecline = "decline"
	// ElicitDefaults accepts with every field's schema default, and
	// declines when a field has none.
	ElicitDefaults = "defaults"
	// ElicitAnswers accepts with each field's value from the answers
	// file, else its schema default, and declines when a field has
	// neither.
	ElicitAnswers = "answers"
)

// Bounds on what a server's elicitation may ask, and on the server's text
// a note carries to the terminal.
const (
	maxElicitFields   = 256
	maxNoteText       = 200
	maxAnswersFields  = 1024
	maxAnswersFileLen = 1 << 20
)

// RPCInvalidParams is JSON-RPC's "invalid params".
const RPCInvalidParams = -32602

// ServerRequests is how a client answers the server's requests; the zero
// value declines elicitation, offers no roots and refuses sampling.
type ServerRequests struct {
	// Elicitation is ElicitDecline (or empty), ElicitDefaults or
	// ElicitAnswers.
	Elicitation string
	// Answers are the field values of ElicitAnswers, compacted JSON
	// (ParseElicitationAnswers).
	Answers map[string]json.RawMessage
	// Roots answer roots/list (RootsFromDirs); none is an empty list.
	Roots []Root
	// MaxInputRounds bounds the retries of one request that keeps
	// answering input_required (default DefaultMaxInputRounds).
	MaxInputRounds int
	// OnRequest, when set, is told how each server request was answered
	// (diagnostics). It is called by the goroutine reading at the time and
	// must not block for long.
	OnRequest func(ServerRequestNote)
}

// Root is one entry of a roots/list result.
type Root struct {
	URI  string `json:"uri"`
	Name string `json:"name,omitempty"`
}

// ServerRequestNote says how one server request was answered. Message
// and Reason may hold the server's text (clipped, not escaped): a
// terminal shows them escaped.
type ServerRequestNote struct {
	Method string
	// Via is "request" (a JSON-RPC request from the server) or
	// "input_required" (an input request inside a result).
	Via string
	// Message is an elicitation's message, clipped.
	Message string
	// Outcome is accepted, declined, refused or answered.
	Outcome string
	// Reason says why, in clawkit's words (field names clipped).
	Reason string
}

// CanElicit reports whether the policy can ever accept an elicitation:
// only then is the capability advertised.
func (p *ServerRequests) CanElicit() bool {
	return p.Elicitation == ElicitDefaults || p.Elicitation == ElicitAnswers
}

// Capabilities are the client capabilities the policy can honour:
// elicitation (form mode) when it can accept, roots when there are some.
// Sampling is never advertised.
func (p *ServerRequests) Capabilities() json.RawMessage {
	var parts []string
	if p.CanElicit() {
		parts = append(parts, `"elicitation":{"form":{}}`)
	}
	if len(p.Roots) > 0 {
		parts = append(parts, `"roots":{}`)
	}
	return json.RawMessage("{" + strings.Join(parts, ",") + "}")
}

// Answer is the outcome of one server request: a result, or an error.
// via is "request" or "input_required" (for the note).
func (p *ServerRequests) Answer(method string, params json.RawMessage, via string) (json.RawMessage, *RPCError) {
	note := ServerRequestNote{Method: method, Via: via}
	var res json.RawMessage
	var rpc *RPCError
	switch method {
	case "ping":
		return json.RawMessage(`{}`), nil
	case "elicitation/create":
		res, rpc, note = p.elicit(params, note)
	case "roots/list":
		roots := p.Roots
		if roots == nil {
			roots = []Root{}
		}
		b, _ := json.Marshal(struct {
			Roots []Root `json:"roots"`
		}{roots})
		res = b
		note.Outcome = "answered"
		note.Reason = count(len(roots), "root") + " from --root"
	case "sampling/createMessage":
		rpc = &RPCError{Code: RPCMethodNotFound, Message: "sampling is not supported: clawkit is a command-line client with no model to sample (sampling/createMessage refused)"}
		note.Outcome, note.Reason = "refused", "clawkit offers no sampling"
	default:
		return nil, &RPCError{Code: RPCMethodNotFound, Message: "Method not found"}
	}
	if p.OnRequest != nil {
		p.OnRequest(note)
	}
	return res, rpc
}

// AnswerServerRequest is the client's answer line to a request from the
// server (no newline), by Opts.Requests.
func (c *Core) AnswerServerRequest(rawID json.RawMessage, method string, params json.RawMessage) []byte {
	res, rpc := c.Opts.Requests.Answer(method, params, "request")
	var b []byte
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, rawID...)
	if rpc != nil {
		b = append(b, `,"error":{"code":`...)
		b = strconv.AppendInt(b, rpc.Code, 10)
		b = append(b, `,"message":`...)
		b = AppendJSONString(b, rpc.Message)
		return append(b, `}}`...)
	}
	b = append(b, `,"result":`...)
	b = append(b, res...)
	return append(b, '}')
}

// elicitField is one property of an elicitation's requestedSchema.
type elicitField struct {
	name    string
	typ     string   // string, number, integer, boolean, array; "" when absent or not a string
	def     []byte   // the default as sent (nil when none)
	choices []string // enum / oneOf consts (string), or the items' (array)
}

// elicitation is an elicitation/create request as clawkit reads it.
type elicitation struct {
	mode    string
	message string
	fields  []elicitField
}

// parseElicitation reads an elicitation/create request's params: a form
// (message, requestedSchema of flat primitive properties) or a URL-mode
// request. It never panics; every refusal is an error to send back.
func parseElicitation(params []byte) (*elicitation, error) {
	if FirstByte(params) != '{' || !json.Valid(params) {
		return nil, errString("params must be an object")
	}
	var p struct {
		Mode    *string         `json:"mode"`
		Message *string         `json:"message"`
		Schema  json.RawMessage `json:"requestedSchema"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, errString("params: " + ShortErr(err))
	}
	e := &elicitation{mode: "form"}
	if p.Mode != nil {
		e.mode = *p.Mode
	}
	if p.Message != nil {
		e.message = *p.Message
	}
	if e.mode != "form" {
		return e, nil
	}
	if p.Message == nil {
		return nil, errString("message is required")
	}
	if FirstByte(p.Schema) != '{' {
		return nil, errString("requestedSchema must be an object")
	}
	var s struct {
		Type       json.RawMessage `json:"type"`
		Properties json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(p.Schema, &s); err != nil {
		return nil, errString("requestedSchema: " + ShortErr(err))
	}
	if t, _ := JSONString(s.Type); t != "object" {
		return nil, errString(`requestedSchema must be of type "object"`)
	}
	if FirstByte(s.Properties) == 'n' || len(s.Properties) == 0 {
		return e, nil
	}
	if FirstByte(s.Properties) != '{' {
		return nil, errString("requestedSchema.properties must be an object")
	}
	seen := map[string]bool{}
	err := TopLevelMembers(s.Properties, func(name string, val []byte) error {
		if seen[name] {
			return errString("requestedSchema.properties names " + strconv.Quote(clipText(name)) + " twice")
		}
		seen[name] = true
		if len(e.fields) == maxElicitFields {
			return errString("requestedSchema has more than " + strconv.Itoa(maxElicitFields) + " properties")
		}
		f, err := parseElicitField(name, val)
		if err != nil {
			return err
		}
		e.fields = append(e.fields, f)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return e, nil
}

func parseElicitField(name string, val []byte) (elicitField, error) {
	f := elicitField{name: name}
	if FirstByte(val) != '{' {
		return f, errString("property " + strconv.Quote(clipText(name)) + " must be a schema object")
	}
	type constOf struct {
		Const json.RawMessage `json:"const"`
	}
	var ps struct {
		Type    json.RawMessage   `json:"type"`
		Default json.RawMessage   `json:"default"`
		Enum    []json.RawMessage `json:"enum"`
		OneOf   []constOf         `json:"oneOf"`
		AnyOf   []constOf         `json:"anyOf"`
		Items   *struct {
			Enum  []json.RawMessage `json:"enum"`
			AnyOf []constOf         `json:"anyOf"`
			OneOf []constOf         `json:"oneOf"`
		} `json:"items"`
	}
	if err := json.Unmarshal(val, &ps); err != nil {
		return f, errString("property " + strconv.Quote(clipText(name)) + ": " + ShortErr(err))
	}
	f.typ, _ = JSONString(ps.Type)
	if len(ps.Default) > 0 && string(ps.Default) != "null" {
		f.def = ps.Default
	}
	add := func(raws []json.RawMessage, consts []constOf) {
		for _, r := range raws {
			if s, ok := JSONString(r); ok {
				f.choices = append(f.choices, s)
			}
		}
		for _, c := range consts {
			if s, ok := JSONString(c.Const); ok {
				f.choices = append(f.choices, s)
			}
		}
	}
	add(ps.Enum, append(ps.OneOf, ps.AnyOf...))
	if f.typ == "array" && ps.Items != nil {
		add(ps.Items.Enum, append(ps.Items.AnyOf, ps.Items.OneOf...))
	}
	return f, nil
}

// fits reports whether v (valid JSON) is a value of field f: its type,
// and one of its choices when it has some. It returns why not.
func (f *elicitField) fits(v []byte) string {
	c := FirstByte(v)
	in := func(s string) bool { return len(f.choices) == 0 || slices.Contains(f.choices, s) }
	switch f.typ {
	case "string":
		s, ok := JSONString(bytes.TrimSpace(v))
		if !ok {
			return "not a string"
		}
		if !in(s) {
			return "not one of its choices"
		}
	case "number", "integer":
		if c != '-' && (c < '0' || c > '9') {
			return "not a number"
		}
		if f.typ == "integer" {
			n, err := strconv.ParseFloat(string(bytes.TrimSpace(v)), 64)
			if err != nil || n != float64(int64(n)) {
				return "not an integer"
			}
		}
	case "boolean":
		if t := string(bytes.TrimSpace(v)); t != "true" && t != "false" {
			return "not a boolean"
		}
	case "array":
		var items []json.RawMessage
		if c != '[' || json.Unmarshal(v, &items) != nil {
			return "not an array"
		}
		for _, it := range items {
			s, ok := JSONString(bytes.TrimSpace(it))
			if !ok {
				return "an item is not a string"
			}
			if !in(s) {
				return "an item is not one of its choices"
			}
		}
	default:
		return "a type clawkit cannot fill (" + strconv.Quote(clipText(f.typ)) + ")"
	}
	return ""
}

// elicit answers elicitation/create by the policy.
func (p *ServerRequests) elicit(params json.RawMessage, note ServerRequestNote) (json.RawMessage, *RPCError, ServerRequestNote) {
	decline := json.RawMessage(`{"action":"decline"}`)
	e, err := parseElicitation(params)
	if err != nil {
		note.Outcome, note.Reason = "refused", "invalid request: "+err.Error()
		return nil, &RPCError{Code: RPCInvalidParams, Message: "invalid elicitation/create: " + err.Error()}, note
	}
	note.Message = clipText(e.message)
	note.Outcome = "declined"
	switch {
	case e.mode != "form":
		note.Reason = "mode " + strconv.Quote(clipText(e.mode)) + " needs a user (clawkit answers form elicitation only)"
		return decline, nil, note
	case !p.CanElicit():
		note.Reason = "--elicitation decline"
		return decline, nil, note
	}
	var missing, bad []string
	var content []byte
	content = append(content, '{')
	for i := range e.fields {
		f := &e.fields[i]
		v, from := f.def, "default"
		if p.Elicitation == ElicitAnswers {
			if a, ok := p.Answers[f.name]; ok {
				v, from = a, "answer"
			}
		}
		if v == nil {
			missing = append(missing, strconv.Quote(clipText(f.name)))
			continue
		}
		if why := f.fits(v); why != "" {
			bad = append(bad, strconv.Quote(clipText(f.name))+" ("+from+" "+why+")")
			continue
		}
		var cv bytes.Buffer
		if json.Compact(&cv, v) != nil {
			bad = append(bad, strconv.Quote(clipText(f.name))+" ("+from+" is not JSON)")
			continue
		}
		if len(content) > 1 {
			content = append(content, ',')
		}
		content = AppendJSONString(content, f.name)
		content = append(content, ':')
		content = append(content, cv.Bytes()...)
	}
	if len(missing) > 0 || len(bad) > 0 {
		var why []string
		if len(missing) > 0 {
			what := "no schema default"
			if p.Elicitation == ElicitAnswers {
				what = "no answer and no schema default"
			}
			why = append(why, what+" for "+joinClipped(missing))
		}
		if len(bad) > 0 {
			why = append(why, "unusable value for "+joinClipped(bad))
		}
		note.Reason = strings.Join(why, "; ")
		return decline, nil, note
	}
	content = append(content, '}')
	note.Outcome = "accepted"
	note.Reason = count(len(e.fields), "field") + " (--elicitation " + p.Elicitation + ")"
	out := append([]byte(`{"action":"accept","content":`), content...)
	return append(out, '}'), nil, note
}

// count is "1 field", "2 fields".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// joinClipped joins names, at most 8 of them, naming how many more.
func joinClipped(names []string) string {
	if len(names) > 8 {
		return strings.Join(names[:8], ", ") + " and " + strconv.Itoa(len(names)-8) + " more"
	}
	return strings.Join(names, ", ")
}

// clipText is s cut at maxNoteText bytes on a rune boundary, with an
// ellipsis: the server's text in a note or an error stays one short line.
func clipText(s string) string {
	if len(s) <= maxNoteText {
		return s
	}
	i := maxNoteText
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}

type errString string

func (e errString) Error() string { return string(e) }

// ParseElicitationAnswers reads an answers file: one JSON object whose
// members are field names and whose values are what clawkit answers for
// that field, a string, a number, a boolean or an array of strings
// (docs/mcp.md, "Server requests"). Values are kept compacted.
func ParseElicitationAnswers(b []byte) (map[string]json.RawMessage, error) {
	bad := func(format string, args ...any) error {
		return errs.Usage(CodeInvalidElicitationAnswers, "--elicitation-answers: "+format, args...).
			WithHint(`give one JSON object of field names and values, e.g. {"name":"Ada","age":36,"confirmed":true}`)
	}
	if len(b) > maxAnswersFileLen {
		return nil, bad("the file is larger than %d bytes", maxAnswersFileLen)
	}
	if !utf8.Valid(b) {
		return nil, bad("the file is not valid UTF-8")
	}
	if !json.Valid(b) {
		var v any
		return nil, bad("not valid JSON: %s", ShortErr(json.Unmarshal(b, &v)))
	}
	if FirstByte(b) != '{' {
		return nil, bad("the file must hold one JSON object")
	}
	out := map[string]json.RawMessage{}
	err := TopLevelMembers(b, func(name string, val []byte) error {
		if _, dup := out[name]; dup {
			return bad("field %q appears twice", clipText(name))
		}
		if len(out) == maxAnswersFields {
			return bad("more than %d fields", maxAnswersFields)
		}
		switch c := FirstByte(val); {
		case c == '"', c == 't', c == 'f', c == '-', c >= '0' && c <= '9':
		case c == '[':
			var items []json.RawMessage
			_ = json.Unmarshal(val, &items)
			for _, it := range items {
				if FirstByte(it) != '"' {
					return bad("field %q: an array may hold strings only", clipText(name))
				}
			}
		default:
			return bad("field %q: the value must be a string, a number, a boolean or an array of strings", clipText(name))
		}
		var cv bytes.Buffer
		_ = json.Compact(&cv, val) // valid: the whole file is
		out[name] = cv.Bytes()
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// LoadElicitationAnswers reads and parses an answers file
// (ParseElicitationAnswers), at most 1 MiB.
func LoadElicitationAnswers(path string) (map[string]json.RawMessage, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, errs.Usage(CodeInvalidElicitationAnswers, "--elicitation-answers %q: %v", path, unwrapPathErr(err)).
			WithHint("give a readable JSON file of field names and values")
	}
	defer func() { _ = f.Close() }() // read only
	b, err := io.ReadAll(io.LimitReader(f, maxAnswersFileLen+1))
	if err != nil {
		return nil, errs.Usage(CodeInvalidElicitationAnswers, "--elicitation-answers %q: %v", path, unwrapPathErr(err)).
			WithHint("give a readable JSON file of field names and values")
	}
	return ParseElicitationAnswers(b)
}

func unwrapPathErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// RootsFromDirs turns --root directories into roots: each must exist and
// be a directory; its URI is the file:// URI of its absolute, cleaned
// path (symbolic links are kept as given), its name the last element.
// A directory given twice is listed once.
func RootsFromDirs(dirs []string) ([]Root, error) {
	var roots []Root
	seen := map[string]bool{}
	for _, d := range dirs {
		if d == "" {
			return nil, errs.Usage(CodeInvalidRoot, "--root must name a directory").WithHint("give --root DIR, e.g. --root .")
		}
		abs, err := filepath.Abs(d)
		if err != nil {
			return nil, errs.Usage(CodeInvalidRoot, "--root %q: %v", d, err)
		}
		st, err := os.Stat(abs)
		switch {
		case err != nil && errors.Is(err, fs.ErrNotExist):
			return nil, errs.Usage(CodeInvalidRoot, "--root %q: no such directory", d).WithHint("give a directory that exists; the server sees it as a file:// URI")
		case err != nil:
			return nil, errs.Usage(CodeInvalidRoot, "--root %q: %v", d, unwrapPathErr(err)).WithHint("give a directory clawkit can reach")
		case !st.IsDir():
			return nil, errs.Usage(CodeInvalidRoot, "--root %q is not a directory", d).WithHint("roots are directories; give the folder that holds the file")
		}
		if seen[abs] {
			continue
		}
		seen[abs] = true
		roots = append(roots, Root{URI: FileURI(abs), Name: filepath.Base(abs)})
	}
	return roots, nil
}

// FileURI is the file:// URI of an absolute path, its bytes outside the
// unreserved set and '/' percent-encoded (RFC 8089, RFC 3986).
func FileURI(abs string) string {
	var b strings.Builder
	b.WriteString("file://")
	p := filepath.ToSlash(abs)
	if !strings.HasPrefix(p, "/") {
		b.WriteByte('/') // a Windows drive: file:///C:/…
	}
	const hex = "0123456789ABCDEF"
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c == '/' || c == '-' || c == '.' || c == '_' || c == '~' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || (c == ':' && i == 1) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}
