package cli

import (
	"context"
	"io"
	"time"

	"github.com/alecthomas/kong"
)

// Env is what every leaf's Run receives: the process's side effects in one
// place so tests can swap them.
type Env struct {
	Ctx     context.Context
	Globals *Globals
	// Kong is the parsed command line (for help and completion leaves).
	Kong   *kong.Context
	Stdin  io.Reader
	Out    *Output
	Now    func() time.Time
	Getenv func(string) string
}
