package mcpstdio

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/clawkit/clawkit/pkg/mcp"

	"github.com/clawkit/clawkit/pkg/errs"
)

func start(t *testing.T, o testOptions) *Client {
	t.Helper()
	c, err := startOpts(context.Background(), o)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() { _, _ = c.Stop() })
	return c
}

func callTool(name string, args any) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"name": name, "arguments": args})
	return b
}

func mcpErr(t *testing.T, err error) *mcp.Error {
	t.Helper()
	var me *mcp.Error
	if !errors.As(err, &me) {
		t.Fatalf("error %v (%T) is not an *mcp.Error", err, err)
	}
	return me
}

func TestClientRequestAndOrdinaryStop(t *testing.T) {
	var notes atomic.Int64
	o := fakeOptions(t, "echo")
	o.OnNotification = func(method string, params json.RawMessage) { notes.Add(1) }
	c := start(t, o)
	if c.ServerInfo().Name != "mcpfake-echo" {
		t.Fatalf("serverInfo %+v", c.ServerInfo())
	}
	res, err := c.Request(context.Background(), "tools/call", callTool("echo", map[string]any{"message": "hi"}))
	if err != nil || !bytes.Contains(res, []byte("Echo: hi")) {
		t.Fatalf("res=%s err=%v", res, err)
	}
	if _, err := c.Request(context.Background(), "tools/call", callTool("notify", nil)); err != nil {
		t.Fatal(err)
	}
	// One notification before the initialize reply, one from the tool.
	if n := notes.Load(); n != 2 {
		t.Fatalf("%d notifications, want 2", n)
	}
	pid := c.Pid()
	cr, err := c.Stop()
	if err != nil || cr != nil {
		t.Fatalf("ordinary stop: cr=%+v err=%v", cr, err)
	}
	if GroupAlive(pid) {
		t.Fatal("process group still alive after Stop")
	}
	if c.IsAvailable() {
		t.Fatal("available after Stop")
	}
	_, err = c.Request(context.Background(), "ping", nil)
	if me := mcpErr(t, err); me.Code != "client_stopped" || me.Delivered {
		t.Fatalf("after stop: %+v", me)
	}
}

func TestClientRPCErrorRejectsOnlyItsRequest(t *testing.T) {
	c := start(t, fakeOptions(t, "echo"))
	_, err := c.Request(context.Background(), "tools/call", callTool("fail", nil))
	me := mcpErr(t, err)
	if me.Class != mcp.ClassProtocol || me.RPC == nil || me.RPC.Code != -32602 {
		t.Fatalf("%+v", me)
	}
	if errs.KindOf(mcp.Coded(err)) != errs.KindFailed {
		t.Fatalf("kind %v", errs.KindOf(mcp.Coded(err)))
	}
	if !c.IsAvailable() {
		t.Fatal("a JSON-RPC error retired the connection")
	}
	if _, err := c.Request(context.Background(), "ping", nil); err != nil {
		t.Fatal(err)
	}
}

func TestClientAdmissionRejectsOnlyTheNewCall(t *testing.T) {
	o := fakeOptions(t, "echo")
	o.MaxPendingRequests = 2
	c := start(t, o)
	// The fake handles requests one at a time: a gated call holds the
	// second one in the queue, so both stay pending until the gate opens.
	gate := filepath.Join(t.TempDir(), "gate")
	var wg sync.WaitGroup
	errsCh := make(chan error, 2)
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := c.Request(context.Background(), "tools/call", callTool("gate", map[string]any{"path": gate}))
			errsCh <- err
		}()
	}
	waitPending(t, c, 2)

	_, err := c.Request(context.Background(), "ping", nil)
	me := mcpErr(t, err)
	if me.Code != "too_many_pending" || me.Message != "too many pending requests (limit 2)" || me.Delivered {
		t.Fatalf("%+v", me)
	}
	if errs.KindOf(mcp.Coded(err)) != errs.KindUnavailable {
		t.Fatal("a refusal past the pending bound is not unavailable")
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(errsCh)
	for err := range errsCh {
		if err != nil {
			t.Fatalf("pending call failed: %v", err)
		}
	}
	if !c.IsAvailable() {
		t.Fatal("a refusal past the pending bound retired the connection")
	}
}

func TestClientCancelRetiresConnectionWithFirstError(t *testing.T) {
	c := start(t, fakeOptions(t, "echo"))
	ctx, cancel := context.WithCancel(context.Background())
	results := make(chan error, 3)
	go func() {
		_, err := c.Request(ctx, "tools/call", callTool("slow", map[string]any{"ms": 30000}))
		results <- err
	}()
	for range 2 {
		go func() {
			_, err := c.Request(context.Background(), "tools/call", callTool("slow", map[string]any{"ms": 30000}))
			results <- err
		}()
	}
	waitPending(t, c, 3)
	cancel()
	for range 3 {
		me := mcpErr(t, <-results)
		if me.Code != "cancelled" || !me.Delivered {
			t.Fatalf("pending call got %+v, want the retained cancellation", me)
		}
		if errs.KindOf(mcp.Coded(me)) != errs.KindUnknown {
			t.Fatal("a delivered cancelled request must be outcome-unknown")
		}
	}
	if c.IsAvailable() {
		t.Fatal("connection still available after a cancellation")
	}
	_, err := c.Request(context.Background(), "ping", nil)
	if me := mcpErr(t, err); me.Code != "cancelled" || me.Delivered {
		t.Fatalf("later call: %+v", me)
	}
}

func TestClientTimeoutRetires(t *testing.T) {
	o := fakeOptions(t, "echo")
	o.RequestTimeout = 100 * time.Millisecond
	o.EOFGrace, o.TermGrace = 100*time.Millisecond, 100*time.Millisecond
	c := start(t, o)
	_, err := c.Request(context.Background(), "tools/call", callTool("slow", map[string]any{"ms": 30000}))
	me := mcpErr(t, err)
	if me.Code != "request_timeout" || me.Message != "request tools/call timed out after 100ms" {
		t.Fatalf("%+v", me)
	}
	if c.IsAvailable() {
		t.Fatal("available after a timeout")
	}
}

func TestClientTimeoutCodedErrorRetires(t *testing.T) {
	c := start(t, fakeOptions(t, "echo"))
	_, err := c.Request(context.Background(), "tools/call", callTool("timeout-coded", nil))
	if me := mcpErr(t, err); me.Code != "server_timeout" || me.RPC == nil {
		t.Fatalf("%+v", me)
	}
	if c.IsAvailable() {
		t.Fatal("available after a timeout-coded error")
	}
}

func TestClientStderrTailIsBounded(t *testing.T) {
	c := start(t, fakeOptions(t, "stderr-flood", strconv.Itoa(2<<20)))
	if _, err := c.Request(context.Background(), "tools/call", callTool("echo", nil)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	tail := c.StderrTail()
	if len(tail) != StderrTailBytes {
		t.Fatalf("tail is %d bytes, want %d", len(tail), StderrTailBytes)
	}
	if !bytes.HasSuffix(tail, []byte("END-OF-FLOOD\n")) {
		t.Fatalf("tail does not end with the last line: %q", tail[len(tail)-40:])
	}
	if c.proc.StderrTotal() < 2<<20 {
		t.Fatalf("only %d stderr bytes read", c.proc.StderrTotal())
	}
}

func TestClientServerExitMidRequest(t *testing.T) {
	c := start(t, fakeOptions(t, "exit-mid-request"))
	_, err := c.Request(context.Background(), "tools/call", callTool("echo", nil))
	me := mcpErr(t, err)
	if me.Code != "server_exited" || me.Message != "server exited (code 7)" || len(me.StderrTail) == 0 ||
		!strings.HasPrefix(me.StderrTail[len(me.StderrTail)-1], "mcpfake: dying") || !me.Delivered {
		t.Fatalf("%+v", me)
	}
	if errs.KindOf(mcp.Coded(err)) != errs.KindUnknown {
		t.Fatal("want outcome unknown")
	}
}

func TestClientStartFailures(t *testing.T) {
	o := fakeOptions(t, "no-init")
	o.StartupTimeout = 150 * time.Millisecond
	o.EOFGrace = 100 * time.Millisecond
	_, err := startOpts(context.Background(), o)
	if me := mcpErr(t, err); me.Code != errs.CodeInitializeTimeout || me.Message != "initialize timed out after 150ms" || me.Delivered {
		t.Fatalf("%+v", me)
	}
	_, err = startOpts(context.Background(), fakeOptions(t, "wrong-version"))
	if me := mcpErr(t, err); me.Code != "protocol_version_mismatch" || me.Class != mcp.ClassProtocol {
		t.Fatalf("%+v", me)
	}
	_, err = startOpts(context.Background(), testOptions{ProcessSpec: ProcessSpec{Command: "/nonexistent/server", Env: []string{}}})
	if me := mcpErr(t, err); me.Code != "spawn_failed" {
		t.Fatalf("%+v", me)
	}
}

func readPids(t *testing.T, path string) []int {
	t.Helper()
	var b []byte
	for range 12000 { // a 2-minute hang guard
		var err error
		if b, err = os.ReadFile(path); err == nil && len(b) > 0 && b[len(b)-1] == '\n' {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		n, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("pid file %q", b)
		}
		pids = append(pids, n)
	}
	if len(pids) != 3 {
		t.Fatalf("pid file %q", b)
	}
	return pids
}

// A grandchild that keeps stdout open and ignores SIGTERM: Stop must
// escalate to SIGKILL of the group and confirm that nothing is left.
func TestStopKillsTheWholeGroup(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pids")
	o := fakeOptions(t, "fork-grandchild", pidFile)
	o.EOFGrace, o.TermGrace = 150*time.Millisecond, 150*time.Millisecond
	c := start(t, o)
	if _, err := c.Request(context.Background(), "ping", nil); err != nil {
		t.Fatal(err)
	}
	pids := readPids(t, pidFile)
	if pids[0] != c.Pid() || pids[1] != c.Pid() {
		t.Fatalf("server pid/pgid %v, client pid %d: not its own group", pids, c.Pid())
	}
	cr, err := c.Stop()
	if err != nil {
		t.Fatal(err)
	}
	if cr == nil || cr.Reason != "forced-relay-exit" || cr.SignalRequested != "SIGKILL" {
		t.Fatalf("cleanupResult %+v", cr)
	}
	if (cr.Exit.Code == nil) == (cr.Exit.Signal == nil) {
		t.Fatalf("the leader's end is not recorded: %+v", cr.Exit)
	}
	if cr.EscalationAfterMs < 150 || cr.DurationMs < cr.EscalationAfterMs {
		t.Fatalf("timings %+v", cr)
	}
	if GroupAlive(pids[1]) {
		t.Fatal("process group still has live members")
	}
	if groupHasLiveMember(pids[1]) {
		t.Fatal("a live member is left in /proc")
	}
}

func TestStopEscalatesOnIgnoredTerm(t *testing.T) {
	o := fakeOptions(t, "ignore-term")
	o.EOFGrace, o.TermGrace = 100*time.Millisecond, 100*time.Millisecond
	c := start(t, o)
	pid := c.Pid()
	cr, err := c.Stop()
	if err != nil {
		t.Fatal(err)
	}
	if cr == nil || cr.SignalRequested != "SIGKILL" || cr.Exit.Signal == nil || *cr.Exit.Signal != "SIGKILL" {
		t.Fatalf("%+v", cr)
	}
	if GroupAlive(pid) {
		t.Fatal("group alive")
	}
	// Stop is idempotent and reports the same outcome.
	cr2, err2 := c.Stop()
	if cr2 != cr || err2 != nil {
		t.Fatal("second Stop differs")
	}
}

func TestBuildEnv(t *testing.T) {
	look := func(k string) (string, bool) {
		if k == "HAVE" {
			return "v", true
		}
		if k == "EMPTY" {
			return "", true
		}
		return "", false
	}
	env, err := mcp.BuildEnv([]string{"A=1", "B=x=y", "A=2", "C="}, []string{"HAVE", "EMPTY"}, look)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(env, ";"); got != "HAVE=v;EMPTY=;A=2;B=x=y;C=" {
		t.Fatalf("env %q", got)
	}
	env, _ = mcp.BuildEnv(nil, nil, look)
	if env == nil || len(env) != 0 {
		t.Fatal("an empty environment must be a non-nil empty list")
	}
	for _, bad := range [][2][]string{{{"NOEQ"}, nil}, {{"=v"}, nil}, {{"A\x00=v"}, nil}, {nil, {"MISSING"}}, {nil, {"A=B"}}} {
		if _, err := mcp.BuildEnv(bad[0], bad[1], look); errs.KindOf(err) != errs.KindUsage {
			t.Fatalf("%q: err %v", bad, err)
		}
	}
}

func TestCodedKinds(t *testing.T) {
	cases := []struct {
		err  *mcp.Error
		kind errs.Kind
	}{
		{mcp.ProtocolErr("malformed_message", "x"), errs.KindFailed},
		{mcp.Unavailable("spawn_failed", "x"), errs.KindUnavailable},
		{mcp.Unavailable("request_timeout", "x").WithDelivered(true), errs.KindUnknown},
		{mcp.ProtocolErr("rpc_error", "x").WithDelivered(true), errs.KindFailed},
	}
	for _, c := range cases {
		got := mcp.Coded(c.err)
		if errs.KindOf(got) != c.kind || errs.CodeOf(got) != c.err.Code {
			t.Errorf("%+v → %v %s", c.err, errs.KindOf(got), errs.CodeOf(got))
		}
		if e := errs.As(got); e.Hint == "" {
			t.Errorf("%s has no hint", c.err.Code)
		}
	}
}

func TestStopReportsUnconfirmedCleanup(t *testing.T) {
	o := fakeOptions(t, "ignore-term")
	o.EOFGrace, o.TermGrace, o.KillDeadline = 50*time.Millisecond, 50*time.Millisecond, 100*time.Millisecond
	c := start(t, o)
	pid := c.Pid()
	// A member that never goes away, and that we may not signal.
	const stuck = 999999
	liveMembersOf = func(p *Process) []procInfo {
		return append(p.liveMembers(), procInfo{pid: stuck, ppid: 1, pgrp: stuck, state: 'D'})
	}
	killFn = func(pid int, sig syscall.Signal) error {
		if pid == stuck {
			return syscall.EPERM
		}
		return syscall.Kill(pid, sig)
	}
	defer func() { liveMembersOf, killFn = (*Process).liveMembers, syscall.Kill }()
	cr, err := c.Stop()
	liveMembersOf, killFn = (*Process).liveMembers, syscall.Kill
	me := mcpErr(t, err)
	if me.Code != "cleanup_unconfirmed" || !strings.HasPrefix(me.Message, "cleanup could not be confirmed: stdin closed") {
		t.Fatalf("%+v", me)
	}
	// The cause chain: closure, both signals with the failure, the exit
	// of the main process, and what is left.
	for _, want := range []string{"stdin closed", "SIGTERM sent to group", "SIGKILL sent to group", "kill -SIGKILL 999999: operation not permitted", "main process " + strconv.Itoa(pid) + " ended (signal SIGKILL)", "still alive", "pid 999999 (group 999999, state D)"} {
		if !strings.Contains(me.Message, want) {
			t.Errorf("message lacks %q: %s", want, me.Message)
		}
	}
	var ce *CleanupError
	if !errors.As(err, &ce) || ce.Result != cr {
		t.Fatalf("the error does not carry the cleanup result: %v", err)
	}
	if cr == nil || cr.SignalRequested != "SIGKILL" || len(cr.Causes) != 5 || !slices.Equal(cr.Remaining, []int{stuck}) {
		t.Fatalf("%+v", cr)
	}
	if cr.SignalError != "kill -SIGTERM 999999: operation not permitted" || !slices.Contains(cr.OutsideGroup, stuck) {
		t.Fatalf("signal error and outside members: %+v", cr)
	}
	if GroupAlive(pid) { // the real group did die from the SIGKILL
		t.Fatal("group alive")
	}
}

func TestClientPreCancelledContextSendsNothing(t *testing.T) {
	c := start(t, fakeOptions(t, "echo"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := c.Request(ctx, "ping", nil)
	if me := mcpErr(t, err); me.Code != "cancelled" || me.Delivered {
		t.Fatalf("%+v", me)
	}
	if !c.IsAvailable() {
		t.Fatal("a request that was never sent retired the connection")
	}
}

// holdBaton makes c's callers read for themselves deterministically: the
// idle reader never takes over, and a ping (answered through whoever reads
// now) leaves the baton free.
func holdBaton(t *testing.T, c *Client) {
	t.Helper()
	c.Mu.Lock()
	c.idleDelay = time.Hour
	c.Mu.Unlock()
	if _, err := c.Request(context.Background(), "ping", nil); err != nil {
		t.Fatal(err)
	}
}

// waitReading waits until a caller holds the reader baton.
func waitReading(t *testing.T, c *Client) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(time.Millisecond) {
		c.Mu.Lock()
		reading := c.rstate == batonCaller && c.holder != nil
		c.Mu.Unlock()
		if reading {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("no caller took the reader baton")
		}
	}
}

func TestClientCancelInterruptsTheReadingCaller(t *testing.T) {
	c := start(t, fakeOptions(t, "echo"))
	holdBaton(t, c)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := c.Request(ctx, "tools/call", callTool("slow", map[string]any{"ms": 30000}))
		done <- err
	}()
	waitReading(t, c)
	cancel()
	select {
	case err := <-done:
		if me := mcpErr(t, err); me.Code != "cancelled" || !me.Delivered {
			t.Fatalf("%+v", me)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("cancellation did not interrupt the caller's read")
	}
	if c.IsAvailable() {
		t.Fatal("available after a cancellation")
	}
}

func TestClientTimeoutInterruptsTheReadingCaller(t *testing.T) {
	o := fakeOptions(t, "echo")
	o.RequestTimeout = 300 * time.Millisecond
	o.EOFGrace, o.TermGrace = 100*time.Millisecond, 100*time.Millisecond
	c := start(t, o)
	holdBaton(t, c)
	done := make(chan error, 1)
	t0 := time.Now()
	go func() {
		_, err := c.Request(context.Background(), "tools/call", callTool("slow", map[string]any{"ms": 30000}))
		done <- err
	}()
	waitReading(t, c)
	me := mcpErr(t, <-done)
	if me.Code != "request_timeout" || !me.Delivered {
		t.Fatalf("%+v", me)
	}
	if el := time.Since(t0); el > 5*time.Second {
		t.Fatalf("timeout took %v", el)
	}
}

func TestClientRetirementInterruptsTheReadingCaller(t *testing.T) {
	o := fakeOptions(t, "echo")
	// The server (busy in "slow") would end only at SIGTERM, a minute
	// after the retirement: a caller blocked in its read must return while
	// the server still runs. The test then kills the group itself.
	o.EOFGrace, o.TermGrace = time.Minute, 100*time.Millisecond
	slow := callTool("slow", map[string]any{"ms": 300000})
	const failSafe = 30 * time.Second
	stillRunning := func(c *Client) {
		t.Helper()
		select {
		case <-c.proc.Exited():
			t.Fatal("the caller returned only after the server ended")
		default:
		}
		_ = syscall.Kill(-c.Pid(), syscall.SIGKILL)
	}
	c := start(t, o)
	holdBaton(t, c)
	done := make(chan error, 1)
	go func() {
		_, err := c.Request(context.Background(), "tools/call", slow)
		done <- err
	}()
	waitReading(t, c)
	// Another caller's cancellation retires the connection: the reading
	// caller gets the retained first error at once.
	ctx, cancel := context.WithCancel(context.Background())
	other := make(chan error, 1)
	go func() {
		_, err := c.Request(ctx, "tools/call", slow)
		other <- err
	}()
	waitPending(t, c, 2)
	cancel()
	for _, ch := range []chan error{done, other} {
		select {
		case err := <-ch:
			if me := mcpErr(t, err); me.Code != "cancelled" || !me.Delivered {
				t.Fatalf("%+v", me)
			}
		case <-time.After(failSafe):
			t.Fatal("the retirement did not interrupt the reading caller")
		}
	}
	stillRunning(c)
	// Stop, too, interrupts a reading caller.
	c2 := start(t, o)
	holdBaton(t, c2)
	go func() {
		_, err := c2.Request(context.Background(), "tools/call", slow)
		done <- err
	}()
	waitReading(t, c2)
	go func() { _, _ = c2.Stop() }()
	select {
	case err := <-done:
		if me := mcpErr(t, err); me.Code != "client_stopped" || !me.Delivered {
			t.Fatalf("%+v", me)
		}
	case <-time.After(failSafe):
		t.Fatal("Stop did not interrupt the reading caller")
	}
	stillRunning(c2)
}

func TestClientServerMessagesWhileNobodyWaits(t *testing.T) {
	notes := make(chan string, 16)
	o := fakeOptions(t, "echo")
	o.OnNotification = func(method string, params json.RawMessage) { notes <- method + " " + string(params) }
	c := start(t, o)
	<-notes // the one before the initialize reply
	if _, err := c.Request(context.Background(), "tools/call", callTool("later", map[string]any{"ms": 50})); err != nil {
		t.Fatal(err)
	}
	// No call is in flight now: the server's ping must still be answered
	// and its notification delivered.
	select {
	case n := <-notes:
		if !strings.Contains(n, `late-ping`) || !strings.Contains(n, `\"result\":{}`) {
			t.Fatalf("notification %s", n)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a server request and notification while nobody waits were not handled")
	}
}

// waitPending waits until c has n requests in flight.
func waitPending(t *testing.T, c *Client, n int) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		c.Mu.Lock()
		got := c.PendingLocked()
		c.Mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d requests pending, want %d", got, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// stopWithin bounds a stop path: it must return within the sum of its
// graces plus a generous slack (the machine may be loaded); it is measured
// by waiting on the call, never by sleeping.
func stopWithin(t *testing.T, o testOptions, f func()) time.Duration {
	t.Helper()
	bound := o.EOFGrace + o.TermGrace + o.KillDeadline + 30*time.Second
	t0 := time.Now()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(bound):
		t.Fatalf("did not return within %v", bound)
	}
	return time.Since(t0)
}

func TestClientWriteFailureRetires(t *testing.T) {
	c := start(t, fakeOptions(t, "echo"))
	if _, err := c.Request(context.Background(), "tools/call", callTool("close-stdin", nil)); err != nil {
		t.Fatal(err)
	}
	_, err := c.Request(context.Background(), "ping", nil)
	me := mcpErr(t, err)
	if me.Code != "write_failed" || !strings.Contains(me.Message, "broken pipe") {
		t.Fatalf("%+v", me)
	}
	if c.IsAvailable() {
		t.Fatal("still available after a failed write")
	}
	if re := mcpErr(t, c.Err()); re.Code != "write_failed" {
		t.Fatalf("retained %+v", re)
	}
	_, err = c.Request(context.Background(), "ping", nil)
	if me := mcpErr(t, err); me.Code != "write_failed" || me.Delivered {
		t.Fatalf("later call: %+v", me)
	}
}

func TestClientServerThatStopsReading(t *testing.T) {
	o := fakeOptions(t, "stop-reading")
	o.RequestTimeout = 300 * time.Millisecond
	o.EOFGrace, o.TermGrace, o.KillDeadline = 100*time.Millisecond, 100*time.Millisecond, time.Second
	c := start(t, o)
	big := callTool("echo", map[string]any{"message": strings.Repeat("x", 1<<20)})
	var err error
	stopWithin(t, o, func() { _, err = c.Request(context.Background(), "tools/call", big) })
	me := mcpErr(t, err)
	if me.Code != "request_timeout" || !strings.Contains(me.Message, "not reading its stdin") || !me.Delivered {
		t.Fatalf("%+v", me)
	}
	var cr *mcp.CleanupResult
	stopWithin(t, o, func() { cr, err = c.Stop() })
	if err != nil || cr == nil || cr.SignalRequested != "SIGKILL" {
		t.Fatalf("cr=%+v err=%v", cr, err)
	}
}

func TestClientServerClosesStdoutKeepsStderr(t *testing.T) {
	o := fakeOptions(t, "echo")
	o.EOFGrace, o.TermGrace, o.KillDeadline = 100*time.Millisecond, 100*time.Millisecond, time.Second
	var err error
	stopWithin(t, o, func() { _, err = callOpts(context.Background(), o, "tools/call", callTool("close-stdout", nil)) })
	if errs.CodeOf(err) != "server_closed_stdout" {
		t.Fatalf("%v", err)
	}
}

func TestClientRejectsBadUTF8AndScalarResults(t *testing.T) {
	for _, mode := range []string{"bad-utf8", "scalar-result"} {
		c := start(t, fakeOptions(t, mode))
		_, err := c.Request(context.Background(), "tools/call", callTool("echo", nil))
		me := mcpErr(t, err)
		if me.Class != mcp.ClassProtocol || me.Code != "malformed_message" {
			t.Fatalf("%s: %+v", mode, me)
		}
		if c.IsAvailable() {
			t.Fatalf("%s: a malformed frame did not retire the connection", mode)
		}
	}
}

// Descendants in their own session (setsid) hold stdout and stderr and
// ignore SIGTERM: Stop finds them outside the group, kills them, and
// returns within its graces; an orphaned one is found with Subreaper.
func TestStopReachesSetsidDescendants(t *testing.T) {
	for _, mode := range []string{"setsid-child", "setsid-orphan"} {
		t.Run(mode, func(t *testing.T) {
			pidFile := filepath.Join(t.TempDir(), "pids")
			o := fakeOptions(t, mode, pidFile)
			o.Subreaper = mode == "setsid-orphan"
			o.EOFGrace, o.TermGrace, o.KillDeadline = 100*time.Millisecond, 100*time.Millisecond, 2*time.Second
			c := start(t, o)
			if _, err := c.Request(context.Background(), "ping", nil); err != nil {
				t.Fatal(err)
			}
			pids := readPids(t, pidFile)
			var cr *mcp.CleanupResult
			var err error
			stopWithin(t, o, func() { cr, err = c.Stop() })
			if err != nil {
				t.Fatal(err)
			}
			if cr == nil || cr.SignalRequested != "SIGKILL" || !slices.Contains(cr.OutsideGroup, pids[2]) {
				t.Fatalf("cleanupResult %+v, holder %d", cr, pids[2])
			}
			if err := syscall.Kill(pids[2], 0); !errors.Is(err, syscall.ESRCH) {
				st, _ := os.ReadFile("/proc/" + strconv.Itoa(pids[2]) + "/stat")
				if !bytes.Contains(st, []byte(") Z ")) {
					t.Fatalf("the setsid holder %d is still alive: %s", pids[2], st)
				}
			}
		})
	}
}

func TestExitNotFoundHintsEnvPassPath(t *testing.T) {
	_, err := callOpts(context.Background(), testOptions{ProcessSpec: ProcessSpec{Command: "sh", Args: []string{"-c", "no-such-program-anywhere"}, Env: []string{}}}, "ping", nil)
	e := errs.As(err)
	if e == nil || e.Code != "server_exited" || !strings.Contains(e.Message, "code 127") || !strings.Contains(e.Hint, "--env-pass PATH") {
		t.Fatalf("%+v", e)
	}
}

// A command that cannot be a server is a definitive failure (exit 1), with
// a hint naming the cause; a failure that may pass stays exit 5.
func TestDefinitiveStartFailures(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain.txt")
	if err := os.WriteFile(plain, []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		o    testOptions
		code errs.Code
		hint string
	}{
		{"missing path", testOptions{ProcessSpec: ProcessSpec{Command: filepath.Join(dir, "no", "server"), Env: []string{}}}, "spawn_failed", "no such file"},
		{"not in clawkit's PATH", testOptions{ProcessSpec: ProcessSpec{Command: "no-such-program-anywhere", Env: []string{}}}, "spawn_failed", "no such program in clawkit's PATH"},
		{"not in the given PATH", testOptions{ProcessSpec: ProcessSpec{Command: "sh", Env: []string{"PATH=" + dir}}}, "spawn_failed", "no such program in the PATH given"},
		{"not executable", testOptions{ProcessSpec: ProcessSpec{Command: plain, Env: []string{}}}, "spawn_failed", "not an executable program"},
		{"a folder", testOptions{ProcessSpec: ProcessSpec{Command: dir, Env: []string{}}}, "spawn_failed", "not an executable program"},
		{"exits at once", testOptions{ProcessSpec: ProcessSpec{Command: "/bin/true", Env: []string{}}}, "server_exited", "wrote nothing on stderr"},
		{"exits with a reason", testOptions{ProcessSpec: ProcessSpec{Command: "/bin/sh", Args: []string{"-c", "echo no config >&2; exit 3"}, Env: []string{}}}, "server_exited", "its stderr tail follows"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := startOpts(context.Background(), c.o)
			me := mcpErr(t, err)
			if me.Code != c.code || !me.Definitive {
				t.Fatalf("%+v", me)
			}
			ce := errs.As(mcp.Coded(err))
			if ce == nil || ce.Kind != errs.KindFailed || !strings.Contains(ce.Hint, c.hint) {
				t.Fatalf("coded %+v, want exit 1 with a hint containing %q", ce, c.hint)
			}
		})
	}
	// A server that ends in the middle of a request after the handshake is
	// not definitive: the request may have taken effect (exit 4).
	c, err := startOpts(context.Background(), fakeOptions(t, "exit-mid-request"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Request(context.Background(), "tools/call", json.RawMessage(`{"name":"echo"}`))
	_, _ = c.Stop()
	if me := mcpErr(t, err); me.Definitive || errs.KindOf(mcp.Coded(err)) != errs.KindUnknown {
		t.Fatalf("%+v", me)
	}
}

// After a fatal protocol error the stop signals the group at once instead
// of waiting the EOF grace (here 5 s), as OpenClaw's client does.
func TestStopPromptAfterProtocolError(t *testing.T) {
	o := fakeOptions(t, "oversized")
	o.MaxFrameBytes = 4096
	o.EOFGrace = 5 * time.Second
	c, err := startOpts(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Request(context.Background(), "tools/call", json.RawMessage(`{"name":"echo"}`))
	if me := mcpErr(t, err); me.Code != "frame_too_large" {
		t.Fatalf("%+v", me)
	}
	cr, err := c.Stop()
	if err != nil {
		t.Fatal(err)
	}
	if cr == nil || cr.SignalRequested == "" || cr.EscalationAfterMs >= o.EOFGrace.Milliseconds() {
		t.Fatalf("cleanup %+v: want a signal sent before the %v EOF grace ran out", cr, o.EOFGrace)
	}
	// An ordinary failure (an error answer) keeps the grace: nothing forced.
	c, err = startOpts(context.Background(), fakeOptions(t, "echo"))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = c.Request(context.Background(), "tools/call", json.RawMessage(`{"name":"fail"}`))
	if cr, err := c.Stop(); cr != nil || err != nil {
		t.Fatalf("ordinary stop forced: %+v %v", cr, err)
	}
}

// A per-call timeout (a session line's timeoutMs) and a caller's own
// deadline are timeouts, never cancellations: request_timeout, delivered,
// and the connection retires as for the default deadline.
func TestClientPerCallTimeoutIsATimeout(t *testing.T) {
	o := fakeOptions(t, "echo")
	o.EOFGrace, o.TermGrace = 100*time.Millisecond, 100*time.Millisecond
	c := start(t, o)
	_, err := c.RequestTimeout(context.Background(), "tools/call", callTool("slow", map[string]any{"ms": 30000}), 50*time.Millisecond)
	if me := mcpErr(t, err); me.Code != "request_timeout" || !me.Delivered || me.Message != "request tools/call timed out after 50ms" {
		t.Fatalf("per-call timeout: %+v", me)
	}
	if c.IsAvailable() {
		t.Fatal("available after a timeout")
	}

	c2 := start(t, o)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = c2.Request(ctx, "tools/call", callTool("slow", map[string]any{"ms": 30000}))
	if me := mcpErr(t, err); me.Code != "request_timeout" || !me.Delivered || !strings.Contains(me.Message, "deadline") {
		t.Fatalf("caller's deadline: %+v", me)
	}
	// A deadline that passed before the request was sent: a timeout too,
	// not delivered, and the connection is not retired for it.
	c3 := start(t, o)
	_, err = c3.Request(ctx, "ping", nil)
	if me := mcpErr(t, err); me.Code != "request_timeout" || me.Delivered {
		t.Fatalf("expired before sending: %+v", me)
	}
	if !c3.IsAvailable() {
		t.Fatal("retired for a request never sent")
	}
}
