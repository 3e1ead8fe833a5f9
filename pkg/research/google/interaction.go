// Package google is clawkit's provider for managed deep research: a client
// of the Gemini API Interactions API (create, poll, cancel), the parsing of
// interaction resources into a report with attributed citations, and the
// classification of every failure by what it proves about the request
// (never sent, maybe sent, refused, temporary).
package google

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"unicode/utf8"
)

// Interaction statuses. The first three are not finished.
const (
	StatusQueued         = "queued"
	StatusInProgress     = "in_progress"
	StatusRequiresAction = "requires_action"
	StatusCompleted      = "completed"
	StatusFailed         = "failed"
	StatusCancelled      = "cancelled"
	StatusIncomplete     = "incomplete"
	StatusBudgetExceeded = "budget_exceeded"
)

// Terminal reports whether status ends an interaction.
func Terminal(status string) bool {
	switch status {
	case StatusCompleted, StatusFailed, StatusCancelled, StatusIncomplete, StatusBudgetExceeded:
		return true
	}
	return false
}

// KnownStatus reports whether status is one the API documents.
func KnownStatus(status string) bool {
	switch status {
	case StatusQueued, StatusInProgress, StatusRequiresAction:
		return true
	}
	return Terminal(status)
}

// Interaction is the part of the interaction resource clawkit reads.
// Unknown fields are ignored here on purpose: this is a provider response
// that grows over time, unlike the contract envelope we own.
type Interaction struct {
	ID      string          `json:"id"`
	Status  string          `json:"status"`
	Agent   string          `json:"agent,omitempty"`
	Created string          `json:"created,omitempty"`
	Updated string          `json:"updated,omitempty"`
	Steps   []Step          `json:"steps,omitempty"`
	Outputs []Content       `json:"outputs,omitempty"` // legacy shape
	Usage   json.RawMessage `json:"usage,omitempty"`
	Error   *RPCStatus      `json:"error,omitempty"`
}

// Step is one entry of the steps[] timeline. Only model_output steps are
// read; thoughts and tool calls/results are skipped without being kept.
type Step struct {
	Type    string    `json:"type"`
	Content []Content `json:"content,omitempty"`
}

// Content is one content block. For text blocks, Annotations carry
// citations as UTF-8 byte offsets into Text.
type Content struct {
	Type        string       `json:"type"`
	Text        string       `json:"text,omitempty"`
	Annotations []Annotation `json:"annotations,omitempty"`
}

// Annotation is a text annotation; only url_citation is used.
type Annotation struct {
	Type       string `json:"type"`
	URL        string `json:"url,omitempty"`
	Title      string `json:"title,omitempty"`
	StartIndex *int64 `json:"start_index,omitempty"`
	EndIndex   *int64 `json:"end_index,omitempty"`
}

// RPCStatus is a google.rpc.Status.
type RPCStatus struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Status  string          `json:"status,omitempty"`
	Details json.RawMessage `json:"details,omitempty"`
}

// ParseInteraction decodes an interaction resource and checks the fields
// clawkit depends on: a non-empty id without path syntax and a known status.
func ParseInteraction(body []byte) (*Interaction, error) {
	var it Interaction
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&it); err != nil {
		return nil, fmt.Errorf("invalid interaction JSON: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("invalid interaction JSON: data after the object")
	}
	if err := CheckHandle(it.ID); err != nil {
		return nil, err
	}
	if !KnownStatus(it.Status) {
		return nil, fmt.Errorf("interaction %s has unknown status %q", it.ID, truncateForMsg(it.Status))
	}
	return &it, nil
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

// Report is what is published from an interaction: the final model output
// text with its citations re-based into it.
type Report struct {
	Text               string     `json:"-"`
	Citations          []Citation `json:"citations"`
	DroppedCitations   int        `json:"droppedCitations"`
	Truncated          bool       `json:"truncated"`
	CitationsTruncated bool       `json:"citationsTruncated"`
	// Legacy is true when the report came from the legacy outputs[] array.
	Legacy bool `json:"legacy,omitempty"`
}

// Bounds limit a report.
type Bounds struct {
	MaxReportBytes int64
	MaxCitations   int
}

// stepSeparator joins the text of consecutive model_output steps; blocks
// within one step are concatenated as they are (they are pieces of one
// generation).
const stepSeparator = "\n\n"

// ExtractReport builds the report from the final model_output step(s): the
// run of model_output steps that ends the timeline. A model_output followed
// by more research (thoughts, tool calls) is an interim answer, not the
// report; a timeline that ends in research (say, cancelled mid-way) has no
// report text. Only text content is used. Legacy outputs[]
// are used only when steps[] is absent, and then every text block counts.
//
// Citations are url_citation annotations whose start/end are UTF-8 byte
// offsets into their own text block; they are re-based into the report and
// dropped (counted) when the range is empty, reversed, out of the block, not
// on rune boundaries, only half present, the URL is not http(s), or the
// range falls past a truncation. An annotation with neither offset is kept
// as an attribution without a span.
func ExtractReport(it *Interaction, b Bounds) Report {
	var blocks [][]Content // one entry per step
	var rep Report
	if len(it.Steps) > 0 {
		end := len(it.Steps)
		start := end
		for start > 0 && it.Steps[start-1].Type == "model_output" {
			start--
		}
		for _, s := range it.Steps[start:end] {
			blocks = append(blocks, s.Content)
		}
	} else if len(it.Outputs) > 0 {
		rep.Legacy = true
		blocks = append(blocks, it.Outputs)
	}

	var text strings.Builder
	var cites []Citation
	first := true
	for _, step := range blocks {
		stepHasText := false
		for _, c := range step {
			if c.Type != "text" || c.Text == "" {
				continue
			}
			if !stepHasText && !first {
				text.WriteString(stepSeparator)
			}
			stepHasText, first = true, false
			base := int64(text.Len())
			block := strings.ToValidUTF8(c.Text, "\uFFFD")
			// Offsets refer to the bytes the provider sent; if they were not
			// valid UTF-8 we cannot trust them to match the repaired text.
			repaired := block != c.Text
			text.WriteString(block)
			for _, a := range c.Annotations {
				if a.Type != "url_citation" {
					continue
				}
				cit, ok := rebase(a, c.Text, base)
				if !ok || repaired {
					rep.DroppedCitations++
					continue
				}
				cites = append(cites, cit)
			}
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
