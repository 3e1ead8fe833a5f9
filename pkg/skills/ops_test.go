package skills

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/owner"
	"github.com/clawkit/clawkit/pkg/store"
)

// fixture is a home with plugin "notes" (agentSkillsDir "skills"), a store
// and a registry, with a fence the test controls.
type fixture struct {
	t     testing.TB
	home  string
	st    *store.Store
	reg   *owner.Registry
	fence func() error
	// env is the last call's Env (EffectBegun after an error).
	env atomic.Pointer[owner.OpEnv]
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	home := t.TempDir()
	writeTree(t, home, map[string]string{"plugins/notes/openclaw.plugin.json": `{id: "notes", agentSkillsDir: "skills"}`})
	st, err := store.Open(context.Background(), store.SQLite{Path: filepath.Join(home, "state.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	reg := owner.NewRegistry()
	Register(reg)
	return &fixture{t: t, home: home, st: st, reg: reg}
}

func (f *fixture) call(method string, params any) (json.RawMessage, error) {
	m, ok := f.reg.Lookup(method)
	if !ok {
		f.t.Fatalf("no method %s", method)
	}
	raw, _ := json.Marshal(params)
	fence := func() error {
		if f.fence != nil {
			return f.fence()
		}
		return nil
	}
	env := owner.NewOpEnv(f.home, f.st, fence, time.Now, nil, false)
	env.SnapshotConfig() // as both executors do, after ownership
	f.env.Store(env)
	return m.Serve(context.Background(), env, raw)
}

func (f *fixture) write(skill, file, content string) (*CommitResult, error) {
	out, err := f.call("skill.write", WriteParams{FileParams: FileParams{Target: Target{PluginID: "notes"}, Skill: skill, File: file}, Content: []byte(content)})
	if err != nil {
		return nil, err
	}
	var r CommitResult
	if err := json.Unmarshal(out, &r); err != nil {
		f.t.Fatal(err)
	}
	return &r, nil
}

func (f *fixture) events() []EventRecord {
	out, err := f.call("skill.events", EventsParams{Target: Target{PluginID: "notes"}})
	if err != nil {
		f.t.Fatal(err)
	}
	var evs []EventRecord
	_ = json.Unmarshal(out, &evs)
	return evs
}

func (f *fixture) setHooks(hooks string) {
	if err := os.WriteFile(filepath.Join(f.home, "config.json"), []byte(`{"hooks":{"skill_changed":`+hooks+`}}`), 0o600); err != nil {
		f.t.Fatal(err)
	}
}

const pdfMD = "---\nname: pdf\ndescription: Fill PDF forms.\n---\n"

func TestCommitWritesIndexAndEvent(t *testing.T) {
	f := newFixture(t)
	r, err := f.write("pdf", "SKILL.md", pdfMD)
	if err != nil || !r.Changed || r.Before != nil || r.After == nil || r.Dispatch != "no-hooks" {
		t.Fatalf("%+v %v", r, err)
	}
	var content, tree string
	var files int
	if err := f.st.DB().QueryRow(`SELECT content_sha256, tree_sha256, files FROM skill_index WHERE plugin_id='notes' AND agent_id='main' AND skill='pdf'`).Scan(&content, &tree, &files); err != nil {
		t.Fatal(err)
	}
	if content != r.After.ContentSHA256 || tree != r.After.TreeSHA256 || files != 1 {
		t.Fatalf("index %s %s %d vs %+v", content, tree, files, r.After)
	}
	if _, err := f.call("skill.remove", FileParams{Target: Target{PluginID: "notes"}, Skill: "pdf", File: "SKILL.md"}); errs.CodeOf(err) != "skill_md_required" {
		t.Fatalf("removing SKILL.md alone: %v", err)
	}
	if _, err := f.call("skill.remove", FileParams{Target: Target{PluginID: "notes"}, Skill: "pdf"}); err != nil {
		t.Fatal(err)
	}
	var n int
	_ = f.st.DB().QueryRow(`SELECT count(*) FROM skill_index`).Scan(&n)
	if n != 0 {
		t.Fatalf("index row left after removal")
	}
	if evs := f.events(); len(evs) != 2 || evs[1].Event.After != nil || *evs[1].Event.Before != *r.After {
		t.Fatalf("events %+v", evs)
	}
}

// A plugin replaced during the call (after resolution, before the apply)
// is plugin_unavailable and nothing is committed.
func TestPluginReplacedDuringCall(t *testing.T) {
	f := newFixture(t)
	if _, err := f.write("pdf", "SKILL.md", pdfMD); err != nil {
		t.Fatal(err)
	}
	manifest := filepath.Join(f.home, "plugins/notes/openclaw.plugin.json")
	var calls atomic.Int32
	f.fence = func() error {
		// The third check is the one after the per-skill lock, before the
		// apply: swap the plugin's manifest there.
		if calls.Add(1) == 3 {
			if err := os.WriteFile(manifest, []byte(`{id: "notes", agentSkillsDir: "skills", version: 2}`), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return nil
	}
	_, err := f.write("pdf", "references/a.md", "note\n")
	if errs.CodeOf(err) != "plugin_unavailable" || errs.KindOf(err) != errs.KindRefused {
		t.Fatalf("got %v (%s)", err, errs.CodeOf(err))
	}
	if _, err := os.Stat(filepath.Join(f.home, "agents/main/skills/pdf/references/a.md")); err == nil {
		t.Fatal("file written although the plugin was replaced")
	}
	if evs := f.events(); len(evs) != 1 {
		t.Fatalf("%d events", len(evs))
	}
}

// Authority lost before the file change: refused, nothing written, no event.
func TestAuthorityLostBeforeApply(t *testing.T) {
	f := newFixture(t)
	target := filepath.Join(f.home, "agents/main/skills/pdf/SKILL.md")
	var calls atomic.Int32
	f.fence = func() error {
		if calls.Add(1) >= 4 { // the check right before the file change
			return owner.ErrRetired("test")
		}
		return nil
	}
	_, err := f.write("pdf", "SKILL.md", pdfMD)
	if errs.CodeOf(err) != "owner_retired" {
		t.Fatalf("got %v", err)
	}
	if _, err := os.Stat(target); err == nil {
		t.Fatal("written without authority")
	}
	f.fence = nil
	if evs := f.events(); len(evs) != 0 {
		t.Fatalf("%d events", len(evs))
	}
}

// Authority lost after the event is recorded, right before dispatch: the
// hooks do not run, the event stays recorded as undelivered and the caller
// gets outcome unknown (the change is on disk).
func TestAuthorityLostBeforeDispatch(t *testing.T) {
	f := newFixture(t)
	out := filepath.Join(t.TempDir(), "hook.out")
	f.setHooks(fmt.Sprintf(`[["sh","-c","cat >> %s"]]`, out))
	f.fence = func() error {
		var n int
		_ = f.st.DB().QueryRow(`SELECT count(*) FROM skill_events`).Scan(&n)
		if n > 0 {
			return owner.ErrRetired("test")
		}
		return nil
	}
	_, err := f.write("pdf", "SKILL.md", pdfMD)
	if errs.KindOf(err) != errs.KindUnknown || errs.CodeOf(err) != "skill_committed_undelivered" {
		t.Fatalf("got %v (%s)", err, errs.CodeOf(err))
	}
	if _, err := os.Stat(out); err == nil {
		t.Fatal("hook ran without authority")
	}
	f.fence = nil
	evs := f.events()
	if len(evs) != 1 || evs[0].Dispatch != "undelivered" {
		t.Fatalf("events %+v", evs)
	}
}

// Concurrent writers inside one process (as in a gateway) are serialised by
// the per-skill lock: every write commits, one event each, events chain.
func TestConcurrentWritersOneProcess(t *testing.T) {
	f := newFixture(t)
	if _, err := f.write("pdf", "SKILL.md", pdfMD); err != nil {
		t.Fatal(err)
	}
	const n = 8
	var wg sync.WaitGroup
	errsCh := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			_, err := f.write("pdf", fmt.Sprintf("references/%d.md", i), fmt.Sprintf("note %d\n", i))
			errsCh <- err
		}(i)
	}
	wg.Wait()
	close(errsCh)
	for err := range errsCh {
		if err != nil {
			t.Fatal(err)
		}
	}
	evs := f.events()
	if len(evs) != n+1 {
		t.Fatalf("%d events, want %d", len(evs), n+1)
	}
	// Order by chain: every before is some earlier after; all afters differ.
	seen := map[string]bool{}
	for _, e := range evs {
		seen[e.Event.After.TreeSHA256] = true
	}
	if len(seen) != n+1 {
		t.Fatalf("revisions repeated: lost update")
	}
	root := filepath.Join(f.home, "agents/main/skills")
	r, err := os.OpenRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	tree, _, _, err := readTree(r, root, "pdf")
	if err != nil || len(tree) != n+1 {
		t.Fatalf("tree %d %v", len(tree), err)
	}
}

func TestHookTimeoutKillsGroup(t *testing.T) {
	old := HookTimeout
	HookTimeout = 300 * time.Millisecond
	defer func() { HookTimeout = old }()
	r := RunHook(context.Background(), []string{"sh", "-c", "sleep 30 & sleep 30"}, []byte("{}\n"))
	if r.OK || !strings.Contains(r.Error, "timed out") {
		t.Fatalf("%+v", r)
	}
	ok := RunHook(context.Background(), []string{"sh", "-c", "cat > /dev/null; echo done >&2"}, []byte("{}\n"))
	if !ok.OK || ok.Stderr != "done\n" || ok.ExitCode != 0 {
		t.Fatalf("%+v", ok)
	}
}

func TestLoadHooks(t *testing.T) {
	f := newFixture(t)
	for _, bad := range []string{`"x"`, `[[]]`, `["a b"]`, `[[1]]`, `[[""]]`, `{}`} {
		f.setHooks(bad)
		if _, err := LoadHooks(f.home); errs.CodeOf(err) != "invalid_config" {
			t.Errorf("%s: %v", bad, err)
		}
	}
	f.setHooks(`[["a","b"],["c"]]`)
	h, err := LoadHooks(f.home)
	if err != nil || len(h) != 2 || h[0][1] != "b" {
		t.Fatalf("%v %v", h, err)
	}
}

// A support folder swapped for a link to outside the root right before the
// file change (after every check) still cannot make the write land outside:
// the new tree is staged beside the live folder and swapped in whole, so
// the planted link is discarded with the old tree (never followed), and
// everything goes through the os.Root of the skills folder.
func TestSwapToLinkBeforePublish(t *testing.T) {
	f := newFixture(t)
	if _, err := f.write("pdf", "SKILL.md", pdfMD); err != nil {
		t.Fatal(err)
	}
	if _, err := f.write("pdf", "references/a.md", "a\n"); err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	refs := filepath.Join(f.home, "agents/main/skills/pdf/references")
	var calls atomic.Int32
	f.fence = func() error {
		if calls.Add(1) == 4 { // the check right before the file change
			if err := os.RemoveAll(refs); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(outside, refs); err != nil {
				t.Fatal(err)
			}
		}
		return nil
	}
	_, err := f.write("pdf", "references/b.md", "b\n")
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Fatalf("wrote outside the skills root: %v", ents)
	}
	if st, lerr := os.Lstat(refs); lerr != nil || st.Mode()&os.ModeSymlink != 0 {
		t.Fatalf("the planted link survived the swap: %v %v", st, lerr)
	}
	f.fence = nil
	want := 2
	if err == nil {
		want = 3
		if b, err := os.ReadFile(filepath.Join(refs, "b.md")); err != nil || string(b) != "b\n" {
			t.Fatalf("b.md: %q %v", b, err)
		}
	}
	if evs := f.events(); len(evs) != want {
		t.Fatalf("%d events, want %d (write error: %v)", len(evs), want, err)
	}
}

// The plugin's own authority is re-checked right before the skill_changed
// dispatch (issue 15 item 9): a plugin whose manifest is replaced after the
// event was recorded gets no hook run; the event stays undelivered and the
// caller gets outcome unknown (the change is on disk).
func TestPluginReplacedBeforeDispatch(t *testing.T) {
	f := newFixture(t)
	out := filepath.Join(t.TempDir(), "hook.out")
	f.setHooks(fmt.Sprintf(`[["sh","-c","cat >> %s"]]`, out))
	manifest := filepath.Join(f.home, "plugins/notes/openclaw.plugin.json")
	f.fence = func() error {
		var n int
		_ = f.st.DB().QueryRow(`SELECT count(*) FROM skill_events`).Scan(&n)
		if n > 0 { // the event is recorded: replace the plugin now
			if err := os.WriteFile(manifest, []byte(`{id: "notes", agentSkillsDir: "skills", version: 3}`), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return nil
	}
	_, err := f.write("pdf", "SKILL.md", pdfMD)
	if errs.KindOf(err) != errs.KindUnknown || errs.CodeOf(err) != "skill_committed_undelivered" {
		t.Fatalf("got %v (%s)", err, errs.CodeOf(err))
	}
	if _, err := os.Stat(out); err == nil {
		t.Fatal("hook ran for a replaced plugin")
	}
	f.fence = nil
	if evs := f.events(); len(evs) != 1 || evs[0].Dispatch != "undelivered" {
		t.Fatalf("events %+v", evs)
	}
}
