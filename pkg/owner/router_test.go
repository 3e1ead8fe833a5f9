package owner

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
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

// shortHome returns a home whose socket path fits a unix address.
func shortHome(t *testing.T) Home {
	dir, err := os.MkdirTemp("", "ck")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
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
		json.NewEncoder(w).Encode(Status{OwnerID: "owner-a", PID: os.Getpid()})
		// Another gateway takes over right after answering.
		next := rec
		next.OwnerID = "owner-b"
		WriteRecord(h, next)
	})
	mux.HandleFunc("POST /v1/call", func(w http.ResponseWriter, r *http.Request) { posted.Add(1) })
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	defer srv.Close()
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
	WriteRecord(h, Record{OwnerID: "dead", PID: 1 << 22, Socket: h.Socket()})
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
		os.Remove(h.Lock())
		os.WriteFile(h.Lock(), nil, 0o600)
		return nil, env.Fence.AssertCurrent()
	}})
	_, err := (Handle[json.RawMessage, any]{Name: "t.replace"}).Call(context.Background(), &Router{Home: h, Registry: r, LockTimeout: time.Second}, json.RawMessage(`{}`))
	if errs.CodeOf(err) != "owner_retired" {
		t.Fatalf("err = %v, want owner_retired", err)
	}
}
