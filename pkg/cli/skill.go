package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/term"

	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/fsx"
	"github.com/clawkit/clawkit/pkg/skilllint"
	"github.com/clawkit/clawkit/pkg/skills"
	"github.com/clawkit/clawkit/pkg/termsafe"
)

// SkillCmd is `clawkit skill …` (docs/skills.md).
type SkillCmd struct {
	Root     SkillRootCmd     `cmd:"" help:"Print the agent's skills folder for a plugin."`
	List     SkillListCmd     `cmd:"" help:"List skills with their revision."`
	Read     SkillReadCmd     `cmd:"" help:"Print one file of a skill."`
	Write    SkillWriteCmd    `cmd:"" help:"Validate and atomically write one file of a skill (stdin or --from), or a whole skill (--from-dir)."`
	Remove   SkillRemoveCmd   `cmd:"" help:"Remove one file of a skill, or the whole skill (SKILL.md alone is never removed)."`
	Validate SkillValidateCmd `cmd:"" help:"Lint a skill folder (--dir, for CI) or an installed skill."`
	Events   SkillEventsCmd   `cmd:"" help:"Show recorded skill_changed events."`
	Bundle   SkillBundleCmd   `cmd:"" help:"Write one checked, deterministic tar of a skill's files (stdout or --out)."`
	Watch    SkillWatchCmd    `cmd:"" help:"Stream skill changes as lines (change, unavailable, available) until interrupted."`
}

// skillTarget are the flags naming whose skills a command is about.
type skillTarget struct {
	Plugin  string `help:"Plugin id (its openclaw.plugin.json declares agentSkillsDir)." required:"" placeholder:"ID"`
	Agent   string `help:"Agent id." default:"main" env:"CLAWKIT_AGENT"`
	Session string `help:"Session key." default:"cli" env:"CLAWKIT_SESSION"`
}

func (t skillTarget) target() skills.Target {
	return skills.Target{PluginID: t.Plugin, AgentID: t.Agent, SessionKey: t.Session}
}

// SkillRootCmd is `clawkit skill root`.
type SkillRootCmd struct{ skillTarget }

// Run runs `clawkit skill root`.
func (c *SkillRootCmd) Run(env *Env) error {
	ctx := env.Ctx
	r, err := skills.OpRoot.Call(ctx, env, c.target())
	if err != nil {
		return err
	}
	return env.Out.Result(r, func(w *Printer) { fmt.Fprintln(w, termsafe.Text(r.Root)) })
}

// SkillListCmd is `clawkit skill list`.
type SkillListCmd struct {
	skillTarget
	Skill string `arg:"" optional:"" help:"List the files of this skill (paths, sizes, digests) instead of the skills."`
}

// Run runs `clawkit skill list`.
func (c *SkillListCmd) Run(env *Env) error {
	ctx := env.Ctx
	if c.Skill != "" {
		return c.files(ctx, env)
	}
	r, err := skills.OpList.Call(ctx, env, c.target())
	if err != nil {
		return err
	}
	if r.Skills == nil {
		r.Skills = []skills.SkillInfo{}
	}
	// Folder names come from disk (a refused one is listed too, with its
	// problem): escaped, so a name cannot forge a line or move the cursor.
	return env.Out.Result(r, func(w *Printer) {
		tw := w.Table(0, 4, 2)
		fmt.Fprintln(tw, "SKILL\tFILES\tBYTES\tCONTENT\tTREE")
		for _, s := range r.Skills {
			if s.Revision == nil {
				fmt.Fprintf(tw, "%s\t%d\t%d\t-\t-\t(%s)\n", termsafe.Text(s.Skill), s.Files, s.Bytes, termsafe.Text(s.Problem))
				continue
			}
			fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\n", termsafe.Text(s.Skill), s.Files, s.Bytes, s.Revision.ContentSHA256, s.Revision.TreeSHA256)
		}
		tw.Flush()
	})
}

func (c *SkillListCmd) files(ctx context.Context, env *Env) error {
	r, err := skills.OpFiles.Call(ctx, env, skills.FilesParams{Target: c.target(), Skill: c.Skill})
	if err != nil {
		return err
	}
	return env.Out.Result(r, func(w *Printer) {
		tw := w.Table(0, 4, 2)
		fmt.Fprintln(tw, "PATH\tBYTES\tSHA256")
		for _, f := range r.Files {
			fmt.Fprintf(tw, "%s\t%d\t%s\n", termsafe.Text(f.Path), f.SizeBytes, f.SHA256)
		}
		tw.Flush()
	})
}

// SkillReadCmd is `clawkit skill read`.
type SkillReadCmd struct {
	skillTarget
	Skill    string `arg:"" help:"Skill name (its folder name)."`
	File     string `arg:"" help:"File inside the skill: SKILL.md or e.g. references/notes.md."`
	MaxBytes int64  `help:"Refuse files larger than this (default: the file limit)." placeholder:"N"`
}

// Run runs `clawkit skill read`.
func (c *SkillReadCmd) Run(env *Env) error {
	ctx := env.Ctx
	p := skills.FileParams{Target: c.target(), Skill: c.Skill, File: c.File, MaxBytes: c.MaxBytes}
	r, err := skills.OpRead.Call(ctx, env, p)
	if err != nil {
		return err
	}
	return env.Out.Result(r, func(w *Printer) { _, _ = w.Write(r.Bytes()) })
}

// SkillWriteCmd is `clawkit skill write`.
type SkillWriteCmd struct {
	skillTarget
	Skill          string `arg:"" help:"Skill name (its folder name)."`
	File           string `arg:"" optional:"" help:"File inside the skill: SKILL.md or e.g. references/notes.md (not with --from-dir)."`
	From           string `help:"Read the content from this regular file instead of stdin ('-' for stdin)." placeholder:"PATH"`
	FromDir        string `help:"Install this whole skill folder as one commit (replaces the skill's files)." placeholder:"DIR"`
	FromBundle     string `help:"Install a bundle made by 'skill bundle' (a tar of one skill folder) as one commit ('-' for stdin)." placeholder:"FILE"`
	SkipDisallowed bool   `help:"With --from-dir: install without the files the authoring contract does not allow (listed) instead of refusing."`
	Strict         bool   `help:"Treat warnings as errors."`
}

// Run runs `clawkit skill write`.
func (c *SkillWriteCmd) Run(env *Env) error {
	ctx := env.Ctx
	if c.FromDir != "" || c.FromBundle != "" {
		return c.install(ctx, env)
	}
	if c.SkipDisallowed {
		return errs.Usage(CodeUsage, "--skip-disallowed goes with --from-dir or --from-bundle")
	}
	// The path, the size and the content are the operation's Check (an
	// empty FILE is refused as an empty path; --from-dir installs a whole
	// skill): the command only reads at most what any write may carry.
	src := env.Stdin
	name := "stdin"
	if c.From != "" && c.From != "-" {
		// Opened without blocking and refused unless a regular file: a
		// FIFO or a device given here must not hang the command.
		f, _, err := skilllint.OpenInput(c.From)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return errs.Usage(errs.CodeNotFound, "--from %s: no such file", c.From)
			}
			if e := errs.As(err); e != nil {
				return e
			}
			return errs.Failed(errs.CodeReadFailed, "cannot read --from %s: %v", c.From, err)
		}
		defer fsx.CloseRead(f)
		src, name = f, c.From
	}
	if f, ok := src.(*os.File); src == nil || (ok && c.From == "" && term.IsTerminal(int(f.Fd()))) {
		// Reading a terminal would wait for typing that nobody expects.
		return errs.Usage(CodeNoContent, "no content for %s: stdin is a terminal", c.File).
			WithHint("pass --from PATH or pipe the content on stdin")
	}
	content, err := io.ReadAll(io.LimitReader(src, skills.MaxWriteBytes+1))
	if err != nil {
		return errs.Failed(errs.CodeReadFailed, "cannot read the content from %s: %v", name, err)
	}
	p := skills.WriteParams{FileParams: skills.FileParams{Target: c.target(), Skill: c.Skill, File: c.File}, Content: content, Strict: c.Strict}
	r, err := skills.OpWrite.Call(ctx, env, p)
	if err != nil {
		return err
	}
	return printCommit(env, r)
}

// install is `skill write NAME --from-dir DIR`: every allowed file in one
// commit; disallowed files refuse the install up front unless skipped.
func (c *SkillWriteCmd) install(ctx context.Context, env *Env) error {
	if c.File != "" || c.From != "" || (c.FromDir != "" && c.FromBundle != "") {
		return errs.Usage(CodeUsage, "--from-dir and --from-bundle install a whole skill; do not name a file or --from with them, and pass only one of them")
	}
	// The skill name is checked once, by the install's Check.
	from := c.FromDir
	var src *skills.SourceTree
	var err error
	if c.FromBundle != "" {
		from = c.FromBundle
		src, err = readBundleArg(env, c.FromBundle)
	} else {
		src, err = skills.ReadSourceDir("--from-dir", c.FromDir)
	}
	if err != nil {
		return err
	}
	if len(src.Disallowed) > 0 {
		if !c.SkipDisallowed {
			return skills.DisallowedError(from, src.Disallowed)
		}
		for _, d := range src.Disallowed {
			env.Out.Warnf("warning: skipped %s: not allowed by the skill authoring contract", d)
		}
	}
	p := skills.InstallParams{Target: c.target(), Skill: c.Skill, Files: src.Files, Skipped: src.Disallowed, Strict: c.Strict}
	r, err := skills.OpInstall.Call(ctx, env, p)
	if err != nil {
		return err
	}
	return printCommit(env, r)
}

// SkillRemoveCmd is `clawkit skill remove`.
type SkillRemoveCmd struct {
	skillTarget
	Skill string `arg:"" help:"Skill name (its folder name)."`
	File  string `arg:"" optional:"" help:"The one file to remove (not SKILL.md); without it, the whole skill is removed."`
}

// Run runs `clawkit skill remove`.
func (c *SkillRemoveCmd) Run(env *Env) error {
	ctx := env.Ctx
	p := skills.FileParams{Target: c.target(), Skill: c.Skill, File: c.File}
	r, err := skills.OpRemove.Call(ctx, env, p)
	if err != nil {
		return err
	}
	return printCommit(env, r)
}

func short(r *skilllint.Revision) string {
	if r == nil {
		return "none"
	}
	return r.TreeSHA256
}

func printCommit(env *Env, r *skills.CommitResult) error {
	for _, w := range r.Warnings {
		env.Out.Warnf("warning: %s", w.String())
	}
	for _, h := range r.Hooks {
		if !h.OK {
			env.Out.Warnf("warning: skill_changed hook %q failed: %s (the change stands)", h.Argv, h.Error)
		}
	}
	return env.Out.Result(r, func(w *Printer) {
		verb := "wrote"
		if r.Action == "remove" {
			verb = "removed"
		}
		switch {
		case !r.Changed && r.Action == "install":
			fmt.Fprintf(w, "unchanged: skill %s already has this tree (no event)\n", termsafe.Text(r.Skill))
		case !r.Changed:
			fmt.Fprintf(w, "unchanged: %s of skill %s already has this content (no event)\n", termsafe.Text(r.File), termsafe.Text(r.Skill))
		case r.Removed:
			fmt.Fprintf(w, "%s skill %s\n", verb, termsafe.Text(r.Skill))
		case r.Action == "install":
			fmt.Fprintf(w, "installed skill %s\n", termsafe.Text(r.Skill))
		default:
			fmt.Fprintf(w, "%s %s of skill %s\n", verb, termsafe.Text(r.File), termsafe.Text(r.Skill))
		}
		if r.Changed {
			fmt.Fprintf(w, "tree: %s -> %s\n", short(r.Before), short(r.After))
			fmt.Fprintf(w, "event: %s (%s, %d hooks)\n", r.EventID, r.Dispatch, len(r.Hooks))
		}
	})
}

// SkillValidateCmd is `clawkit skill validate`.
type SkillValidateCmd struct {
	Dir       []string `help:"Validate this skill folder on disk (repeatable; more folders may follow as arguments). Stateless; the folder name is the skill name." placeholder:"DIR" sep:"none"`
	Recursive []string `help:"Validate every skill folder (a folder holding SKILL.md) below ROOT (repeatable)." placeholder:"ROOT" sep:"none"`
	File      string   `help:"Validate one SKILL.md file on its own (its folder name is the skill name) and print its description." placeholder:"PATH"`
	MaxBytes  int64    `help:"With --file: refuse a file larger than this (default and maximum: the SKILL.md limit)." placeholder:"N"`
	Profile   string   `help:"Rule set: spec (the Agent Skills specification; default for --dir/--recursive) or openclaw (OpenClaw's authoring contract; default for an installed skill)." placeholder:"NAME"`
	Args      []string `arg:"" optional:"" name:"skill" help:"Installed skill to validate (with --plugin), or more folders after --dir."`
	Plugin    string   `help:"Plugin whose skills folder holds SKILL (when not using --dir)." placeholder:"ID"`
	Agent     string   `help:"Agent id." default:"main" env:"CLAWKIT_AGENT"`
	Session   string   `help:"Session key." default:"cli" env:"CLAWKIT_SESSION"`
	Strict    bool     `help:"Treat warnings as errors."`
	Format    string   `help:"Output: text (default), github (workflow annotations, ::error file=…,line=…,col=…::…) or sarif (SARIF 2.1.0 for code scanning)." enum:"text,github,sarif" default:"text" placeholder:"FORMAT"`
	Disable   []string `help:"Suppress every finding of this rule for the run (repeatable; shown as suppressed in --json and SARIF)." placeholder:"RULE" sep:"none"`
}

// Run runs `clawkit skill validate`.
func (c *SkillValidateCmd) Run(env *Env) error {
	ctx := env.Ctx
	dirs := c.Dir
	profile := c.Profile
	if profile != "" {
		if _, err := skilllint.CheckProfile(profile); err != nil {
			return errs.Usage(CodeUsage, "--profile: %v", err)
		}
	}
	if err := skilllint.CheckDisable(c.Disable); err != nil {
		return err
	}
	if c.Format != skilllint.FormatText && env.Out.JSON {
		return errs.Usage(CodeUsage, "--json and --format %s are two output formats; pass one", c.Format)
	}
	if c.File != "" {
		if c.Format != skilllint.FormatText {
			return errs.Usage(CodeUsage, "--format %s goes with --dir, --recursive or an installed skill, not --file", c.Format)
		}
		return c.validateFile(env, profile)
	}
	if c.MaxBytes != 0 {
		return errs.Usage(CodeUsage, "--max-bytes goes with --file")
	}
	switch {
	case (len(c.Dir) > 0 || len(c.Recursive) > 0) && c.Plugin != "":
		return errs.Usage(CodeUsage, "pass either --dir/--recursive or SKILL --plugin ID, not both")
	case len(c.Dir) > 0:
		dirs = append(dirs, c.Args...)
	case len(c.Recursive) > 0:
		if len(c.Args) > 0 {
			return errs.Usage(CodeUsage, "unexpected argument %q with --recursive", c.Args[0]).WithHint("pass more roots as --recursive ROOT")
		}
	default:
		if len(c.Args) != 1 || c.Plugin == "" {
			return errs.Usage(CodeUsage, "nothing to validate").WithHint("pass --dir DIR (a skill folder), --recursive ROOT, or SKILL --plugin ID for an installed skill")
		}
		// The skill name is checked once, by InstalledDir.
		r, err := skills.OpRoot.Call(ctx, env, skills.Target{PluginID: c.Plugin, AgentID: c.Agent, SessionKey: c.Session})
		if err != nil {
			return err
		}
		dir, err := skills.InstalledDir(r, c.Args[0])
		if err != nil {
			return err
		}
		dirs = []string{dir}
		if profile == "" {
			profile = skilllint.ProfileOpenClaw
		}
	}
	opt := skilllint.Options{Profile: profile, Strict: c.Strict, Disable: c.Disable}
	out := &Printer{w: env.Out.Stdout}
	var sarif *skilllint.SARIF
	if c.Format == skilllint.FormatSARIF {
		sarif = skilllint.NewSARIF(ReadBuildInfo().Version)
	}
	// Reports are printed as each skill is checked, in JSON too (the
	// document is streamed: {"skills":[…],"summary":{…},"ok":…}), so memory
	// stays flat however many skills a tree holds.
	var stream *JSONStream
	if env.Out.JSON {
		var err error
		if stream, err = env.Out.StreamJSON("skills"); err != nil {
			return err
		}
	}
	sum, err := skilllint.Lint(dirs, c.Recursive, opt, func(r *skilllint.Report) error {
		switch {
		case stream != nil:
			return stream.Item(r)
		case sarif != nil:
			sarif.Add(r, func(file string) string { return displayPath(r.Dir, file) })
		case c.Format == skilllint.FormatGitHub:
			printAnnotations(out, r)
		default:
			printLintReport(out, r)
		}
		return nil
	})
	// A --disable that matched nothing is said, as an unused directive is.
	var unused []string
	for _, d := range c.Disable {
		if n, ok := sum.Disabled[d]; ok && n == 0 && !slices.Contains(unused, d) {
			unused = append(unused, d)
		}
	}
	if stream != nil {
		if err != nil {
			// The document is already open: it ends as the error document.
			return stream.Fail(err)
		}
		if err := stream.Close(Field{"summary", sum}, Field{"ok", sum.Failed == 0}); err != nil {
			return err
		}
	} else {
		if err != nil {
			return err
		}
		for _, d := range unused {
			msg := fmt.Sprintf("--disable %s matched no finding; remove it", d)
			switch c.Format {
			case skilllint.FormatSARIF:
				sarif.Notify("warning", msg)
			case skilllint.FormatGitHub:
				fmt.Fprintf(out, "::warning title=clawkit::%s\n", msg)
			default:
				env.Out.Warnf("warning: %s", msg)
			}
		}
		if sarif != nil {
			data, err := sarif.JSON()
			if err != nil {
				return errs.Failed(errs.CodeWriteFailed, "cannot encode the SARIF log: %v", err)
			}
			if _, err := out.Write(append(data, '\n')); err != nil {
				return errs.Failed(errs.CodeWriteFailed, "cannot write the SARIF log: %v", err)
			}
		} else {
			suppressed := ""
			if sum.Suppressed > 0 {
				suppressed = fmt.Sprintf(", %d suppressed", sum.Suppressed)
			}
			fmt.Fprintf(out, "%d %s checked (profile %s%s): %d passed, %d failed; %d %s, %d %s%s\n",
				sum.Skills, plural(sum.Skills, "skill", "skills"), sum.Profile, map[bool]string{true: ", strict"}[sum.Strict],
				sum.Passed, sum.Failed, sum.Errors, plural(sum.Errors, "error", "errors"), sum.Warnings, plural(sum.Warnings, "warning", "warnings"), suppressed)
		}
	}
	if sum.Failed > 0 {
		e := errs.Failed(CodeValidationFailed, "%d of %d %s failed validation (%s profile)", sum.Failed, sum.Skills, plural(sum.Skills, "skill", "skills"), sum.Profile).
			WithHint("fix the lines marked error above and run 'clawkit skill validate' again")
		if sum.Hint != "" {
			e = e.WithHint("%s", sum.Hint)
		}
		return &reportedError{e}
	}
	return out.err
}

// validateFile is `validate --file PATH`: one SKILL.md, the lint lines,
// and the description it declares.
func (c *SkillValidateCmd) validateFile(env *Env, profile string) error {
	if len(c.Dir) > 0 || len(c.Recursive) > 0 || c.Plugin != "" || len(c.Args) > 0 {
		return errs.Usage(CodeUsage, "--file validates one file; do not combine it with --dir, --recursive or an installed skill")
	}
	if c.MaxBytes < 0 {
		return errs.Usage(CodeUsage, "--max-bytes must be positive")
	}
	r, err := skilllint.ValidateFile(c.File, skilllint.Options{Profile: profile, Strict: c.Strict}, c.MaxBytes)
	if err != nil {
		return err
	}
	if err := env.Out.Result(r, func(w *Printer) {
		printLintReport(w, &r.Report)
		if r.Description != "" {
			fmt.Fprintf(w, "description: %s\n", termsafe.Text(r.Description))
		}
	}); err != nil {
		return err
	}
	if !r.OK {
		return &reportedError{errs.Failed(CodeValidationFailed, "%s failed validation (%s profile)", c.File, r.Profile)}
	}
	return nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// printLintReport prints one line per finding (path:line: severity
// code[rule]: message, errors first) and the skill's verdict. File and
// folder names come from disk and messages may quote a skill's text: each
// line is escaped (termsafe), so none can forge another.
func printLintReport(w *Printer, r *skilllint.Report) {
	for _, list := range [][]skilllint.Finding{r.Errors, r.Warnings} {
		for _, f := range list {
			f.File = displayPath(r.Dir, f.File)
			fmt.Fprintln(w, termsafe.Text(f.String()))
		}
	}
	verdict := "ok"
	if !r.OK {
		verdict = "FAILED"
	}
	fmt.Fprintf(w, "%s: %s: skill %s (%d %s, %d bytes, %d %s, %d %s)\n", termsafe.Text(filepath.ToSlash(r.Dir)), verdict, termsafe.Text(r.Skill), r.Files, plural(r.Files, "file", "files"), r.Bytes,
		len(r.Errors), plural(len(r.Errors), "error", "errors"), len(r.Warnings), plural(len(r.Warnings), "warning", "warnings"))
}

// printAnnotations prints a report as GitHub workflow commands, one per
// error or warning (skilllint.GitHubAnnotation escapes them), then the
// skill's verdict line as printLintReport does. Suppressed findings are
// not annotated: they were accepted (--json and SARIF list them).
func printAnnotations(w *Printer, r *skilllint.Report) {
	for _, list := range [][]skilllint.Finding{r.Errors, r.Warnings} {
		for _, f := range list {
			// The command escapes CR, LF and %; termsafe takes any other
			// control character a name or quoted text may hold.
			fmt.Fprintln(w, termsafe.Text(skilllint.GitHubAnnotation(displayPath(r.Dir, f.File), f)))
		}
	}
	verdict := "ok"
	if !r.OK {
		verdict = "FAILED"
	}
	fmt.Fprintf(w, "%s: %s: skill %s (%d %s, %d %s, %d suppressed)\n", termsafe.Text(filepath.ToSlash(r.Dir)), verdict, termsafe.Text(r.Skill),
		len(r.Errors), plural(len(r.Errors), "error", "errors"), len(r.Warnings), plural(len(r.Warnings), "warning", "warnings"), len(r.Suppressed))
}

// SkillEventsCmd is `clawkit skill events`.
type SkillEventsCmd struct {
	Plugin string `help:"Only this plugin's events." placeholder:"ID"`
	Agent  string `help:"Agent id." default:"main" env:"CLAWKIT_AGENT"`
	Skill  string `help:"Only this skill's events."`
	Limit  int    `help:"Show the newest N events." default:"100"`
}

// Run runs `clawkit skill events`.
func (c *SkillEventsCmd) Run(env *Env) error {
	ctx := env.Ctx
	p := skills.EventsParams{Target: skills.Target{PluginID: c.Plugin, AgentID: c.Agent}, Skill: c.Skill, Limit: c.Limit}
	out, err := skills.OpEvents.Call(ctx, env, p)
	if err != nil {
		return err
	}
	if out == nil {
		out = []skills.EventRecord{}
	}
	return env.Out.Result(out, func(w *Printer) {
		tw := w.Table(0, 4, 2)
		fmt.Fprintln(tw, "EVENT\tPLUGIN\tSKILL\tACTION\tFILE\tDISPATCH\tAFTER")
		for _, e := range out {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", e.EventID, termsafe.Text(e.Event.PluginID), termsafe.Text(e.Event.Skill), e.Action, termsafe.Text(e.File), e.Dispatch, short(e.Event.After))
		}
		tw.Flush()
	})
}

// displayPath joins a skill folder as the user named it and a
// skill-relative finding path, keeping a folder's trailing slash.
func displayPath(dir, file string) string {
	p := filepath.ToSlash(filepath.Join(dir, file))
	if strings.HasSuffix(file, "/") {
		p += "/"
	}
	return p
}

// readBundleArg opens --from-bundle (a regular file, never blocking, or
// '-' for stdin) and reads the bundle back.
func readBundleArg(env *Env, p string) (*skills.SourceTree, error) {
	r := env.Stdin
	if p != "-" {
		f, _, err := skilllint.OpenInput(p)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil, errs.Usage(errs.CodeNotFound, "--from-bundle %s: no such file", p).WithPath(p)
			}
			if e := errs.As(err); e != nil {
				return nil, e
			}
			return nil, errs.Failed(errs.CodeReadFailed, "cannot read --from-bundle %s: %v", p, err)
		}
		defer fsx.CloseRead(f)
		r = f
	} else if f, ok := r.(*os.File); r == nil || (ok && term.IsTerminal(int(f.Fd()))) {
		return nil, errs.Usage(CodeNoContent, "no bundle on stdin: stdin is a terminal").WithHint("pass --from-bundle FILE or pipe the bundle on stdin")
	}
	_, tree, err := skills.ReadBundle(r)
	return tree, err
}

// SkillBundleCmd is `skill bundle SKILL --plugin ID` (an installed skill,
// read through the owner router) or `skill bundle --dir DIR` (a folder on
// disk, stateless).
type SkillBundleCmd struct {
	Skill   string `arg:"" optional:"" help:"Installed skill to bundle (with --plugin)."`
	Plugin  string `help:"Plugin whose skills folder holds SKILL." placeholder:"ID"`
	Agent   string `help:"Agent id." default:"main" env:"CLAWKIT_AGENT"`
	Session string `help:"Session key." default:"cli" env:"CLAWKIT_SESSION"`
	Dir     string `help:"Bundle this skill folder on disk instead (the folder name is the skill name)." placeholder:"DIR"`
	Out     string `help:"Publish the bundle to FILE (atomically: whole or not at all) instead of stdout." placeholder:"FILE"`
}

// BundleOutput is what `skill bundle --out FILE` reports.
type BundleOutput struct {
	*skills.BundleResult
	Files        []skilllint.FileEntry `json:"files"`
	Out          string                `json:"out"`
	BundleSHA256 string                `json:"bundleSha256"`
	BundleBytes  int                   `json:"bundleBytes"`
}

// Run runs `clawkit skill bundle`.
func (c *SkillBundleCmd) Run(env *Env) error {
	ctx := env.Ctx
	switch {
	case c.Dir != "" && (c.Plugin != "" || c.Skill != ""):
		return errs.Usage(CodeUsage, "pass either --dir DIR or SKILL --plugin ID, not both")
	case c.Dir == "" && (c.Skill == "" || c.Plugin == ""):
		return errs.Usage(CodeUsage, "nothing to bundle").WithHint("pass SKILL --plugin ID for an installed skill, or --dir DIR for a skill folder")
	}
	if c.Out == "" {
		if env.Out.JSON {
			return errs.Usage(CodeUsage, "--json needs --out FILE: without it the bundle itself is what goes to stdout")
		}
		if f, ok := env.Out.Stdout.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
			return errs.Usage(CodeUsage, "refusing to write a tar to a terminal").WithHint("pass --out FILE or redirect stdout")
		}
	}
	var b *skills.BundleResult
	if c.Dir != "" {
		r, err := skills.BundleDir(c.Dir)
		if err != nil {
			return err
		}
		b = r
	} else {
		p := skills.BundleParams{Target: skills.Target{PluginID: c.Plugin, AgentID: c.Agent, SessionKey: c.Session}, Skill: c.Skill}
		var err error
		if b, err = skills.OpBundle.Call(ctx, env, p); err != nil {
			return err
		}
	}
	for _, w := range b.Warnings {
		env.Out.Warnf("warning: %s", w.String())
	}
	data, sum, err := skills.BundleBytes(b)
	if err != nil {
		return errs.Failed(errs.CodeWriteFailed, "cannot make the bundle: %v", err)
	}
	if c.Out == "" {
		if _, err := env.Out.Stdout.Write(data); err != nil {
			return errs.Failed(errs.CodeWriteFailed, "cannot write the bundle to stdout: %v", err)
		}
		return nil
	}
	if err := skills.PublishBundle(c.Out, b.Skill, data); err != nil {
		return err
	}
	// The content is in the file; stdout lists the files with their digests.
	res := BundleOutput{BundleResult: b, Files: b.Tree(), Out: c.Out, BundleSHA256: sum, BundleBytes: len(data)}
	return env.Out.Result(res, func(w *Printer) {
		fmt.Fprintf(w, "bundled %s\n", termsafe.Text(b.String()))
		fmt.Fprintf(w, "out: %s (%d bytes, %s)\n", termsafe.Text(c.Out), len(data), sum)
	})
}

// SkillWatchCmd is `skill watch --plugin ID` (the plugin's skills root,
// resolved through the owner router) or `skill watch --dir DIR…` (skill
// folders on disk). The watching itself reads the folders directly and
// takes no lock: it never blocks a writer.
type SkillWatchCmd struct {
	Plugin   string        `help:"Plugin whose skills folder to watch." placeholder:"ID" xor:"source"`
	Agent    string        `help:"Agent id." default:"main" env:"CLAWKIT_AGENT"`
	Session  string        `help:"Session key." default:"cli" env:"CLAWKIT_SESSION"`
	Dir      []string      `help:"Watch this skill folder on disk instead (repeatable)." placeholder:"DIR" sep:"none" xor:"source"`
	Interval time.Duration `help:"Coalesce the edits of this long into one change line (at least 1ms)." default:"100ms"`
	Poll     time.Duration `help:"While watching is unavailable, rescan this often (at least 100ms)." default:"2s"`
	MaxDirs  int           `help:"Watch at most this many folders; past it, poll (at least 1)." default:"1024"`
}

// Run runs `clawkit skill watch`.
func (c *SkillWatchCmd) Run(env *Env) error {
	ctx := env.Ctx
	// SIGHUP (the terminal went away, or a supervisor's hangup) stops the
	// watch as SIGINT and SIGTERM do: the final unavailable line, exit 0.
	// There is nothing to reload: the plugin and its root are resolved
	// once, at the start (docs/skills.md, "skill watch").
	ctx, stopHUP := signal.NotifyContext(ctx, syscall.SIGHUP)
	defer stopHUP()
	// --dir with --plugin is refused by kong (the xor tag).
	if len(c.Dir) == 0 && c.Plugin == "" {
		return errs.Usage(CodeUsage, "nothing to watch").WithHint("pass --plugin ID for a plugin's skills, or --dir DIR for a skill folder")
	}
	if err := skills.CheckWatchOptions(c.Interval, c.Poll, c.MaxDirs); err != nil {
		return err
	}
	var sources []skills.WatchSource
	if c.Plugin != "" {
		plan, err := skills.OpWatch.Call(ctx, env, skills.Target{PluginID: c.Plugin, AgentID: c.Agent, SessionKey: c.Session})
		if err != nil {
			return err
		}
		sources = append(sources, skills.WatchSource{Parent: plan.Root})
	} else {
		h, err := env.HomeDir()
		if err != nil {
			return err
		}
		if err := skills.CheckWatchEnabledIn(h.Dir); err != nil {
			return err
		}
		for _, d := range c.Dir {
			src, err := skills.DirSource(d)
			if err != nil {
				return err
			}
			if st, err := os.Lstat(d); err != nil || !st.IsDir() {
				return errs.Usage(errs.CodeNotFound, "--dir %s is not a folder", d).WithHint("pass a skill folder (the folder holding SKILL.md)")
			}
			sources = append(sources, src)
		}
	}
	// A write to a closed pipe must fail with EPIPE (a clean end of the
	// stream) instead of killing the process with SIGPIPE.
	sigpipe := make(chan os.Signal, 1)
	signal.Notify(sigpipe, syscall.SIGPIPE)
	defer signal.Stop(sigpipe)
	stop := make(chan struct{})
	defer close(stop)
	var gone <-chan struct{}
	if f, ok := env.Out.Stdout.(*os.File); ok {
		gone = skills.OutputGone(f, stop)
	}
	emit := func(ev skills.WatchEvent) error {
		var line []byte
		if env.Out.JSON {
			b, err := json.Marshal(ev)
			if err != nil {
				return errs.Failed(errs.CodeWriteFailed, "cannot encode the event: %v", err)
			}
			b = append(b, '\n')
			line = b
		} else {
			line = []byte(watchLine(ev))
		}
		if _, err := env.Out.Stdout.Write(line); err != nil {
			if errors.Is(err, syscall.EPIPE) {
				return skills.ErrReaderGone
			}
			return errs.Failed(errs.CodeWriteFailed, "cannot write the event: %v", err)
		}
		return nil
	}
	err := skills.Watch(ctx, sources, skills.WatchOptions{Interval: c.Interval, Poll: c.Poll, MaxDirs: c.MaxDirs, Emit: emit, Gone: gone})
	if errors.Is(err, skills.ErrReaderGone) {
		return nil // the reader went away: the stream ends there
	}
	return err
}

// watchLine is the human form of one watch event. Skill folder names,
// --dir paths, problems and reasons come from disk: each is escaped
// (termsafe), so a folder named to hold a newline cannot forge a change
// line, nor an escape sequence move the cursor.
func watchLine(ev skills.WatchEvent) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %d %s", ev.Event, ev.Seq, ev.Revision)
	if ev.Initial {
		b.WriteString(" (initial)")
	}
	if ev.Reason != "" {
		fmt.Fprintf(&b, ": %s", termsafe.Text(ev.Reason))
	}
	if ev.Polling {
		fmt.Fprintf(&b, " (polling every %dms)", ev.PollMs)
	}
	for i, s := range ev.Skills {
		sep := ", "
		if i == 0 {
			sep = ": "
		}
		name := s.Skill
		if s.Dir != "" {
			name = s.Dir
		}
		name = termsafe.Text(name)
		switch {
		case s.After != nil:
			fmt.Fprintf(&b, "%s%s %s", sep, name, s.After.TreeSHA256)
		case s.Problem != "":
			fmt.Fprintf(&b, "%s%s (%s)", sep, name, termsafe.Text(s.Problem))
		default:
			fmt.Fprintf(&b, "%s%s removed", sep, name)
		}
	}
	b.WriteString("\n")
	return b.String()
}
