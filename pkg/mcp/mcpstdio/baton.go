package mcpstdio

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"time"

	"github.com/clawkit/clawkit/pkg/errs"

	"github.com/clawkit/clawkit/pkg/mcp"
)

// Reading the server's stdout: the reader baton.
//
// Exactly one goroutine reads stdout at a time: the one holding the baton.
// It owns the framer and the read buffer and dispatches every line
// (responses to their callers' channels, notifications, server requests).
// A caller that finds the baton free after writing its request takes it and
// reads until its own answer arrives, then returns directly: the answer
// costs one wake-up (the poller waking the caller) instead of two (the
// poller waking a reader goroutine, which then wakes the caller through a
// channel). Otherwise the caller waits on its channel.
//
// The background goroutine (readLoop) takes the baton when a caller leaves
// it while other calls are pending, after a retirement (to drain stdout to
// its end), on a read error (EOF: it decides how the server ended), and
// when nobody has held it for batonIdleDelay, so that notifications and
// server requests are handled while no call is waiting. It gives the baton
// back as soon as it has answered every pending call. So back-to-back calls
// read for themselves, while a call made after a pause of more than
// batonIdleDelay is answered through its channel, and the next one reads
// for itself again.
//
// A caller blocked in a pipe read must stay interruptible: its read
// deadline is its request deadline, a cancelled context or a retirement
// sets the deadline to the past. This needs stdout to be managed by the
// runtime poller (os.Pipe ends are); when SetReadDeadline is refused, the
// background goroutine keeps the baton for good and callers only wait on
// their channels.

const batonIdleDelay = 10 * time.Millisecond

type batonState int

const (
	batonFree   batonState = iota // nobody reads; the idle timer runs
	batonCaller                   // a caller reads for its own answer
	batonBack                     // the background goroutine reads
)

// Why the background goroutine was handed the baton.
type batonWhy int

const (
	whyRead batonWhy = iota // go on reading
	whyEOF                  // stdout ended or failed: decide how the server ended
	whyStop                 // reading is over (a frame error retired the connection)
)

var pastDeadline = time.Unix(1, 0)

// interruptLocked makes the holder's blocked read return. c.mu is held.
func (c *Client) interruptLocked() {
	_ = c.proc.Stdout().SetReadDeadline(pastDeadline)
}

// handToBackLocked gives the baton to the background goroutine. c.mu is
// held; at most one wake is ever outstanding, since only the background
// goroutine leaves the batonBack state.
func (c *Client) handToBackLocked(why batonWhy) {
	c.rstate = batonBack
	c.holder = nil
	c.bgWhy = why
	select {
	case c.bgWake <- struct{}{}:
	default:
	}
}

// freeBatonLocked leaves the baton free and makes sure the idle timer will
// look at it. The timer is not reset on every release (that would wake the
// runtime's poller on every call): once armed, it re-arms itself for what
// is left of the delay. c.mu is held.
func (c *Client) freeBatonLocked() {
	c.rstate = batonFree
	c.holder = nil
	c.freeAt = time.Now()
	if !c.idleArmed {
		c.idleArmed = true
		c.idle.Reset(c.idleDelay)
	}
}

// idleTakeover is the idle timer: when nobody has read for c.idleDelay,
// the background goroutine reads (notifications, server requests, EOF).
func (c *Client) idleTakeover() {
	c.Mu.Lock()
	defer c.Mu.Unlock()
	if c.rstate != batonFree {
		c.idleArmed = false // the next release arms it again
		return
	}
	if left := c.idleDelay - time.Since(c.freeAt); left > 0 {
		c.idle.Reset(left)
		return
	}
	c.idleArmed = false
	c.handToBackLocked(whyRead)
}

// tryTakeBaton makes cl the reader when nobody is reading, with its read
// deadline set to the request's.
func (c *Client) tryTakeBaton(cl *call, timeout time.Duration) bool {
	if timeout <= 0 {
		return false
	}
	c.Mu.Lock()
	defer c.Mu.Unlock()
	if !c.canDeadline || c.ClosedLocked() || c.rstate != batonFree {
		return false
	}
	if c.proc.Stdout().SetReadDeadline(time.Now().Add(timeout)) != nil {
		return false
	}
	c.rstate = batonCaller
	c.holder = cl
	return true
}

// releaseBaton ends a caller's turn: the baton becomes free when nothing is
// left to read for, else the background goroutine takes it.
func (c *Client) releaseBaton(why batonWhy) {
	c.Mu.Lock()
	if why != whyRead || c.ClosedLocked() || c.PendingLocked() > 0 {
		c.handToBackLocked(why)
	} else {
		c.freeBatonLocked()
	}
	c.Mu.Unlock()
}

// readFor reads stdout as the baton holder until cl is answered. done is
// false when the read failed (EOF): the background goroutine has the baton
// and the caller waits on its channel like any other.
func (c *Client) readFor(ctx context.Context, cl *call, method string, onTimeout func() *mcp.Error) (res json.RawMessage, e *mcp.Error, done bool) {
	if ctx.Done() != nil {
		stop := context.AfterFunc(ctx, func() {
			c.Mu.Lock()
			if c.holder == cl {
				c.interruptLocked()
			}
			c.Mu.Unlock()
		})
		defer stop()
	}
	out := c.proc.Stdout()
	for {
		select {
		case r := <-cl.ch:
			c.releaseBaton(whyRead)
			return r.Result, r.Err, true
		default:
		}
		n, err := out.Read(c.rbuf)
		if n > 0 {
			if ferr := c.framer.Push(c.rbuf[:n], c.yield); ferr != nil {
				c.retire(c.readFailure(ferr))
				c.releaseBaton(whyStop)
				r := <-cl.ch // answered before the error, or rejected by retire
				return r.Result, r.Err, true
			}
		}
		if err == nil {
			continue
		}
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			c.releaseBaton(whyEOF)
			return nil, nil, false
		}
		select {
		case r := <-cl.ch:
			c.releaseBaton(whyRead)
			return r.Result, r.Err, true
		default:
		}
		// The deadline was ours, or our context's, or a retirement's.
		switch {
		case ctx.Err() != nil:
			c.retire(mcp.CtxError(ctx, method, onTimeout).WithDelivered(true))
		case !c.isClosed():
			c.retire(onTimeout().WithDelivered(true))
		}
		c.releaseBaton(whyRead) // closed: the background goroutine drains
		// retire rejected every pending call, ours included (or our answer
		// came first): take it from our channel.
		r := <-cl.ch
		return r.Result, r.Err, true
	}
}

func (c *Client) isClosed() bool {
	c.Mu.Lock()
	defer c.Mu.Unlock()
	return c.ClosedLocked()
}

// readFailure is the fatal error for a framer or message failure.
func (c *Client) readFailure(ferr error) *mcp.Error {
	var fe *mcp.FrameError
	if errors.As(ferr, &fe) {
		return mcp.ProtocolErr(errs.CodeFrameTooLarge, "response exceeded the frame-size limit (%d bytes)", c.Opts.MaxFrameBytes)
	}
	if me := (*mcp.Error)(nil); errors.As(ferr, &me) {
		return me
	}
	return mcp.ProtocolErr(errs.CodeMalformedMessage, "%v", ferr)
}

// readLoop is the background reader: it reads while it holds the baton and
// ends with stdout (readerDone is closed then).
func (c *Client) readLoop() {
	defer close(c.readerDone)
	for {
		<-c.bgWake
		c.Mu.Lock()
		why := c.bgWhy
		c.answered = false
		// A caller's request deadline may still be set.
		_ = c.proc.Stdout().SetReadDeadline(time.Time{})
		c.Mu.Unlock()
		switch why {
		case whyEOF:
			c.onStdoutEOF()
			return
		case whyStop:
			return
		}
		if !c.readBackground() {
			return
		}
	}
}

// readBackground reads until the baton can be given back (true) or stdout
// is over (false).
func (c *Client) readBackground() bool {
	out := c.proc.Stdout()
	for {
		n, err := out.Read(c.rbuf)
		if n > 0 {
			if ferr := c.framer.Push(c.rbuf[:n], c.yield); ferr != nil {
				c.retire(c.readFailure(ferr))
				return false
			}
		}
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				// A retirement interrupted the read it thought a caller's.
				c.Mu.Lock()
				_ = out.SetReadDeadline(time.Time{})
				c.Mu.Unlock()
				continue
			}
			c.onStdoutEOF()
			return false
		}
		c.Mu.Lock()
		if c.canDeadline && c.answered && !c.ClosedLocked() && c.PendingLocked() == 0 {
			c.answered = false
			c.freeBatonLocked()
			c.Mu.Unlock()
			return true
		}
		c.Mu.Unlock()
	}
}
