package mcp

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Default stop timings (DESIGN §10): EOF, wait 2 s, SIGTERM the group,
// wait 2 s, SIGKILL the group, then a hard deadline to see it gone.
const (
	DefaultEOFGrace     = 2 * time.Second
	DefaultTermGrace    = 2 * time.Second
	DefaultKillDeadline = 2 * time.Second
)

// ProcessSpec says how to start a server process.
type ProcessSpec struct {
	Command string
	Args    []string
	// Env is the child's entire environment; nothing of ours is inherited.
	Env []string
	Dir string
	// StderrTee, when set, receives a live copy of the child's stderr (the
	// proxy forwards it). A failing tee is dropped; the tail is still kept.
	StderrTee io.Writer
	// Subreaper: this program runs no other child processes, so it may
	// become a child subreaper and claim every orphan re-parented to it as
	// the server's (group_linux.go says what that guarantees).
	Subreaper bool

	EOFGrace, TermGrace, KillDeadline time.Duration
}

// ExitInfo is how the server's main process ended. Exactly one of Code and
// Signal is set once it has ended.
type ExitInfo struct {
	Code   *int    `json:"code"`
	Signal *string `json:"signal"`
}

func (x ExitInfo) String() string {
	switch {
	case x.Code != nil:
		return "code " + strconv.Itoa(*x.Code)
	case x.Signal != nil:
		return "signal " + *x.Signal
	}
	return "unknown status"
}

// CleanupResult is reported when Stop had to signal the process tree.
type CleanupResult struct {
	Reason          string `json:"reason"`
	SignalRequested string `json:"signalRequested"`
	// SignalError is the first failure to deliver a signal (a member we
	// may not signal, say); a member already gone is not a failure.
	SignalError       string   `json:"signalError,omitempty"`
	Exit              ExitInfo `json:"exit"`
	DurationMs        int64    `json:"durationMs"`
	EscalationAfterMs int64    `json:"escalationAfterMs"`
	// OutsideGroup lists descendants that had left the server's process
	// group (setsid) and were signalled by pid.
	OutsideGroup []int `json:"outsideGroup,omitempty"`
	// When cleanup could not be confirmed: what was done, in order
	// (closure, signals, exit), and which pids were still alive.
	Causes    []string `json:"causes,omitempty"`
	Remaining []int    `json:"remaining,omitempty"`
}

// Process is a server running in its own process group, which it owns with
// every descendant that stays in that group.
type Process struct {
	spec   ProcessSpec
	cmd    *exec.Cmd
	pgid   int
	stdin  *os.File // our write end
	stdout *os.File // our read end
	stderr *os.File // our read end
	tail   *tailBuffer

	exited     chan struct{}
	exit       ExitInfo
	stderrDone chan struct{}

	treeMu  sync.Mutex
	tracked map[int]uint64 // members of the tree seen so far: pid → start time

	stdinOnce sync.Once
	stopOnce  sync.Once
	stopDone  chan struct{}
	stopRes   *CleanupResult
	stopErr   error
}

// lookPathIn resolves a bare command name through a PATH list. The child's
// own PATH (from its exact environment) wins; without one we use ours, which
// only locates the program and passes nothing to it.
func lookPathIn(name string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	pathList, found := "", false
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			pathList, found = v, true
		}
	}
	if !found {
		return exec.LookPath(name)
	}
	for _, dir := range filepath.SplitList(pathList) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", exec.ErrNotFound
}

var sigpipeOnce sync.Once

// survivePipeErrors makes writes to a closed stdout or stderr return EPIPE
// instead of killing us: by default a Go program dies of SIGPIPE on fd 1
// and 2, and a relay whose client went away would then leave the server's
// process tree running. Notify (not Ignore) is used because a handled
// signal is reset to its default in children, while an ignored one would
// be inherited by the server.
func survivePipeErrors() {
	sigpipeOnce.Do(func() { signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE) })
}

// StartProcess spawns spec in a new process group with exactly spec.Env.
// From then on this process survives a closed stdout (no SIGPIPE death),
// so that it can always stop what it started.
func StartProcess(spec ProcessSpec) (*Process, error) {
	survivePipeErrors()
	if spec.EOFGrace <= 0 {
		spec.EOFGrace = DefaultEOFGrace
	}
	if spec.TermGrace <= 0 {
		spec.TermGrace = DefaultTermGrace
	}
	if spec.KillDeadline <= 0 {
		spec.KillDeadline = DefaultKillDeadline
	}
	if spec.Subreaper {
		becomeSubreaper()
	}
	path, err := lookPathIn(spec.Command, spec.Env)
	if err != nil {
		e := unavailable("spawn_failed", "cannot start %q: %v", spec.Command, err)
		e.Err = err
		return nil, e
	}
	cmd := &exec.Cmd{
		Path: path,
		Args: append([]string{spec.Command}, spec.Args...),
		Dir:  spec.Dir,
		// A non-nil empty slice: a nil Env would inherit ours.
		Env:         append([]string{}, spec.Env...),
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}
	var closers []*os.File
	closeAll := func() {
		for _, f := range closers {
			f.Close()
		}
	}
	pipe := func() (*os.File, *os.File, error) {
		r, w, err := os.Pipe()
		if err == nil {
			closers = append(closers, r, w)
		}
		return r, w, err
	}
	inR, inW, err1 := pipe()
	outR, outW, err2 := pipe()
	errR, errW, err3 := pipe()
	if err := errors.Join(err1, err2, err3); err != nil {
		closeAll()
		return nil, unavailable("spawn_failed", "cannot create pipes: %v", err)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	if err := cmd.Start(); err != nil {
		closeAll()
		e := unavailable("spawn_failed", "cannot start %q: %v", spec.Command, err)
		e.Err = err
		return nil, e
	}
	// The child has its copies; ours would keep its pipes open forever.
	inR.Close()
	outW.Close()
	errW.Close()
	p := &Process{
		spec: spec, cmd: cmd, pgid: cmd.Process.Pid,
		stdin: inW, stdout: outR, stderr: errR,
		tail:       newTailBuffer(StderrTailBytes),
		exited:     make(chan struct{}),
		stderrDone: make(chan struct{}),
		stopDone:   make(chan struct{}),
		tracked:    map[int]uint64{},
	}
	register(p)
	go p.wait()
	go p.readStderr()
	return p, nil
}

func (p *Process) wait() {
	_ = p.cmd.Wait()
	if st := p.cmd.ProcessState; st != nil {
		if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			s := unix.SignalName(ws.Signal())
			if s == "" {
				s = ws.Signal().String()
			}
			p.exit.Signal = &s
		} else {
			c := st.ExitCode()
			p.exit.Code = &c
		}
	}
	close(p.exited)
}

func (p *Process) readStderr() {
	defer close(p.stderrDone)
	buf := make([]byte, 32*1024)
	tee := p.spec.StderrTee
	for {
		n, err := p.stderr.Read(buf)
		if n > 0 {
			p.tail.Write(buf[:n])
			if tee != nil {
				if _, werr := tee.Write(buf[:n]); werr != nil {
					tee = nil
				}
			}
		}
		if err != nil {
			return
		}
	}
}

// Pid is the server's process id, which is also its process group id.
func (p *Process) Pid() int { return p.pgid }

// Stdin is the write end of the server's stdin.
func (p *Process) Stdin() *os.File { return p.stdin }

// Stdout is the read end of the server's stdout.
func (p *Process) Stdout() *os.File { return p.stdout }

// Exited is closed once the main process has ended and been reaped.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Exit is the main process's end state; valid after Exited is closed.
func (p *Process) Exit() ExitInfo { return p.exit }

// StderrTail is a copy of the last StderrTailBytes of the server's stderr.
func (p *Process) StderrTail() []byte { return p.tail.Bytes() }

// exitTail is the stderr tail for an exit message: once the main process
// has ended, what it wrote last may still sit in the pipe, so wait (up to
// d, a descendant may hold stderr open) for the reader to reach EOF.
func (p *Process) exitTail(d time.Duration) string {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.stderrDone:
	case <-t.C:
	}
	tail := strings.TrimSpace(string(p.tail.Bytes()))
	const show = 2048
	if len(tail) > show {
		tail = "…" + tail[len(tail)-show:]
	}
	return tail
}

// exitedError describes a server that ended on its own. Exit code 127 or
// "not found" in its stderr is a shell or launcher (npx, sh -c) that could
// not find a program: with the exact environment the cause is nearly
// always a missing PATH, so the hint says so.
func (p *Process) exitedError(tail string) *Error {
	x := p.Exit()
	var e *Error
	if tail == "" {
		e = unavailable("server_exited", "server exited (%s)", x)
	} else {
		e = unavailable("server_exited", "server exited (%s): %s", x, tail)
	}
	if (x.Code != nil && *x.Code == 127) || strings.Contains(strings.ToLower(tail), "not found") {
		hasPath := slices.ContainsFunc(p.spec.Env, func(kv string) bool { return strings.HasPrefix(kv, "PATH=") })
		if hasPath {
			e.Hint = "the server could not find a program in the PATH it was given (--env/--env-pass); check that it is installed there"
		} else {
			e.Hint = "the server could not find a program: its environment is exactly what --env and --env-pass give, so it has no PATH; add --env-pass PATH (and any other variable it needs)"
		}
	}
	return e
}

// StderrTotal is how many stderr bytes the server wrote in all.
func (p *Process) StderrTotal() int64 { return p.tail.Total() }

// CloseStdin sends EOF to the server.
func (p *Process) CloseStdin() { p.stdinOnce.Do(func() { p.stdin.Close() }) }

// Stop ends the server and its process group: EOF on stdin, wait, SIGTERM
// the group, wait, SIGKILL the group, then confirm within a hard deadline
// that the main process was reaped and no member of the group is left.
// readerDone, when not nil, is the stdout reader's end: Stop gives it a
// moment to drain what the server wrote before its end, then closes the
// pipe so the reader cannot hang on a descendant that escaped the group.
//
// Stop is idempotent; concurrent callers all get the first call's outcome.
// The result is nil after an ordinary close.
func (p *Process) Stop(readerDone <-chan struct{}) (*CleanupResult, error) {
	p.stopOnce.Do(func() {
		p.stopRes, p.stopErr = p.stop(readerDone)
		close(p.stopDone)
	})
	<-p.stopDone
	return p.stopRes, p.stopErr
}

func (p *Process) stop(readerDone <-chan struct{}) (*CleanupResult, error) {
	start := time.Now()
	since := func() int64 { return time.Since(start).Milliseconds() }
	// Record the tree while its parent links are intact: a setsid child
	// whose parent exits at our EOF is re-parented (to init, without
	// Subreaper) and is then found only by what was recorded.
	_ = liveMembersOf(p)
	p.CloseStdin()
	defer p.closeReaders(readerDone)
	defer unregister(p)
	if p.waitGone(p.spec.EOFGrace, 0) {
		return nil, nil
	}
	res := &CleanupResult{Reason: "forced-relay-exit", EscalationAfterMs: since()}
	causes := []string{fmt.Sprintf("stdin closed; the tree was still alive %dms later", since())}
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
			e := unavailable("cleanup_unconfirmed", "cleanup could not be confirmed: %s", strings.Join(causes, "; "))
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
type CleanupError struct{ Result *CleanupResult }

func (e *CleanupError) Error() string {
	return "cleanup could not be confirmed: " + strings.Join(e.Result.Causes, "; ")
}

// killFn is syscall.Kill; tests replace it to exercise signal failures,
// which a real kernel produces only for members we may not signal.
var killFn = syscall.Kill

// signalTree sends sig to the server's group and to every live member of
// its tree outside the group, keeps the first delivery failure in res,
// and describes what it did.
func (p *Process) signalTree(sig syscall.Signal, res *CleanupResult, atMs int64) string {
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
	p.stdout.Close()
	p.stderr.Close() // interrupts the stderr reader's read
	<-p.stderrDone
}

// waitGone waits up to d for the main process to be reaped and its tree
// to have no live member. With resignal set, live members found while
// waiting are signalled again (a member forked after the last signal).
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
