// Package sse reads a Server-Sent Events stream (the text/event-stream
// format of the HTML standard) with hard bounds: a line longer than
// MaxLine and an event whose data is longer than MaxData are errors
// raised before more than the bound is held, so a stream that never ends
// a line, or one endless event, costs at most the bound in memory. It is
// the parser of the MCP HTTP transports (docs/mcp.md, "Over HTTP").
package sse

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// Event is one dispatched event. Data has the data lines joined by "\n".
type Event struct {
	// Type is the event field ("" means "message").
	Type string
	Data []byte
	// ID is the last event ID seen so far in the stream (it persists
	// across events, as the standard says).
	ID string
	// Retry is the last valid retry field, in milliseconds (0: none).
	Retry int64
}

// ErrLineTooLong and ErrEventTooLarge are the two bounds' errors (wrapped
// in a *LimitError naming the bound).
var (
	ErrLineTooLong   = errors.New("SSE line too long")
	ErrEventTooLarge = errors.New("SSE event too large")
)

// LimitError says which bound a stream broke.
type LimitError struct {
	Err   error // ErrLineTooLong or ErrEventTooLarge
	Limit int
}

func (e *LimitError) Error() string { return fmt.Sprintf("%v (limit %d bytes)", e.Err, e.Limit) }
func (e *LimitError) Unwrap() error { return e.Err }

// Reader parses events from a byte stream.
type Reader struct {
	r       *bufio.Reader
	maxLine int
	maxData int
	line    []byte
	data    []byte
	typ     []byte
	id      string
	retry   int64
	// hasRetry: a valid retry field was seen (0 is a valid interval).
	hasRetry bool
	started  bool
	// pendingCR: the previous line ended with a CR whose LF, if any, is
	// the first byte of the next read (CRLF split across reads).
	pendingCR bool
}

// NewReader reads from r; maxLine bounds one line (its end of line not
// counted), maxData one event's data (the joined data lines).
func NewReader(r io.Reader, maxLine, maxData int) *Reader {
	if maxLine < 1 {
		maxLine = 1
	}
	if maxData < 1 {
		maxData = 1
	}
	size := 4096
	if maxLine+1 < size {
		size = 16
	}
	return &Reader{r: bufio.NewReaderSize(r, size), maxLine: maxLine, maxData: maxData}
}

// Next returns the next event with a non-empty data buffer. At the end of
// the stream it returns io.EOF; an event not terminated by a blank line is
// discarded, as the standard says. Any other error is the reader's or a
// bound's (*LimitError).
func (p *Reader) Next() (Event, error) {
	for {
		line, err := p.readLine()
		if err != nil {
			return Event{}, err
		}
		if len(line) == 0 {
			// Dispatch.
			if p.data == nil {
				p.typ = p.typ[:0]
				continue
			}
			ev := Event{Type: string(p.typ), Data: p.data, ID: p.id, Retry: p.retry}
			p.data = nil
			p.typ = p.typ[:0]
			return ev, nil
		}
		if line[0] == ':' {
			continue // a comment (keep-alive)
		}
		name, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			name, value = line[:i], line[i+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		switch string(name) {
		case "data":
			n := len(value)
			if p.data != nil {
				n += len(p.data) + 1
			}
			if n > p.maxData {
				return Event{}, &LimitError{Err: ErrEventTooLarge, Limit: p.maxData}
			}
			if p.data == nil {
				p.data = make([]byte, 0, len(value))
			} else {
				p.data = append(p.data, '\n')
			}
			p.data = append(p.data, value...)
		case "event":
			p.typ = append(p.typ[:0], value...)
		case "id":
			if bytes.IndexByte(value, 0) < 0 {
				p.id = string(value)
			}
		case "retry":
			if n, err := strconv.ParseInt(string(value), 10, 64); err == nil && n >= 0 && isDigits(value) {
				p.retry, p.hasRetry = n, true
			}
		}
	}
}

// LastEventID is the stream's last event ID so far (the standard's "last
// event ID string"): set by every id field without a NUL, whether or not
// an event was dispatched after it, and kept at the end of the stream,
// where a client resuming the stream needs it (MCP 2025-11-25,
// "Resumability and Redelivery"; docs/mcp.md, "Over HTTP").
func (p *Reader) LastEventID() string { return p.id }

// SetLastEventID starts the reader from the last event ID of the stream
// it continues (a reconnection): as the standard says, the string carries
// over until the new connection sets another.
func (p *Reader) SetLastEventID(id string) { p.id = id }

// Retry is the reconnection time the stream last set with a valid retry
// field (digits only), in milliseconds, and whether it set one.
func (p *Reader) Retry() (ms int64, ok bool) { return p.retry, p.hasRetry }

func isDigits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return len(b) > 0
}

// readLine returns the next line without its end (CR, LF or CRLF). The
// returned slice is valid until the next call. A final line without an
// end is io.EOF (an unterminated event is discarded anyway).
func (p *Reader) readLine() ([]byte, error) {
	p.line = p.line[:0]
	for {
		b, err := p.r.ReadByte()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil, io.EOF
			}
			return nil, err
		}
		if p.pendingCR {
			p.pendingCR = false
			if b == '\n' {
				continue
			}
		}
		if !p.started {
			p.started = true
			if b == 0xEF {
				// A UTF-8 BOM at the very start is skipped.
				if bom, perr := p.r.Peek(2); perr == nil && bom[0] == 0xBB && bom[1] == 0xBF {
					_, _ = p.r.Discard(2)
					continue
				}
			}
		}
		switch b {
		case '\n':
			return p.line, nil
		case '\r':
			p.pendingCR = true
			return p.line, nil
		}
		// Take the run of ordinary bytes in one go.
		p.line = append(p.line, b)
		if len(p.line) > p.maxLine {
			return nil, &LimitError{Err: ErrLineTooLong, Limit: p.maxLine}
		}
		buf, _ := p.r.Peek(p.r.Buffered())
		n := 0
		for n < len(buf) && buf[n] != '\n' && buf[n] != '\r' {
			n++
		}
		if len(p.line)+n > p.maxLine {
			return nil, &LimitError{Err: ErrLineTooLong, Limit: p.maxLine}
		}
		p.line = append(p.line, buf[:n]...)
		_, _ = p.r.Discard(n)
	}
}
