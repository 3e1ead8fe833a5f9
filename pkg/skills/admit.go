package skills

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/owner"
	"github.com/clawkit/clawkit/pkg/skilllint"
	"github.com/clawkit/clawkit/pkg/store"
)

// The refusals of the skill operations (owner.Op.Check and Admit), so a
// refused call creates nothing, not even the home or its lock:
//
//   - Check holds what the parameters alone decide: the plugin id's shape
//     (exit 2), the agent and session ids, the skill name and file path,
//     a write's content, removing SKILL.md alone (exit 3).
//   - Admit (writes only) holds what the home's files decide without
//     changing them: the plugin is named in config and installed, enabled,
//     its manifest says who it is and declares a skills folder (exit 3).
//     Reading config.json and a manifest creates nothing, so these run
//     before the offline executor creates the home.
//
// The operations check everything again after ownership (begin), against
// the call's config snapshot.

// checkTarget is begin's stateless part, in begin's order; it returns the
// target with the default agent and session filled in.
func checkTarget(t Target) (Target, error) {
	if t.AgentID == "" {
		t.AgentID = store.DefaultAgent
	}
	if t.SessionKey == "" {
		t.SessionKey = store.DefaultSession
	}
	if t.PluginID == "" {
		return t, errs.Usage(CodeMissingPlugin, "no plugin named").WithHint("pass --plugin ID")
	}
	if err := store.ValidateIDs(t.AgentID, t.SessionKey); err != nil {
		return t, err
	}
	var err error
	t.plugin, err = checkPluginID(t.PluginID)
	return t, err
}

// admitTarget resolves the plugin and its skills root against the config
// the router read (owner.Pre).
func admitTarget(pre owner.Pre, t Target) error {
	if pre.ConfigErr != nil {
		return pre.ConfigErr
	}
	if t.AgentID == "" {
		t.AgentID = store.DefaultAgent
	}
	pl, err := resolvePlugin(pre.Home, pre.Config, t.plugin)
	if err != nil {
		return err
	}
	_, err = pl.SkillsRoot(pre.Home, t.AgentID)
	return err
}

// admitPlace refuses, before anything is created, a write whose place on
// disk is taken by the wrong kind of entry: a file where the skills root,
// the skill folder or a folder of rel must be (not_a_folder), or a folder
// where rel is to be a file (not_a_file). It only reads (Lstat, never
// following a link). The commit checks again under the skill's lock, where
// the answer is final; this early look keeps a refusal from creating the
// home's lock folders.
func admitPlace(pre owner.Pre, t Target, skill, rel string) error {
	if pre.ConfigErr != nil {
		return pre.ConfigErr
	}
	if t.AgentID == "" {
		t.AgentID = store.DefaultAgent
	}
	pl, err := resolvePlugin(pre.Home, pre.Config, t.plugin)
	if err != nil {
		return err
	}
	root, err := pl.SkillsRoot(pre.Home, t.AgentID)
	if err != nil {
		return err
	}
	if file := fileInTheWay(filepath.Dir(root)); file != "" {
		return notAFolder(root, file)
	}
	target := filepath.Join(root, skill)
	if rel != "" {
		target = filepath.Join(target, filepath.FromSlash(rel))
	}
	// Walk down from the root: the first entry that is not a folder (a
	// link is left to the commit's own refusal, path_escape).
	cur := root
	for _, seg := range strings.Split(filepath.ToSlash(strings.TrimPrefix(target, root+string(filepath.Separator))), "/") {
		st, err := os.Lstat(cur)
		if err != nil || st.Mode()&fs.ModeSymlink != 0 {
			return nil
		}
		if !st.IsDir() {
			if cur == root {
				return errs.Failed(CodeNotAFolder, "the skills root %s is not a folder", root).
					WithHint("move or remove the file %s: the agent's skills live in a folder there", root)
			}
			return errs.Failed(CodeNotAFolder, "%s is a file, where %s needs a folder", cur, target).
				WithHint("move or remove %s (a skill's files are reached through folders only), or use another path", cur)
		}
		cur = filepath.Join(cur, seg)
	}
	if st, err := os.Lstat(cur); rel == "" && err == nil && st.Mode().IsRegular() {
		return errs.Failed(CodeNotASkill, "%s is not a folder", cur).
			WithHint("move the file away; a skill is a folder holding SKILL.md")
	}
	if rel != "" {
		if st, err := os.Lstat(cur); err == nil && st.IsDir() {
			return errs.Failed(CodeNotAFile, "cannot write %s: it is a folder of skill %s; a file cannot replace it", rel, skill).
				WithHint("remove the files below %s/ first ('clawkit skill remove %s %s/…'), or write another path", rel, skill, rel)
		}
	}
	return nil
}

// checkSkillTarget is the check every call on one skill shares: a plain
// skill name, then the target normalised.
func checkSkillTarget(skill string, t Target) (skillName, Target, error) {
	name, err := checkSkillName(skill)
	if err != nil {
		return name, t, err
	}
	t, err = checkTarget(t)
	return name, t, err
}

func checkFiles(p FilesParams) (FilesParams, error) {
	var err error
	_, p.Target, err = checkSkillTarget(p.Skill, p.Target)
	return p, err
}

// checkRead is every rule of a read that needs only its parameters: the
// name, the path (returned normalised) and --max-bytes, before the call
// binds its session.
func checkRead(p FileParams) (FileParams, error) {
	var err error
	if p.name, p.Target, err = checkSkillTarget(p.Skill, p.Target); err != nil {
		return p, err
	}
	if p.File, err = skilllint.NormalizeSkillFilePath(p.File); err != nil {
		return p, err
	}
	if p.MaxBytes < 0 {
		return p, errs.Usage(errs.CodeInvalidParams, "--max-bytes must be positive")
	}
	return p, nil
}

// checkEvents: events take no plugin (all plugins) and bind no session.
func checkEvents(p EventsParams) (EventsParams, error) {
	if p.Skill != "" {
		_, err := checkSkillName(p.Skill)
		return p, err
	}
	return p, nil
}

// checkWrite is every rule of a write that needs only its parameters:
// name, path (returned normalised), size, content (linted once; the
// report rides along in this process for Run's warnings), target.
func checkWrite(p WriteParams) (WriteParams, error) {
	name, rel, rep, err := writeReport(p)
	if err != nil {
		return p, err
	}
	p.name, p.File, p.report = name, rel, rep
	p.Target, err = checkTarget(p.Target)
	return p, err
}

// WriteLimit is the most content a write to file may carry: SKILL.md's
// limit, or a support file's.
func WriteLimit(rel string) int64 {
	if rel == skilllint.SkillFile {
		return skilllint.MaxSkillMDBytes
	}
	return skilllint.MaxSupportBytes
}

// MaxWriteBytes is the largest content any write may carry: what a caller
// reads at most before Check refuses more.
const MaxWriteBytes = max(skilllint.MaxSkillMDBytes, skilllint.MaxSupportBytes)

// writeReport checks a write's skill name, file path, size and content, and
// returns the normalised path and the report (its warnings go with the
// result).
func writeReport(p WriteParams) (name skillName, rel string, rep *skilllint.Report, err error) {
	if name, err = checkSkillName(p.Skill); err != nil {
		return name, "", nil, err
	}
	if rel, err = skilllint.NormalizeSkillFilePath(p.File); err != nil {
		return name, "", nil, err
	}
	if limit := WriteLimit(rel); int64(len(p.Content)) > limit {
		return name, "", nil, errs.Failed(errs.CodeTooLarge, "the content for %s is larger than its limit of %d bytes", rel, limit).
			WithHint("SKILL.md holds at most %d bytes and a support file at most %d; move detail into references/", skilllint.MaxSkillMDBytes, skilllint.MaxSupportBytes)
	}
	var findings []skilllint.Finding
	if rel == skilllint.SkillFile {
		findings = skilllint.CheckSkillMD(p.Skill, p.Content, p.Strict)
	} else {
		findings = skilllint.CheckSupportFile(rel, p.Content)
	}
	rep = &skilllint.Report{Skill: p.Skill, Strict: p.Strict}
	rep.Add(findings...)
	rep.Finish()
	if err := rep.Err(); err != nil {
		return name, "", nil, err
	}
	return name, rel, rep, nil
}

// checkRemove is opRemove's stateless part; it returns the file path
// normalised.
func checkRemove(p FileParams) (FileParams, error) {
	var err error
	if p.name, err = checkSkillName(p.Skill); err != nil {
		return p, err
	}
	if p.File != "" {
		rel, err := skilllint.NormalizeSkillFilePath(p.File)
		if err != nil {
			return p, err
		}
		if rel == skilllint.SkillFile {
			return p, errSkillMDRequired(p)
		}
		p.File = rel
	}
	p.Target, err = checkTarget(p.Target)
	return p, err
}

func checkInstall(p InstallParams) (InstallParams, error) {
	var err error
	p.name, p.Target, err = checkSkillTarget(p.Skill, p.Target)
	return p, err
}
