// Package skills is the skill authoring store (docs/skills.md): it resolves
// a plugin's skills root from its manifest, and writes, removes and installs
// skills there (staged beside the skill, committed under a per-skill lock),
// refreshes the store's skill index, records skill_changed events and runs
// their hooks, watches and bundles skills. Every change is checked first by
// the linter, pkg/skilllint; ops.go registers the stateful operations with
// the owner router.
package skills

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/fsx"
	"github.com/clawkit/clawkit/pkg/owner"
	"github.com/clawkit/clawkit/pkg/skilllint"
)

// Target names whose skills a call is about. Calls name a plugin, an agent
// and a skill, never a folder.
type Target struct {
	PluginID   string `json:"pluginId"`
	AgentID    string `json:"agentId"`
	SessionKey string `json:"sessionKey"`
	// plugin is PluginID as checkTarget accepted it: set only by Check
	// (on each side of a gateway's socket, it is not on the wire), read by
	// Admit and Run, which therefore never check the id again.
	plugin pluginID
}

// FileParams names one file of one skill.
type FileParams struct {
	Target
	Skill string `json:"skill"`
	File  string `json:"file"`
	// MaxBytes lowers the read limit (read only); 0 means the file limit.
	MaxBytes int64 `json:"maxBytes,omitempty"`
	// name is Skill as Check accepted it (set only by Check, like
	// Target's plugin): a commit takes it and never checks the name again.
	name skillName
}

// WriteParams is a write: the file's new content.
type WriteParams struct {
	FileParams
	Content []byte `json:"content"`
	Strict  bool   `json:"strict,omitempty"`
	// report is checkWrite's lint of Content, handed to Run in this
	// process (it never crosses the socket: a gateway's Check lints
	// again, once).
	report *skilllint.Report
}

// EventsParams filters the recorded events.
type EventsParams struct {
	Target
	Skill string `json:"skill,omitempty"`
	Limit int    `json:"limit,omitempty"`
}

// RootResult is `skill root`.
type RootResult struct {
	PluginID string `json:"pluginId"`
	AgentID  string `json:"agentId"`
	Root     string `json:"root"`
	Exists   bool   `json:"exists"`
}

// SkillInfo is one skill in `skill list`.
type SkillInfo struct {
	Skill    string              `json:"skill"`
	Files    int                 `json:"files"`
	Bytes    int64               `json:"bytes"`
	Revision *skilllint.Revision `json:"revision"`
	// Problem is set for folders that are not usable skills (a link, no
	// SKILL.md); they are listed so that nothing is silently hidden.
	Problem string `json:"problem,omitempty"`
}

// ListResult is `skill list`.
type ListResult struct {
	RootResult
	Skills []SkillInfo `json:"skills"`
}

// ReadResult is `skill read`. Content is the file's bytes: as text when
// they are valid UTF-8, else base64 in ContentBase64.
type ReadResult struct {
	Skill         string `json:"skill"`
	File          string `json:"file"`
	SizeBytes     int64  `json:"sizeBytes"`
	SHA256        string `json:"sha256"`
	Content       string `json:"content,omitempty"`
	ContentBase64 []byte `json:"contentBase64,omitempty"`
}

// Bytes returns the file content whichever way it travelled.
func (r *ReadResult) Bytes() []byte {
	if r.ContentBase64 != nil {
		return r.ContentBase64
	}
	return []byte(r.Content)
}

// CommitResult is the outcome of write and remove.
type CommitResult struct {
	PluginID string              `json:"pluginId"`
	AgentID  string              `json:"agentId"`
	Skill    string              `json:"skill"`
	File     string              `json:"file"`
	Action   string              `json:"action"`
	Changed  bool                `json:"changed"`
	Removed  bool                `json:"skillRemoved,omitempty"`
	Before   *skilllint.Revision `json:"before"`
	After    *skilllint.Revision `json:"after"`
	Warnings []skilllint.Finding `json:"warnings"`
	EventID  string              `json:"eventId,omitempty"`
	Event    *Event              `json:"event,omitempty"`
	Dispatch string              `json:"dispatch,omitempty"`
	Hooks    []HookResult        `json:"hooks"`
}

// EventRecord is one recorded skill_changed event.
type EventRecord struct {
	EventID   string       `json:"eventId"`
	Action    string       `json:"action"`
	File      string       `json:"file"`
	Event     Event        `json:"event"`
	Dispatch  string       `json:"dispatch"`
	Hooks     []HookResult `json:"hooks"`
	CreatedAt string       `json:"createdAt"`
}

// The skill operations' handles: each names its operation with its
// types; Register registers each Op through its handle, so the name is
// written once and the compiler holds the handle's types to the Op's.
var (
	OpRoot    = owner.Handle[Target, RootResult]{Name: "skill.root"}
	OpList    = owner.Handle[Target, ListResult]{Name: "skill.list"}
	OpFiles   = owner.Handle[FilesParams, FilesResult]{Name: "skill.files"}
	OpRead    = owner.Handle[FileParams, ReadResult]{Name: "skill.read"}
	OpEvents  = owner.Handle[EventsParams, []EventRecord]{Name: "skill.events"}
	OpWrite   = owner.Handle[WriteParams, *CommitResult]{Name: "skill.write"}
	OpRemove  = owner.Handle[FileParams, *CommitResult]{Name: "skill.remove"}
	OpInstall = owner.Handle[InstallParams, *CommitResult]{Name: "skill.install"}
	OpBundle  = owner.Handle[BundleParams, *BundleResult]{Name: "skill.bundle"}
	OpWatch   = owner.Handle[Target, WatchPlan]{Name: "skill.watch"}
)

// Register adds the skill operations to the owner registry. Their
// refusals before anything is created (Check, Admit) are in admit.go.
func Register(r *owner.Registry) {
	OpRoot.Register(r, owner.Op[Target, RootResult]{Check: checkTarget, Run: opRoot})
	OpList.Register(r, owner.Op[Target, ListResult]{Check: checkTarget, Run: opList})
	OpFiles.Register(r, owner.Op[FilesParams, FilesResult]{Check: checkFiles, Run: opFiles})
	OpRead.Register(r, owner.Op[FileParams, ReadResult]{Check: checkRead, Run: opRead})
	OpEvents.Register(r, owner.Op[EventsParams, []EventRecord]{Check: checkEvents, Run: opEvents})
	OpWrite.Register(r, owner.Op[WriteParams, *CommitResult]{Write: true, Check: checkWrite,
		Admit: func(pre owner.Pre, p WriteParams) error { return admitPlace(pre, p.Target, p.Skill, p.File) }, Run: opWrite})
	OpRemove.Register(r, owner.Op[FileParams, *CommitResult]{Write: true, Check: checkRemove,
		Admit: func(pre owner.Pre, p FileParams) error { return admitTarget(pre, p.Target) }, Run: opRemove})
	OpInstall.Register(r, owner.Op[InstallParams, *CommitResult]{Write: true, Check: checkInstall,
		Admit: func(pre owner.Pre, p InstallParams) error { return admitPlace(pre, p.Target, p.Skill, "") }, Run: opInstall})
	OpBundle.Register(r, owner.Op[BundleParams, *BundleResult]{Check: checkBundle, Run: opBundle})
	OpWatch.Register(r, owner.Op[Target, WatchPlan]{Check: checkTarget, Run: opWatch})
}

// call is the resolved context every operation starts from.
type call struct {
	env    *owner.OpEnv
	plugin *Plugin
	root   string
	t      Target
	// r is the skills root opened as an os.Root during a commit (nil until
	// the root exists); every file access of the commit goes through it.
	r *os.Root
}

// snapshotHooks is hooks.skill_changed from the config snapshot of the
// call: a config change during the call does not change which hooks its
// event is dispatched to.
func snapshotHooks(env *owner.OpEnv) ([][]string, error) {
	cfg, err := env.Config()
	if err != nil {
		return nil, err
	}
	return hooksFrom(cfg)
}

// begin binds the session, resolves the plugin and the skills root, and
// checks authority after each step. What the call uses (the plugin
// registry, the plugin's folder and agentSkillsDir, the hooks) comes from
// the call's config snapshot (owner.OpEnv.Config), read once
// after ownership; the authority re-checks (Plugin.Recheck) read the
// current files and can only refuse.
func begin(ctx context.Context, env *owner.OpEnv, t Target) (*call, error) {
	// t is as checkTarget returned it (defaults filled in, ids and plugin
	// id valid): what can change under the lock is checked here.
	if _, err := env.BindSession(ctx, t.AgentID, t.SessionKey); err != nil {
		return nil, err
	}
	if err := env.Fence.AssertCurrent(); err != nil {
		return nil, err
	}
	cfg, err := env.Config()
	if err != nil {
		return nil, err
	}
	pl, err := resolvePlugin(env.Home, cfg, t.plugin)
	if err != nil {
		return nil, err
	}
	root, err := pl.SkillsRoot(env.Home, t.AgentID)
	if err != nil {
		return nil, err
	}
	if err := checkRootOwner(env.Home, cfg, pl, t.AgentID, root); err != nil {
		return nil, err
	}
	if err := env.Fence.AssertCurrent(); err != nil {
		return nil, err
	}
	return &call{env: env, plugin: pl, root: root, t: t}, nil
}

func (c *call) rootResult() (RootResult, error) {
	r := RootResult{PluginID: c.t.PluginID, AgentID: c.t.AgentID, Root: c.root}
	st, err := os.Lstat(c.root)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		// A root that does not exist yet is fine: the first write creates it.
		if err := rootWithin(c.env.Home, c.root); err != nil {
			return r, err
		}
		return r, nil
	case errors.Is(err, syscall.ENOTDIR):
		return r, notAFolder(c.root, fileInTheWay(c.root))
	case err != nil:
		return r, errs.Failed(errs.CodeReadFailed, "cannot read %s: %v", c.root, skilllint.UnwrapPathErr(err))
	case st.Mode()&fs.ModeSymlink != 0:
		return r, linkRefused(c.root)
	case !st.IsDir():
		return r, errs.Failed(CodeNotAFolder, "the skills root %s is not a folder", c.root).
			WithHint("move or remove the file %s: the agent's skills live in a folder there", c.root)
	}
	if err := rootWithin(c.env.Home, c.root); err != nil {
		return r, err
	}
	r.Exists = true
	return r, nil
}

func opRoot(ctx context.Context, env *owner.OpEnv, t Target) (RootResult, error) {
	c, err := begin(ctx, env, t)
	if err != nil {
		return RootResult{}, err
	}
	return c.rootResult()
}

func opList(ctx context.Context, env *owner.OpEnv, t Target) (ListResult, error) {
	c, err := begin(ctx, env, t)
	if err != nil {
		return ListResult{}, err
	}
	rr, err := c.rootResult()
	if err != nil {
		return ListResult{}, err
	}
	res := ListResult{RootResult: rr, Skills: []SkillInfo{}}
	if !rr.Exists {
		return res, nil
	}
	r, err := openSkillsRoot(c.root)
	if err != nil {
		return ListResult{}, err
	}
	if r == nil {
		return res, nil
	}
	defer fsx.CloseRead(r)
	ents, err := fs.ReadDir(r.FS(), ".")
	if err != nil {
		return ListResult{}, errs.Failed(errs.CodeReadFailed, "cannot list %s: %v", c.root, skilllint.UnwrapPathErr(err))
	}
	for _, e := range ents {
		name := e.Name()
		if strings.HasPrefix(name, ".") {
			continue // our own temporary folders (.name.removing-…) and dotfiles
		}
		info := SkillInfo{Skill: name}
		switch {
		case e.Type()&fs.ModeSymlink != 0:
			info.Problem = "path_escape: the skill folder is a symbolic link (refused)"
		case !e.IsDir():
			continue
		case skilllint.CheckSkillName(name) != nil:
			info.Problem = string(errs.CodeOf(skilllint.CheckSkillName(name))) + ": the folder name is not a safe skill name"
		default:
			tree, md, _, err := readTree(r, c.root, name)
			if err != nil {
				info.Problem = string(errs.CodeOf(err)) + ": " + err.Error()
				break
			}
			info.Files = len(tree)
			for _, f := range tree {
				info.Bytes += f.SizeBytes
			}
			if md == nil {
				info.Problem = "no SKILL.md"
				break
			}
			rev := skilllint.RevisionOf(md, tree)
			info.Revision = &rev
		}
		res.Skills = append(res.Skills, info)
	}
	return res, nil
}

// FilesResult is `skill list SKILL`: the files of one skill (the seed's
// listSkillFiles), with sizes and digests, read under the same bounds as
// reads (links refused, each file within its limit, at most 1,024 entries).
type FilesResult struct {
	Skill    string                `json:"skill"`
	Files    []skilllint.FileEntry `json:"files"`
	Bytes    int64                 `json:"bytes"`
	Revision *skilllint.Revision   `json:"revision"`
}

// FilesParams names the skill to list.
type FilesParams struct {
	Target
	Skill string `json:"skill"`
}

// openInstalled is the first step of every read of one installed skill's
// files (files, bundle): resolve the call, refuse a skill folder that is a
// link, open the skills root without following links and list the skill's
// files through it. The caller closes the returned root.
func openInstalled(ctx context.Context, env *owner.OpEnv, t Target, skill string) (c *call, r *os.Root, tree []skilllint.FileEntry, md []byte, err error) {
	// skill is a name its operation's Check accepted.
	if c, err = begin(ctx, env, t); err != nil {
		return nil, nil, nil, nil, err
	}
	rr, err := c.rootResult()
	if err != nil {
		return nil, nil, nil, nil, err
	}
	if !rr.Exists {
		return nil, nil, nil, nil, noSkill(skill, c)
	}
	if err := checkNoLinks(c.root, skill); err != nil {
		return nil, nil, nil, nil, err
	}
	if r, err = openSkillsRoot(c.root); err != nil {
		return nil, nil, nil, nil, err
	}
	if r == nil {
		return nil, nil, nil, nil, noSkill(skill, c)
	}
	tree, md, exists, err := readTree(r, c.root, skill)
	if err == nil && !exists {
		err = noSkill(skill, c)
	}
	if err != nil {
		fsx.CloseRead(r)
		return nil, nil, nil, nil, err
	}
	return c, r, tree, md, nil
}

func opFiles(ctx context.Context, env *owner.OpEnv, p FilesParams) (FilesResult, error) {
	_, r, tree, md, err := openInstalled(ctx, env, p.Target, p.Skill)
	if err != nil {
		return FilesResult{}, err
	}
	fsx.CloseRead(r)
	res := FilesResult{Skill: p.Skill, Files: tree}
	if res.Files == nil {
		res.Files = []skilllint.FileEntry{}
	}
	for _, f := range tree {
		res.Bytes += f.SizeBytes
	}
	if md != nil {
		rev := skilllint.RevisionOf(md, tree)
		res.Revision = &rev
	}
	return res, nil
}

// opRead reads one file; p is as checkRead returned it (name checked,
// path normalised, --max-bytes not negative).
func opRead(ctx context.Context, env *owner.OpEnv, p FileParams) (ReadResult, error) {
	rel := p.File
	limit := fileLimit(rel)
	if p.MaxBytes > 0 && p.MaxBytes < limit {
		limit = p.MaxBytes
	}
	c, err := begin(ctx, env, p.Target)
	if err != nil {
		return ReadResult{}, err
	}
	rr, err := c.rootResult()
	if err != nil {
		return ReadResult{}, err
	}
	if !rr.Exists {
		return ReadResult{}, noSkill(p.Skill, c)
	}
	if err := checkNoLinks(c.root, p.Skill+"/"+rel); err != nil {
		return ReadResult{}, err
	}
	r, err := openSkillsRoot(c.root)
	if err != nil {
		return ReadResult{}, err
	}
	if r == nil {
		return ReadResult{}, noSkill(p.Skill, c)
	}
	defer fsx.CloseRead(r)
	if _, err := r.Lstat(p.Skill); errors.Is(err, fs.ErrNotExist) {
		return ReadResult{}, noSkill(p.Skill, c)
	}
	data, err := readFileLimited(r, p.Skill+"/"+rel, rel, limit)
	if err != nil {
		return ReadResult{}, err
	}
	sum := sha256.Sum256(data)
	res := ReadResult{Skill: p.Skill, File: rel, SizeBytes: int64(len(data)), SHA256: hex.EncodeToString(sum[:])}
	if utf8.Valid(data) {
		res.Content = string(data)
	} else {
		res.ContentBase64 = data
	}
	return res, nil
}
