package mcpstdio

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/clawkit/clawkit/pkg/mcp"

	"golang.org/x/sys/unix"
)

// Default stop timings (docs/mcp.md): EOF, wait 2 s, SIGTERM the group,
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
	exit       mcp.ExitInfo
	stderrDone chan struct{}

	treeMu  sync.Mutex
	tracked map[int]uint64 // members of the tree seen so far: pid → start time

	// prompt skips the EOF grace of the stop: set after a fatal protocol
	// error, when the server has shown it does not speak the protocol and
	// waiting for it to notice EOF only keeps it running (docs/mcp.md).
	prompt atomic.Bool

	stdinOnce sync.Once
	stopOnce  sync.Once
	stopDone  chan struct{}
	stopRes   *mcp.CleanupResult
	stopErr   error
}

// LookPath resolves a bare command name through a PATH list. The child's
// own PATH (from its exact environment) wins; without one we use ours, which
// only locates the program and passes nothing to it.
func LookPath(name string, env []string) (string, error) {
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
	path, err := LookPath(spec.Command, spec.Env)
	if err != nil {
		return nil, SpawnError(spec, err)
	}
	cmd := &exec.Cmd{
		Path: path,
		Args: append([]string{spec.Command}, spec.Args...),
		Dir:  spec.Dir,
		// A non-nil empty slice: a nil Env would inherit ours.
		Env:         append([]string{}, spec.Env...),
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}
	dieWithParent(cmd.SysProcAttr)
	var closers []*os.File
	closeAll := func() {
		for _, f := range closers {
			_ = f.Close() // pipes of a spawn that failed: nothing went through them
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
		return nil, mcp.Unavailable(CodeSpawnFailed, "cannot create pipes: %v", err)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	if err := startCmd(cmd); err != nil {
		closeAll()
		return nil, SpawnError(spec, err)
	}
	// The child has its copies; ours would keep its pipes open forever.
	// This process never wrote to them: closing loses nothing.
	_ = inR.Close()
	_ = outW.Close()
	_ = errW.Close()
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

// SpawnError describes a failed start. A command that does not exist, is
// not executable or is not a program is definitive (retrying cannot help,
// exit 1); anything else (no pipes, no processes left) may pass (exit 5).
func SpawnError(spec ProcessSpec, err error) *mcp.Error {
	e := mcp.Unavailable(CodeSpawnFailed, "cannot start %q: %v", spec.Command, err)
	e.Err = err
	hasPath := slices.ContainsFunc(spec.Env, func(kv string) bool { return strings.HasPrefix(kv, "PATH=") })
	switch {
	case errors.Is(err, exec.ErrNotFound) && !hasPath:
		e.Definitive = true
		e.Hint = "no such program in clawkit's PATH; give its full path (the server's own environment is exactly what --env and --env-pass give)"
	case errors.Is(err, exec.ErrNotFound):
		e.Definitive = true
		e.Hint = "no such program in the PATH given with --env/--env-pass; give its full path or fix that PATH"
	case errors.Is(err, syscall.ENOENT), errors.Is(err, syscall.ENOTDIR):
		e.Definitive = true
		e.Hint = "no such file: check the command's path"
	case errors.Is(err, syscall.EACCES), errors.Is(err, syscall.ENOEXEC), errors.Is(err, syscall.EISDIR):
		e.Definitive = true
		e.Hint = "the command is not an executable program: check its path and its permissions (chmod +x), or run it through its interpreter"
	}
	return e
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
			_, _ = p.tail.Write(buf[:n]) // an in-memory ring: never fails
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
func (p *Process) Exit() mcp.ExitInfo { return p.exit }

// StderrTail is a copy of the last StderrTailBytes of the server's stderr.
func (p *Process) StderrTail() []byte { return p.tail.Bytes() }

// exitTail is the stderr tail for an exit message: once the main process
// has ended, what it wrote last may still sit in the pipe, so wait (up to
// d, a descendant may hold stderr open) for the reader to reach EOF.
func (p *Process) exitTail(d time.Duration) []string {
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
	if tail == "" {
		return nil
	}
	return strings.Split(strings.ReplaceAll(tail, "\r\n", "\n"), "\n")
}

// exitedError describes a server that ended on its own. Exit code 127 or
// "not found" in its stderr is a shell or launcher (npx, sh -c) that could
// not find a program: with the exact environment the cause is nearly
// always a missing PATH, so the hint says so.
func (p *Process) exitedError(tail []string) *mcp.Error {
	x := p.Exit()
	e := mcp.Unavailable(CodeServerExited, "server exited (%s)", x)
	e.StderrTail = tail
	if (x.Code != nil && *x.Code == 127) || strings.Contains(strings.ToLower(strings.Join(tail, "\n")), "not found") {
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

// TerminatePromptly makes the stop signal the group as soon as stdin is
// closed, without the EOF grace. It must be called before Stop.
func (p *Process) TerminatePromptly() { p.prompt.Store(true) }

// CloseStdin sends EOF to the server.
// A close error cannot be acted on: the server sees EOF or is gone.
func (p *Process) CloseStdin() { p.stdinOnce.Do(func() { _ = p.stdin.Close() }) }

// Stop ends the server and its process group: EOF on stdin, wait, SIGTERM
// the group, wait, SIGKILL the group, then confirm within a hard deadline
// that the main process was reaped and no member of the group is left.
// readerDone, when not nil, is the stdout reader's end: Stop gives it a
// moment to drain what the server wrote before its end, then closes the
// pipe so the reader cannot hang on a descendant that escaped the group.
//
// Stop is idempotent; concurrent callers all get the first call's outcome.
// The result is nil after an ordinary close.
func (p *Process) Stop(readerDone <-chan struct{}) (*mcp.CleanupResult, error) {
	p.stopOnce.Do(func() {
		p.stopRes, p.stopErr = p.stop(readerDone)
		close(p.stopDone)
	})
	<-p.stopDone
	return p.stopRes, p.stopErr
}
