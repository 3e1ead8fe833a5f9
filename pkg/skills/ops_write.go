package skills

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/fsx"
	"github.com/clawkit/clawkit/pkg/owner"
	"github.com/clawkit/clawkit/pkg/skilllint"
)

// The write path of the skill operations (write, remove): each runs under
// the skill lock and publishes through one staged swap (commit.go).

// beginCommit starts a call that will commit: the snapshot's skill_changed
// hooks and the call's authority, in that order (a hook config that does
// not parse refuses before any authority check or write).
func beginCommit(ctx context.Context, env *owner.OpEnv, t Target) (*call, [][]string, error) {
	hooks, err := snapshotHooks(env)
	if err != nil {
		return nil, nil, err
	}
	c, err := begin(ctx, env, t)
	if err != nil {
		return nil, nil, err
	}
	return c, hooks, nil
}

func noSkill(skill string, c *call) error {
	return errs.Failed(errs.CodeNotFound, "agent %s has no skill %q in plugin %s's skills folder", c.t.AgentID, skill, c.t.PluginID).WithResource("skill", skill).
		WithHint("list skills with 'clawkit skill list --plugin %s --agent %s'", c.t.PluginID, c.t.AgentID)
}

// lockSkill takes the per-skill exclusive lock. It is a file lock in the
// home, so it serialises writers inside one gateway (goroutines) as well as
// across processes.
func lockSkill(home string, t Target, skill string) (func(), error) {
	dir := filepath.Join(home, "locks", "skills")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, mkdirFailed(errs.CodeLockFailed, dir, err)
	}
	h := sha256.Sum256([]byte(t.PluginID + "\x00" + t.AgentID + "\x00" + skill))
	// A home file: a regular file only, never through a link, never
	// blocking in open (fsx.OpenLockFile; README, "The home").
	f, err := fsx.OpenLockFile(filepath.Join(dir, hex.EncodeToString(h[:16])+".lock"), 0o666)
	if err != nil {
		return nil, errs.Failed(errs.CodeLockFailed, "cannot lock skill %s: %v", skill, err)
	}
	return func() { fsx.CloseRead(f) }, nil // the lock file: nothing written
}

const codeUndelivered = "skill_committed_undelivered"

// afterApply turns a lost authority after the file change into outcome
// unknown: the change is on disk, but its event was not dispatched.
func afterApply(err error) error {
	if err == nil {
		return nil
	}
	return errs.Unknown(CodeSkillCommittedUndelivered, "the skill change was applied but authority was lost before its skill_changed event could be dispatched: %v", err).
		WithHint("inspect the skill with 'clawkit skill list' and 'clawkit skill events'; do not repeat the change blindly").Wrap(err)
}

func opWrite(ctx context.Context, env *owner.OpEnv, p WriteParams) (*CommitResult, error) {
	// Check checked the name, linted the content and normalised the path
	// (p is as checkWrite returned it): invalid content never reached the
	// lock.
	rel, rep := p.File, p.report
	c, hooks, err := beginCommit(ctx, env, p.Target)
	if err != nil {
		return nil, err
	}
	return c.commit(ctx, p.name, rel, "write", hooks, rep.Warnings, func(tree []skilllint.FileEntry, md []byte, exists bool) (bool, error) {
		if rel != skilllint.SkillFile && md == nil {
			return false, errs.Failed(errs.CodeNotFound, "skill %q has no SKILL.md yet", p.Skill).
				WithHint("write SKILL.md first: clawkit skill write %s SKILL.md --plugin %s", p.Skill, p.Plugin())
		}
		sum := sha256.Sum256(p.Content)
		entry := skilllint.FileEntry{Path: rel, SHA256: hex.EncodeToString(sum[:]), SizeBytes: int64(len(p.Content))}
		next := replaceEntry(tree, entry)
		if fs := skilllint.TreeLimits(next); len(fs) > 0 {
			return false, errs.Failed(errs.CodeTooLarge, "writing %s would make skill %q too large: %s", rel, p.Skill, fs[0].Message).
				WithHint("a skill holds at most %d files and %d bytes", skilllint.MaxFiles, skilllint.MaxSkillBytes)
		}
		for _, e := range tree {
			if e == entry {
				return false, nil // identical content: nothing to commit
			}
		}
		if err := folderInTheWay(p.Skill, rel, tree); err != nil {
			return false, err
		}
		keep := make([]skilllint.FileEntry, 0, len(tree))
		for _, e := range tree {
			if e.Path != rel {
				keep = append(keep, e)
			}
		}
		// A script (a "#!" first line) is published executable.
		exec := bytes.HasPrefix(p.Content, []byte("#!"))
		return c.publish(p.Skill, exists, keep, []SourceFile{{Path: rel, Content: p.Content, Executable: exec}})
	})
}

// publish builds the skill's next tree in a staging folder (keep copied
// from the live folder, add written) and swaps it in, checking the
// plugin's authority and the owner immediately before the file change.
func (c *call) publish(skill string, exists bool, keep []skilllint.FileEntry, add []SourceFile) (bool, error) {
	env := c.env
	if err := c.plugin.Recheck(env.Home); err != nil {
		return false, err
	}
	if c.r == nil { // the first skill of this agent: create the root
		// Creating the root is the first change on disk: the write fence
		// (the owner fence) first, and from here on an error is no longer
		// a refusal before any effect.
		if err := env.BeginWrite(); err != nil {
			return false, err
		}
		if err := os.MkdirAll(c.root, 0o755); err != nil {
			return false, mkdirFailed(errs.CodeWriteFailed, c.root, err)
		}
		if _, err := c.rootResult(); err != nil { // MkdirAll follows links
			return false, err
		}
		r, err := openSkillsRoot(c.root)
		if err != nil || r == nil {
			return false, errs.Failed(errs.CodeWriteFailed, "cannot open the skills root %s: %v", c.root, err)
		}
		c.r = r
	}
	stage, err := buildStage(c.r, skill, keep, add)
	if err != nil {
		if e := errs.As(err); e != nil {
			return false, e
		}
		// A file and a folder of one name are refused before staging
		// (admitPlace, folderInTheWay: not_a_file, not_a_folder); what
		// still fails here is named by the skill's own path.
		return false, errs.Failed(errs.CodeWriteFailed, "cannot stage skill %s: %v", skill, stagePathErr(c.root, skill, err))
	}
	// The last checks before the file change.
	if err := c.plugin.Recheck(env.Home); err != nil {
		_ = c.r.RemoveAll(stage)
		return false, err
	}
	if err := env.Fence.AssertCurrent(); err != nil {
		_ = c.r.RemoveAll(stage)
		return false, err
	}
	if err := checkNoLinks(c.root, skill); err != nil {
		_ = c.r.RemoveAll(stage)
		return false, err
	}
	if err := env.BeginWrite(); err != nil { // the write fence, right before the swap
		_ = c.r.RemoveAll(stage)
		return false, err
	}
	if err := swapIn(c.r, stage, skill, exists); err != nil {
		_ = c.r.RemoveAll(stage)
		return false, errs.Failed(errs.CodeWriteFailed, "cannot publish skill %s: %v", skill, skilllint.UnwrapPathErr(err))
	}
	return true, nil
}

// Plugin returns the plugin id (for hints).
func (p WriteParams) Plugin() string { return p.PluginID }

func replaceEntry(tree []skilllint.FileEntry, e skilllint.FileEntry) []skilllint.FileEntry {
	out := make([]skilllint.FileEntry, 0, len(tree)+1)
	found := false
	for _, x := range tree {
		if x.Path == e.Path {
			out = append(out, e)
			found = true
		} else {
			out = append(out, x)
		}
	}
	if !found {
		out = append(out, e)
	}
	skilllint.SortTree(out)
	return out
}

func opRemove(ctx context.Context, env *owner.OpEnv, p FileParams) (*CommitResult, error) {
	// Check normalised the path and refused SKILL.md alone (a skill
	// without SKILL.md is not a skill: removing it alone would leave files
	// no client can discover).
	rel := p.File
	c, hooks, err := beginCommit(ctx, env, p.Target)
	if err != nil {
		return nil, err
	}
	return c.commit(ctx, p.name, rel, "remove", hooks, nil, func(tree []skilllint.FileEntry, md []byte, exists bool) (bool, error) {
		if !exists {
			return false, noSkill(p.Skill, c)
		}
		if rel != "" {
			found := false
			for _, e := range tree {
				found = found || e.Path == rel
			}
			if !found {
				return false, errs.Failed(errs.CodeNotFound, "skill %q has no file %s", p.Skill, rel).
					WithHint("list the skill's files with 'clawkit skill list %s --plugin %s'", p.Skill, p.PluginID)
			}
		}
		if err := c.plugin.Recheck(env.Home); err != nil {
			return false, err
		}
		if err := env.Fence.AssertCurrent(); err != nil {
			return false, err
		}
		if err := env.BeginWrite(); err != nil { // the write fence, right before the removal
			return false, err
		}
		if rel == "" {
			if err := removeSkillTree(c.r, p.Skill); err != nil {
				if e := errs.As(err); e != nil {
					return true, e
				}
				return false, errs.Failed(CodeRemoveFailed, "cannot remove skill %s: %v", p.Skill, skilllint.UnwrapPathErr(err))
			}
			return true, nil
		}
		// One file: unlink is atomic by itself.
		name := p.Skill + "/" + rel
		if err := c.r.Remove(name); err != nil {
			return false, errs.Failed(CodeRemoveFailed, "cannot remove %s: %v", rel, skilllint.UnwrapPathErr(err))
		}
		// Drop folders the removal left empty (never the skill folder).
		for d := path.Dir(name); d != p.Skill && strings.HasPrefix(d, p.Skill+"/"); d = path.Dir(d) {
			if c.r.Remove(d) != nil {
				break
			}
		}
		_ = fsx.SyncDir(filepath.Join(c.root, filepath.FromSlash(p.Skill)))
		return true, nil
	})
}

func errSkillMDRequired(p FileParams) error {
	return errs.Refused(CodeSkillMdRequired, "SKILL.md is not removed on its own: a skill without SKILL.md is not a skill").
		WithHint("remove the whole skill with 'clawkit skill remove %s --plugin %s', or replace SKILL.md with 'clawkit skill write %s SKILL.md'", p.Skill, p.PluginID, p.Skill)
}

// stagePathErr names, in a staging failure, the skill's own path instead
// of the staging folder's (which means nothing to the user): "file exists"
// alone left the user to guess which file (a file written where the skill
// has a folder, or the reverse).
func stagePathErr(root, skill string, err error) error {
	var pe *fs.PathError
	if !errors.As(err, &pe) {
		return err
	}
	// The path is the root's: under the staging folder (a file being
	// written) or under the live skill folder (a file being copied).
	rel := filepath.ToSlash(pe.Path)
	if first, rest, _ := strings.Cut(rel, "/"); strings.HasPrefix(first, skilllint.StagingPrefix) || first == skill {
		rel = rest
	}
	return fmt.Errorf("%s: %w", filepath.Join(root, skill, filepath.FromSlash(rel)), pe.Err)
}
