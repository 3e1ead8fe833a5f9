package cli

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/gateway"
	"github.com/clawkit/clawkit/pkg/ops"
	"github.com/clawkit/clawkit/pkg/owner"
)

// GatewayCmd is `clawkit gateway …`.
type GatewayCmd struct {
	Run    GatewayRunCmd    `cmd:"" help:"Own the state and serve stateful commands (foreground; --detach to daemonize)."`
	Status GatewayStatusCmd `cmd:"" help:"Show the running gateway."`
	Stop   GatewayStopCmd   `cmd:"" help:"Stop the gateway: stop admission, drain, release the lock."`
}

// GatewayRunCmd runs the gateway.
type GatewayRunCmd struct {
	Detach       bool          `help:"Start in the background and return once it serves."`
	DrainTimeout time.Duration `help:"How long a stop waits for in-flight calls." default:"30s"`
	StartTimeout time.Duration `help:"With --detach: how long to wait for the gateway to serve." default:"15s"`
	LeaseTTL     time.Duration `help:"On PostgreSQL: how long the gateway's owner lease lasts without a heartbeat." env:"CLAWKIT_LEASE_TTL" default:"10s"`
}

func (c *GatewayRunCmd) Run(env *Env) error {
	ctx := env.Ctx
	h, err := env.HomeDir()
	if err != nil {
		return err
	}
	if c.Detach {
		return c.detach(ctx, env, h)
	}
	logger := log.New(env.Out.Stderr, "clawkit gateway: ", log.LstdFlags)
	report := gateway.OpenStartReport() // set when started by --detach
	defer report.Serving()
	err = gateway.Run(ctx, gateway.Options{
		Home: h, Registry: ops.Registry(), Version: ReadBuildInfo().Version,
		LockTimeout: env.Globals.LockTimeout, DrainTimeout: c.DrainTimeout, Now: env.Now, Log: logger, LeaseTTL: c.LeaseTTL,
		Ready: func(rec owner.Record) {
			report.Serving()
			if !env.Out.JSON {
				fmt.Fprintf(env.Out.Stdout, "gateway %s serving on %s (pid %d)\n", rec.OwnerID, rec.Socket, rec.PID)
			} else {
				_ = env.Out.PrintJSON(rec)
			}
		},
	})
	report.Failed(err) // a no-op once it served
	return err
}

// selfPath finds this program so the detached child is the same binary the
// user ran (argv[0] first: under a multi-call test binary, os.Executable
// names the wrong program).
func selfPath() (string, error) {
	a := os.Args[0]
	if filepath.Base(a) != a {
		return filepath.Abs(a)
	}
	if p, err := exec.LookPath(a); err == nil {
		return filepath.Abs(p)
	}
	return os.Executable()
}

func (c *GatewayRunCmd) detach(ctx context.Context, env *Env, h owner.Home) error {
	exe, err := selfPath()
	if err != nil {
		return errs.Failed(errs.CodeDetachFailed, "cannot find the clawkit binary: %v", err)
	}
	rec, err := gateway.Detach(ctx, gateway.DetachOptions{Home: h, StartTimeout: c.StartTimeout, Command: []string{exe,
		"--home", h.Dir, "--lock-timeout", env.Globals.LockTimeout.String(),
		"gateway", "run", "--drain-timeout", c.DrainTimeout.String(), "--lease-ttl", c.LeaseTTL.String()}})
	if err != nil {
		return err
	}
	return env.Out.Result(rec, func(w io.Writer) {
		fmt.Fprintf(w, "gateway %s serving on %s (pid %d)\n", rec.OwnerID, rec.Socket, rec.PID)
	})
}

// GatewayStatusCmd reports the gateway.
type GatewayStatusCmd struct{}

func (c *GatewayStatusCmd) Run(env *Env) error {
	ctx := env.Ctx
	h, err := env.HomeDir()
	if err != nil {
		return err
	}
	rec, st := owner.LiveGateway(ctx, h)
	if st == nil {
		why := "no gateway is running for " + h.Dir
		if rec != nil {
			why += fmt.Sprintf(" (a stale record names pid %d)", rec.PID)
		}
		return errs.Failed(errs.CodeGatewayNotRunning, "%s", why).WithHint("start one with 'clawkit gateway run --detach'")
	}
	return env.Out.Result(st, func(w io.Writer) {
		fmt.Fprintf(w, "owner:     %s\npid:       %d\nsocket:    %s\nengine:    %s\nschema:    %d\nversion:   %s\nstarted:   %s\nin-flight: %d\n",
			st.OwnerID, st.PID, st.Socket, st.Engine, st.SchemaVersion, st.Version, st.StartedAt.Format(time.RFC3339), st.InFlight)
	})
}

// GatewayStopCmd stops the gateway.
type GatewayStopCmd struct {
	Wait time.Duration `help:"How long to wait for it to exit." default:"40s"`
}

func (c *GatewayStopCmd) Run(env *Env) error {
	ctx := env.Ctx
	h, err := env.HomeDir()
	if err != nil {
		return err
	}
	rec, err := gateway.Stop(ctx, h, c.Wait)
	if err != nil {
		return err
	}
	return env.Out.Result(map[string]any{"stopped": true, "pid": rec.PID, "ownerId": rec.OwnerID}, func(w io.Writer) {
		fmt.Fprintf(w, "gateway %s (pid %d) stopped\n", rec.OwnerID, rec.PID)
	})
}
