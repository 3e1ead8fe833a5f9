package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/fsx"
	"github.com/clawkit/clawkit/pkg/owner"
)

// startWith starts a gateway with opts (Home, Registry and Ready filled
// in) and waits until it serves.
func startWith(t *testing.T, reg *owner.Registry, opts Options) (owner.Home, *owner.Record, chan error) {
	t.Helper()
	dir, err := os.MkdirTemp("", "ckgw")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := os.RemoveAll(dir); err != nil {
			t.Error(err)
		}
	})
	h := owner.Home{Dir: filepath.Join(dir, "h")}
	ready := make(chan owner.Record, 1)
	done := make(chan error, 1)
	opts.Home, opts.Registry, opts.Version = h, reg, "test"
	opts.LockTimeout = time.Second
	opts.Ready = func(r owner.Record) { ready <- r }
	go func() { done <- Run(context.Background(), opts) }()
	select {
	case r := <-ready:
		return h, &r, done
	case err := <-done:
		t.Fatalf("gateway exited: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("gateway did not start")
	}
	return h, nil, nil
}

func echoRegistry() *owner.Registry {
	reg := owner.NewRegistry()
	owner.Register(reg, owner.Op[json.RawMessage, any]{Name: "t.echo", Write: true, Run: func(ctx context.Context, env *owner.OpEnv, p json.RawMessage) (any, error) {
		return map[string]bool{"ok": true}, nil
	}})
	owner.Register(reg, owner.Op[json.RawMessage, any]{Name: "t.fail", Write: true, Run: func(ctx context.Context, env *owner.OpEnv, p json.RawMessage) (any, error) {
		return nil, errs.Refused("t_refused", "refused for the test")
	}})
	return reg
}

func call(t *testing.T, rec *owner.Record, method string) error {
	t.Helper()
	_, err := owner.NewClient(rec.Socket).Call(context.Background(), owner.CallRequest{Method: method, Params: json.RawMessage(`{}`), ExpectedOwnerID: rec.OwnerID, Scopes: []string{"operator.admin"}})
	return err
}

// The systemd protocol: READY=1 once the socket serves, WATCHDOG=1 while
// healthy (at half of WATCHDOG_USEC), STOPPING=1 on shutdown, in that
// order; the variables are removed so nothing the gateway starts inherits
// them.
func TestSystemdNotifyOrder(t *testing.T) {
	dir, err := os.MkdirTemp("/tmp", "cknotify") // a short path: a socket address
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := os.RemoveAll(dir); err != nil {
			t.Error(err)
		}
	}()
	addr := filepath.Join(dir, "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: addr, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer fsx.CloseRead(conn)
	t.Setenv("NOTIFY_SOCKET", addr)
	t.Setenv("WATCHDOG_USEC", "100000") // a ping every 50 ms
	t.Setenv("WATCHDOG_PID", "")
	msgs := make(chan string, 100)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				close(msgs)
				return
			}
			msgs <- string(buf[:n])
		}
	}()
	_, rec, done := startWith(t, echoRegistry(), Options{})
	for _, k := range []string{"NOTIFY_SOCKET", "WATCHDOG_USEC"} {
		if v, ok := os.LookupEnv(k); ok {
			t.Fatalf("%s=%q is still set: a hook or MCP server would inherit it", k, v)
		}
	}
	next := func() string {
		select {
		case m := <-msgs:
			return m
		case <-time.After(20 * time.Second):
			t.Fatal("no notification")
			return ""
		}
	}
	first := next()
	if !strings.HasPrefix(first, "READY=1\n") || !strings.Contains(first, "STATUS=serving on "+rec.Socket) || !strings.Contains(first, fmt.Sprintf("MAINPID=%d", os.Getpid())) {
		t.Fatalf("first notification %q, want READY=1 with the socket and pid", first)
	}
	for range 2 {
		if m := next(); m != "WATCHDOG=1" {
			t.Fatalf("after READY: %q, want WATCHDOG=1", m)
		}
	}
	if err := owner.NewClient(rec.Socket).Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// Watchdog pings already queued may come first; then STOPPING, and
	// nothing after it.
	var last string
	for {
		m := next()
		if m == "WATCHDOG=1" {
			continue
		}
		last = m
		break
	}
	if !strings.HasPrefix(last, "STOPPING=1\n") {
		t.Fatalf("on stop: %q, want STOPPING=1", last)
	}
	select {
	case m := <-msgs:
		t.Fatalf("after STOPPING: %q", m)
	default:
	}
}

// Without NOTIFY_SOCKET nothing is sent and nothing fails.
func TestNoNotifySocket(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", "")
	if n := takeNotifier(); n != nil {
		t.Fatalf("notifier %+v without NOTIFY_SOCKET", n)
	}
	var n *notifier
	n.send("READY=1") // a nil notifier is a no-op
}

// WATCHDOG_PID naming another process: no watchdog for this one.
func TestWatchdogForAnotherPID(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", "/nonexistent")
	t.Setenv("WATCHDOG_USEC", "2000000")
	t.Setenv("WATCHDOG_PID", "1")
	if n := takeNotifier(); n == nil || n.watchdog != 0 {
		t.Fatalf("notifier %+v: want no watchdog", n)
	}
	t.Setenv("NOTIFY_SOCKET", "/nonexistent")
	t.Setenv("WATCHDOG_USEC", "2000000")
	t.Setenv("WATCHDOG_PID", fmt.Sprint(os.Getpid()))
	if n := takeNotifier(); n == nil || n.watchdog != time.Second {
		t.Fatalf("notifier %+v: want a 1s watchdog (half of WATCHDOG_USEC)", n)
	}
}

// Every message and value that reaches the log is scrubbed of the
// secrets the gateway knows and of URL credentials.
func TestLogScrubsSecrets(t *testing.T) {
	const key = "AIzaSyTESTKEY-0123456789abcdef"
	s := &Secrets{}
	s.Add(key, "pw-database-9876")
	var buf bytes.Buffer
	lg := NewLogger(&buf, LogConfig{Format: "json"}, slog.LevelDebug, s)
	lg = lg.With("ctx", "with "+key)
	lg.Info("provider said: bad key "+key,
		"error", errors.New("400: API key "+key+" not valid"),
		"url", "https://example.test/v1?key="+key,
		"dsn", "postgres://u:pw-database-9876@db/x",
		slog.Group("g", "inner", key),
		"any", []string{key})
	lg.WithGroup("grp").Debug("x", "v", key)
	out := buf.String()
	for _, sec := range []string{key, "pw-database-9876"} {
		if strings.Contains(out, sec) {
			t.Fatalf("secret %q reached the log:\n%s", sec, out)
		}
	}
	if !strings.Contains(out, `"msg":"provider said: bad key`) || strings.Count(out, "\n") != 2 {
		t.Fatalf("log lost its lines:\n%s", out)
	}
}

func TestParseLogConfig(t *testing.T) {
	if c, lv, err := ParseLogConfig("", ""); err != nil || c.Format != "text" || lv != slog.LevelInfo {
		t.Fatalf("defaults: %+v %v %v", c, lv, err)
	}
	if c, lv, err := ParseLogConfig("JSON", "debug"); err != nil || c.Format != "json" || lv != slog.LevelDebug {
		t.Fatalf("json debug: %+v %v %v", c, lv, err)
	}
	if _, _, err := ParseLogConfig("xml", ""); errs.CodeOf(err) != "invalid_log_format" || errs.KindOf(err) != errs.KindUsage {
		t.Fatalf("xml: %v", err)
	}
	for _, bad := range []string{"loud", "info+2", "-4"} {
		if _, _, err := ParseLogConfig("", bad); errs.CodeOf(err) != "invalid_log_level" {
			t.Fatalf("%q: %v", bad, err)
		}
	}
}

// One info line per call with the stable keys, its outcome and duration.
func TestOneLogLinePerCall(t *testing.T) {
	var buf syncBuffer
	_, rec, done := startWith(t, echoRegistry(), Options{Log: NewLogger(&buf, LogConfig{Format: "json"}, slog.LevelInfo, nil)})
	if err := call(t, rec, "t.echo.v1"); err != nil {
		t.Fatal(err)
	}
	if err := call(t, rec, "t.fail.v1"); errs.CodeOf(err) != "t_refused" {
		t.Fatal(err)
	}
	if err := owner.NewClient(rec.Socket).Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var calls []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("not a JSON line: %q", line)
		}
		for _, k := range []string{"time", "level", "msg", "owner", "engine"} {
			if _, ok := m[k]; !ok {
				t.Fatalf("line without %q: %s", k, line)
			}
		}
		if m["msg"] == "call" {
			calls = append(calls, m)
		}
	}
	if len(calls) != 2 {
		t.Fatalf("%d call lines, want 2:\n%s", len(calls), buf.String())
	}
	if calls[0]["method"] != "t.echo.v1" || calls[0]["outcome"] != "ok" || calls[0]["level"] != "INFO" {
		t.Fatalf("first call line: %v", calls[0])
	}
	if _, ok := calls[0]["duration_ms"].(float64); !ok {
		t.Fatalf("no duration_ms: %v", calls[0])
	}
	if calls[1]["outcome"] != "refused" || calls[1]["error.code"] != "t_refused" {
		t.Fatalf("second call line: %v", calls[1])
	}
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer fsx.CloseRead(resp.Body)
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// /healthz, /readyz and /metrics on --metrics-listen; promtool accepts
// the exposition.
func TestMetricsEndpoint(t *testing.T) {
	reg := echoRegistry()
	_, rec, done := startWith(t, reg, Options{MetricsListen: "127.0.0.1:0"})
	st, err := owner.NewClient(rec.Socket).Status(context.Background())
	if err != nil || st.MetricsAddr == "" {
		t.Fatalf("status %+v, %v: want the metrics address", st, err)
	}
	base := "http://" + st.MetricsAddr
	if err := call(t, rec, "t.echo.v1"); err != nil {
		t.Fatal(err)
	}
	_ = call(t, rec, "t.fail.v1")
	if code, body := get(t, base+"/healthz"); code != 200 || body != "ok\n" {
		t.Fatalf("/healthz: %d %q", code, body)
	}
	if code, body := get(t, base+"/readyz"); code != 200 || body != "ready\n" {
		t.Fatalf("/readyz: %d %q", code, body)
	}
	code, body := get(t, base+"/metrics")
	if code != 200 {
		t.Fatalf("/metrics: %d", code)
	}
	for _, want := range []string{
		`clawkit_build_info{goversion="`,
		`clawkit_gateway_calls_total{method="t.echo.v1",outcome="ok"} 1`,
		`clawkit_gateway_calls_total{method="t.fail.v1",outcome="refused"} 1`,
		`clawkit_gateway_call_duration_seconds_count{method="t.echo.v1"} 1`,
		`clawkit_db_open_connections{pool="sql"}`,
		`clawkit_database_up 1`,
		`clawkit_gateway_ready 1`,
		`# TYPE clawkit_provider_requests_total counter`,
		`# TYPE clawkit_research_poll_duration_seconds histogram`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	promtool(t, body)
	if err := owner.NewClient(rec.Socket).Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// promtool checks an exposition; it comes from Debian's prometheus
// package, which .ci/run installs.
func promtool(t *testing.T, exposition string) {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("promtool is missing: .ci/run installs Debian's prometheus package for it")
		}
		t.Skip("promtool not installed (Debian package prometheus): the exposition is not checked by it")
	}
	cmd := exec.Command(p, "check", "metrics")
	cmd.Stdin = strings.NewReader(exposition)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check metrics: %v\n%s", err, out)
	}
}

// A background scheduler that stops while the gateway serves makes it
// not ready, with the reason.
func TestReadyzSchedulerStopped(t *testing.T) {
	reg := echoRegistry()
	stopped := make(chan struct{})
	reg.OnGatewayStart(func(ctx context.Context, env *owner.OpEnv) { close(stopped) })
	_, rec, done := startWith(t, reg, Options{MetricsListen: "127.0.0.1:0"})
	<-stopped
	st, _ := owner.NewClient(rec.Socket).Status(context.Background())
	var code int
	var body string
	for range 200 { // the starter's return is counted right after it
		if code, body = get(t, "http://"+st.MetricsAddr+"/readyz"); code == 503 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if code != 503 || !strings.Contains(body, "the background scheduler stopped") {
		t.Fatalf("/readyz: %d %q", code, body)
	}
	// /healthz still says the process serves.
	if code, _ := get(t, "http://"+st.MetricsAddr+"/healthz"); code != 200 {
		t.Fatalf("/healthz: %d", code)
	}
	if err := owner.NewClient(rec.Socket).Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// A bad --metrics-listen is a usage error, a busy port a failure; the
// gateway then leaves no record behind.
func TestMetricsListenRefusals(t *testing.T) {
	dir := t.TempDir()
	h := owner.Home{Dir: filepath.Join(dir, "h")}
	err := Run(context.Background(), Options{Home: h, Registry: echoRegistry(), LockTimeout: time.Second, MetricsListen: "no-port"})
	if errs.CodeOf(err) != "invalid_metrics_listen" || errs.KindOf(err) != errs.KindUsage {
		t.Fatalf("no port: %v", err)
	}
	if _, err := os.Stat(h.Dir); err == nil {
		t.Fatal("a refused address created the home")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer fsx.CloseRead(ln)
	err = Run(context.Background(), Options{Home: h, Registry: echoRegistry(), LockTimeout: time.Second, MetricsListen: ln.Addr().String()})
	if errs.CodeOf(err) != "metrics_listen_failed" || errs.KindOf(err) != errs.KindFailed {
		t.Fatalf("busy port: %v", err)
	}
	if _, err := os.Stat(h.Record()); err == nil {
		t.Fatal("a refused start left a gateway record")
	}
}

// SIGTERM (the context ends): admission closes at once, the call in
// flight finishes and is answered, and Run returns only then.
func TestSignalDrainsInFlight(t *testing.T) {
	reg := owner.NewRegistry()
	entered, release := make(chan struct{}), make(chan struct{})
	// Only the first call blocks. The signal is seen by the gateway's own
	// goroutine, so a call sent in the moment between signal() and that is
	// admitted; it must finish normally rather than wait for release (the
	// test sends it synchronously) or close entered twice.
	var calls atomic.Int32
	owner.Register(reg, owner.Op[json.RawMessage, any]{Name: "t.slow", Write: true, Run: func(ctx context.Context, env *owner.OpEnv, p json.RawMessage) (any, error) {
		if calls.Add(1) > 1 {
			return map[string]bool{"early": true}, nil
		}
		close(entered)
		<-release
		return map[string]bool{"finished": true}, nil
	}})
	dir, err := os.MkdirTemp("", "ckgw")
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := os.RemoveAll(dir); err != nil {
			t.Error(err)
		}
	}()
	h := owner.Home{Dir: filepath.Join(dir, "h")}
	ctx, signal := context.WithCancel(context.Background())
	ready := make(chan owner.Record, 1)
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Options{Home: h, Registry: reg, LockTimeout: time.Second, DrainTimeout: time.Minute, Ready: func(r owner.Record) { ready <- r }})
	}()
	rec := <-ready
	res := make(chan error, 1)
	go func() {
		out, err := owner.NewClient(rec.Socket).Call(context.Background(), owner.CallRequest{Method: "t.slow.v1", Params: json.RawMessage(`{}`), ExpectedOwnerID: rec.OwnerID, Scopes: []string{"operator.admin"}})
		if err == nil && !strings.Contains(string(out), "finished") {
			err = fmt.Errorf("reply %s", out)
		}
		res <- err
	}()
	<-entered
	signal()
	// Admission is closed once the gateway saw the signal.
	var refused error
	for range 500 {
		_, refused = owner.NewClient(rec.Socket).Call(context.Background(), owner.CallRequest{Method: "t.slow.v1", Params: json.RawMessage(`{}`), ExpectedOwnerID: rec.OwnerID, Scopes: []string{"operator.admin"}})
		if refused != nil {
			break
		}
	}
	if errs.CodeOf(refused) != "gateway_stopping" {
		t.Fatalf("a call during the drain: %v, want gateway_stopping", refused)
	}
	select {
	case err := <-done:
		t.Fatalf("the gateway returned (%v) with a call in flight", err)
	default:
	}
	close(release)
	if err := <-res; err != nil {
		t.Fatalf("the in-flight call: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// syncBuffer is a bytes.Buffer safe for the gateway's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
