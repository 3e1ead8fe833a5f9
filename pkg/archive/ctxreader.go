package archive

import (
	"context"
	"io"
)

// ContextReader returns a reader that fails with ctx's error once ctx is
// done, so that hashing or walking a large archive stops promptly on
// SIGINT/SIGTERM instead of running to the end.
func ContextReader(ctx context.Context, r io.Reader) io.Reader {
	if ctx == nil || ctx.Done() == nil {
		return r
	}
	return &ctxReader{ctx: ctx, r: r}
}

type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
