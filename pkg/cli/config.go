package cli

import (
	"encoding/json"
	"fmt"

	"github.com/clawkit/clawkit/pkg/config"
	"github.com/clawkit/clawkit/pkg/core"
	"github.com/clawkit/clawkit/pkg/errs"
)

// ConfigCmd is `clawkit config …`. Reads go straight to the file (it is
// always replaced atomically); writes are state changes and go through the
// owner router.
type ConfigCmd struct {
	Get   ConfigGetCmd   `cmd:"" help:"Print the value at a dotted path."`
	Set   ConfigSetCmd   `cmd:"" help:"Set a dotted path (the value is JSON when it parses, else a string)."`
	Unset ConfigUnsetCmd `cmd:"" help:"Remove a dotted path."`
}

// ConfigGetCmd reads a value.
type ConfigGetCmd struct {
	Path string `arg:"" optional:"" help:"Dotted path; omit for the whole file."`
}

// Run runs `clawkit config get`.
func (c *ConfigGetCmd) Run(env *Env) error {
	h, err := env.HomeDir()
	if err != nil {
		return err
	}
	cfg, err := config.Load(h.Dir)
	if err != nil {
		return err
	}
	cfg = cfg.Redacted() // never echo a secret, even one an older clawkit stored
	var v any = cfg.Root
	if c.Path != "" {
		if _, err := config.SplitPath(c.Path); err != nil {
			return err
		}
		var ok bool
		if v, ok = cfg.Get(c.Path); !ok {
			return errs.Failed(CodeConfigNotSet, "%s is not set", c.Path).WithHint("set it with 'clawkit config set %s VALUE'", c.Path)
		}
	}
	return env.Out.Result(v, func(w *Printer) { fmt.Fprintln(w, config.Format(v)) })
}

// ConfigSetCmd writes a value.
type ConfigSetCmd struct {
	Path  string `arg:"" help:"Dotted path."`
	Value string `arg:"" help:"Value (JSON if it parses, else a string)."`
}

// Run runs `clawkit config set`.
func (c *ConfigSetCmd) Run(env *Env) error {
	ctx := env.Ctx
	if _, err := config.SplitPath(c.Path); err != nil {
		return err
	}
	v, err := config.ParseValue(c.Value)
	if err != nil {
		return err
	}
	// Refused before the home is created or anything routed.
	if err := config.CheckSet(c.Path, v); err != nil {
		return err
	}
	if err := config.CheckValue(c.Path, v); err != nil {
		return err
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	res, err := core.OpConfigSet.Call(ctx, env, core.ConfigParams{Path: c.Path, Value: raw})
	if err != nil {
		return err
	}
	return env.Out.Result(res, func(w *Printer) {})
}

// ConfigUnsetCmd removes a value.
type ConfigUnsetCmd struct {
	Path string `arg:"" help:"Dotted path."`
}

// Run runs `clawkit config unset`.
func (c *ConfigUnsetCmd) Run(env *Env) error {
	ctx := env.Ctx
	if _, err := config.SplitPath(c.Path); err != nil {
		return err
	}
	res, err := core.OpConfigUnset.Call(ctx, env, core.ConfigParams{Path: c.Path})
	if err != nil {
		return err
	}
	return env.Out.Result(res, func(w *Printer) {
		if res["removed"] != true {
			fmt.Fprintf(w, "%s was not set\n", c.Path)
		}
	})
}
