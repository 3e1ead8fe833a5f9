package cli

import (
	"fmt"
	"path/filepath"

	"github.com/clawkit/clawkit/pkg/core"
	"github.com/clawkit/clawkit/pkg/owner"
	"github.com/clawkit/clawkit/pkg/store"
)

// StateCmd is `clawkit state …`.
type StateCmd struct {
	Migrate StateMigrateCmd `cmd:"" help:"Apply schema migrations (needs exclusive offline ownership: refused while a gateway runs)."`
	Backup  StateBackupCmd  `cmd:"" help:"Write a consistent copy of the database to FILE (works with the gateway up)."`
	Status  StateStatusCmd  `cmd:"" help:"Show the engine, schema version, river's migration version (PostgreSQL) and live owner leases."`
}

// StateMigrateCmd upgrades the schema.
type StateMigrateCmd struct {
	To int `help:"Stop at this schema version (default: the newest)." default:"0"`
}

// Run runs `clawkit state migrate`.
func (c *StateMigrateCmd) Run(env *Env) error {
	ctx := env.Ctx
	h, err := env.HomeDir()
	if err != nil {
		return err
	}
	res, err := owner.Migrate(ctx, h, env.Globals.LockTimeout, c.To)
	if err != nil {
		return err
	}
	return env.Out.Result(res, func(w *Printer) {
		if len(res.Applied) == 0 && len(res.RiverApplied) == 0 {
			fmt.Fprintf(w, "schema already at version %d\n", res.To)
			return
		}
		fmt.Fprintf(w, "schema %d -> %d\n", res.From, res.To)
		for _, a := range res.Applied {
			fmt.Fprintf(w, "applied %s\n", a)
		}
		if len(res.RiverApplied) > 0 {
			fmt.Fprintf(w, "river migrations %v applied (schema %s)\n", res.RiverApplied, store.RiverSchema)
		}
	})
}

// StateBackupCmd writes a backup.
type StateBackupCmd struct {
	File string `arg:"" help:"Backup file to create (must not exist)." type:"path"`
}

// Run runs `clawkit state backup`.
func (c *StateBackupCmd) Run(env *Env) error {
	ctx := env.Ctx
	abs, err := filepath.Abs(c.File)
	if err != nil {
		return err
	}
	res, err := core.OpStateBackup.Call(ctx, env, core.BackupParams{Path: abs})
	if err != nil {
		return err
	}
	return env.Out.Result(res, func(w *Printer) {
		fmt.Fprintf(w, "backed up schema %d (%s, %d bytes) to %s\n", res.SchemaVersion, res.Engine, res.Bytes, res.Path)
	})
}

// StateStatusCmd reports the database's state.
type StateStatusCmd struct{}

// Run runs `clawkit state status`.
func (c *StateStatusCmd) Run(env *Env) error {
	ctx := env.Ctx
	res, err := core.OpStateStatus.Call(ctx, env, core.None{})
	if err != nil {
		return err
	}
	return env.Out.Result(res, func(w *Printer) {
		fmt.Fprintf(w, "engine:  %s\nschema:  %d (this clawkit: %d)\n", res.Engine, res.SchemaVersion, res.LatestVersion)
		if res.RiverSchema != "" {
			if res.RiverVersion != nil {
				fmt.Fprintf(w, "river:   %d (schema %s)\n", *res.RiverVersion, res.RiverSchema)
			} else {
				fmt.Fprintf(w, "river:   not installed (run 'clawkit state migrate')\n")
			}
		}
		for _, l := range res.Leases {
			fmt.Fprintf(w, "lease:   %d %s %s pid %d on %s (%s), expires in %dms\n", l.Incarnation, l.Kind, l.OwnerID, l.PID, l.Host, l.Home, l.ExpiresInMs)
		}
	})
}
