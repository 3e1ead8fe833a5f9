package mcp

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
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

// CleanupResult is reported when Stop had to signal the process group.
type CleanupResult struct {
	Reason            string   `json:"reason"`
	SignalRequested   string   `json:"signalRequested"`
	Exit              ExitInfo `json:"exit"`
	DurationMs        int64    `json:"durationMs"`
	EscalationAfterMs int64    `json:"escalationAfterMs"`
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
	}
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
	p.CloseStdin()
	defer p.closeReaders(readerDone)
	if p.waitGone(p.spec.EOFGrace) {
		return nil, nil
	}
	res := &CleanupResult{Reason: "forced-relay-exit", EscalationAfterMs: time.Since(start).Milliseconds()}
	res.SignalRequested = "SIGTERM"
	_ = syscall.Kill(-p.pgid, syscall.SIGTERM)
	if !p.waitGone(p.spec.TermGrace) {
		res.SignalRequested = "SIGKILL"
		_ = syscall.Kill(-p.pgid, syscall.SIGKILL)
		if !p.waitGone(p.spec.KillDeadline) {
			res.DurationMs = time.Since(start).Milliseconds()
			e := unavailable("cleanup_unconfirmed", "cleanup could not be confirmed: process group %d still has members %s after SIGKILL", p.pgid, time.Since(start).Round(time.Millisecond))
			return res, e
		}
	}
	res.Exit = p.exit
	res.DurationMs = time.Since(start).Milliseconds()
	return res, nil
}

// closeReaders lets the readers drain, then closes our pipe ends.
func (p *Process) closeReaders(readerDone <-chan struct{}) {
	const drain = 500 * time.Millisecond
	t := time.NewTimer(drain)
	defer t.Stop()
	if readerDone != nil {
		select {
		case <-readerDone:
		case <-t.C:
		}
	}
	select {
	case <-p.stderrDone:
	case <-t.C:
	}
	p.stdout.Close()
	p.stderr.Close()
	<-p.stderrDone
}

// waitGone waits up to d for the main process to be reaped and its group
// to have no live member.
func (p *Process) waitGone(d time.Duration) bool {
	deadline := time.Now().Add(d)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.exited:
	case <-t.C:
		return false
	}
	for step := time.Millisecond; ; {
		if !groupAlive(p.pgid) {
			return true
		}
		left := time.Until(deadline)
		if left <= 0 {
			return false
		}
		time.Sleep(min(step, left))
		step = min(step*2, 50*time.Millisecond)
	}
}

// groupAlive is GroupAlive; tests replace it to exercise the
// unconfirmed-cleanup path, which a real kernel rarely produces (a group
// member stuck in uninterruptible sleep, or one we may not signal).
var groupAlive = GroupAlive

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
