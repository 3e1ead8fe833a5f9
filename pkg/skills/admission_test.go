package skills

import (
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/owner"
)

// Issue 15 item 4: what a skill call uses comes from the config snapshot taken
// with it. A config change made during the call (here: the plugin's folder
// moved to one whose manifest names another skills folder, right after the
// call took its snapshot and before the plugin is resolved) does not change what
// the call sees; the authority re-check before the file change reads the
// current config and refuses, so nothing is written in either folder.
func TestSkillCallUsesConfigSnapshot(t *testing.T) {
	f := newFixture(t)
	writeTree(t, f.home, map[string]string{"plugins/notes-v2/openclaw.plugin.json": `{id: "notes", agentSkillsDir: "elsewhere"}`})
	var changed atomic.Bool
	f.fence = func() error {
		if !changed.Swap(true) { // the first check: the call took its snapshot, the plugin not yet resolved
			if err := os.WriteFile(filepath.Join(f.home, "config.json"), []byte(`{"plugins":{"entries":{"notes":{"path":"plugins/notes-v2"}}}}`), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		return nil
	}
	_, err := f.write("pdf", "SKILL.md", pdfMD)
	if errs.CodeOf(err) != "plugin_unavailable" || errs.KindOf(err) != errs.KindRefused {
		t.Fatalf("got %v (%s), want plugin_unavailable", err, errs.CodeOf(err))
	}
	for _, p := range []string{"agents/main/elsewhere/pdf", "agents/main/skills/pdf"} {
		if _, err := os.Stat(filepath.Join(f.home, p)); err == nil {
			t.Errorf("%s written although the config changed during the call", p)
		}
	}
	// The next call takes the new config as its snapshot and uses it.
	f.fence = nil
	if _, err := f.write("pdf", "SKILL.md", pdfMD); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(f.home, "agents", "main", "elsewhere", "pdf", "SKILL.md")); err != nil {
		t.Fatalf("the next call did not use the new config: %v", err)
	}
}

// afterLockFence returns a fence that runs at(n) on its n-th call made
// after the per-skill lock was taken (the commit's first check is n=1;
// the next one is the write fence that creates the skills root).
func afterLockFence(home string, at func(n int32) error) func() error {
	var n atomic.Int32
	return func() error {
		if _, err := os.Stat(filepath.Join(home, "locks", "skills")); err != nil {
			return nil
		}
		return at(n.Add(1))
	}
}

// The write fence: an owner that retired after the commit's checks cannot
// publish anything, not even the agent's empty skills folder; no event, no
// index row.
func TestRetiredOwnerPublishesNoSkill(t *testing.T) {
	f := newFixture(t)
	f.fence = afterLockFence(f.home, func(n int32) error {
		if n >= 2 {
			return owner.ErrRetired("test")
		}
		return nil
	})
	_, err := f.write("pdf", "SKILL.md", pdfMD)
	if errs.CodeOf(err) != "owner_retired" {
		t.Fatalf("got %v", err)
	}
	if _, err := os.Lstat(filepath.Join(f.home, "agents", "main", "skills")); err == nil {
		t.Fatal("a retired owner created the skills folder")
	}
	f.fence = nil
	if evs := f.events(); len(evs) != 0 {
		t.Fatalf("%d events", len(evs))
	}
	var rows int
	_ = f.st.DB().QueryRow(`SELECT count(*) FROM skill_index`).Scan(&rows)
	if rows != 0 {
		t.Fatalf("%d index rows", rows)
	}
}

// The default session's first use is a database write: a retired owner
// does not create it (the call is refused before anything is written).
func TestRetiredOwnerCreatesNoDefaultSession(t *testing.T) {
	f := newFixture(t)
	f.fence = func() error { return owner.ErrRetired("test") }
	if _, err := f.call("skill.list", Target{PluginID: "notes"}); errs.CodeOf(err) != "owner_retired" {
		t.Fatalf("got %v", err)
	}
	var n int
	_ = f.st.DB().QueryRow(`SELECT count(*) FROM sessions`).Scan(&n)
	if n != 0 {
		t.Fatalf("a retired owner created %d session(s)", n)
	}
}

// Issue 15 item 2: the operation tells its executor when an effect began.
// A refusal before any change is a refusal before any effect; the same
// refusal after the skills folder was created is not (the gateway then
// never says mutationAccepted:false).
func TestSkillEffectBegun(t *testing.T) {
	for _, tc := range []struct {
		name   string
		at     int32 // the after-lock check at which the plugin is replaced
		effect bool
	}{
		{"before any change", 1, false},
		{"after the skills folder was created", 2, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			// The default session exists already: its creation is not the
			// effect under test.
			if _, err := f.call("skill.root", Target{PluginID: "notes"}); err != nil {
				t.Fatal(err)
			}
			manifest := filepath.Join(f.home, "plugins", "notes", "openclaw.plugin.json")
			f.fence = afterLockFence(f.home, func(n int32) error {
				if n == tc.at {
					if err := os.WriteFile(manifest, []byte(`{id: "notes", agentSkillsDir: "skills", version: 2}`), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				return nil
			})
			_, err := f.write("pdf", "SKILL.md", pdfMD)
			if errs.CodeOf(err) != "plugin_unavailable" {
				t.Fatalf("got %v", err)
			}
			_, rootErr := os.Lstat(filepath.Join(f.home, "agents", "main", "skills"))
			if got := f.env.Load().EffectBegun(); got != tc.effect || (rootErr == nil) != tc.effect {
				t.Fatalf("effect begun %v (skills folder: %v), want %v", got, rootErr, tc.effect)
			}
			if _, err := os.Stat(filepath.Join(f.home, "agents", "main", "skills", "pdf")); err == nil {
				t.Fatal("skill published for a replaced plugin")
			}
		})
	}
}
