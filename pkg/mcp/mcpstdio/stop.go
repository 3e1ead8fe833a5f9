package mcpstdio

// Stopping a server's process tree: escalation, tree tracking, and the
// confirmation that nothing is left (docs/mcp.md "Stop").

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/clawkit/clawkit/pkg/errs"

	"github.com/clawkit/clawkit/pkg/mcp"

	"golang.org/x/sys/unix"
)

func (p *Process) stop(readerDone <-chan struct{}) (*mcp.CleanupResult, error) {
	start := time.Now()
	since := func() int64 { return time.Since(start).Milliseconds() }
	// Record the tree while its parent links are intact: a setsid child
	// whose parent exits at our EOF is re-parented (to init, without
	// Subreaper) and is then found only by what was recorded.
	_ = liveMembersOf(p)
	p.CloseStdin()
	defer p.closeReaders(readerDone)
	defer unregister(p)
	prompt := p.prompt.Load()
	if prompt {
		if p.goneNow() {
			return nil, nil
		}
	} else if p.waitGone(p.spec.EOFGrace, 0) {
		return nil, nil
	}
	res := &mcp.CleanupResult{Reason: "forced-relay-exit", EscalationAfterMs: since()}
	causes := []string{fmt.Sprintf("stdin closed; the tree was still alive %dms later", since())}
	if prompt {
		causes = []string{"a fatal protocol error: stdin closed and the group signalled at once"}
	}
	res.SignalRequested = "SIGTERM"
	causes = append(causes, p.signalTree(syscall.SIGTERM, res, since()))
	if !p.waitGone(p.spec.TermGrace, 0) {
		res.SignalRequested = "SIGKILL"
		causes = append(causes, p.signalTree(syscall.SIGKILL, res, since()))
		if !p.waitGone(p.spec.KillDeadline, syscall.SIGKILL) {
			select {
			case <-p.exited:
				res.Exit = p.exit
				causes = append(causes, fmt.Sprintf("main process %d ended (%s)", p.pgid, p.exit))
			default:
				causes = append(causes, fmt.Sprintf("main process %d was not reaped", p.pgid))
			}
			var left []string
			for _, m := range liveMembersOf(p) {
				res.Remaining = append(res.Remaining, m.pid)
				left = append(left, fmt.Sprintf("pid %d (group %d, state %c)", m.pid, m.pgrp, m.state))
			}
			sort.Ints(res.Remaining)
			sort.Strings(left)
			causes = append(causes, fmt.Sprintf("still alive %dms after the start of the stop: %s", since(), strings.Join(left, ", ")))
			res.Causes = causes
			res.DurationMs = since()
			e := mcp.Unavailable(errs.CodeCleanupUnconfirmed, "cleanup could not be confirmed: %s", strings.Join(causes, "; "))
			e.Err = &CleanupError{Result: res}
			return res, e
		}
	}
	res.Exit = p.exit
	res.DurationMs = since()
	return res, nil
}

// CleanupError carries the result of a cleanup that could not be
// confirmed, its cause chain included.
type CleanupError struct{ Result *mcp.CleanupResult }

func (e *CleanupError) Error() string {
	return "cleanup could not be confirmed: " + strings.Join(e.Result.Causes, "; ")
}

// killFn is syscall.Kill; tests replace it to exercise signal failures,
// which a real kernel produces only for members we may not signal.
var killFn = syscall.Kill

// signalTree sends sig to the server's group and to every live member of
// its tree outside the group, keeps the first delivery failure in res,
// and describes what it did.
func (p *Process) signalTree(sig syscall.Signal, res *mcp.CleanupResult, atMs int64) string {
	name := unix.SignalName(sig)
	var failures []string
	fail := func(target string, err error) {
		if err == nil || errors.Is(err, syscall.ESRCH) {
			return // gone already: nothing to signal
		}
		f := fmt.Sprintf("kill -%s %s: %v", name, target, err)
		failures = append(failures, f)
		if res.SignalError == "" {
			res.SignalError = f
		}
	}
	fail(strconv.Itoa(-p.pgid), killFn(-p.pgid, sig))
	outside := 0
	for _, m := range liveMembersOf(p) {
		if m.pgrp == p.pgid || m.pid <= 0 {
			continue
		}
		outside++
		if !slices.Contains(res.OutsideGroup, m.pid) {
			res.OutsideGroup = append(res.OutsideGroup, m.pid)
		}
		fail(strconv.Itoa(m.pid), killFn(m.pid, sig))
	}
	d := fmt.Sprintf("%s sent to group %d", name, p.pgid)
	if outside > 0 {
		d += fmt.Sprintf(" and %d process(es) outside it", outside)
	}
	d += fmt.Sprintf(" at %dms", atMs)
	if len(failures) > 0 {
		d += " (" + strings.Join(failures, "; ") + ")"
	}
	return d
}

// closeReaders lets the readers drain, then closes our pipe ends. The
// drain is bounded as a whole: a descendant holding the pipes open cannot
// stretch it.
func (p *Process) closeReaders(readerDone <-chan struct{}) {
	const drain = 500 * time.Millisecond
	t := time.NewTimer(drain)
	defer t.Stop()
	expired := false
	wait := func(ch <-chan struct{}) {
		if ch == nil || expired {
			return
		}
		select {
		case <-ch:
		case <-t.C:
			expired = true
		}
	}
	wait(readerDone)
	wait(p.stderrDone)
	// Read ends: closing them loses nothing.
	_ = p.stdout.Close()
	_ = p.stderr.Close() // interrupts the stderr reader's read
	<-p.stderrDone
}

// waitGone waits up to d for the main process to be reaped and its tree
// to have no live member. With resignal set, live members found while
// waiting are signalled again (a member forked after the last signal).
// goneNow reports, without waiting, that the main process was reaped and
// no member of its tree is left.
func (p *Process) goneNow() bool {
	select {
	case <-p.exited:
		return len(liveMembersOf(p)) == 0
	default:
		return false
	}
}

func (p *Process) waitGone(d time.Duration, resignal syscall.Signal) bool {
	deadline := time.Now().Add(d)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.exited:
	case <-t.C:
		return false
	}
	for step := time.Millisecond; ; {
		live := liveMembersOf(p)
		if len(live) == 0 {
			return true
		}
		left := time.Until(deadline)
		if left <= 0 {
			return false
		}
		if resignal != 0 {
			_ = killFn(-p.pgid, resignal)
			for _, m := range live {
				if m.pgrp != p.pgid && m.pid > 0 {
					_ = killFn(m.pid, resignal)
				}
			}
		}
		time.Sleep(min(step, left))
		step = min(step*2, 50*time.Millisecond)
	}
}

// Servers running in this program, for attributing orphans.
var (
	liveMu    sync.Mutex
	liveProcs = map[*Process]struct{}{}
)

func register(p *Process) {
	liveMu.Lock()
	liveProcs[p] = struct{}{}
	liveMu.Unlock()
}

func unregister(p *Process) {
	liveMu.Lock()
	delete(liveProcs, p)
	liveMu.Unlock()
}

func soleServer(p *Process) bool {
	liveMu.Lock()
	defer liveMu.Unlock()
	_, ok := liveProcs[p]
	return ok && len(liveProcs) == 1
}

// liveMembersOf is (*Process).liveMembers; tests replace it to exercise
// the unconfirmed-cleanup path, which a real kernel rarely produces (a
// member stuck in uninterruptible sleep, or one we may not signal).
var liveMembersOf = (*Process).liveMembers

// liveMembers lists the live (not zombie) members of the server's tree:
// its group, everything descending from the server or from a group
// member by parent links, members seen before (re-parented since), and,
// with Subreaper and one server running, orphans re-parented to us.
// Without /proc it falls back to the group (kill(pgid, 0)).
func (p *Process) liveMembers() []procInfo {
	procs, ok := readProcs()
	if !ok {
		if GroupAlive(p.pgid) {
			return []procInfo{{pid: p.pgid, pgrp: p.pgid, state: '?'}}
		}
		return nil
	}
	self := os.Getpid()
	claim := p.spec.Subreaper && soleServer(p)
	byPid := make(map[int]procInfo, len(procs))
	kids := map[int][]int{}
	for _, pi := range procs {
		byPid[pi.pid] = pi
		kids[pi.ppid] = append(kids[pi.ppid], pi.pid)
	}
	p.treeMu.Lock()
	defer p.treeMu.Unlock()
	seen := map[int]bool{}
	var queue []int
	add := func(pid int) {
		if _, ok := byPid[pid]; ok && pid != self && !seen[pid] {
			seen[pid] = true
			queue = append(queue, pid)
		}
	}
	add(p.pgid)
	for _, pi := range procs {
		if pi.pgrp == p.pgid || (claim && pi.ppid == self) {
			add(pi.pid)
		}
	}
	for pid, start := range p.tracked {
		if pi, ok := byPid[pid]; ok && pi.start == start {
			add(pid)
		}
	}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		for _, k := range kids[pid] {
			add(k)
		}
	}
	var live []procInfo
	for pid := range seen {
		pi := byPid[pid]
		p.tracked[pid] = pi.start
		switch {
		case pi.live():
			live = append(live, pi)
		case pi.ppid == self && pid != p.pgid:
			reapOrphan(pid) // ours since it was orphaned; os/exec reaps the server
		}
	}
	return live
}

// GroupAlive reports whether process group pgid has a member that is not a
// zombie. Zombies are ignored because an orphan's reaper (init, or a
// container's first process) may be slow or absent; a zombie holds no
// resources but its pid.
func GroupAlive(pgid int) bool {
	err := syscall.Kill(-pgid, 0)
	if errors.Is(err, syscall.ESRCH) {
		return false
	}
	return groupHasLiveMember(pgid)
}
