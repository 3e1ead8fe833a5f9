package skills

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/clawkit/clawkit/pkg/config"
	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/owner"
	"github.com/clawkit/clawkit/pkg/skilllint"
)

// `skill watch` (the seed's watchSkills) keeps a harness's snapshot of
// skills honest. It prints one event per line (docs/skills.md has the
// schema):
//
//   - change: after the initial scan, and after edits (coalesced: at most
//     one line per interval), with the skills whose revision changed;
//   - unavailable: watching stopped (the watcher failed or lost events, a
//     folder could not be watched, the root became a link, the command is
//     stopping); the command then polls, and a change seen by polling is
//     still a change line, but it never clears unavailable;
//   - available: only after every source has verified watch coverage again
//     and a full rescan made after the watches were in place has reconciled
//     every edit made during the outage.
//
// Watches are armed before each scan, so an edit is either seen by the
// scan or reported by a watch: none is missed. State is one revision per
// skill and a bounded set of dirty skill names, so memory does not grow
// with the number of edits.

// Watch event names.
const (
	EventChange      = "change"
	EventUnavailable = "unavailable"
	EventAvailable   = "available"
)

// Watch defaults and bounds.
const (
	DefaultWatchInterval = 100 * time.Millisecond
	DefaultWatchPoll     = 2 * time.Second
	DefaultWatchMaxDirs  = 1024
	// maxDirtySkills bounds the set of skills marked changed between two
	// scans; past it the whole source is rescanned instead.
	maxDirtySkills = 4096
)

// The smallest --interval and --poll a watch takes: below them the
// command would rescan in a tight loop (--poll 1ns kept a core busy) for
// no fresher news than a filesystem event gives. docs/skills.md.
const (
	MinWatchInterval = time.Millisecond
	MinWatchPoll     = 100 * time.Millisecond
)

// CheckWatchOptions refuses flags a watch cannot honour: an interval or
// poll period below its minimum, or no folders to watch (invalid_limit,
// exit 2). Nothing is rounded silently.
func CheckWatchOptions(interval, poll time.Duration, maxDirs int) error {
	switch {
	case interval < MinWatchInterval:
		return errs.Usage(errs.CodeInvalidLimit, "--interval %s is below the minimum of %s", interval, MinWatchInterval).
			WithHint("pass --interval %s or more (default %s): the edits of one interval become one change line", MinWatchInterval, DefaultWatchInterval)
	case poll < MinWatchPoll:
		return errs.Usage(errs.CodeInvalidLimit, "--poll %s is below the minimum of %s", poll, MinWatchPoll).
			WithHint("pass --poll %s or more (default %s): each poll rescans every skill, so a shorter period only keeps a core busy", MinWatchPoll, DefaultWatchPoll)
	case maxDirs < 1:
		return errs.Usage(errs.CodeInvalidLimit, "--max-dirs %d is below the minimum of 1", maxDirs).
			WithHint("pass --max-dirs 1 or more (default %d)", DefaultWatchMaxDirs)
	}
	return nil
}

// ErrReaderGone is returned when the consumer of the events went away
// (stdout closed): a clean end of the stream.
var ErrReaderGone = errors.New("the reader of the events is gone")

// WatchEvent is one line of `skill watch`.
type WatchEvent struct {
	Event    string        `json:"event"`
	Seq      int64         `json:"seq"`
	Revision string        `json:"revision"`
	Skills   []SkillChange `json:"skills"`
	Initial  bool          `json:"initial,omitempty"`
	Reason   string        `json:"reason,omitempty"`
	// Polling is set on unavailable: the stream goes on by polling every
	// PollMs milliseconds until watching is verified again.
	Polling bool  `json:"polling,omitempty"`
	PollMs  int64 `json:"pollMs,omitempty"`
}

// SkillChange is one skill in a change event: its revision before and
// after (null when absent or not a usable skill, then Problem says why).
type SkillChange struct {
	Skill   string              `json:"skill"`
	Dir     string              `json:"dir,omitempty"`
	Before  *skilllint.Revision `json:"before"`
	After   *skilllint.Revision `json:"after"`
	Problem string              `json:"problem,omitempty"`
}

// FSWatcher is the part of a filesystem watcher the watch uses (an
// fsnotify.Watcher in production; tests inject one that fails).
type FSWatcher interface {
	Add(path string) error
	Remove(path string) error
	Events() <-chan fsnotify.Event
	Errors() <-chan error
	Close() error
}

type fsnotifyWatcher struct{ w *fsnotify.Watcher }

func (f fsnotifyWatcher) Add(p string) error            { return f.w.Add(p) }
func (f fsnotifyWatcher) Remove(p string) error         { return f.w.Remove(p) }
func (f fsnotifyWatcher) Events() <-chan fsnotify.Event { return f.w.Events }
func (f fsnotifyWatcher) Errors() <-chan error          { return f.w.Errors }
func (f fsnotifyWatcher) Close() error                  { return f.w.Close() }

func newFSNotify() (FSWatcher, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	return fsnotifyWatcher{w}, nil
}

// WatchSource is one thing a watch subscribes to: a skills root (every
// skill folder in it) or one skill folder (Skill set: only that child of
// Parent).
type WatchSource struct {
	// Parent is the folder holding the skill folders (absolute).
	Parent string
	// Skill, when set, limits the source to that one skill folder.
	Skill string
	// Dir is shown in change events of a one-folder source.
	Dir string
}

// WatchOptions tunes a watch. Zero values take the defaults.
type WatchOptions struct {
	Interval time.Duration
	Poll     time.Duration
	MaxDirs  int
	// NewWatcher makes the filesystem watcher (default fsnotify).
	NewWatcher func() (FSWatcher, error)
	// NetworkFS reports a filesystem whose changes a local watcher may not
	// see (default: statfs magic numbers; see watch_linux.go).
	NetworkFS func(path string) (string, bool)
	// Emit prints one event; its error stops the watch.
	Emit func(WatchEvent) error
	// Gone, when it closes, stops the watch silently (stdout closed).
	Gone <-chan struct{}
}

type skillState struct {
	rev     *skilllint.Revision
	problem string
}

type watchSource struct {
	WatchSource
	states map[string]skillState
	dirty  map[string]bool
	all    bool // rescan every skill of the source
	// outage is why the source cannot be watched now ("" when it can).
	outage string
	// linked is set while the parent is a symbolic link: it is not read
	// at all (links are never followed) until it is a real folder again.
	linked bool
}

type dirID struct{ dev, ino uint64 }

type watchLoop struct {
	opt     WatchOptions
	srcs    []*watchSource
	w       FSWatcher
	watched map[string]dirID
	seq     int64
	healthy bool
	reason  string
}

// Watch runs until ctx ends (then it emits unavailable, reason stopped),
// opt.Gone closes, or Emit fails. The first event is the initial change.
func Watch(ctx context.Context, sources []WatchSource, opt WatchOptions) error {
	if opt.Interval <= 0 {
		opt.Interval = DefaultWatchInterval
	}
	if opt.Poll <= 0 {
		opt.Poll = DefaultWatchPoll
	}
	if opt.MaxDirs <= 0 {
		opt.MaxDirs = DefaultWatchMaxDirs
	}
	if opt.NewWatcher == nil {
		opt.NewWatcher = newFSNotify
	}
	if opt.NetworkFS == nil {
		opt.NetworkFS = networkFS
	}
	l := &watchLoop{opt: opt, watched: map[string]dirID{}}
	for _, s := range sources {
		s.Parent = filepath.Clean(s.Parent)
		l.srcs = append(l.srcs, &watchSource{WatchSource: s, states: map[string]skillState{}, dirty: map[string]bool{}, all: true})
	}
	defer func() {
		if l.w != nil {
			l.w.Close()
		}
	}()
	// Arm, then scan: an edit after the arm is reported by a watch, one
	// before it is seen by the scan.
	covered := l.rearm()
	changes := l.scan(true)
	if err := l.emit(WatchEvent{Event: EventChange, Skills: changes, Initial: true}); err != nil {
		return err
	}
	l.healthy = true
	if !covered {
		if err := l.lose(l.reason); err != nil {
			return err
		}
	}
	return l.run(ctx)
}

func (l *watchLoop) run(ctx context.Context) error {
	var fire <-chan time.Time
	poll := time.NewTicker(l.opt.Poll)
	defer poll.Stop()
	for {
		var events <-chan fsnotify.Event
		var errc <-chan error
		if l.w != nil {
			events, errc = l.w.Events(), l.w.Errors()
		}
		select {
		case <-ctx.Done():
			_ = l.emit(WatchEvent{Event: EventUnavailable, Reason: "stopped: the watch was interrupted"})
			return nil
		case <-l.opt.Gone:
			return ErrReaderGone
		case ev, ok := <-events:
			if !ok {
				l.dropWatcher()
				if err := l.lose("the filesystem watcher stopped"); err != nil {
					return err
				}
				continue
			}
			if l.route(ev.Name) && fire == nil {
				fire = time.After(l.opt.Interval)
			}
		case err, ok := <-errc:
			if !ok {
				continue
			}
			if errors.Is(err, syscall.EINVAL) || errors.Is(err, fsnotify.ErrNonExistentWatch) {
				// fsnotify drops the watch of a folder that moved and finds
				// it already gone when the folder was deleted right after
				// (each commit's old tree is): no event was lost. A rescan
				// of everything makes sure of it.
				for _, s := range l.srcs {
					s.all = true
				}
				if fire == nil {
					fire = time.After(l.opt.Interval)
				}
				continue
			}
			reason := "the filesystem watcher failed: " + err.Error()
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				reason = "the filesystem watcher lost events (its queue overflowed)"
			}
			// Events may be lost: start over with a fresh watcher, and let
			// the poll reconcile before anything is called available.
			l.dropWatcher()
			if err := l.lose(reason); err != nil {
				return err
			}
		case <-fire:
			fire = nil
			if err := l.step(false); err != nil {
				return err
			}
		case <-poll.C:
			if l.healthy {
				continue
			}
			if err := l.step(true); err != nil {
				return err
			}
		}
	}
}

// step re-arms the watches and rescans what changed (everything when
// polling during an outage), then reports.
func (l *watchLoop) step(polling bool) error {
	if l.w == nil {
		w, err := l.opt.NewWatcher()
		if err == nil {
			l.w = w
		} else {
			l.reason = "cannot start a filesystem watcher: " + describeWatchErr(err)
		}
	}
	covered := l.w != nil && l.rearm()
	if polling {
		for _, s := range l.srcs {
			s.all = true
		}
	}
	if changes := l.scan(false); len(changes) > 0 {
		if err := l.emit(WatchEvent{Event: EventChange, Skills: changes}); err != nil {
			return err
		}
	}
	switch {
	case covered && !l.healthy && polling:
		// The watches were verified before the full rescan above, which
		// reconciled every edit of the outage.
		l.healthy = true
		return l.emit(WatchEvent{Event: EventAvailable})
	case !covered && l.healthy:
		return l.lose(l.reason)
	}
	return nil
}

// lose reports unavailable once per outage.
func (l *watchLoop) lose(reason string) error {
	if !l.healthy {
		return nil
	}
	l.healthy = false
	return l.emit(WatchEvent{Event: EventUnavailable, Reason: reason, Polling: true, PollMs: l.opt.Poll.Milliseconds()})
}

func (l *watchLoop) dropWatcher() {
	if l.w != nil {
		l.w.Close()
		l.w = nil
	}
	clear(l.watched)
}

func (l *watchLoop) emit(ev WatchEvent) error {
	l.seq++
	ev.Seq = l.seq
	ev.Revision = l.revision()
	if ev.Skills == nil {
		ev.Skills = []SkillChange{}
	}
	return l.opt.Emit(ev)
}

// route marks what an event touches as dirty; it reports whether any
// source cares.
func (l *watchLoop) route(name string) bool {
	name = filepath.Clean(name)
	hit := false
	for _, s := range l.srcs {
		switch {
		case name == s.Parent || strings.HasPrefix(s.Parent, name+string(filepath.Separator)):
			s.all, hit = true, true
		case strings.HasPrefix(name, s.Parent+string(filepath.Separator)):
			rel := strings.TrimPrefix(name, s.Parent+string(filepath.Separator))
			skill, _, _ := strings.Cut(rel, string(filepath.Separator))
			if s.Skill != "" && skill != s.Skill {
				continue
			}
			hit = true
			if s.all {
				continue
			}
			if len(s.dirty) >= maxDirtySkills {
				s.all = true
				clear(s.dirty)
				continue
			}
			s.dirty[skill] = true
		}
	}
	return hit
}

// rearm brings the watches in line with the folders on disk: the nearest
// existing ancestor of each source's parent (to see the parent appear,
// vanish or be replaced), the parent, and every folder inside its skill
// folders. It reports whether coverage is complete; when not, l.reason
// says why.
func (l *watchLoop) rearm() bool {
	if l.w == nil {
		w, err := l.opt.NewWatcher()
		if err != nil {
			l.reason = "cannot start a filesystem watcher: " + describeWatchErr(err)
			return false
		}
		l.w = w
	}
	want := map[string]dirID{}
	covered := true
	for _, s := range l.srcs {
		s.outage, s.linked = "", false
		if why := l.wantDirs(s, want); why != "" {
			s.outage = why
			covered = false
			l.reason = why
		}
	}
	if len(want) > l.opt.MaxDirs {
		l.reason = fmt.Sprintf("there are %d folders to watch; the limit is %d (--max-dirs)", len(want), l.opt.MaxDirs)
		covered = false
	}
	for p, id := range l.watched {
		if cur, ok := want[p]; !ok || cur != id {
			_ = l.w.Remove(p)
			delete(l.watched, p)
		}
	}
	if !covered && len(want) > l.opt.MaxDirs {
		return false
	}
	paths := make([]string, 0, len(want))
	for p := range want {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		if _, ok := l.watched[p]; ok {
			continue
		}
		if err := l.w.Add(p); err != nil {
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
				// Gone meanwhile: rescan whatever held it.
				l.route(p)
				continue
			}
			l.reason = fmt.Sprintf("cannot watch %s: %s", p, describeWatchErr(err))
			covered = false
			continue
		}
		l.watched[p] = want[p]
	}
	return covered
}

// wantDirs adds the folders source s needs watched; a non-empty result
// says why the source cannot be watched.
func (l *watchLoop) wantDirs(s *watchSource, want map[string]dirID) string {
	anchor := filepath.Dir(s.Parent)
	for {
		if id, ok := dirOf(anchor); ok {
			want[anchor] = id
			break
		}
		up := filepath.Dir(anchor)
		if up == anchor {
			break
		}
		anchor = up
	}
	st, err := os.Lstat(s.Parent)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "" // watched through its ancestor until it appears
	case err != nil:
		return fmt.Sprintf("cannot read %s: %v", s.Parent, skilllint.UnwrapPathErr(err))
	case st.Mode()&fs.ModeSymlink != 0:
		s.linked = true
		return fmt.Sprintf("%s is a symbolic link; links are refused, so it cannot be watched", s.Parent)
	case !st.IsDir():
		return fmt.Sprintf("%s is not a folder", s.Parent)
	}
	if kind, ok := l.opt.NetworkFS(s.Parent); ok {
		return fmt.Sprintf("%s is on a network filesystem (%s), where changes made elsewhere are not reported", s.Parent, kind)
	}
	want[s.Parent] = idOf(st)
	ents, err := os.ReadDir(s.Parent)
	if err != nil {
		return fmt.Sprintf("cannot list %s: %v", s.Parent, skilllint.UnwrapPathErr(err))
	}
	for _, e := range ents {
		name := e.Name()
		if (s.Skill != "" && name != s.Skill) || strings.HasPrefix(name, ".") || !e.IsDir() {
			continue
		}
		top := filepath.Join(s.Parent, name)
		_ = filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return nil // a vanished entry is rescanned through its event
			}
			if p != top && skilllint.IsStagingName(d.Name()) {
				return fs.SkipDir
			}
			if len(want) > l.opt.MaxDirs {
				return fs.SkipAll
			}
			if info, err := d.Info(); err == nil {
				want[p] = idOf(info)
			}
			return nil
		})
	}
	return ""
}

func dirOf(p string) (dirID, bool) {
	st, err := os.Lstat(p)
	if err != nil || !st.IsDir() {
		return dirID{}, false
	}
	return idOf(st), true
}

func idOf(st fs.FileInfo) dirID {
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		return dirID{dev: uint64(s.Dev), ino: uint64(s.Ino)}
	}
	return dirID{}
}

func describeWatchErr(err error) string {
	switch {
	case errors.Is(err, syscall.ENOSPC):
		return "the inotify watch limit is reached (fs.inotify.max_user_watches)"
	case errors.Is(err, syscall.EMFILE):
		return "the inotify instance limit is reached (fs.inotify.max_user_instances)"
	}
	return err.Error()
}

// scan rescans what is dirty and returns the skills whose state changed.
func (l *watchLoop) scan(initial bool) []SkillChange {
	var out []SkillChange
	for _, s := range l.srcs {
		if !s.all && len(s.dirty) == 0 {
			continue
		}
		if s.linked {
			// Never read through a link: keep the last known state until
			// the root is a real folder again.
			continue
		}
		var names []string
		if s.all {
			seen := map[string]bool{}
			for _, n := range listSkills(s) {
				seen[n] = true
				names = append(names, n)
			}
			for n := range s.states {
				if !seen[n] {
					names = append(names, n)
				}
			}
		} else {
			for n := range s.dirty {
				names = append(names, n)
			}
		}
		s.all = false
		clear(s.dirty)
		sort.Strings(names)
		r, _ := openSkillsRoot(s.Parent)
		for _, n := range names {
			before, had := s.states[n]
			after, has := scanSkill(r, s.Parent, n)
			if has {
				s.states[n] = after
			} else {
				delete(s.states, n)
			}
			if had == has && sameState(before, after) && !initial {
				continue
			}
			if !has && !had {
				continue
			}
			c := SkillChange{Skill: n, Dir: s.Dir, Before: before.rev, After: after.rev, Problem: after.problem}
			if initial {
				c.Before = nil
			}
			out = append(out, c)
		}
		if r != nil {
			r.Close()
		}
	}
	return out
}

// listSkills names the skill folders of a source (as `skill list` does:
// dot-folders skipped, links and odd names listed as problems).
func listSkills(s *watchSource) []string {
	st, err := os.Lstat(s.Parent)
	if err != nil || !st.IsDir() {
		return nil
	}
	ents, err := os.ReadDir(s.Parent)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		n := e.Name()
		if s.Skill != "" && n != s.Skill {
			continue
		}
		if strings.HasPrefix(n, ".") || (!e.IsDir() && e.Type()&fs.ModeSymlink == 0) {
			continue
		}
		out = append(out, n)
	}
	return out
}

// scanSkill reads one skill's state; has is false when there is no such
// folder. The skill folder is opened once and read through that handle, so
// a tree swapped in meanwhile (clawkit's commits exchange whole folders)
// is never mixed with the old one; a read whose folder was replaced while
// it ran, or that failed (a file renamed over mid-read, an old tree being
// deleted), is done again, a few times, before a problem is reported.
func scanSkill(r *os.Root, parent, name string) (skillState, bool) {
	var st skillState
	var has bool
	for attempt := 0; attempt < 4; attempt++ {
		if attempt > 0 {
			time.Sleep(time.Duration(attempt) * 5 * time.Millisecond)
		}
		var stable bool
		st, has, stable = scanSkillOnce(r, parent, name)
		if stable && st.problem == "" {
			break
		}
	}
	return st, has
}

func scanSkillOnce(r *os.Root, parent, name string) (state skillState, has, stable bool) {
	if r == nil {
		return skillState{}, false, true
	}
	lst, err := r.Lstat(name)
	if err != nil {
		return skillState{}, false, true
	}
	switch {
	case lst.Mode()&fs.ModeSymlink != 0:
		return skillState{problem: "path_escape: the skill folder is a symbolic link (refused)"}, true, true
	case !lst.IsDir():
		return skillState{}, false, true
	case skilllint.CheckSkillName(name) != nil:
		return skillState{problem: string(errs.CodeOf(skilllint.CheckSkillName(name))) + ": the folder name is not a safe skill name"}, true, true
	}
	sub, err := r.OpenRoot(name)
	if err != nil {
		return skillState{problem: "read_failed: " + skilllint.UnwrapPathErr(err).Error()}, true, false
	}
	defer sub.Close()
	tree, md, _, err := readTree(sub, filepath.Join(parent, name), ".")
	// The same folder still at the name: what was read is what is there.
	now, nerr := r.Lstat(name)
	held, herr := sub.Stat(".")
	stable = nerr == nil && herr == nil && os.SameFile(now, held) && os.SameFile(lst, held)
	switch {
	case err != nil:
		return skillState{problem: string(errs.CodeOf(err)) + ": " + err.Error()}, true, stable
	case md == nil:
		return skillState{problem: "no SKILL.md"}, true, stable
	}
	rev := skilllint.RevisionOf(md, tree)
	return skillState{rev: &rev}, true, stable
}

func sameState(a, b skillState) bool {
	if (a.rev == nil) != (b.rev == nil) || a.problem != b.problem {
		return false
	}
	return a.rev == nil || *a.rev == *b.rev
}

// revision is the digest of everything watched: SHA-256 over the compact
// JSON array [{"dir","skill","treeSha256"}] sorted by dir then skill
// (treeSha256 "" for a folder that is not a usable skill).
func (l *watchLoop) revision() string {
	type row struct {
		Dir  string `json:"dir"`
		Name string `json:"skill"`
		Tree string `json:"treeSha256"`
	}
	var rows []row
	for _, s := range l.srcs {
		for n, st := range s.states {
			r := row{Dir: s.Dir, Name: n}
			if st.rev != nil {
				r.Tree = st.rev.TreeSHA256
			}
			rows = append(rows, r)
		}
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].Dir != rows[j].Dir {
			return rows[i].Dir < rows[j].Dir
		}
		return rows[i].Name < rows[j].Name
	})
	if rows == nil {
		rows = []row{}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(rows)
	d := sha256.Sum256(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
	return "sha256:" + hex.EncodeToString(d[:])
}

// WatchPlan is what the owner router resolves for `skill watch --plugin`:
// the skills root and whether config allows watching.
type WatchPlan struct {
	PluginID string `json:"pluginId"`
	AgentID  string `json:"agentId"`
	Root     string `json:"root"`
}

// opWatch resolves the plugin's skills root for a watch (read-only) and
// refuses when config turns watching off (skills.load.watch: false).
func opWatch(ctx context.Context, env *owner.OpEnv, t Target) (WatchPlan, error) {
	c, err := begin(ctx, env, t)
	if err != nil {
		return WatchPlan{}, err
	}
	cfg, err := env.Config()
	if err != nil {
		return WatchPlan{}, err
	}
	if err := CheckWatchEnabled(cfg); err != nil {
		return WatchPlan{}, err
	}
	if _, err := c.rootResult(); err != nil {
		return WatchPlan{}, err
	}
	return WatchPlan{PluginID: c.t.PluginID, AgentID: c.t.AgentID, Root: c.root}, nil
}

// CheckWatchEnabled refuses a watch when config skills.load.watch is
// false: that turns off both the subscription and the polling fallback,
// so there is nothing the command could honestly stream.
//
// An absent key means the default (watching on). A null value anywhere on
// the key's path ("skills", "skills.load" or "skills.load.watch"), or a
// "skills" or "skills.load" that is not an object, is not taken as absent:
// the user wrote something, and guessing what they meant could stream
// (or refuse) against their intent, so it is invalid_config_value (exit 2).
func CheckWatchEnabled(cfg *config.Config) error {
	segs := []string{"skills", "load", "watch"}
	var cur any = cfg.Root
	for i, seg := range segs {
		m, isObj := cur.(map[string]any)
		if !isObj {
			parent := strings.Join(segs[:i], ".")
			return errs.Usage(errs.CodeInvalidConfigValue, "config %s is %s; it must be an object", parent, describeConfigValue(cur)).
				WithHint("clawkit config unset %s, or clawkit config set skills.load.watch true", parent)
		}
		next, present := m[seg]
		if !present {
			return nil // unset: the default, watching on
		}
		if next == nil {
			path := strings.Join(segs[:i+1], ".")
			return errs.Usage(errs.CodeInvalidConfigValue, "config %s is null; null is not taken as unset", path).
				WithHint("clawkit config unset %s (the default: watching on), or clawkit config set skills.load.watch true|false", path)
		}
		cur = next
	}
	v := cur
	b, isBool := v.(bool)
	if !isBool {
		return errs.Usage(errs.CodeInvalidConfig, "config skills.load.watch is %v; it must be true or false", v).
			WithHint("clawkit config set skills.load.watch true")
	}
	if !b {
		return errs.Refused(CodeWatchDisabled, "watching skills is turned off (config skills.load.watch is false): no subscription and no polling").
			WithHint("turn it on with 'clawkit config set skills.load.watch true', or read the skills on each use with 'clawkit skill list'")
	}
	return nil
}

// describeConfigValue names a config value's JSON type for a message.
func describeConfigValue(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case string:
		return "a string"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return "a number"
}

// CheckWatchEnabledIn is CheckWatchEnabled for the config of a home (a
// missing home or config allows watching); it reads and creates nothing
// else. `skill watch --dir` uses it.
func CheckWatchEnabledIn(home string) error {
	cfg, err := config.Load(home)
	if err != nil {
		return err
	}
	return CheckWatchEnabled(cfg)
}

// DirSource is the watch source of a skill folder on disk (--dir).
func DirSource(dir string) (WatchSource, error) {
	abs, err := filepath.Abs(filepath.Clean(dir))
	if err != nil {
		return WatchSource{}, errs.Usage(errs.CodeInvalidPath, "cannot resolve %s: %v", dir, err)
	}
	name := filepath.Base(abs)
	if err := skilllint.CheckSkillName(name); err != nil {
		return WatchSource{}, err
	}
	return WatchSource{Parent: filepath.Dir(abs), Skill: name, Dir: dir}, nil
}
