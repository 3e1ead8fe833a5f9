package owner

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clawkit/clawkit/pkg/errs"
)

// writeOp is the handle of the test registry's t.write.
var writeOp = Handle[json.RawMessage, any]{Name: "t.write"}

func testRegistry(calls *atomic.Int32) *Registry {
	r := NewRegistry()
	Register(r, Op[json.RawMessage, any]{Name: "t.write", Write: true, Run: func(ctx context.Context, env *OpEnv, p json.RawMessage) (any, error) {
		calls.Add(1)
		return map[string]bool{"ok": true}, env.Fence.AssertCurrent()
	}})
	return r
}

// shortHome returns a home whose socket path fits a unix address: under
// /tmp, since $TMPDIR may be long (CI runs these tests with a 100-byte one).
func shortHome(t *testing.T) Home {
	dir, err := os.MkdirTemp("/tmp", "ck")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := os.RemoveAll(dir); err != nil {
			t.Error(err)
		}
	})
	h := Home{Dir: filepath.Join(dir, "h")}
	if err := h.Ensure(); err != nil {
		t.Fatal(err)
	}
	return h
}

// A gateway whose record changes between the status check and dispatch:
// the router refuses (exit 3) and sends nothing.
func TestOwnerChangedBeforeDispatch(t *testing.T) {
	h := shortHome(t)
	var posted atomic.Int32
	ln, err := net.Listen("unix", h.Socket())
	if err != nil {
		t.Fatal(err)
	}
	rec := Record{OwnerID: "owner-a", PID: os.Getpid(), Socket: h.Socket()}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/status", func(w http.ResponseWriter, r *http.Request) {
		if err := json.NewEncoder(w).Encode(Status{OwnerID: "owner-a", PID: os.Getpid()}); err != nil {
			t.Error(err)
		}
		// Another gateway takes over right after answering.
		next := rec
		next.OwnerID = "owner-b"
		if err := WriteRecord(h, next); err != nil {
			t.Error(err)
		}
	})
	mux.HandleFunc("POST /v1/call", func(w http.ResponseWriter, r *http.Request) { posted.Add(1) })
	srv := &http.Server{Handler: mux}
	go func() { _ = srv.Serve(ln) }() // ErrServerClosed once srv.Close runs below
	defer func() {
		if err := srv.Close(); err != nil {
			t.Error(err)
		}
	}()
	if err := WriteRecord(h, rec); err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	r := &Router{Home: h, Registry: testRegistry(&calls), LockTimeout: time.Second}
	_, err = writeOp.Call(context.Background(), r, json.RawMessage(`{}`))
	if e := errs.As(err); e == nil || e.Code != "owner_changed" || e.Kind != errs.KindRefused {
		t.Fatalf("err = %v, want owner_changed refusal", err)
	}
	if posted.Load() != 0 || calls.Load() != 0 {
		t.Fatalf("dispatched %d remote, %d local calls; want none", posted.Load(), calls.Load())
	}
}

// A stale record (its pid is dead) is ignored and removed; the call runs
// locally under the lock.
func TestStaleRecordIgnored(t *testing.T) {
	h := shortHome(t)
	if err := WriteRecord(h, Record{OwnerID: "dead", PID: 1 << 22, Socket: h.Socket()}); err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	r := &Router{Home: h, Registry: testRegistry(&calls), LockTimeout: time.Second}
	if _, err := writeOp.Call(context.Background(), r, json.RawMessage(`{}`)); err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 1 {
		t.Fatalf("calls = %d", calls.Load())
	}
	if rec, _ := ReadRecord(h); rec != nil {
		t.Fatalf("stale record kept: %+v", rec)
	}
}

// The offline fence fails once the lock file is replaced under the owner.
func TestFenceFailsWhenLockReplaced(t *testing.T) {
	h := shortHome(t)
	r := NewRegistry()
	Register(r, Op[json.RawMessage, any]{Name: "t.replace", Write: true, Run: func(ctx context.Context, env *OpEnv, p json.RawMessage) (any, error) {
		if err := env.Fence.AssertCurrent(); err != nil {
			t.Errorf("fence failed before replacement: %v", err)
		}
		if err := os.Remove(h.Lock()); err != nil {
			return nil, err
		}
		if err := os.WriteFile(h.Lock(), nil, 0o600); err != nil {
			return nil, err
		}
		return nil, env.Fence.AssertCurrent()
	}})
	_, err := (Handle[json.RawMessage, any]{Name: "t.replace"}).Call(context.Background(), &Router{Home: h, Registry: r, LockTimeout: time.Second}, json.RawMessage(`{}`))
	if errs.CodeOf(err) != "owner_retired" {
		t.Fatalf("err = %v, want owner_retired", err)
	}
}

// A lock that no live process holds is being freed (a holder that died,
// its last threads still going; or this process's own attempt scheduled
// late): --lock-timeout 1ms waits for it instead of calling it busy. A
// lock a live process holds is refused at the timeout.
func TestLockFreedNotBusy(t *testing.T) {
	hold := func(t *testing.T, h Home, pid int) *Lock {
		t.Helper()
		l, err := AcquireLock(context.Background(), h.Lock())
		if err != nil {
			t.Fatal(err)
		}
		if err := l.f.Truncate(0); err != nil {
			t.Fatal(err)
		}
		if _, err := l.f.WriteAt([]byte(strconv.Itoa(pid)+"\n"), 0); err != nil {
			t.Fatal(err)
		}
		return l
	}
	// A pid that is certainly dead: a child that has exited and been reaped.
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	t.Run("dead holder", func(t *testing.T) {
		h := shortHome(t)
		l := hold(t, h, dead.Process.Pid)
		go func() { time.Sleep(200 * time.Millisecond); l.Release() }()
		var calls atomic.Int32
		r := &Router{Home: h, Registry: testRegistry(&calls), LockTimeout: time.Millisecond}
		if _, err := writeOp.Call(context.Background(), r, json.RawMessage(`{}`)); err != nil {
			t.Fatalf("a lock being freed was refused: %v", err)
		}
		if calls.Load() != 1 {
			t.Fatalf("calls %d", calls.Load())
		}
	})
	t.Run("live holder", func(t *testing.T) {
		h := shortHome(t)
		live := exec.Command("sleep", "30")
		if err := live.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = live.Process.Kill(); _ = live.Wait() }()
		l := hold(t, h, live.Process.Pid)
		defer l.Release()
		var calls atomic.Int32
		r := &Router{Home: h, Registry: testRegistry(&calls), LockTimeout: time.Millisecond}
		_, err := writeOp.Call(context.Background(), r, json.RawMessage(`{}`))
		if errs.CodeOf(err) != CodeOwnerBusy || !strings.Contains(err.Error(), "pid "+strconv.Itoa(live.Process.Pid)) {
			t.Fatalf("a lock a live process holds: %v, want owner_busy naming pid %d", err, live.Process.Pid)
		}
		if calls.Load() != 0 {
			t.Fatalf("calls %d", calls.Load())
		}
	})
}
