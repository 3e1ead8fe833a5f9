// Package google is clawkit's provider for managed deep research: a client
// of the Gemini API Interactions API (create, poll, cancel), the parsing of
// interaction resources into a report with attributed citations, and the
// classification of every failure by what it proves about the request
// (never sent, maybe sent, refused, temporary).
package google

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Interaction statuses: the InteractionStatus enum of Google's SDKs
// (google.golang.org/genai/interactions and @google/genai; the versions
// checked are named in docs/research.md). queued, in_progress,
// requires_action and requires_continuation are not finished.
const (
	StatusQueued               = "queued"
	StatusInProgress           = "in_progress"
	StatusRequiresAction       = "requires_action"
	StatusRequiresContinuation = "requires_continuation"
	StatusCompleted            = "completed"
	StatusFailed               = "failed"
	StatusCancelled            = "cancelled"
	StatusIncomplete           = "incomplete"
	StatusBudgetExceeded       = "budget_exceeded"
)

// Statuses lists every status the SDKs define, not finished ones first.
var Statuses = []string{StatusQueued, StatusInProgress, StatusRequiresAction, StatusRequiresContinuation,
	StatusCompleted, StatusFailed, StatusCancelled, StatusIncomplete, StatusBudgetExceeded}

// Terminal reports whether status ends an interaction. A status clawkit
// does not know is not terminal: the job keeps polling within its budget
// and keeps its handle (docs/research.md, "Statuses").
func Terminal(status string) bool {
	switch status {
	case StatusCompleted, StatusFailed, StatusCancelled, StatusIncomplete, StatusBudgetExceeded:
		return true
	}
	return false
}

// KnownStatus reports whether status is one the SDKs define.
func KnownStatus(status string) bool {
	for _, s := range Statuses {
		if s == status {
			return true
		}
	}
	return false
}

// Interaction is the part of the interaction resource clawkit reads.
// Unknown fields are ignored here on purpose: this is a provider response
// that grows over time, unlike the contract envelope we own.
type Interaction struct {
	ID      string          `json:"id"`
	Status  string          `json:"status"`
	Created string          `json:"created,omitempty"`
	Updated string          `json:"updated,omitempty"`
	Steps   []Step          `json:"steps,omitempty"`
	Usage   json.RawMessage `json:"usage,omitempty"`
	// Errors are the interaction's errors[] ({code, message}; the SDKs'
	// Error type, code a URI string): why a failed interaction failed.
	Errors []ProviderError `json:"errors,omitempty"`
	// ContinuationToken is set with status requires_continuation. clawkit
	// never sends it back (docs/research.md, "Continuation").
	ContinuationToken string `json:"continuation_token,omitempty"`
}

// Member names as the SDKs read them: an interaction's members and a
// step's or content block's fields are matched exactly ("text", never
// "Text"), while the "type" that picks a step's or block's kind is read
// as Go's encoding/json reads it (the SDKs' union discriminator: any
// case, the last such member winning). encoding/json alone matches every
// member without regard to case, which would give clawkit text the SDKs
// do not see (FuzzOutputTextMatchesSDK, FuzzPlanTextMatchesSDK).
//
// A body in which no member name could match ours but by case is read by
// encoding/json directly (exactNamesOnly: the common case, at its speed);
// any other is read member by member (decodeInteractionExact).

// memberNames are the member names of the interaction, step and content
// fields clawkit reads.
var memberNames = []string{"id", "status", "created", "updated", "steps", "usage", "errors", "continuation_token",
	"type", "content", "error", "text", "annotations", "data", "mime_type"}

// exactNamesOnly reports whether encoding/json's case-insensitive
// matching can only match the members of body that the SDKs match
// exactly: every occurrence of one of the names, in any case, is written
// exactly, no ASCII letter is written as a \u escape, and neither of the
// two non-ASCII letters encoding/json folds onto ASCII (U+017F, U+212A)
// occurs. It may say no for a body that would decode the same (the slow
// path is exact too), never yes for one that would not.
func exactNamesOnly(body []byte) bool {
	for i := 0; i < len(body); i++ {
		c := body[i]
		if c >= 0x80 {
			if foldedLetter(body, i) {
				return false
			}
			continue
		}
		if c != '"' {
			continue
		}
		// A string (a member name or a value): find its end.
		j, escaped := i+1, false
		for ; j < len(body) && body[j] != '"'; j++ {
			switch b := body[j]; {
			case b == '\\':
				// \u0041–\u007F: an ASCII letter written as an escape.
				if j+4 < len(body) && body[j+1] == 'u' && body[j+2] == '0' && body[j+3] == '0' && body[j+4] >= '4' && body[j+4] <= '7' {
					return false
				}
				escaped = true
				j++
			case b >= 0x80 && foldedLetter(body, j):
				return false
			}
		}
		if tok := body[i+1 : min(j, len(body))]; !escaped && foldsOntoName(tok) {
			return false
		}
		i = j
	}
	return true
}

// foldedLetter reports whether body[i:] starts with U+017F or U+212A,
// which encoding/json folds onto 's' and 'k'.
func foldedLetter(body []byte, i int) bool {
	return (body[i] == 0xc5 && i+1 < len(body) && body[i+1] == 0xbf) ||
		(body[i] == 0xe2 && i+2 < len(body) && body[i+1] == 0x84 && body[i+2] == 0xaa)
}

// foldsOntoName reports whether tok equals one of memberNames without
// regard to ASCII case but is not written exactly as it.
func foldsOntoName(tok []byte) bool {
	for _, n := range memberNames {
		if len(tok) == len(n) && string(tok) != n && bytes.EqualFold(tok, []byte(n)) {
			return true
		}
	}
	return false
}

// members decodes the JSON object b into its raw members.
func members(b []byte) (map[string]json.RawMessage, error) {
	var raw map[string]json.RawMessage
	err := json.Unmarshal(b, &raw)
	return raw, err
}

// decodeMember decodes member name of raw into v when it is present (and
// not null).
func decodeMember(raw map[string]json.RawMessage, name string, v any) error {
	if m, ok := raw[name]; ok && string(m) != "null" {
		return json.Unmarshal(m, v)
	}
	return nil
}

// discriminator reads a union's "type" as the SDKs do; ok is false when
// it is not a string (the SDKs then keep the value as an unknown kind).
func discriminator(b []byte) (typ string, ok bool, err error) {
	var d struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			return "", false, err
		}
		return "", false, nil
	}
	return d.Type, true, nil
}

// decodeInteractionExact reads an interaction member by member, with the
// SDKs' rules for names.
func decodeInteractionExact(b []byte) (*Interaction, error) {
	raw, err := members(b)
	if err != nil {
		return nil, err
	}
	var it Interaction
	for name, v := range map[string]any{"id": &it.ID, "status": &it.Status, "created": &it.Created, "updated": &it.Updated,
		"usage": &it.Usage, "errors": &it.Errors, "continuation_token": &it.ContinuationToken} {
		if err := decodeMember(raw, name, v); err != nil {
			return nil, err
		}
	}
	var steps []json.RawMessage
	if err := decodeMember(raw, "steps", &steps); err != nil {
		return nil, err
	}
	for _, sb := range steps {
		st, err := decodeStepExact(sb)
		if err != nil {
			return nil, err
		}
		it.Steps = append(it.Steps, st)
	}
	return &it, nil
}

// decodeStepExact reads a step as the SDKs' Step union: its kind from
// "type", a model output's content and error from their exactly named
// members; any other kind keeps its type only.
func decodeStepExact(b []byte) (Step, error) {
	var st Step
	typ, ok, err := discriminator(b)
	if err != nil || !ok {
		return st, err
	}
	st.Type = typ
	if typ != "model_output" {
		return st, nil
	}
	raw, err := members(b)
	if err != nil {
		return st, err
	}
	if err := decodeMember(raw, "error", &st.Error); err != nil {
		return st, err
	}
	var content []json.RawMessage
	if err := decodeMember(raw, "content", &content); err != nil {
		return st, err
	}
	for _, cb := range content {
		c, err := decodeContentExact(cb)
		if err != nil {
			return st, err
		}
		st.Content = append(st.Content, c)
	}
	return st, nil
}

// decodeContentExact reads a content block as the SDKs' Content union.
func decodeContentExact(b []byte) (Content, error) {
	var c Content
	typ, ok, err := discriminator(b)
	if err != nil || !ok {
		return c, err
	}
	c.Type = typ
	raw, err := members(b)
	if err != nil {
		return c, err
	}
	switch typ {
	case "text":
		if err := decodeMember(raw, "text", &c.Text); err != nil {
			return c, err
		}
		err = decodeMember(raw, "annotations", &c.Annotations)
	case "image":
		if err := decodeMember(raw, "data", &c.Data); err != nil {
			return c, err
		}
		err = decodeMember(raw, "mime_type", &c.MimeType)
	}
	return c, err
}

// Step is one entry of the steps[] timeline. Only model_output steps are
// read; thoughts and tool calls/results are skipped without being kept.
type Step struct {
	Type    string    `json:"type"`
	Content []Content `json:"content,omitempty"`
	// Error is a model_output step's error (a google.rpc.Status).
	Error *RPCStatus `json:"error,omitempty"`
}

// Content is one content block. For text blocks, Annotations carry
// citations as UTF-8 byte offsets into Text.
type Content struct {
	Type        string       `json:"type"`
	Text        string       `json:"text,omitempty"`
	Annotations []Annotation `json:"annotations,omitempty"`
	// Data and MimeType are an image block's inline bytes (base64) and
	// type (the SDKs' ImageContent); read only by ExtractFigures.
	Data     string `json:"data,omitempty"`
	MimeType string `json:"mime_type,omitempty"`
}

// Annotation is a text annotation; only url_citation is used.
type Annotation struct {
	Type       string `json:"type"`
	URL        string `json:"url,omitempty"`
	Title      string `json:"title,omitempty"`
	StartIndex *int64 `json:"start_index,omitempty"`
	EndIndex   *int64 `json:"end_index,omitempty"`
	// Bad is set by decoding when a field has the wrong JSON type or an
	// index is not an integer that fits: the annotation is dropped and
	// counted, and the rest of the interaction stays usable.
	Bad bool `json:"-"`
}

// UnmarshalJSON decodes an annotation without ever failing on its fields:
// one malformed citation must not make a finished report unusable.
func (a *Annotation) UnmarshalJSON(b []byte) error {
	raw, ok, err := lenientFields(b)
	if !ok {
		*a = Annotation{Bad: true}
		return err
	}
	*a = Annotation{}
	str := func(k string, dst *string) {
		if v, ok := raw[k]; ok && string(v) != "null" {
			if json.Unmarshal(v, dst) != nil {
				a.Bad = true
			}
		}
	}
	idx := func(k string) *int64 {
		v, ok := raw[k]
		if !ok || string(v) == "null" {
			return nil
		}
		n, err := strconv.ParseInt(string(v), 10, 64)
		if err != nil {
			a.Bad = true
			return nil
		}
		return &n
	}
	str("type", &a.Type)
	str("url", &a.URL)
	str("title", &a.Title)
	a.StartIndex, a.EndIndex = idx("start_index"), idx("end_index")
	return nil
}

// ProviderError is one entry of an interaction's errors[].
type ProviderError struct {
	Code    string `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
}

// UnmarshalJSON keeps whatever of an error entry can be read: a reason
// is worth keeping even when one of its fields has an unexpected type.
func (e *ProviderError) UnmarshalJSON(b []byte) error {
	raw, ok, err := lenientFields(b)
	if !ok {
		*e = ProviderError{Message: truncateForMsg(string(b))}
		return err
	}
	*e = ProviderError{Code: looseString(raw["code"]), Message: looseString(raw["message"])}
	return nil
}

// lenientFields decodes b as a JSON object for the decoders that never
// fail on a field's type: a syntax error (a broken body) is returned; any
// other mismatch (b is not an object) is ok false with no error.
func lenientFields(b []byte) (raw map[string]json.RawMessage, ok bool, err error) {
	if err := json.Unmarshal(b, &raw); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			return nil, false, err
		}
		return nil, false, nil
	}
	return raw, true, nil
}

// looseString renders a JSON string as its value and any other JSON value
// as its text.
func looseString(v json.RawMessage) string {
	if len(v) == 0 || string(v) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s
	}
	return string(v)
}

// RPCStatus is a google.rpc.Status.
type RPCStatus struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Status  string          `json:"status,omitempty"`
	Details json.RawMessage `json:"details,omitempty"`
}

// UnmarshalJSON reads a google.rpc.Status leniently (a code that is not a
// number is kept as 0): it carries a reason, never custody.
func (r *RPCStatus) UnmarshalJSON(b []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			return err
		}
		*r = RPCStatus{Message: looseString(b)}
		return nil
	}
	*r = RPCStatus{Message: looseString(raw["message"]), Status: looseString(raw["status"]), Details: raw["details"]}
	if n, err := strconv.Atoi(string(raw["code"])); err == nil {
		r.Code = n
	}
	return nil
}

// Reasons returns why an interaction failed, as the SDKs carry it: its
// errors[] and the error of any model_output step, in order.
func (it *Interaction) Reasons() []ProviderError {
	var out []ProviderError
	for _, e := range it.Errors {
		if e.Code != "" || e.Message != "" {
			out = append(out, e)
		}
	}
	for _, s := range it.Steps {
		if s.Error == nil || (s.Error.Message == "" && s.Error.Code == 0 && s.Error.Status == "") {
			continue
		}
		code := s.Error.Status
		if code == "" && s.Error.Code != 0 {
			code = strconv.Itoa(s.Error.Code)
		}
		out = append(out, ProviderError{Code: code, Message: s.Error.Message})
	}
	return out
}

// ParseInteraction decodes an interaction resource and checks the one
// field custody depends on: a non-empty id without path syntax. Any status
// is accepted (an unknown one means "not finished"); the caller decides
// what a status means.
func ParseInteraction(body []byte) (*Interaction, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, fmt.Errorf("the response body is empty")
	}
	var it Interaction
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&it); err != nil {
		var ute *json.UnmarshalTypeError
		if errors.As(err, &ute) && json.Valid(body) {
			// A field of a kind clawkit does not read may have a type the
			// SDKs do not read either (a thought's content, say): the
			// exact reading decides.
			if exact, eerr := decodeInteractionExact(body); eerr == nil {
				return checked(exact)
			}
		}
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("the response body is truncated (%d bytes, the JSON ends early)", len(body))
		}
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			return nil, fmt.Errorf("the response body is not JSON: %v", err)
		}
		return nil, fmt.Errorf("the response body is not an interaction: %v", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("the response body has data after the interaction object")
	}
	if !exactNamesOnly(body) {
		exact, err := decodeInteractionExact(body)
		if err != nil {
			return nil, fmt.Errorf("the response body is not an interaction: %v", err)
		}
		return checked(exact)
	}
	return checked(&it)
}

func checked(it *Interaction) (*Interaction, error) {
	if err := CheckHandle(it.ID); err != nil {
		return nil, err
	}
	return it, nil
}

// CheckHandle validates a provider interaction id before it is put in a
// URL path or stored: printable ASCII without path or query syntax.
func CheckHandle(id string) error {
	if id == "" {
		return fmt.Errorf("interaction id is empty")
	}
	if len(id) > 512 {
		return fmt.Errorf("interaction id is longer than 512 bytes")
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte("/?#%\\", c) >= 0 {
			return fmt.Errorf("interaction id %q contains a forbidden character", truncateForMsg(id))
		}
	}
	if id == "." || id == ".." {
		return fmt.Errorf("interaction id %q is not an id", id)
	}
	return nil
}

func truncateForMsg(s string) string {
	if len(s) > 64 {
		s = s[:64] + "…"
	}
	return strings.ToValidUTF8(s, "?")
}

// Citation attributes a byte range of the published report to a URL.
//
// StartByte and EndByte are both set (a span of the report the source
// supports) or both nil: an annotation the provider sent without offsets is
// kept as an attribution of the report to the source, without a span.
type Citation struct {
	URL       string `json:"url"`
	Title     string `json:"title,omitempty"`
	StartByte *int64 `json:"startByte,omitempty"`
	EndByte   *int64 `json:"endByte,omitempty"`
}

// HasSpan reports whether c attributes a byte range of the report.
func (c Citation) HasSpan() bool { return c.StartByte != nil && c.EndByte != nil }

// Report is what is published from an interaction: the SDKs' output text
// with its citations re-based into it.
type Report struct {
	Text               string     `json:"-"`
	Citations          []Citation `json:"citations"`
	DroppedCitations   int        `json:"droppedCitations"`
	Truncated          bool       `json:"truncated"`
	CitationsTruncated bool       `json:"citationsTruncated"`
}

// Bounds limit a report.
type Bounds struct {
	MaxReportBytes int64
	MaxCitations   int
}

// OutputParts returns the text blocks of the SDKs' output_text, in
// order: the same walk as OutputText in google.golang.org/genai/interactions
// (interaction_outputs.go) and addOutputProperties in @google/genai. The
// steps are walked back from the end: a user_input step ends the walk,
// thought steps are skipped, model_output text blocks are collected (a
// non-text block ends the walk once text was found), and any other step
// (a tool call or result) ends it once text was found and is skipped
// before that. output_text is the blocks concatenated as they are.
func OutputParts(steps []Step) []Content {
	var parts []Content
	collecting := false
outer:
	for i := len(steps) - 1; i >= 0; i-- {
		st := steps[i]
		switch st.Type {
		case "user_input":
			break outer
		case "thought":
			continue
		case "model_output":
		default:
			if collecting {
				break outer
			}
			continue
		}
		for j := len(st.Content) - 1; j >= 0; j-- {
			c := st.Content[j]
			if c.Type == "text" {
				collecting = true
				parts = append(parts, c)
			} else if collecting {
				break outer
			}
		}
	}
	for l, r := 0, len(parts)-1; l < r; l, r = l+1, r-1 {
		parts[l], parts[r] = parts[r], parts[l]
	}
	return parts
}

// ExtractReport builds the report: exactly the SDKs' output_text (see
// OutputParts), never less. A timeline without steps, or without text
// after its last user input, gives an empty report.
//
// Citations are url_citation annotations whose start/end are UTF-8 byte
// offsets into their own text block; they are re-based into the report and
// dropped (counted) when an index is not an integer, the range is empty,
// reversed, out of the block, not on rune boundaries, only half present,
// the URL is not http(s), or the range falls past a truncation. An
// annotation with neither offset is kept as an attribution without a span.
func ExtractReport(it *Interaction, b Bounds) Report {
	var rep Report
	var text strings.Builder
	var cites []Citation
	for _, c := range OutputParts(it.Steps) {
		base := int64(text.Len())
		block := strings.ToValidUTF8(c.Text, "\uFFFD")
		// Offsets refer to the bytes the provider sent; if they were not
		// valid UTF-8 we cannot trust them to match the repaired text.
		repaired := block != c.Text
		text.WriteString(block)
		for _, a := range c.Annotations {
			if a.Type != "url_citation" && !(a.Bad && a.Type == "") {
				continue
			}
			cit, ok := rebase(a, c.Text, base)
			if !ok || repaired || a.Bad {
				rep.DroppedCitations++
				continue
			}
			cites = append(cites, cit)
		}
	}
	out := text.String()
	if b.MaxReportBytes > 0 && int64(len(out)) > b.MaxReportBytes {
		cut := int(b.MaxReportBytes)
		for cut > 0 && !utf8.RuneStart(out[cut]) {
			cut--
		}
		out = out[:cut]
		rep.Truncated = true
	}
	rep.Text = out
	for _, c := range cites {
		if c.HasSpan() && *c.EndByte > int64(len(out)) {
			rep.DroppedCitations++
			continue
		}
		if b.MaxCitations > 0 && len(rep.Citations) >= b.MaxCitations {
			rep.CitationsTruncated = true
			continue
		}
		rep.Citations = append(rep.Citations, c)
	}
	if rep.Citations == nil {
		rep.Citations = []Citation{}
	}
	return rep
}

func rebase(a Annotation, block string, base int64) (Citation, bool) {
	if !validURL(a.URL) {
		return Citation{}, false
	}
	var span []int64
	switch {
	case a.StartIndex == nil && a.EndIndex == nil:
		// No offsets: an attribution of the report, without a span.
	case a.StartIndex == nil || a.EndIndex == nil:
		return Citation{}, false // half a range is malformed
	default:
		s, e := *a.StartIndex, *a.EndIndex
		n := int64(len(block))
		if s < 0 || e <= s || e > n {
			return Citation{}, false
		}
		if !boundary(block, s) || !boundary(block, e) {
			return Citation{}, false
		}
		span = []int64{base + s, base + e}
	}
	title := strings.ToValidUTF8(a.Title, "\uFFFD")
	if len(title) > 1024 {
		title = title[:1024]
		for !utf8.ValidString(title) {
			title = title[:len(title)-1]
		}
	}
	c := Citation{URL: a.URL, Title: title}
	if span != nil {
		c.StartByte, c.EndByte = &span[0], &span[1]
	}
	return c, true
}

func boundary(s string, i int64) bool {
	return i == int64(len(s)) || utf8.RuneStart(s[i])
}

func validURL(raw string) bool {
	if raw == "" || len(raw) > 8192 {
		return false
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return false
	}
	return u.Scheme == "https" || u.Scheme == "http"
}
