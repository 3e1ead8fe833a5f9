package mcpstdio

import (
	"bytes"
	"sync"
)

// StderrTailBytes is the fixed size of the kept stderr tail (docs/mcp.md).
const StderrTailBytes = 32 * 1024

// tailBuffer keeps the last n bytes written to it, in a fixed ring, so a
// server that floods stderr costs a constant amount of memory.
type tailBuffer struct {
	mu    sync.Mutex
	buf   []byte
	start int // index of the oldest byte once full
	full  bool
	total int64
}

func newTailBuffer(n int) *tailBuffer { return &tailBuffer{buf: make([]byte, 0, n)} }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(p)
	t.total += int64(n)
	c := cap(t.buf)
	if len(p) >= c {
		t.buf = append(t.buf[:0], p[len(p)-c:]...)
		t.start, t.full = 0, true
		return n, nil
	}
	if !t.full {
		room := c - len(t.buf)
		if len(p) <= room {
			t.buf = append(t.buf, p...)
			if len(t.buf) == c {
				t.full = true
			}
			return n, nil
		}
		t.buf = append(t.buf, p[:room]...)
		p = p[room:]
		t.full = true
	}
	for len(p) > 0 {
		k := copy(t.buf[t.start:], p)
		p = p[k:]
		t.start = (t.start + k) % c
	}
	return n, nil
}

// Bytes returns a copy of the kept tail, oldest byte first.
func (t *tailBuffer) Bytes() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.full {
		return bytes.Clone(t.buf)
	}
	out := make([]byte, 0, len(t.buf))
	out = append(out, t.buf[t.start:]...)
	return append(out, t.buf[:t.start]...)
}

// Total is how many bytes were written in all.
func (t *tailBuffer) Total() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.total
}
