package mcp

import (
	"bytes"
	"errors"
	"fmt"
)

// ErrFrameTooLarge is returned (wrapped in a *FrameError) once a line would
// grow past the framer's limit.
var ErrFrameTooLarge = errors.New("frame exceeds the size limit")

// FrameError says which limit a line broke and how far it had got when the
// framer noticed. Seen is a lower bound: the framer stops counting as soon
// as the limit is crossed, without retaining the excess.
type FrameError struct {
	Limit int
	Seen  int
}

func (e *FrameError) Error() string {
	return fmt.Sprintf("line of at least %d bytes exceeds the %d-byte limit", e.Seen, e.Limit)
}

func (e *FrameError) Unwrap() error { return ErrFrameTooLarge }

// keepPendingCap is the largest reassembly buffer kept between lines:
// reusing it makes multi-chunk lines cost one copy, and anything bigger is
// released so one huge message does not pin its memory for the stream's
// life.
const keepPendingCap = 4 << 20

// LineFramer splits a byte stream into LF-delimited lines with a hard bound
// on each line's length.
//
// It does no decoding: a CR before the LF is kept, UTF-8 sequences split
// across chunks are reassembled byte for byte, and empty lines are yielded
// like any other (the caller decides whether they mean anything). An
// incomplete final line stays pending until more bytes or the end of the
// stream arrive.
//
// The limit counts the line's bytes without its LF: a line of exactly
// MaxBytes passes, one byte more fails. The check happens before bytes are
// copied into the pending buffer, so an oversized line never costs more than
// MaxBytes of memory. Once a line has failed the framer stays failed: there
// is no way to find the next message boundary that would be safe to trust.
//
// Lines wholly inside one chunk are yielded as sub-slices of that chunk, with
// no copy; a yielded slice is only valid until the yield callback returns.
type LineFramer struct {
	max     int
	pending []byte
	err     error
}

// NewLineFramer returns a framer whose lines may be at most maxBytes long
// (not counting the LF). maxBytes must be positive.
func NewLineFramer(maxBytes int) *LineFramer {
	if maxBytes <= 0 {
		panic("mcp: NewLineFramer: maxBytes must be positive")
	}
	return &LineFramer{max: maxBytes}
}

// Pending returns the bytes of the incomplete line held so far (not a copy).
func (f *LineFramer) Pending() []byte { return f.pending }

// Push feeds one chunk of the stream. For every complete line it calls yield
// with the line's bytes (without the LF). A yield error stops Push and is
// returned as is. When a line exceeds the limit, the lines before it in the
// same chunk have already been yielded and Push returns a *FrameError.
func (f *LineFramer) Push(chunk []byte, yield func(line []byte) error) error {
	if f.err != nil {
		return f.err
	}
	for len(chunk) > 0 {
		i := bytes.IndexByte(chunk, '\n')
		if i < 0 {
			// No end of line in this chunk: it all becomes pending, if it fits.
			if len(f.pending)+len(chunk) > f.max {
				return f.fail(len(f.pending) + len(chunk))
			}
			f.pending = append(f.pending, chunk...)
			return nil
		}
		if len(f.pending) == 0 {
			if i > f.max {
				return f.fail(i)
			}
			if err := yield(chunk[:i:i]); err != nil {
				return err
			}
		} else {
			if len(f.pending)+i > f.max {
				return f.fail(len(f.pending) + i)
			}
			f.pending = append(f.pending, chunk[:i]...)
			line := f.pending
			// Reset before yielding so a re-entrant or failing yield never
			// sees the line twice; the backing array is reused afterwards.
			f.pending = f.pending[:0]
			if err := yield(line); err != nil {
				return err
			}
			if cap(f.pending) > keepPendingCap {
				// Don't pin a once-huge buffer for the rest of the stream.
				f.pending = nil
			}
		}
		chunk = chunk[i+1:]
	}
	return nil
}

func (f *LineFramer) fail(seen int) error {
	f.err = &FrameError{Limit: f.max, Seen: seen}
	f.pending = nil
	return f.err
}
