package sse

import (
	"errors"
	"io"
	"strings"
	"testing"
)

type ev struct{ typ, data, id string }

func all(t testing.TB, in string, maxLine, maxData int) ([]ev, error) {
	t.Helper()
	r := NewReader(strings.NewReader(in), maxLine, maxData)
	var out []ev
	for {
		e, err := r.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, ev{e.Type, string(e.Data), e.ID})
	}
}

func TestEvents(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []ev
	}{
		{"one", "data: {}\n\n", []ev{{"", "{}", ""}}},
		{"typed with id", "event: endpoint\nid: 7\ndata: /messages?s=1\n\n", []ev{{"endpoint", "/messages?s=1", "7"}}},
		{"multi-line data", "data: a\ndata:b\n\n", []ev{{"", "a\nb", ""}}},
		{"CRLF and CR", "data: a\r\n\r\ndata: b\r\rdata: c\n\n", []ev{{"", "a", ""}, {"", "b", ""}, {"", "c", ""}}},
		{"comments and blank events", ": ping\n\n\nevent: x\n\ndata: y\n\n", []ev{{"", "y", ""}}},
		{"unterminated event is dropped", "data: a\n\ndata: b\n", []ev{{"", "a", ""}}},
		{"BOM", "\xEF\xBB\xBFdata: a\n\n", []ev{{"", "a", ""}}},
		{"id persists", "id: 1\ndata: a\n\ndata: b\n\n", []ev{{"", "a", "1"}, {"", "b", "1"}}},
		{"field without colon", "data\n\n", []ev{{"", "", ""}}},
		{"only one space stripped", "data:  a\n\n", []ev{{"", " a", ""}}},
	} {
		got, err := all(t, tc.in, 64, 64)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if len(got) != len(tc.want) {
			t.Fatalf("%s: got %q, want %q", tc.name, got, tc.want)
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Fatalf("%s: event %d = %q, want %q", tc.name, i, got[i], tc.want[i])
			}
		}
	}
}

func TestBounds(t *testing.T) {
	// A line of exactly maxLine passes; one more byte fails.
	if _, err := all(t, "data: "+strings.Repeat("a", 10)+"\n\n", 16, 64); err != nil {
		t.Fatalf("line of 16: %v", err)
	}
	_, err := all(t, "data: "+strings.Repeat("a", 11)+"\n\n", 16, 64)
	if !errors.Is(err, ErrLineTooLong) {
		t.Fatalf("line of 17: %v", err)
	}
	// Data joined over several lines counts the joins.
	if _, err := all(t, "data: aaaa\ndata: bbbb\n\n", 64, 9); err != nil {
		t.Fatalf("data of 9: %v", err)
	}
	_, err = all(t, "data: aaaa\ndata: bbbbb\n\n", 64, 9)
	if !errors.Is(err, ErrEventTooLarge) {
		t.Fatalf("data of 10: %v", err)
	}
}

// endless is a stream of one byte forever: the reader must fail at its
// bound, having held no more than it.
type endless struct{ n int64 }

func (e *endless) Read(b []byte) (int, error) {
	for i := range b {
		b[i] = 'a'
	}
	e.n += int64(len(b))
	return len(b), nil
}

func TestEndlessLine(t *testing.T) {
	src := &endless{}
	r := NewReader(io.MultiReader(strings.NewReader("data: "), src), 1<<16, 1<<20)
	_, err := r.Next()
	if !errors.Is(err, ErrLineTooLong) {
		t.Fatalf("%v", err)
	}
	if src.n > 1<<17 {
		t.Fatalf("read %d bytes past a bound of 64 KiB", src.n)
	}
}

// manyLines is an endless event of short data lines.
type manyLines struct{ n int64 }

func (m *manyLines) Read(b []byte) (int, error) {
	const line = "data: xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n"
	for i := range b {
		b[i] = line[(m.n+int64(i))%int64(len(line))]
	}
	m.n += int64(len(b))
	return len(b), nil
}

func TestEndlessEvent(t *testing.T) {
	src := &manyLines{}
	r := NewReader(src, 1<<10, 1<<20)
	_, err := r.Next()
	if !errors.Is(err, ErrEventTooLarge) {
		t.Fatalf("%v", err)
	}
	if src.n > 2<<20 {
		t.Fatalf("read %d bytes past a bound of 1 MiB", src.n)
	}
}

func FuzzReader(f *testing.F) {
	for _, s := range []string{"data: {}\n\n", "event: endpoint\ndata: /m\r\n\r\n", ":\n\ndata\rid: \x00\nretry: 12\n\n", "\xEF\xBB\xBFdata: a\r"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		r := NewReader(strings.NewReader(in), 32, 48)
		for i := 0; i < len(in)+1; i++ {
			e, err := r.Next()
			if err != nil {
				var le *LimitError
				if !errors.Is(err, io.EOF) && !errors.As(err, &le) {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if len(e.Data) > 48 {
				t.Fatalf("event data of %d bytes past the bound", len(e.Data))
			}
		}
		t.Fatalf("more events than input bytes")
	})
}

func TestLastEventIDAndRetry(t *testing.T) {
	for _, c := range []struct {
		in     string
		id     string
		retry  int64
		hasRet bool
	}{
		// The priming event of a 2025-11-25 server: an id, a retry, empty
		// data; then the stream ends without another event.
		{"id: event-2\nretry: 500\ndata: \n\n", "event-2", 500, true},
		// An id and a retry without a dispatched event still count.
		{"id: a\nretry: 0\n", "a", 0, true},
		// An id with a NUL is ignored; an empty id resets.
		{"id: a\n\nid: b\x00c\n\n", "a", 0, false},
		{"id: a\ndata: x\n\nid\ndata: y\n\n", "", 0, false},
		// Retry values that are not all digits are ignored.
		{"retry: 12\nretry: -5\nretry: 1e3\nretry: \nretry:  7\n", "", 12, true},
		// One too large for int64 is ignored too.
		{"retry: 99999999999999999999999\n", "", 0, false},
	} {
		r := NewReader(strings.NewReader(c.in), 1024, 1024)
		for {
			if _, err := r.Next(); err != nil {
				break
			}
		}
		ms, ok := r.Retry()
		if r.LastEventID() != c.id || ms != c.retry || ok != c.hasRet {
			t.Errorf("%q: id %q retry %d,%v; want %q %d,%v", c.in, r.LastEventID(), ms, ok, c.id, c.retry, c.hasRet)
		}
	}
}

// FuzzRetryAndID: whatever the stream, the last event ID never holds a
// NUL or a line end (it goes back to the server as Last-Event-ID) and fits
// the line bound, and the retry is never negative.
func FuzzRetryAndID(f *testing.F) {
	for _, s := range []string{"id: event-1\nretry: 500\ndata: \n\n", "id:\x00\nretry:-1\n", "retry: 18446744073709551616\n", "id: a\rid: b\r\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		r := NewReader(strings.NewReader(in), 64, 64)
		for i := 0; i < len(in)+1; i++ {
			if _, err := r.Next(); err != nil {
				break
			}
		}
		id := r.LastEventID()
		if strings.ContainsAny(id, "\x00\r\n") || len(id) > 64 {
			t.Fatalf("last event id %q", id)
		}
		if ms, ok := r.Retry(); ms < 0 || (!ok && ms != 0) {
			t.Fatalf("retry %d %v", ms, ok)
		}
	})
}
