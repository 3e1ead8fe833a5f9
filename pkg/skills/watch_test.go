package skills

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/clawkit/clawkit/pkg/fsx"
	"github.com/clawkit/clawkit/pkg/skilllint"
)

// flaky is a real fsnotify watcher whose failures the test controls: Add
// can fail (the inotify watch limit), errors can be injected (a queue
// overflow), and making a watcher can fail (the instance limit).
type flaky struct {
	real FSWatcher
	errc chan error
	h    *flakyHub
}

type flakyHub struct {
	mu       sync.Mutex
	addErr   error
	newErr   error
	current  *flaky
	made     int
	addCalls int
}

func (h *flakyHub) set(f func(h *flakyHub)) { h.mu.Lock(); f(h); h.mu.Unlock() }

func (h *flakyHub) newWatcher() (FSWatcher, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.newErr != nil {
		return nil, h.newErr
	}
	real, err := newFSNotify()
	if err != nil {
		return nil, err
	}
	f := &flaky{real: real, errc: make(chan error, 4), h: h}
	go func() {
		for err := range real.Errors() {
			f.errc <- err
		}
	}()
	h.current = f
	h.made++
	return f, nil
}

func (f *flaky) Add(p string) error {
	f.h.mu.Lock()
	err := f.h.addErr
	f.h.addCalls++
	f.h.mu.Unlock()
	if err != nil {
		return err
	}
	return f.real.Add(p)
}
func (f *flaky) Remove(p string) error         { return f.real.Remove(p) }
func (f *flaky) Events() <-chan fsnotify.Event { return f.real.Events() }
func (f *flaky) Errors() <-chan error          { return f.errc }
func (f *flaky) Close() error                  { return f.real.Close() }

type watchRun struct {
	t      *testing.T
	events chan WatchEvent
	cancel context.CancelFunc
	done   chan error
}

func startWatch(t *testing.T, srcs []WatchSource, opt WatchOptions) *watchRun {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w := &watchRun{t: t, events: make(chan WatchEvent, 1000), cancel: cancel, done: make(chan error, 1)}
	if opt.Interval == 0 {
		opt.Interval = 20 * time.Millisecond
	}
	if opt.Poll == 0 {
		opt.Poll = 50 * time.Millisecond
	}
	opt.Emit = func(ev WatchEvent) error { w.events <- ev; return nil }
	go func() { w.done <- Watch(ctx, srcs, opt) }()
	t.Cleanup(func() {
		cancel()
		if err := <-w.done; err != nil {
			t.Errorf("Watch: %v", err)
		}
	})
	return w
}

// next returns the next event; a 20 s guard only keeps a broken watch from
// hanging the test.
func (w *watchRun) next() WatchEvent {
	w.t.Helper()
	select {
	case ev := <-w.events:
		return ev
	case <-time.After(20 * time.Second):
		w.t.Fatal("no watch event within 20 s")
	}
	return WatchEvent{}
}

func (w *watchRun) expect(kind string) WatchEvent {
	w.t.Helper()
	ev := w.next()
	if ev.Event != kind {
		w.t.Fatalf("event %+v; want %s", ev, kind)
	}
	return ev
}

// until reads events until one of kind arrives, returning those before it.
func (w *watchRun) until(kind string) (before []WatchEvent, ev WatchEvent) {
	w.t.Helper()
	for {
		ev := w.next()
		if ev.Event == kind {
			return before, ev
		}
		before = append(before, ev)
	}
}

func writeSkill(t *testing.T, root, name, body string) {
	t.Helper()
	dir := filepath.Join(root, name)
	if err := os.MkdirAll(filepath.Join(dir, "references"), 0o755); err != nil {
		t.Fatal(err)
	}
	md := fmt.Sprintf("---\nname: %s\ndescription: %s\n---\n", name, body)
	if err := os.WriteFile(filepath.Join(dir, skilllint.SkillFile), []byte(md), 0o644); err != nil {
		t.Fatal(err)
	}
}

// diskRevision is the watch revision of a root as it is on disk now.
func diskRevision(root string) string {
	l := &watchLoop{srcs: []*watchSource{{WatchSource: WatchSource{Parent: root}, states: map[string]skillState{}, dirty: map[string]bool{}, all: true}}}
	l.scan(true)
	return l.revision()
}

func changed(evs []WatchEvent, skill, tree string) bool {
	for _, ev := range evs {
		for _, s := range ev.Skills {
			if s.Skill == skill && s.After != nil && s.After.TreeSHA256 == tree {
				return true
			}
		}
	}
	return false
}

func treeOf(t *testing.T, root, skill string) string {
	r, err := os.OpenRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	defer fsx.CloseRead(r)
	st, _ := scanSkill(r, root, skill)
	if st.rev == nil {
		t.Fatalf("skill %s has no revision (%s)", skill, st.problem)
	}
	return st.rev.TreeSHA256
}

func TestWatchChangesRenameSaveAndRootReplaced(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "skills")
	writeSkill(t, root, "pdf", "one")
	w := startWatch(t, []WatchSource{{Parent: root}}, WatchOptions{})
	ev := w.expect(EventChange)
	if !ev.Initial || len(ev.Skills) != 1 || ev.Skills[0].Skill != "pdf" || ev.Skills[0].Before != nil || ev.Skills[0].After == nil {
		t.Fatalf("initial event %+v", ev)
	}
	if ev.Revision != diskRevision(root) {
		t.Fatal("initial revision differs from the disk's")
	}

	// An editor that saves by rename.
	tmp := filepath.Join(root, "pdf", ".SKILL.md.swp")
	if err := os.WriteFile(tmp, []byte("---\nname: pdf\ndescription: two\n---\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(root, "pdf", skilllint.SkillFile)); err != nil {
		t.Fatal(err)
	}
	ev = w.expect(EventChange)
	if len(ev.Skills) != 1 || ev.Skills[0].Before == nil || ev.Skills[0].After == nil || *ev.Skills[0].Before == *ev.Skills[0].After {
		t.Fatalf("rename save: %+v", ev)
	}
	if ev.Skills[0].After.TreeSHA256 != treeOf(t, root, "pdf") {
		t.Fatal("rename save: the revision is not the disk's")
	}

	// A file in a new sub-folder (watched once it appears).
	if err := os.MkdirAll(filepath.Join(root, "pdf", "references", "deep"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "pdf", "references", "deep", "a.md"), []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	for ev.Revision != diskRevision(root) {
		ev = w.expect(EventChange)
	}
	if err := os.WriteFile(filepath.Join(root, "pdf", "references", "deep", "a.md"), []byte("b"), 0o644); err != nil {
		t.Fatal(err)
	}
	ev = w.expect(EventChange)
	if ev.Revision != diskRevision(root) {
		t.Fatal("an edit in a new sub-folder was missed")
	}

	// The root removed: every skill gone; recreated: back, with no outage.
	if err := os.Rename(root, root+".old"); err != nil {
		t.Fatal(err)
	}
	ev = w.expect(EventChange)
	if len(ev.Skills) != 1 || ev.Skills[0].After != nil {
		t.Fatalf("root removed: %+v", ev)
	}
	writeSkill(t, root, "docs", "new")
	for ev.Revision != diskRevision(root) {
		ev = w.expect(EventChange)
	}
	if !changed([]WatchEvent{ev}, "docs", treeOf(t, root, "docs")) {
		t.Fatalf("recreated root: %+v", ev)
	}
	// The old folder is no longer watched: edits there are not reported.
	if err := os.WriteFile(filepath.Join(root+".old", "pdf", "references", "x.md"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "docs", "references", "y.md"), []byte("y"), 0o644); err != nil {
		t.Fatal(err)
	}
	ev = w.expect(EventChange)
	if len(ev.Skills) != 1 || ev.Skills[0].Skill != "docs" {
		t.Fatalf("after replacement: %+v", ev)
	}
	w.cancel()
	ev = w.expect(EventUnavailable)
	if !strings.Contains(ev.Reason, "stopped") {
		t.Fatalf("stop: %+v", ev)
	}
}

// Add failing (the inotify watch limit): unavailable, then polling; edits
// made meanwhile are still reported as changes, but available comes only
// once the watches are in place again and a rescan made after them has
// reconciled every edit.
func TestWatchOutageAddFails(t *testing.T) {
	root := filepath.Join(t.TempDir(), "skills")
	writeSkill(t, root, "pdf", "one")
	hub := &flakyHub{addErr: syscall.ENOSPC}
	w := startWatch(t, []WatchSource{{Parent: root}}, WatchOptions{NewWatcher: hub.newWatcher})
	w.expect(EventChange)
	ev := w.expect(EventUnavailable)
	if !strings.Contains(ev.Reason, "inotify watch limit") || !ev.Polling {
		t.Fatalf("unavailable: %+v", ev)
	}
	// Edits during the outage: reported by polling, never available.
	for i := 0; i < 3; i++ {
		if err := os.WriteFile(filepath.Join(root, "pdf", "references", "n.md"), []byte(fmt.Sprint(i)), 0o644); err != nil {
			t.Fatal(err)
		}
		want := treeOf(t, root, "pdf")
		ev = w.next()
		if ev.Event != EventChange || !changed([]WatchEvent{ev}, "pdf", want) {
			t.Fatalf("outage edit %d: %+v", i, ev)
		}
	}
	// Recovery, with one more edit made right before it.
	writeSkill(t, root, "docs", "outage")
	hub.set(func(h *flakyHub) { h.addErr = nil })
	before, ev := w.until(EventAvailable)
	if !changed(before, "docs", treeOf(t, root, "docs")) {
		t.Fatalf("available before the outage edit was reconciled: %+v", before)
	}
	if ev.Revision != diskRevision(root) {
		t.Fatal("available with a revision that is not the disk's")
	}
	// Watching again: an edit is a change, with no poll needed.
	if err := os.WriteFile(filepath.Join(root, "docs", "references", "z.md"), []byte("z"), 0o644); err != nil {
		t.Fatal(err)
	}
	ev = w.expect(EventChange)
	if ev.Revision != diskRevision(root) {
		t.Fatal("edit after recovery missed")
	}
}

// A lost-events report (queue overflow): unavailable, a fresh watcher,
// a full rescan, available.
func TestWatchOverflow(t *testing.T) {
	root := filepath.Join(t.TempDir(), "skills")
	writeSkill(t, root, "pdf", "one")
	hub := &flakyHub{}
	w := startWatch(t, []WatchSource{{Parent: root}}, WatchOptions{NewWatcher: hub.newWatcher, Poll: time.Hour})
	w.expect(EventChange)
	// With an hour's poll the recovery must not happen by itself early:
	// nothing may say available before the poll.
	hub.mu.Lock()
	cur := hub.current
	hub.mu.Unlock()
	cur.errc <- fsnotify.ErrEventOverflow
	ev := w.expect(EventUnavailable)
	if !strings.Contains(ev.Reason, "lost events") {
		t.Fatalf("overflow: %+v", ev)
	}
	select {
	case ev := <-w.events:
		t.Fatalf("event %+v before any poll", ev)
	case <-time.After(300 * time.Millisecond):
	}
}

func TestWatchOverflowRecovers(t *testing.T) {
	root := filepath.Join(t.TempDir(), "skills")
	writeSkill(t, root, "pdf", "one")
	hub := &flakyHub{}
	w := startWatch(t, []WatchSource{{Parent: root}}, WatchOptions{NewWatcher: hub.newWatcher})
	w.expect(EventChange)
	hub.mu.Lock()
	cur := hub.current
	hub.mu.Unlock()
	// The edit the lost events would have carried, then the overflow.
	if err := os.WriteFile(filepath.Join(root, "pdf", "references", "lost.md"), []byte("lost"), 0o644); err != nil {
		t.Fatal(err)
	}
	cur.errc <- fsnotify.ErrEventOverflow
	before, ev := w.until(EventAvailable)
	var sawUnavailable bool
	for _, b := range before {
		sawUnavailable = sawUnavailable || b.Event == EventUnavailable
	}
	if !sawUnavailable || ev.Revision != diskRevision(root) || !changed(before, "pdf", treeOf(t, root, "pdf")) {
		t.Fatalf("overflow recovery: %+v then %+v", before, ev)
	}
	if hub.made < 2 {
		t.Fatal("no fresh watcher after the overflow")
	}
}

// No watcher at all (the instance limit), then one.
func TestWatchNewWatcherFails(t *testing.T) {
	root := filepath.Join(t.TempDir(), "skills")
	writeSkill(t, root, "pdf", "one")
	hub := &flakyHub{newErr: syscall.EMFILE}
	w := startWatch(t, []WatchSource{{Parent: root}}, WatchOptions{NewWatcher: hub.newWatcher})
	w.expect(EventChange)
	ev := w.expect(EventUnavailable)
	if !strings.Contains(ev.Reason, "instance limit") {
		t.Fatalf("unavailable: %+v", ev)
	}
	hub.set(func(h *flakyHub) { h.newErr = nil })
	w.expect(EventAvailable)
}

// A network filesystem, or more folders than --max-dirs: polled for ever,
// edits still reported, never available.
func TestWatchPollsForever(t *testing.T) {
	for name, opt := range map[string]WatchOptions{
		"network": {NetworkFS: func(string) (string, bool) { return "nfs", true }},
		"maxdirs": {MaxDirs: 2},
	} {
		t.Run(name, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "skills")
			writeSkill(t, root, "pdf", "one")
			w := startWatch(t, []WatchSource{{Parent: root}}, opt)
			w.expect(EventChange)
			ev := w.expect(EventUnavailable)
			if !strings.Contains(ev.Reason, "network filesystem (nfs)") && !strings.Contains(ev.Reason, "the limit is 2") {
				t.Fatalf("unavailable: %+v", ev)
			}
			for i := 0; i < 3; i++ {
				if err := os.WriteFile(filepath.Join(root, "pdf", "references", "n.md"), []byte(fmt.Sprint(i)), 0o644); err != nil {
					t.Fatal(err)
				}
				ev := w.next()
				if ev.Event != EventChange || !changed([]WatchEvent{ev}, "pdf", treeOf(t, root, "pdf")) {
					t.Fatalf("poll %d: %+v", i, ev)
				}
			}
		})
	}
}

// One skill folder (--dir): siblings are not reported.
func TestWatchDirSource(t *testing.T) {
	base := t.TempDir()
	writeSkill(t, base, "pdf", "one")
	writeSkill(t, base, "other", "x")
	src, err := DirSource(filepath.Join(base, "pdf"))
	if err != nil {
		t.Fatal(err)
	}
	w := startWatch(t, []WatchSource{src}, WatchOptions{})
	ev := w.expect(EventChange)
	if len(ev.Skills) != 1 || ev.Skills[0].Skill != "pdf" || ev.Skills[0].Dir == "" {
		t.Fatalf("initial: %+v", ev)
	}
	if err := os.WriteFile(filepath.Join(base, "other", "references", "a.md"), []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(base, "pdf", "references", "a.md"), []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	ev = w.expect(EventChange)
	if len(ev.Skills) != 1 || ev.Skills[0].Skill != "pdf" {
		t.Fatalf("edit: %+v", ev)
	}
}

// The dirty set is bounded: past maxDirtySkills the source is rescanned
// whole, so memory stays flat however many skills an event storm touches.
func TestWatchDirtyBounded(t *testing.T) {
	s := &watchSource{WatchSource: WatchSource{Parent: "/r"}, states: map[string]skillState{}, dirty: map[string]bool{}}
	l := &watchLoop{srcs: []*watchSource{s}}
	for i := 0; i < 3*maxDirtySkills; i++ {
		l.route(fmt.Sprintf("/r/skill-%d/SKILL.md", i))
		if len(s.dirty) > maxDirtySkills {
			t.Fatalf("%d dirty skills kept", len(s.dirty))
		}
	}
	if !s.all {
		t.Fatal("an event storm did not turn into a full rescan")
	}
	if l.route("/elsewhere/x") {
		t.Fatal("an unrelated path was routed")
	}
}

func TestCheckWatchEnabledIn(t *testing.T) {
	home := t.TempDir()
	if err := CheckWatchEnabledIn(filepath.Join(home, "missing")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "config.json"), []byte(`{"skills":{"load":{"watch":false}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := CheckWatchEnabledIn(home); err == nil || !strings.Contains(err.Error(), "turned off") {
		t.Fatalf("watch false: %v", err)
	}
	if err := os.WriteFile(filepath.Join(home, "config.json"), []byte(`{"skills":{"load":{"watch":"no"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := CheckWatchEnabledIn(home); err == nil {
		t.Fatal("a string accepted")
	}
}

// fsnotify reports EINVAL when it drops the watch of a folder that moved
// and was deleted at once (each commit's old tree): no event is lost, so
// it is no outage; the watch rescans and goes on.
func TestWatchBenignWatcherError(t *testing.T) {
	root := filepath.Join(t.TempDir(), "skills")
	writeSkill(t, root, "pdf", "one")
	hub := &flakyHub{}
	w := startWatch(t, []WatchSource{{Parent: root}}, WatchOptions{NewWatcher: hub.newWatcher})
	w.expect(EventChange)
	hub.mu.Lock()
	cur := hub.current
	hub.mu.Unlock()
	cur.errc <- fmt.Errorf("remove watch: %w", syscall.EINVAL)
	if err := os.WriteFile(filepath.Join(root, "pdf", "references", "a.md"), []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	ev := w.expect(EventChange)
	if ev.Revision != diskRevision(root) {
		t.Fatalf("after a benign error: %+v", ev)
	}
	if hub.made != 1 {
		t.Fatal("a benign error replaced the watcher")
	}
}
