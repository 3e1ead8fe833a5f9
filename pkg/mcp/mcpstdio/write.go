package mcpstdio

// Writing to the server: one message per Write, each with a deadline.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"syscall"
	"time"

	"github.com/clawkit/clawkit/pkg/mcp"

	"github.com/clawkit/clawkit/pkg/errs"
)

func (c *Client) writeRequest(ctx context.Context, id int64, method string, params json.RawMessage, timeout time.Duration, onTimeout func() *mcp.Error) (delivered bool, e *mcp.Error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	b := c.wbuf[:0]
	if len(params) > 0 && bytes.ContainsAny(params, "\r\n") {
		var buf bytes.Buffer
		if err := json.Compact(&buf, params); err != nil {
			return false, mcp.ProtocolErr(errs.CodeInvalidParams, "params are not valid JSON: %v", err)
		}
		params = buf.Bytes()
	} else if len(params) > 0 && !json.Valid(params) {
		return false, mcp.ProtocolErr(errs.CodeInvalidParams, "params are not valid JSON")
	}
	b = mcp.AppendRequest(b, id, method, params)
	c.wbuf = b
	if len(b) > c.Opts.MaxFrameBytes {
		return false, mcp.ProtocolErr(errs.CodeFrameTooLarge, "request exceeded the frame-size limit (%d bytes > %d)", len(b), c.Opts.MaxFrameBytes)
	}
	n, err := c.writeLocked(ctx, b, timeout)
	if err != nil {
		return n > 0, c.writeError(ctx, method, err, onTimeout)
	}
	return true, nil
}

// writeLocked writes one message with the caller's deadline, so a server
// that stops reading its stdin cannot block the caller past its timeout;
// a cancelled context or a retirement interrupts the write too. c.wmu is
// held.
func (c *Client) writeLocked(ctx context.Context, b []byte, timeout time.Duration) (int, error) {
	in := c.proc.Stdin()
	if timeout <= 0 {
		timeout = time.Millisecond // a spent budget still gets one try
	}
	_ = in.SetWriteDeadline(time.Now().Add(timeout))
	if ctx != nil && ctx.Done() != nil {
		stop := context.AfterFunc(ctx, func() { _ = in.SetWriteDeadline(pastDeadline) })
		defer stop()
	}
	return in.Write(b)
}

// writeError names a failed write: the caller's deadline, its
// cancellation, or the pipe itself (EPIPE: the server closed its stdin).
func (c *Client) writeError(ctx context.Context, method string, err error, onTimeout func() *mcp.Error) *mcp.Error {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		switch {
		case ctx != nil && ctx.Err() != nil && !(mcp.CtxTimedOut(ctx) && onTimeout != nil):
			return mcp.Unavailable(errs.CodeCancelled, "request %s was cancelled while it was being written: %v", method, context.Cause(ctx))
		case ctx != nil && ctx.Err() != nil:
			e := mcp.CtxError(ctx, method, onTimeout)
			e.Message += " while writing it: the server is not reading its stdin"
			return e
		case c.isClosed():
			return c.RetainedFatal()
		case onTimeout != nil:
			e := onTimeout()
			e.Message += " while writing it: the server is not reading its stdin"
			return e
		}
	}
	if errors.Is(err, syscall.EPIPE) {
		// Nobody reads the server's stdin any more: nearly always because
		// the server is ending (a launcher that could not find its
		// program exits before the first request is written). Its exit
		// status and stderr say why, so wait a bounded moment for them
		// instead of reporting only the broken pipe.
		t := time.NewTimer(epipeExitWait)
		defer t.Stop()
		select {
		case <-c.proc.Exited():
			return c.exitError()
		case <-t.C:
		}
	}
	e := mcp.Unavailable(errs.CodeWriteFailed, "cannot write to the server: %v", err)
	e.Err = err
	return e
}

// epipeExitWait bounds how long a broken pipe waits for the server's exit
// status before it is reported as a write failure.
const epipeExitWait = 2 * time.Second
