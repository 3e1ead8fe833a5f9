package cli

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/clawkit/clawkit/pkg/config"
	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/gateway"
	"github.com/clawkit/clawkit/pkg/ops"
	"github.com/clawkit/clawkit/pkg/owner"
	"github.com/clawkit/clawkit/pkg/termsafe"
)

// GatewayCmd is `clawkit gateway …`.
type GatewayCmd struct {
	Run    GatewayRunCmd    `cmd:"" help:"Own the state and serve stateful commands (foreground; --detach to daemonize)."`
	Status GatewayStatusCmd `cmd:"" help:"Show the running gateway."`
	Stop   GatewayStopCmd   `cmd:"" help:"Stop the gateway: stop admission, drain, release the lock."`
}

// GatewayRunCmd runs the gateway.
type GatewayRunCmd struct {
	Detach          bool          `help:"Start in the background and return once it serves."`
	ShutdownTimeout time.Duration `name:"shutdown-timeout" aliases:"drain-timeout" help:"On SIGTERM or a stop: how long in-flight calls may take to finish (admission closes at once)." default:"30s"`
	StartTimeout    time.Duration `help:"With --detach: how long to wait for the gateway to serve." default:"15s"`
	LeaseTTL        time.Duration `help:"On PostgreSQL: how long the gateway's owner lease lasts without a heartbeat." env:"CLAWKIT_LEASE_TTL" default:"10s"`
	MetricsListen   string        `help:"Serve /healthz, /readyz and Prometheus /metrics on this HOST:PORT (off by default)." placeholder:"HOST:PORT"`
	LogFormat       string        `help:"Log format on stderr: text or json (default: config log.format, else text)." env:"CLAWKIT_LOG_FORMAT" placeholder:"text|json"`
	LogLevel        string        `help:"Log level: debug, info, warn or error (default: config log.level, else info)." env:"CLAWKIT_LOG_LEVEL" placeholder:"LEVEL"`
}

// Run runs `clawkit gateway run`.
func (c *GatewayRunCmd) Run(env *Env) error {
	ctx := env.Ctx
	h, err := env.HomeDir()
	if err != nil {
		return err
	}
	// The log settings: the flag (or its variable), else config.json's
	// log.format / log.level, else text at info.
	format, level := c.LogFormat, c.LogLevel
	if format == "" || level == "" {
		if ok, _ := h.Exists(); ok {
			if cfg, err := config.Load(h.Dir); err == nil {
				format, level = cmp.Or(format, cfg.String("log.format")), cmp.Or(level, cfg.String("log.level"))
			}
		}
	}
	lc, lv, err := gateway.ParseLogConfig(format, level)
	if err != nil {
		return err
	}
	if err := gateway.CheckMetricsListen(c.MetricsListen); err != nil {
		return err
	}
	if c.Detach {
		return c.detach(ctx, env, h, lc)
	}
	secrets := &gateway.Secrets{}
	logger := gateway.NewLogger(env.Out.Stderr, lc, lv, secrets)
	report := gateway.OpenStartReport() // set when started by --detach
	defer report.Serving()
	err = gateway.Run(ctx, gateway.Options{
		Home: h, Registry: ops.Registry(), Version: ReadBuildInfo().Version,
		LockTimeout: env.Globals.LockTimeout, DrainTimeout: c.ShutdownTimeout, Now: env.Now, Log: logger, Secrets: secrets,
		LeaseTTL: c.LeaseTTL, MetricsListen: c.MetricsListen,
		Ready: func(rec owner.Record) {
			report.Serving()
			switch {
			case env.Out.JSON:
				_ = env.Out.PrintJSON(rec)
			case lc.Format == "json":
				// With JSON logs every line the gateway writes is JSON (jq
				// over the journal or gateway.log, docs/operations.md):
				// the "gateway serving" log record says it, with owner,
				// socket and pid as fields.
			default:
				// Best effort: the gateway serves whether or not this line
				// reaches stdout.
				_, _ = fmt.Fprintf(env.Out.Stdout, "gateway %s serving on %s (pid %d)\n", termsafe.Text(rec.OwnerID), termsafe.Text(rec.Socket), rec.PID)
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

func (c *GatewayRunCmd) detach(ctx context.Context, env *Env, h owner.Home, lc gateway.LogConfig) error {
	exe, err := selfPath()
	if err != nil {
		return errs.Failed(errs.CodeDetachFailed, "cannot find the clawkit binary: %v", err)
	}
	args := []string{exe, "--home", h.Dir, "--lock-timeout", env.Globals.LockTimeout.String(),
		"gateway", "run", "--shutdown-timeout", c.ShutdownTimeout.String(), "--lease-ttl", c.LeaseTTL.String(),
		"--log-format", lc.Format, "--log-level", lc.Level}
	if c.MetricsListen != "" {
		args = append(args, "--metrics-listen", c.MetricsListen)
	}
	rec, err := gateway.Detach(ctx, gateway.DetachOptions{Home: h, StartTimeout: c.StartTimeout, Command: args})
	if err != nil {
		return err
	}
	return env.Out.Result(rec, func(w *Printer) {
		fmt.Fprintf(w, "gateway %s serving on %s (pid %d)\n", termsafe.Text(rec.OwnerID), termsafe.Text(rec.Socket), rec.PID)
	})
}

// GatewayStatusCmd reports the gateway.
type GatewayStatusCmd struct{}

// Run runs `clawkit gateway status`.
func (c *GatewayStatusCmd) Run(env *Env) error {
	ctx := env.Ctx
	h, err := env.HomeDir()
	if err != nil {
		return err
	}
	st, err := gateway.StatusOf(ctx, h, env.Globals.Gateway)
	if st == nil {
		return err
	}
	if perr := env.Out.Result(st, func(w *Printer) { printStatus(w, st) }); perr != nil {
		return perr
	}
	if err != nil {
		// Serving but not ready: the status is printed, the reason is the
		// error (exit 5); in --json the document above says it all.
		if env.Out.JSON {
			return &reportedError{err}
		}
		return err
	}
	return nil
}

// printStatus shows what a gateway answered: with --gateway that is any
// process on a socket, so every string is escaped for the terminal
// (pkg/termsafe).
func printStatus(w *Printer, st *owner.Status) {
	fmt.Fprintf(w, "owner:     %s\npid:       %d\nsocket:    %s\nengine:    %s\nschema:    %d\nversion:   %s\nstarted:   %s\nuptime:    %s\nin-flight: %d\n",
		termsafe.Text(st.OwnerID), st.PID, termsafe.Text(st.Socket), termsafe.Text(st.Engine), st.SchemaVersion, termsafe.Text(st.Version), st.StartedAt.Format(time.RFC3339),
		(time.Duration(st.UptimeSeconds * float64(time.Second))).Round(time.Second), st.InFlight)
	metrics := st.MetricsAddr
	if metrics == "" {
		metrics = "off"
	}
	fmt.Fprintf(w, "metrics:   %s\n", termsafe.Text(metrics))
	d := st.Detail
	if d == nil {
		return
	}
	lease := termsafe.Text(d.Lease.State)
	if d.Lease.Incarnation > 0 {
		lease += fmt.Sprintf(" (incarnation %d, until %s)", d.Lease.Incarnation, d.Lease.ExpiresAt.Format(time.RFC3339))
	}
	fmt.Fprintf(w, "lease:     %s\n", lease)
	states := make([]string, 0, len(d.Jobs))
	for k := range d.Jobs {
		states = append(states, k)
	}
	slices.Sort(states)
	jobs := make([]string, 0, len(states))
	for _, k := range states {
		jobs = append(jobs, fmt.Sprintf("%s %d", termsafe.Text(k), d.Jobs[k]))
	}
	if len(jobs) == 0 {
		jobs = []string{"none"}
	}
	fmt.Fprintf(w, "jobs:      %s\nqueue:     %d\n", strings.Join(jobs, ", "), d.QueueDepth)
	if d.Ready {
		fmt.Fprintln(w, "ready:     yes")
	} else {
		fmt.Fprintf(w, "ready:     no: %s\n", termsafe.Text(strings.Join(d.NotReady, "; ")))
	}
}

// GatewayStopCmd stops the gateway.
type GatewayStopCmd struct {
	Wait time.Duration `help:"How long to wait for it to exit." default:"40s"`
}

// Run runs `clawkit gateway stop`.
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
	return env.Out.Result(map[string]any{"stopped": true, "pid": rec.PID, "ownerId": rec.OwnerID}, func(w *Printer) {
		fmt.Fprintf(w, "gateway %s (pid %d) stopped\n", termsafe.Text(rec.OwnerID), rec.PID)
	})
}
