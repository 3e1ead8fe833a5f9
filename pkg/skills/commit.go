package skills

import (
	"context"
	"encoding/json"

	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/fsx"
	"github.com/clawkit/clawkit/pkg/skilllint"
)

// commit is the one commit path (docs/skills.md): per-skill lock, read the
// current revision, apply (the change func), refresh the index, record and
// dispatch exactly one skill_changed event. Authority is checked after each
// step and right before the file change (inside apply) and the dispatch.
// A failed or no-op apply dispatches nothing.
func (c *call) commit(ctx context.Context, name skillName, rel, action string, hooks [][]string, warnings []skilllint.Finding,
	apply func(tree []skilllint.FileEntry, md []byte, exists bool) (bool, error)) (*CommitResult, error) {
	env := c.env
	if name.name == "" {
		panic("skills: commit called with a skill name checkSkillName did not make")
	}
	skill := name.name
	if _, err := c.rootResult(); err != nil {
		return nil, err
	}
	r, err := openSkillsRoot(c.root)
	if err != nil {
		return nil, err
	}
	c.r = r
	defer func() {
		if c.r != nil {
			fsx.CloseRead(c.r)
		}
	}()
	unlock, err := lockSkill(env.Home, c.t, skill)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if err := env.Fence.AssertCurrent(); err != nil {
		return nil, err
	}
	// Whatever an interrupted command left for this skill goes first: it
	// is never content, and holding the lock proves its owner is gone.
	cleanLeftovers(c.r, skill)
	checkRel := skill
	if rel != "" {
		checkRel += "/" + rel
	}
	if err := checkNoLinks(c.root, checkRel); err != nil {
		return nil, err
	}
	tree, md, exists, err := readTree(c.r, c.root, skill)
	if err != nil {
		return nil, err
	}
	var before *skilllint.Revision
	if md != nil {
		r := skilllint.RevisionOf(md, tree)
		before = &r
	}
	if warnings == nil {
		warnings = []skilllint.Finding{}
	}
	res := &CommitResult{PluginID: c.t.PluginID, AgentID: c.t.AgentID, Skill: skill, File: rel, Action: action,
		Before: before, After: before, Warnings: warnings, Hooks: []HookResult{}}
	changed, err := apply(tree, md, exists)
	if err != nil && !changed {
		return nil, err
	}
	if !changed {
		return res, nil
	}
	res.Changed = true
	applyErr := err // a removal that left debris still changed the skill

	// Refresh discovery: the index row follows the folder.
	if err := afterApply(env.Fence.AssertCurrent()); err != nil {
		return nil, err
	}
	after, err := c.refreshIndex(ctx, skill)
	if errs.CodeOf(err) == codeUndelivered {
		return nil, err
	}
	if err != nil {
		return nil, errs.Unknown(CodeSkillIndexFailed, "the skill change was applied but the skill index could not be refreshed: %v", err).
			WithHint("run 'clawkit skill list' to inspect; the next change to this skill refreshes the index")
	}
	res.After = after
	res.Removed = after == nil
	ev := Event{Source: "plugin", PluginID: c.t.PluginID, AgentID: c.t.AgentID, Skill: skill, Before: before, After: after}
	res.Event = &ev
	evJSON, _ := json.Marshal(ev)
	id := newEventID(env.Now())
	res.EventID = id
	dispatch := "pending"
	if len(hooks) == 0 {
		dispatch = "no-hooks"
	}
	if err := afterApply(env.Fence.AssertCurrent()); err != nil {
		return nil, err
	}
	// The events table knows write and remove; an install is a write of the
	// whole tree (file "").
	recAction := action
	if action == "install" {
		recAction = "write"
	}
	if err := c.recordEvent(ctx, id, skill, recAction, rel, evJSON, dispatch); errs.CodeOf(err) == codeUndelivered {
		return nil, err
	} else if err != nil {
		return nil, errs.Unknown(CodeSkillEventUnrecorded, "the skill change was applied but its event could not be recorded: %v", err).
			WithHint("inspect with 'clawkit skill list'; hooks were not run")
	}
	if len(hooks) > 0 {
		// The last checks before the external effect: the owner and session
		// (Scope) and the plugin's own authority (still enabled, same
		// manifest), as before the file change.
		if err := env.Fence.AssertCurrent(); err != nil {
			_ = c.finishEvent(ctx, id, "undelivered", nil)
			return nil, afterApply(err)
		}
		if err := c.plugin.Recheck(env.Home); err != nil {
			_ = c.finishEvent(ctx, id, "undelivered", nil)
			return nil, afterApply(err)
		}
		// The dispatch is an external effect: the write fence (the owner
		// fence) immediately before it, as for a file change.
		if err := env.BeginWrite(); err != nil {
			_ = c.finishEvent(ctx, id, "undelivered", nil)
			return nil, afterApply(err)
		}
		dispatch = "delivered"
		for _, argv := range hooks {
			hr := RunHook(ctx, argv, append(append([]byte(nil), evJSON...), '\n'))
			if !hr.OK {
				dispatch = "failed"
			}
			res.Hooks = append(res.Hooks, hr)
		}
		if err := c.finishEvent(ctx, id, dispatch, res.Hooks); err != nil {
			return nil, errs.Unknown(CodeSkillEventUnrecorded, "hooks ran but their outcome could not be recorded: %v", err)
		}
	}
	res.Dispatch = dispatch
	if applyErr != nil {
		return nil, errs.Unknown(errs.CodeOf(applyErr), "%v", applyErr)
	}
	return res, nil
}

// refreshIndex recomputes the skill's revision from disk and upserts (or
// deletes) its index row. It returns the revision after the change (nil
// when the skill is gone).
func (c *call) refreshIndex(ctx context.Context, skill string) (*skilllint.Revision, error) {
	tree, md, _, err := readTree(c.r, c.root, skill)
	if err != nil {
		return nil, err
	}
	st := c.env.Store
	db := st.DB()
	// The write fence immediately before the index write; losing it now
	// leaves the change on disk without its event.
	if err := c.env.BeginWrite(); err != nil {
		return nil, afterApply(err)
	}
	if md == nil {
		_, err := db.ExecContext(ctx, st.Rebind(`DELETE FROM skill_index WHERE plugin_id = ? AND agent_id = ? AND skill = ?`),
			c.t.PluginID, c.t.AgentID, skill)
		return nil, err
	}
	rev := skilllint.RevisionOf(md, tree)
	var total int64
	for _, f := range tree {
		total += f.SizeBytes
	}
	_, err = db.ExecContext(ctx, st.Rebind(`INSERT INTO skill_index (plugin_id, agent_id, skill, content_sha256, tree_sha256, files, bytes, updated_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (plugin_id, agent_id, skill) DO UPDATE SET content_sha256 = excluded.content_sha256,
  tree_sha256 = excluded.tree_sha256, files = excluded.files, bytes = excluded.bytes, updated_at = excluded.updated_at`),
		c.t.PluginID, c.t.AgentID, skill, rev.ContentSHA256, rev.TreeSHA256, len(tree), total, stamp(c.env.Now()))
	if err != nil {
		return nil, err
	}
	return &rev, nil
}

func (c *call) recordEvent(ctx context.Context, id, skill, action, file string, ev []byte, dispatch string) error {
	if err := c.env.BeginWrite(); err != nil {
		return afterApply(err)
	}
	st := c.env.Store
	_, err := st.DB().ExecContext(ctx, st.Rebind(`INSERT INTO skill_events (event_id, plugin_id, agent_id, skill, action, file, event_json, dispatch, hooks_json, created_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, '[]', ?)`), id, c.t.PluginID, c.t.AgentID, skill, action, file, string(ev), dispatch, stamp(c.env.Now()))
	return err
}

func (c *call) finishEvent(ctx context.Context, id, dispatch string, hooks []HookResult) error {
	if hooks == nil {
		hooks = []HookResult{}
	}
	hj, _ := json.Marshal(hooks)
	// The outcome of hooks that ran is a write like any other: the write
	// fence first (a process that no longer owns the state records
	// nothing, and the caller hears the outcome is unknown). Marking an
	// event "undelivered" is the exception: it is the cleanup of a dispatch
	// that was refused, recording that no hook ran, and cleanup may run
	// after the fence retires (docs/architecture.md) — it publishes nothing.
	if dispatch != "undelivered" {
		if err := c.env.BeginWrite(); err != nil {
			return err
		}
	}
	st := c.env.Store
	// A fresh context: the outcome of hooks that already ran is recorded
	// even when the caller was interrupted meanwhile.
	_, err := st.DB().ExecContext(context.WithoutCancel(ctx), st.Rebind(`UPDATE skill_events SET dispatch = ?, hooks_json = ? WHERE event_id = ?`), dispatch, string(hj), id)
	return err
}
