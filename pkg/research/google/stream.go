package google

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"time"

	"github.com/clawkit/clawkit/pkg/redact"
)

// The interaction stream: GET /{version}/interactions/{id}?stream=true
// (resumed with last_event_id) answers Server-Sent Events whose data are
// the SDKs' InteractionSSEEvent union, chosen by "event_type"
// (docs/research.md, "Live progress"). clawkit reads it for progress only:
// polling stays the authority on an interaction's end.

// Stream event types (the SDKs' InteractionSSEEventType).
const (
	EventCreated      = "interaction.created"
	EventCompleted    = "interaction.completed"
	EventStatusUpdate = "interaction.status_update"
	EventStepStart    = "step.start"
	EventStepDelta    = "step.delta"
	EventStepStop     = "step.stop"
	EventError        = "error"
)

// Stream bounds: one event's data, and the idle time after which a
// silent stream is given up (and resumed).
const (
	MaxEventBytes     = 1 << 20
	DefaultStreamIdle = 2 * time.Minute
	maxSummaryBytes   = 2048
)

// StreamEvent is what clawkit reads of one stream event.
type StreamEvent struct {
	Type    string `json:"type"`
	EventID string `json:"eventId,omitempty"`
	// Status is a status update's (or a completed or created
	// interaction's) status.
	Status string `json:"status,omitempty"`
	// Index and StepType are a step event's; DeltaType a delta's kind.
	Index     int    `json:"index,omitempty"`
	StepType  string `json:"stepType,omitempty"`
	DeltaType string `json:"deltaType,omitempty"`
	// Summary is a thought summary delta's text (bounded): shown as
	// progress, never stored.
	Summary string `json:"summary,omitempty"`
	// Usage is a status update's or step stop's usage, normalised.
	Usage *Usage `json:"usage,omitempty"`
	// Error is an error event's message.
	Error string `json:"error,omitempty"`
}

// ErrStreamUnavailable is returned when the provider does not serve a
// stream for the interaction (it answered with something else): the
// caller polls instead.
var ErrStreamUnavailable = errors.New("the provider does not stream this interaction")

// ParseStreamEvent reads one event's data with the SDKs' rules: the kind
// from "event_type" (read as encoding/json reads it, as the SDKs' union
// does), members by their exact names. An event of a kind clawkit does
// not know keeps its type only.
func ParseStreamEvent(data []byte) (StreamEvent, error) {
	var ev StreamEvent
	var d struct {
		EventType string `json:"event_type"`
	}
	if err := json.Unmarshal(data, &d); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) || errors.Is(err, io.ErrUnexpectedEOF) || !json.Valid(data) {
			return ev, fmt.Errorf("a stream event is not JSON: %w", err)
		}
		return ev, nil // not an object, or event_type not a string: unknown
	}
	ev.Type = d.EventType
	raw, err := members(data)
	if err != nil {
		return StreamEvent{Type: ev.Type}, nil
	}
	str := func(m map[string]json.RawMessage, name string) string {
		var s string
		if v, ok := m[name]; ok {
			_ = json.Unmarshal(v, &s)
		}
		return s
	}
	ev.EventID = str(raw, "event_id")
	usage := func(v json.RawMessage) *Usage {
		if u, ok := ParseUsage(v); ok {
			return &u
		}
		return nil
	}
	switch ev.Type {
	case EventStatusUpdate:
		ev.Status = str(raw, "status")
		ev.Usage = usage(raw["usage"])
	case EventCreated, EventCompleted:
		if it, err := members(raw["interaction"]); err == nil {
			ev.Status = str(it, "status")
			ev.Usage = usage(it["usage"])
		}
	case EventStepStart, EventStepDelta, EventStepStop:
		var idx int
		if json.Unmarshal(raw["index"], &idx) == nil {
			ev.Index = idx
		}
		switch ev.Type {
		case EventStepStart:
			if typ, ok, _ := discriminator(raw["step"]); ok {
				ev.StepType = typ
			}
		case EventStepStop:
			ev.Usage = usage(raw["usage"])
		case EventStepDelta:
			delta := raw["delta"]
			typ, ok, _ := discriminator(delta)
			if !ok {
				break
			}
			ev.DeltaType = typ
			if typ != "thought_summary" {
				break
			}
			dm, err := members(delta)
			if err != nil {
				break
			}
			if ct, ok, _ := discriminator(dm["content"]); ok && ct == "text" {
				if cm, err := members(dm["content"]); err == nil {
					ev.Summary = truncateUTF8(str(cm, "text"), maxSummaryBytes)
				}
			}
		}
	case EventError:
		if em, err := members(raw["error"]); err == nil {
			ev.Error = truncateUTF8(str(em, "message"), maxSummaryBytes)
		}
	}
	return ev, nil
}

func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}

// Stream follows an interaction's stream from after lastEventID ("" for
// the start), calling fn for each event until the stream ends ([DONE], or
// the server closes it), fn returns an error, ctx ends or nothing arrives
// for idle (0: DefaultStreamIdle). It returns nil when the stream ended
// on its own, ErrStreamUnavailable when none is served, else why it
// broke: the caller resumes with the last event id it saw.
func (c *Client) Stream(ctx context.Context, id, lastEventID string, idle time.Duration, fn func(StreamEvent) error) error {
	if err := CheckHandle(id); err != nil {
		return &Error{Op: "stream", NotSent: true, Msg: err.Error(), Err: err}
	}
	if idle <= 0 {
		idle = DefaultStreamIdle
	}
	q := url.Values{"stream": {"true"}}
	if lastEventID != "" {
		q.Set("last_event_id", lastEventID)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base()+"/interactions/"+id+"?"+q.Encode(), nil)
	if err != nil {
		return err
	}
	req.Header.Set("x-goog-api-key", c.APIKey)
	req.Header.Set("Api-Revision", APIRevision)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("User-Agent", "clawkit-research")
	// No overall timeout (a stream lasts as long as the job); the idle
	// timer below ends a silent one, and the answer's headers must come
	// within the request timeout.
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	timer := time.AfterFunc(timeout, cancel)
	defer timer.Stop()
	r, err := c.httpClient().Do(req)
	if err != nil {
		return &Error{Op: "stream", Temporary: true, Msg: transportMsg("stream", err, true), Err: err}
	}
	defer func() { _ = r.Body.Close() }() // a stream given up: nothing more is wanted of it
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if r.StatusCode != http.StatusOK || mt != "text/event-stream" {
		if r.StatusCode >= 500 || r.StatusCode == http.StatusTooManyRequests {
			body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<10))
			return c.statusError("stream", r.StatusCode, r.Header, redact.Bytes(body, c.APIKey))
		}
		return ErrStreamUnavailable
	}
	return readSSE(r.Body, func() { timer.Reset(idle) }, func(data []byte) error {
		ev, err := ParseStreamEvent(redact.Bytes(data, c.APIKey))
		if err != nil {
			return err
		}
		return fn(ev)
	})
}

// readSSE splits an event stream into events and calls fn with each
// event's data (its data lines joined by newlines), as the SDKs' event
// stream reader does: comments and events without data are skipped, and
// "[DONE]" ends the stream. tick is called on every line read.
func readSSE(body io.Reader, tick func(), fn func([]byte) error) error {
	br := bufio.NewReaderSize(body, 64<<10)
	var data []byte
	has := false
	for {
		line, err := readLine(br)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		tick()
		if len(line) == 0 {
			if has {
				d := data
				data, has = nil, false
				if string(d) == "[DONE]" {
					return nil
				}
				if err := fn(d); err != nil {
					return err
				}
			}
			continue
		}
		if line[0] == ':' {
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		if string(field) != "data" {
			continue // id, event, retry: the event's own event_id is what resumes
		}
		if has {
			data = append(data, '\n')
		}
		if len(data)+len(value) > MaxEventBytes {
			return fmt.Errorf("a stream event is larger than %d bytes", MaxEventBytes)
		}
		data = append(data, value...)
		has = true
	}
}

// readLine reads one line without its CR, LF or CRLF, bounded.
func readLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > MaxEventBytes+16 {
			return nil, fmt.Errorf("a stream line is longer than %d bytes", MaxEventBytes)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil {
			if len(line) > 0 && errors.Is(err, io.EOF) {
				return nil, io.ErrUnexpectedEOF
			}
			return nil, err
		}
		return bytes.TrimRight(line, "\r\n"), nil
	}
}
