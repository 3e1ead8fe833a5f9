package archive

import (
	"io"
	"sync"
)

// readAhead decompresses in its own goroutine into a few large buffers so
// that inflation overlaps with tar parsing and file writes. Memory is
// bounded: at most raBuffers buffers of raSize bytes exist at once.
type readAhead struct {
	full chan raChunk
	free chan []byte
	done chan struct{}
	once sync.Once
	cur  []byte
	buf  []byte
	err  error
	wg   sync.WaitGroup
}

type raChunk struct {
	b   []byte
	err error
}

const (
	raBuffers = 4
	raSize    = 256 << 10
)

func newReadAhead(r io.Reader) *readAhead {
	ra := &readAhead{
		full: make(chan raChunk, raBuffers),
		free: make(chan []byte, raBuffers),
		done: make(chan struct{}),
	}
	for range raBuffers {
		ra.free <- make([]byte, raSize)
	}
	ra.wg.Add(1)
	go func() {
		defer ra.wg.Done()
		for {
			var buf []byte
			select {
			case buf = <-ra.free:
			case <-ra.done:
				return
			}
			n, err := io.ReadFull(r, buf[:cap(buf)])
			if err == io.ErrUnexpectedEOF {
				err = io.EOF // a short final chunk is still data
			}
			select {
			case ra.full <- raChunk{b: buf[:n], err: err}:
			case <-ra.done:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return ra
}

func (ra *readAhead) Read(p []byte) (int, error) {
	for len(ra.cur) == 0 {
		if ra.buf != nil {
			ra.free <- ra.buf // capacity intact: the whole buffer goes back
			ra.buf = nil
		}
		if ra.err != nil {
			return 0, ra.err
		}
		c := <-ra.full
		ra.buf, ra.cur, ra.err = c.b[:0], c.b, c.err
	}
	n := copy(p, ra.cur)
	ra.cur = ra.cur[n:]
	return n, nil
}

// Close stops the goroutine and waits for it, so the underlying reader is
// no longer used once Close returns.
func (ra *readAhead) Close() error {
	ra.once.Do(func() { close(ra.done) })
	ra.wg.Wait()
	return nil
}
