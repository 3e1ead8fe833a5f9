package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/clawkit/clawkit/pkg/crabbox"
	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/fsx"
	"github.com/clawkit/clawkit/pkg/termsafe"
)

// CrabboxCmd is `clawkit crabbox …` (docs/crabbox.md). Stateless: no home, no
// owner lock.
type CrabboxCmd struct {
	Setup   CrabboxSetupCmd   `cmd:"" help:"Print the credential-free install command for a manifest (--run executes it)."`
	Install CrabboxInstallCmd `cmd:"" help:"Check and install the node bootstrap and worker archive; print one receipt line."`
	Verify  CrabboxVerifyCmd  `cmd:"" help:"Verify a retained runtime cache without changing anything; print the receipt line."`
	Receipt CrabboxReceiptCmd `cmd:"" help:"Read an install/verify output and validate its one receipt line."`
}

type crabboxTarget struct {
	Manifest   string `help:"manifest.json of an export (the archives beside it)." required:"" placeholder:"FILE" type:"path"`
	TargetHome string `help:"Home of the runtime user (default: $HOME); the runtime goes below .openclaw-worker/node-runtimes/." placeholder:"DIR"`
}

func (t *crabboxTarget) home(env *Env) string {
	if t.TargetHome != "" {
		return t.TargetHome
	}
	return env.Getenv("HOME")
}

// announceDefault says, before anything starts, where an install goes when
// no --target-home was given: a runtime is hundreds of megabytes, and
// $HOME/.openclaw-worker is not where a user running from a checkout looks.
// what says what happens there ("the runtime goes" for install, "looking
// for the runtime" for verify).
func (t *crabboxTarget) announceDefault(out *Output, env *Env, what string) {
	if t.TargetHome == "" {
		out.Warnf("crabbox: no --target-home given: using $HOME (%s); %s below %s/.openclaw-worker/node-runtimes/", t.home(env), what, t.home(env))
	}
}

// crabboxPins are the expectations `crabbox setup` spells out.
type crabboxPins struct {
	ExpectManifestSHA256 string `name:"expect-manifest-sha256" help:"Refuse unless manifest.json has this SHA-256." placeholder:"HEX"`
	ExpectBuildID        string `help:"Refuse unless the manifest has this build id." placeholder:"ID"`
	ExpectPackage        string `help:"Refuse unless the manifest is for this package (name@version)." placeholder:"NAME@VERSION"`
	ExpectNodeSHA256     string `name:"expect-node-sha256" help:"Refuse unless the node bootstrap is recorded with this SHA-256." placeholder:"HEX"`
	ExpectNodeBytes      int64  `help:"Refuse unless the node bootstrap is recorded with this size." placeholder:"N"`
	ExpectWorkerSHA256   string `name:"expect-worker-sha256" help:"Refuse unless the worker bundle is recorded with this SHA-256." placeholder:"HEX"`
	ExpectWorkerBytes    int64  `help:"Refuse unless the worker bundle is recorded with this size." placeholder:"N"`
	ExpectBundleHash     string `help:"Refuse unless the worker bundle hash is this." placeholder:"HEX"`
	ExpectWorkerPath     string `help:"Refuse unless the worker archive's package-relative path is this." placeholder:"worker-artifacts/SHA.tgz"`
}

func (p *crabboxPins) expect() crabbox.Expect {
	return crabbox.Expect{
		ManifestSHA256: p.ExpectManifestSHA256, BuildID: p.ExpectBuildID, Package: p.ExpectPackage,
		NodeSHA256: p.ExpectNodeSHA256, NodeBytes: p.ExpectNodeBytes,
		WorkerSHA256: p.ExpectWorkerSHA256, WorkerBytes: p.ExpectWorkerBytes,
		BundleHash: p.ExpectBundleHash, WorkerPath: p.ExpectWorkerPath,
	}
}

// cliVersion is what installs record and verify compares.
func cliVersion() string { return ReadBuildInfo().ID() }

// printReceipt prints the one receipt line (or, with --json, the receipt
// as one JSON document).
func printReceipt(out *Output, rc *crabbox.Receipt) error {
	// The line is JSON (its strings already escape control characters).
	return out.Result(rc, func(w *Printer) { fmt.Fprintln(w, rc.Line()) })
}

// CrabboxSetupCmd is `crabbox setup`.
type CrabboxSetupCmd struct {
	Manifest   string `help:"manifest.json of an export (the archives beside it)." required:"" placeholder:"FILE" type:"path"`
	TargetHome string `help:"Home of the runtime user to put in the command (default: the installing user's $HOME)." placeholder:"DIR"`
	Execute    bool   `name:"run" help:"Execute the install command now, in this process."`
}

// Run runs `clawkit crabbox setup`.
func (c *CrabboxSetupCmd) Run(env *Env) error {
	ctx, out := env.Ctx, env.Out
	s, err := crabbox.SetupCommand(c.Manifest, c.TargetHome)
	if err != nil {
		return err
	}
	// What to copy to the target, by absolute local path (stderr: stdout
	// stays the one command line).
	if !out.JSON {
		for _, t := range s.Transfer {
			out.Warnf("crabbox: transfer %s (%d bytes, sha256 %s) to <export>/%s", t.Path, t.Bytes, t.SHA256, t.Rel)
		}
	}
	if !c.Execute {
		return out.Result(s, func(w *Printer) { safeLine(w, "%s", s.Command) })
	}
	out.Warnf("crabbox: running: %s", s.Command)
	req := s.Request
	if req.TargetHome == "" {
		req.TargetHome = env.Getenv("HOME")
	}
	req.CLIVersion, req.Log, req.Progress, req.Ctx = cliVersion(), out.Stderr, out.ProgressWriter(), ctx
	rc, err := crabbox.Install(req)
	if err != nil {
		return err
	}
	return printReceipt(out, rc)
}

// CrabboxInstallCmd is `crabbox install`.
type CrabboxInstallCmd struct {
	crabboxTarget
	crabboxPins
	NoSync        bool          `help:"Do not flush the staged install to disk before renaming it into place (faster; still safe against a killed process, not against power loss)."`
	PlatformCheck string        `name:"platform-check" enum:"enforce,skip" default:"enforce" help:"enforce: refuse an export made for another platform/arch; skip: install anyway (tests only)."`
	LockWait      time.Duration `name:"lock-wait" default:"10m" help:"How long to wait for another install of the same runtime to finish (at least 1s); then exit 5 (runtime_lock_busy)."`
	NodeArchive   string        `name:"node-archive" help:"The node bootstrap archive at this path instead of beside the manifest (checked the same: a regular file, not a link, the manifest's size and SHA-256)." placeholder:"FILE"`
	WorkerArchive string        `name:"worker-archive" help:"The worker bundle archive at this path instead of beside the manifest (checked the same way)." placeholder:"FILE"`
}

// Run runs `clawkit crabbox install`.
func (c *CrabboxInstallCmd) Run(env *Env) error {
	ctx, out := env.Ctx, env.Out
	// Zero means "the default" to the package; here it was typed.
	if err := crabbox.CheckLockWait(c.LockWait); err != nil {
		return err
	}
	c.announceDefault(out, env, "the runtime goes")
	rc, err := crabbox.Install(crabbox.InstallRequest{
		Ctx: ctx, ManifestPath: c.Manifest, TargetHome: c.home(env), Expect: c.expect(),
		CLIVersion: cliVersion(), NoSync: c.NoSync, SkipPlatformCheck: c.PlatformCheck == "skip", Log: out.Stderr, Progress: out.ProgressWriter(), Now: env.Now,
		LockWait: c.LockWait, NodeArchive: c.NodeArchive, WorkerArchive: c.WorkerArchive,
	})
	if err != nil {
		return err
	}
	if rc.Status == crabbox.StatusExistingVerified {
		out.Warnf("crabbox: %s@%s already installed and verified at %s", rc.PackageName, rc.PackageVersion, rc.RuntimeDir)
	} else {
		out.Warnf("crabbox: installed %s@%s at %s", rc.PackageName, rc.PackageVersion, rc.RuntimeDir)
	}
	return printReceipt(out, rc)
}

// CrabboxVerifyCmd is `crabbox verify`.
type CrabboxVerifyCmd struct {
	crabboxTarget
	crabboxPins
	Deep         bool `help:"Also re-hash every installed file against the install index."`
	PrintCommand bool `name:"print-command" help:"Print the credential-free verify command (pinned like setup's) for a CI job or a remote host, and verify nothing."`
}

// Run runs `clawkit crabbox verify`.
func (c *CrabboxVerifyCmd) Run(env *Env) error {
	ctx, out := env.Ctx, env.Out
	if c.PrintCommand {
		s, err := crabbox.VerifyCommand(c.Manifest, c.TargetHome, c.Deep)
		if err != nil {
			return err
		}
		return out.Result(s, func(w *Printer) { safeLine(w, "%s", s.Command) })
	}
	c.announceDefault(out, env, "looking for the runtime")
	req := crabbox.VerifyRequest{
		Ctx: ctx, ManifestPath: c.Manifest, TargetHome: c.home(env), Expect: c.expect(),
		CLIVersion: cliVersion(), Deep: c.Deep, Progress: out.ProgressWriter(),
	}
	res, err := crabbox.Verify(req)
	if out.JSON {
		// One document on every path, success or not, for a CI workflow
		// to branch on (docs/crabbox.md, "verify --json").
		rep := crabbox.NewVerifyReport(req, res, err)
		if perr := out.PrintJSON(rep); perr != nil {
			return perr
		}
		if rep.OK {
			return nil
		}
		if err == nil {
			err = crabbox.VerifyFailed(res)
		}
		return &reportedError{err}
	}
	if err != nil {
		return err
	}
	if len(res.Problems) > 0 {
		// One line per problem, like `go mod verify`, on stderr; the
		// error (and its exit code 1) follows. Paths and messages may
		// carry names from the archive: escaped.
		for _, p := range res.Problems {
			_, _ = fmt.Fprintln(out.Stderr, termsafe.Text(p)) // diagnostics, best effort: the error follows
		}
		return crabbox.VerifyFailed(res)
	}
	return printReceipt(out, res.Receipt)
}

// CrabboxReceiptCmd is `crabbox receipt`.
type CrabboxReceiptCmd struct {
	Manifest   string `help:"manifest.json the receipt must match." required:"" placeholder:"FILE" type:"path"`
	From       string `help:"Read the command output (or the receipt as JSON) from FILE instead of stdin." placeholder:"FILE" type:"path"`
	TargetHome string `help:"Also require the runtime to be installed below this home." placeholder:"DIR"`
}

// Run runs `clawkit crabbox receipt`.
func (c *CrabboxReceiptCmd) Run(env *Env) error {
	out := env.Out
	in, err := crabbox.LoadInputs(c.Manifest, crabbox.Expect{})
	if err != nil {
		return err
	}
	r := env.Stdin
	if c.From != "" {
		// Opened without blocking and refused unless a regular file: a FIFO
		// here would otherwise wait for a writer forever.
		f, err := fsx.OpenNoFollow(c.From)
		if err != nil {
			return errs.Usage(errs.CodeReceiptUnreadable, "cannot open %s: %v", c.From, err).WithHint("pass the file holding the install or verify output")
		}
		defer fsx.CloseRead(f)
		if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
			return errs.Usage(errs.CodeReceiptUnreadable, "%s is not a regular file", c.From).WithHint("pass the file holding the install or verify output, or pipe it on stdin")
		}
		r = f
	}
	rc, err := crabbox.ReadReceipt(r)
	if err != nil {
		return err
	}
	if err := crabbox.ValidateReceipt(rc, in.Manifest, in.ManifestSHA256, c.TargetHome); err != nil {
		return err
	}
	return out.Result(rc, func(w *Printer) {
		// The receipt is input from outside: escaped.
		safeLine(w, "receipt ok: %s %s@%s build %s at %s", rc.Status, rc.PackageName, rc.PackageVersion, rc.BuildID, rc.RuntimeDir)
		fmt.Fprintln(w, strings.TrimSpace("(evidence of a completed check, not a reason to skip the next verification)"))
	})
}
