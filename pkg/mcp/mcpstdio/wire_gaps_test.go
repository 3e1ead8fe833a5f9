package mcpstdio

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// shellServer runs the fake MCP server MODE behind a shell pipeline: tee
// records every byte the client sends to recv, and filter (a sed/awk
// program, or "cat") rewrites what the server sends back.
func shellServer(t *testing.T, mode, filter string) (testOptions, string) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	recv := filepath.Join(t.TempDir(), "recv.log")
	script := `tee "$RECV" | "$SELF" ` + mode + ` | ` + filter
	return testOptions{ProcessSpec: ProcessSpec{
		Command: "/bin/sh",
		Args:    []string{"-c", script},
		Env:     []string{"CLAWKIT_MCPFAKE=1", "RECV=" + recv, "SELF=" + self, "PATH=/usr/bin:/bin"},
	}}, recv
}

// Empty lines from the server (after every message, and CRLF-only lines)
// are skipped: the handshake and a call work as without them.
func TestClientSkipsBlankLinesFromServer(t *testing.T) {
	o, _ := shellServer(t, "echo", `awk '{ print ""; print; print ""; fflush() }'`)
	c := start(t, o)
	res, err := c.Request(context.Background(), "tools/call", callTool("echo", map[string]any{"message": "through blanks"}))
	if err != nil || !bytes.Contains(res, []byte("Echo: through blanks")) {
		t.Fatalf("res=%s err=%v", res, err)
	}
	if _, err := c.Stop(); err != nil {
		t.Fatal(err)
	}
}

// A request that times out retires the connection; the client never sends
// notifications/cancelled (OpenClaw's client sends none either: the whole
// process is stopped instead, so nothing can act on a half-cancelled call).
func TestClientNeverSendsCancellation(t *testing.T) {
	o, recv := shellServer(t, "echo", "cat")
	o.RequestTimeout = 200 * time.Millisecond
	c := start(t, o)
	_, err := c.Request(context.Background(), "tools/call", callTool("slow", map[string]any{"ms": 3000}))
	if me := mcpErr(t, err); me.Code != "request_timeout" {
		t.Fatalf("want request_timeout, got %+v", me)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = c.Request(ctx, "tools/call", callTool("echo", map[string]any{"message": "x"}))
	if err == nil {
		t.Fatal("a request on a retired connection succeeded")
	}
	if _, err := c.Stop(); err != nil && !strings.Contains(err.Error(), "timed out") {
		t.Logf("stop: %v", err)
	}
	sent, err := os.ReadFile(recv)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(sent, []byte(`"tools/call"`)) {
		t.Fatalf("the recording holds no request, so it cannot show the absence of a cancellation:\n%s", sent)
	}
	if bytes.Contains(sent, []byte("notifications/cancelled")) {
		t.Fatalf("the client sent a cancellation notification:\n%s", sent)
	}
}

// A signal that could not be delivered is kept in the cleanup result even
// when the tree's exit is then confirmed: the report says what failed on
// the way, not only where it ended.
func TestStopKeepsSignalErrorWhenExitConfirmed(t *testing.T) {
	o := fakeOptions(t, "ignore-term")
	o.EOFGrace, o.TermGrace, o.KillDeadline = 50*time.Millisecond, 50*time.Millisecond, 2*time.Second
	c := start(t, o)
	pid := c.Pid()
	// A member outside the group that refuses SIGTERM and is gone by the
	// time SIGKILL is sent.
	const member = 999998
	var killed atomic.Bool
	liveMembersOf = func(p *Process) []procInfo {
		ms := p.liveMembers()
		if !killed.Load() {
			ms = append(ms, procInfo{pid: member, ppid: 1, pgrp: member, state: 'S'})
		}
		return ms
	}
	killFn = func(pid int, sig syscall.Signal) error {
		if pid == member {
			if sig == syscall.SIGKILL {
				killed.Store(true)
				return syscall.ESRCH
			}
			return syscall.EPERM
		}
		if sig == syscall.SIGKILL {
			killed.Store(true)
		}
		return syscall.Kill(pid, sig)
	}
	defer func() { liveMembersOf, killFn = (*Process).liveMembers, syscall.Kill }()
	cr, err := c.Stop()
	liveMembersOf, killFn = (*Process).liveMembers, syscall.Kill
	if err != nil {
		t.Fatalf("cleanup was confirmed, yet Stop failed: %v", err)
	}
	if cr == nil || cr.SignalRequested != "SIGKILL" {
		t.Fatalf("a forced stop without its cleanup result: %+v", cr)
	}
	if cr.SignalError != "kill -SIGTERM 999998: operation not permitted" {
		t.Fatalf("signalError lost after a confirmed exit: %+v", cr)
	}
	if GroupAlive(pid) {
		t.Fatal("group alive")
	}
}
