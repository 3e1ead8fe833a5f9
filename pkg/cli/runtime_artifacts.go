package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/clawkit/clawkit/pkg/artifacts"
	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/termsafe"
)

// RuntimeArtifactsCmd is `clawkit runtime-artifacts …` (docs/runtime-artifacts.md).
// Stateless: no home, no owner lock.
type RuntimeArtifactsCmd struct {
	Qualify    RAQualifyCmd    `cmd:"" help:"List the bundled plugins of an installation; writes nothing."`
	Export     RAExportCmd     `cmd:"" help:"Export the node bootstrap, the worker bundle and manifest.json into a new folder."`
	Inspect    RAInspectCmd    `cmd:"" help:"Re-read an export and verify every size and digest."`
	WorkerPath RAWorkerPathCmd `cmd:"" name:"worker-path" help:"Print worker-artifacts/<sha256>.tgz for a worker archive digest."`
}

// RAQualifyCmd is `runtime-artifacts qualify`.
type RAQualifyCmd struct {
	PackageRoot string `help:"Installed OpenClaw package (e.g. node_modules/openclaw)." required:"" placeholder:"DIR"`
	Config      string `help:"OpenClaw config (JSON5) to read plugin enablement from; never written." placeholder:"FILE"`
}

func (c *RAQualifyCmd) Run(env *Env) error {
	out := env.Out
	rep, err := artifacts.Qualify(c.PackageRoot, c.Config)
	if err != nil {
		return err
	}
	return out.Result(rep, func(w io.Writer) {
		safeLine(w, "%s %s at %s", rep.Name, rep.Version, rep.PackageRoot)
		if rep.BuildID != "" {
			safeLine(w, "build %s", rep.BuildID)
		}
		safeLine(w, "worker artifacts: %d (%s)", len(rep.Worker), rep.WorkerInventory)
		for _, f := range rep.Worker {
			safeLine(w, "  dist/worker/%s", f)
		}
		q := 0
		for _, p := range rep.Plugins {
			if p.Qualified {
				q++
			}
		}
		safeLine(w, "plugins: %d bundled, %d qualified", len(rep.Plugins), q)
		for _, p := range rep.Plugins {
			state := "qualified"
			if !p.Qualified {
				state = "not qualified: " + p.Reason
			}
			if !p.Enabled {
				state += " (disabled in config)"
			}
			entry := ""
			if len(p.Entries) > 0 {
				entry = " " + strings.Join(p.Entries, ",")
			}
			safeLine(w, "  %-24s %s%s", p.ID, state, entry)
		}
		for _, ig := range rep.Ignored {
			safeLine(w, "ignored external plugin %s %s: %s", ig.ID, ig.Path, ig.Reason)
		}
	})
}

// RAExportCmd is `runtime-artifacts export`.
type RAExportCmd struct {
	PackageRoot string   `help:"Installed OpenClaw package (e.g. node_modules/openclaw)." required:"" placeholder:"DIR"`
	Output      string   `help:"New folder to create (its parent must exist; must be outside the package)." required:"" placeholder:"DIR"`
	BuildID     string   `name:"build-id" help:"Build id for the manifest (default: dist/build-info.json's, else <version>-<bundle hash prefix>)." placeholder:"ID"`
	Plugin      []string `help:"Plugin to select (repeatable; default: every qualified bundled plugin the config leaves enabled)." placeholder:"ID"`
	Config      string   `help:"OpenClaw config (JSON5) for plugin enablement: disabled plugins are not exported; external plugin paths are never loaded; never written." placeholder:"FILE"`
	Platform    string   `help:"Target platform in Node's names (default: this machine's)." placeholder:"NAME"`
	Arch        string   `help:"Target arch in Node's names (default: this machine's)." placeholder:"NAME"`
}

func (c *RAExportCmd) Run(env *Env) error {
	ctx, out := env.Ctx, env.Out
	producer := ReadBuildInfo().Version
	producer = strings.Trim(producer, "()")
	res, err := artifacts.Export(ctx, artifacts.ExportOptions{
		PackageRoot: c.PackageRoot, Output: c.Output, BuildID: c.BuildID, Plugins: c.Plugin, Config: c.Config,
		Platform: c.Platform, Arch: c.Arch, Producer: producer, Progress: out.ProgressWriter(),
	})
	if err != nil {
		return err
	}
	m := res.Manifest
	return out.Result(res, func(w io.Writer) {
		safeLine(w, "exported %s %s (build %s) to %s", m.Package.Name, m.Package.Version, m.BuildID, res.Output)
		safeLine(w, "node bootstrap  %s  %d bytes", m.NodeBootstrap.Path, m.NodeBootstrap.Bytes)
		safeLine(w, "worker bundle   %s  %d bytes", m.WorkerBundle.Path, m.WorkerBundle.Bytes)
		safeLine(w, "bundle hash     %s", m.WorkerBundle.BundleHash)
		safeLine(w, "plugins         %d selected", len(m.Plugins))
		safeLine(w, "manifest        %s/%s", res.Output, artifacts.ManifestName)
	})
}

// RAInspectCmd is `runtime-artifacts inspect`.
type RAInspectCmd struct {
	Dir string `arg:"" help:"Export folder (holds manifest.json)." placeholder:"DIR"`
}

func (c *RAInspectCmd) Run(env *Env) error {
	ctx, out := env.Ctx, env.Out
	rep, err := artifacts.InspectContext(ctx, c.Dir)
	if err != nil {
		return err
	}
	if !rep.OK {
		// One line per problem on stdout (like go mod verify); under --json
		// the problems travel in the error document instead.
		detail := ""
		if out.JSON {
			detail = ": " + strings.Join(rep.Problems, "; ")
		} else {
			for _, p := range rep.Problems {
				fmt.Fprintln(out.Stdout, termsafe.Text(p))
			}
		}
		return errs.Failed(CodeVerificationFailed, "export %s failed verification: %d problem(s)%s", c.Dir, len(rep.Problems), detail).
			WithHint("the export was changed or damaged after it was written; export again")
	}
	return out.Result(rep, func(w io.Writer) {
		wb := &rep.Manifest.WorkerBundle
		safeLine(w, "all artifacts verified (%s %s, bundle hash %s)", rep.Manifest.Package.Name, rep.Manifest.Package.Version, wb.BundleHash)
		from := "not recorded by the exporter"
		if wb.Inventory != nil {
			from = wb.Inventory.Symbol + " in " + wb.Inventory.Source
		}
		safeLine(w, "worker inventory: %d files (%s)", len(wb.Entries), from)
		for _, e := range wb.Entries {
			safeLine(w, "  %s %s %d", e.Path, e.Mode, e.Bytes)
		}
	})
}

// RAWorkerPathCmd is `runtime-artifacts worker-path`.
type RAWorkerPathCmd struct {
	SHA256 string `arg:"" name:"sha256" help:"SHA-256 of the worker archive (64 lower-case hex digits)."`
}

func (c *RAWorkerPathCmd) Run(env *Env) error {
	out := env.Out
	p, err := artifacts.WorkerPath(c.SHA256)
	if err != nil {
		return err
	}
	return out.Result(map[string]string{"path": p}, func(w io.Writer) { safeLine(w, "%s", p) })
}

// safeLine prints one human line whose values may quote text from outside
// (an archive's entry names, a package's name, version and plugin ids, a
// manifest's paths): escaped, so it cannot forge a line or move the cursor
// (pkg/termsafe).
func safeLine(w io.Writer, format string, args ...any) {
	fmt.Fprintln(w, termsafe.Text(fmt.Sprintf(format, args...)))
}
