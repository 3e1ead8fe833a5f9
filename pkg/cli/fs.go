package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/fsx"
)

// FSCmd is `clawkit fs …`.
type FSCmd struct {
	CreateExclusive FSCreateExclusiveCmd `cmd:"" name:"create-exclusive" help:"Create PATH from stdin only if it does not exist; prints created or exists."`
}

// FSCreateExclusiveCmd exposes fsx.CreateExclusive.
type FSCreateExclusiveCmd struct {
	Path string `arg:"" help:"File to create." type:"path"`
	Mode string `help:"File mode (octal)." default:"0644"`
}

// maxExclusiveBytes bounds what is read from stdin: the file is written in
// one piece, so it is held in memory.
const maxExclusiveBytes = 64 << 20

func (c *FSCreateExclusiveCmd) Run(env *Env) error {
	data, err := io.ReadAll(io.LimitReader(env.Stdin, maxExclusiveBytes+1))
	if err != nil {
		return errs.Failed(errs.CodeStdinFailed, "cannot read standard input: %v", err)
	}
	if len(data) > maxExclusiveBytes {
		return errs.Failed(errs.CodeTooLarge, "standard input exceeds %d bytes", maxExclusiveBytes)
	}
	mode, err := strconv.ParseUint(c.Mode, 8, 32)
	if err != nil || mode > 0o777 {
		return errs.Usage(CodeUsage, "invalid --mode %q", c.Mode).WithHint("give permission bits in octal, e.g. 0644")
	}
	created, err := fsx.CreateExclusive(c.Path, data, os.FileMode(mode))
	if err != nil {
		return errs.Failed(CodeCreateFailed, "cannot create %s: %v", c.Path, err).
			WithHint("check that %s exists and is writable", filepath.Dir(c.Path))
	}
	res := map[string]any{"path": c.Path, "created": created}
	return env.Out.Result(res, func(w io.Writer) {
		if created {
			fmt.Fprintln(w, "created")
		} else {
			fmt.Fprintln(w, "exists")
		}
	})
}
