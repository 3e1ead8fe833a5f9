// Package cli is clawkit's kong command tree: one file per command group,
// each leaf a struct with a Run method whose dependencies are bound by
// Main. It holds no business logic: leaves parse flags, call a pkg/<domain>
// function (directly for stateless commands, through the owner router for
// stateful ones) and print the result.
//
// Errors become exit codes in exactly one place, ExitCode.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/alecthomas/kong"
	"github.com/willabides/kongplete"

	"github.com/clawkit/clawkit/pkg/errs"
)

// Globals are the flags every command accepts (docs/architecture.md).
type Globals struct {
	Home        string           `help:"State folder (default: XDG_STATE_HOME/clawkit, else ~/.local/state/clawkit)." env:"CLAWKIT_HOME" placeholder:"DIR"`
	JSON        bool             `help:"Print exactly one JSON document on stdout."`
	Progress    string           `help:"Progress on stderr: auto (when stderr is a terminal), always or never." enum:"auto,always,never" default:"auto"`
	LockTimeout time.Duration    `help:"How long a stateful command waits for the state-owner lock." env:"CLAWKIT_LOCK_TIMEOUT" default:"10s"`
	Gateway     string           `help:"Route stateful commands to this gateway (unix:PATH); never replaced by a local run." placeholder:"unix:PATH"`
	Version     kong.VersionFlag `help:"Print the version and exit."`
}

// CLI is the root of the command tree: the global flags and the small
// commands. The command groups are added by commandGroups.
type CLI struct {
	Globals

	VersionCmd VersionCmd    `cmd:"" name:"version" help:"Print the version, commit, dirty flag, date and Go version."`
	Help       HelpCmd       `cmd:"" help:"Show help for a command."`
	Completion CompletionCmd `cmd:"" help:"Print a shell completion script (bash, zsh or fish)."`
	GenDocs    GenDocsCmd    `cmd:"" name:"gen-docs" hidden:"" help:"Write the man page and the Markdown CLI reference (make docs-cli)."`
}

// group is one command group of the tree.
type group struct {
	name, help string
	cmd        any
}

// allGroups lists the command groups in the order help shows them.
func allGroups() []group {
	return []group{
		{"config", "Read and change <home>/config.json.", &ConfigCmd{}},
		{"state", "Database schema and backups.", &StateCmd{}},
		{"gateway", "Run, inspect and stop the long-running state owner.", &GatewayCmd{}},
		{"session", "Agent sessions: create, inspect, reset, revoke.", &SessionCmd{}},
		{"auth", "Provider credentials (auth profiles).", &AuthCmd{}},
		{"fs", "File-system primitives.", &FSCmd{}},
		{"research", "Google Deep Research from the shell (google.research.v1).", &ResearchCmd{}},
		{"runtime-artifacts", "Export offline worker archives from a built OpenClaw installation.", &RuntimeArtifactsCmd{}},
		{"crabbox", "Install and verify offline runtime caches; read install receipts.", &CrabboxCmd{}},
		{"skill", "Author and lint agent skills.", &SkillCmd{}},
		{"plugins", "Inspect the plugins a home registers.", &PluginsCmd{}},
		{"mcp", "Run and talk to MCP servers over stdio with hard limits.", &MCPCmd{}},
	}
}

// commandGroups returns kong options adding the groups a run needs. Kong
// builds its model by reflecting over every tag of the tree, which costs
// milliseconds for the whole tree; a command that names its group only
// needs that group, so a routed `session show` does not pay for the rest.
// Help at the root, completion and unknown words get the whole tree.
func commandGroups(args []string, complete bool) []kong.Option {
	groups := allGroups()
	want := ""
	if !complete {
		want = firstCommand(args)
	}
	var opts []kong.Option
	for _, g := range groups {
		if want == g.name {
			return []kong.Option{kong.DynamicCommand(g.name, g.help, "", g.cmd)}
		}
	}
	switch want {
	case "version", "completion":
		return nil
	}
	for _, g := range groups {
		opts = append(opts, kong.DynamicCommand(g.name, g.help, "", g.cmd))
	}
	return opts
}

// globalValueFlags are the global flags that take a separate value.
var globalValueFlags = map[string]bool{"--home": true, "--progress": true, "--lock-timeout": true, "--gateway": true}

// firstCommand returns the command word of args (for `help CMD`, CMD), or
// "" when there is none before the flags end.
func firstCommand(args []string) string {
	help := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return ""
		case strings.HasPrefix(a, "-"):
			if globalValueFlags[a] {
				i++
			}
		case a == "help" && !help:
			help = true
		default:
			return a
		}
	}
	return ""
}

// exitPanic carries kong's requested exit (after --help or --version) out
// of the parser so that Main, not kong, decides how the process ends.
type exitPanic struct{ code int }

// Main runs clawkit with args (without the program name) and returns the
// process exit code.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) (code int) {
	return MainObserved(args, stdin, stdout, stderr, nil)
}

// MainObserved is Main that also tells observe, when not nil, the error
// code and exit code of a failure as Output.Error reports it: the
// end-to-end tests hold docs/errors.md's exit column to what the commands
// actually exit with (testscript/errortable_test.go).
func MainObserved(args []string, stdin io.Reader, stdout, stderr io.Writer, observe func(code errs.Code, exit int)) (code int) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	var c CLI
	out := &Output{Stdout: stdout, Stderr: stderr, observe: observe}
	complete := os.Getenv("COMP_LINE") != ""
	parser, err := newParser(&c, args, complete, stdout, stderr, func(code int) { panic(exitPanic{code}) })
	if err != nil {
		_, _ = fmt.Fprintf(stderr, "clawkit: error: %v\n", err) // stderr: nowhere left to report to
		return 1
	}
	// Shell completion: when a shell calls us with COMP_LINE set, answer and
	// exit before parsing.
	if complete {
		kongplete.Complete(parser, kongplete.WithExitFunc(func(int) {}))
		return 0
	}

	defer func() {
		if r := recover(); r != nil {
			ep, ok := r.(exitPanic)
			if !ok {
				panic(r)
			}
			code = ep.code
			if code == 80 { // kong's usage code; ours is 2
				code = int(errs.KindUsage)
			}
		}
	}()

	kctx, err := parser.Parse(args)
	if err != nil {
		var pe *kong.ParseError
		if errors.As(err, &pe) {
			out.JSON = jsonRequested(args)
			return out.Error(errs.Usage(CodeUsage, "%s", err.Error()).WithHint("run '%s' for usage", strings.TrimSpace("clawkit help "+commandPath(pe.Context))))
		}
		out.JSON = jsonRequested(args)
		return out.Error(errs.Usage(CodeUsage, "%s", err.Error()))
	}
	out.JSON = c.JSON
	out.Progress = c.Progress

	env := &Env{
		Ctx:     ctx,
		Globals: &c.Globals,
		Stdin:   stdin,
		Out:     out,
		Now:     time.Now,
		Getenv:  os.Getenv,
	}
	env.Kong = kctx
	// Every leaf's Run takes the one bound Env (its context, output,
	// globals and parsed command line).
	kctx.Bind(env)
	if err := kctx.Run(); err != nil {
		return out.Error(signalled(ctx, err))
	}
	return 0
}

// signalled words an error that a SIGINT/SIGTERM caused deep inside an
// operation ("cannot read the research job: context canceled") as the
// interruption it is. The kind, and so the exit code, is kept: an outcome
// that may have happened stays exit 4.
func signalled(ctx context.Context, err error) error {
	if ctx.Err() == nil || !errors.Is(err, context.Canceled) {
		return err
	}
	if e := errs.As(err); e != nil && e.Code == errs.CodeInterrupted {
		return err
	}
	kind := errs.KindOf(err)
	e := &errs.Error{Kind: kind, Code: errs.CodeInterrupted, Message: fmt.Sprintf("interrupted by a signal (%v)", err), Err: err}
	if old := errs.As(err); old != nil {
		e.RetryAfterMs = old.RetryAfterMs
	}
	return e.WithHint("run the same command again; it starts over or resumes from the recorded state")
}

// newParser builds the kong parser for args (see commandGroups).
func newParser(c *CLI, args []string, complete bool, stdout, stderr io.Writer, exit func(int)) (*kong.Kong, error) {
	return kong.New(c, append(commandGroups(args, complete),
		kong.Name("clawkit"),
		kong.Description("Composable commands for the OpenClaw plugin runtime contracts."),
		kong.Vars{"version": versionString()},
		kong.Writers(stdout, stderr),
		kong.Exit(exit),
		kong.UsageOnError(),
		kong.ConfigureHelp(kong.HelpOptions{Compact: true}),
		kong.Help(helpPrinter(jsonRequested(args))),
	)...)
}

// ExitCode is the single place where an error becomes an exit code.
func ExitCode(err error) int {
	if err == nil {
		return 0
	}
	return int(errs.KindOf(err))
}

func jsonRequested(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if a == "--json" || a == "--json=true" {
			return true
		}
	}
	return false
}

func commandPath(ctx *kong.Context) string {
	if ctx == nil {
		return ""
	}
	var parts []string
	for _, p := range ctx.Path {
		if p.Command != nil {
			parts = append(parts, p.Command.Name)
		}
	}
	return strings.Join(parts, " ")
}
