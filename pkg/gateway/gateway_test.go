package gateway

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/owner"
)

func startGateway(t *testing.T, reg *owner.Registry) (owner.Home, *owner.Record, chan error) {
	t.Helper()
	dir, err := os.MkdirTemp("", "ckgw")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	h := owner.Home{Dir: filepath.Join(dir, "h")}
	ready := make(chan owner.Record, 1)
	done := make(chan error, 1)
	go func() {
		done <- Run(context.Background(), Options{Home: h, Registry: reg, Version: "test", LockTimeout: time.Second,
			DrainTimeout: 10 * time.Second, Ready: func(r owner.Record) { ready <- r }})
	}()
	select {
	case r := <-ready:
		return h, &r, done
	case err := <-done:
		t.Fatalf("gateway exited: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("gateway did not start")
	}
	return h, nil, nil
}

// Stopping a gateway retires the fence before draining: an in-flight
// operation finishes (its reply is delivered) but can no longer publish.
func TestStopRetiresFenceBeforeDrain(t *testing.T) {
	reg := owner.NewRegistry()
	entered := make(chan struct{})
	release := make(chan struct{})
	reg.Register(owner.Method{Name: "t.slow", Write: true, Handler: func(ctx context.Context, env *owner.Env, p json.RawMessage) (any, error) {
		if err := env.Scope.AssertCurrent(); err != nil {
			return nil, err
		}
		close(entered)
		<-release
		// About to publish: must be refused now.
		return map[string]bool{"published": true}, env.Scope.AssertCurrent()
	}})
	h, rec, done := startGateway(t, reg)
	c := owner.NewClient(rec.Socket)
	type result struct {
		out json.RawMessage
		err error
	}
	res := make(chan result, 1)
	go func() {
		out, err := owner.NewClient(rec.Socket).Call(context.Background(), owner.CallRequest{Method: "t.slow.v1", Params: json.RawMessage(`{}`), ExpectedOwnerID: rec.OwnerID, Scopes: []string{"state.read", "state.write"}})
		res <- result{out, err}
	}()
	<-entered
	if err := owner.NewClient(rec.Socket).Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	// New calls are refused while draining.
	time.Sleep(50 * time.Millisecond)
	_, err := c.Call(context.Background(), owner.CallRequest{Method: "t.slow.v1", Params: json.RawMessage(`{}`), ExpectedOwnerID: rec.OwnerID, Scopes: []string{"state.read", "state.write"}})
	if err == nil {
		t.Fatal("a call was admitted during drain")
	}
	close(release)
	r := <-res
	if errs.CodeOf(r.err) != "owner_retired" || errs.KindOf(r.err) != errs.KindRefused {
		t.Fatalf("in-flight call: %v (%s), want owner_retired refusal", r.err, r.out)
	}
	if err := <-done; err != nil {
		t.Fatalf("gateway: %v", err)
	}
	if rec2, _ := owner.ReadRecord(h); rec2 != nil {
		t.Fatal("record left after stop")
	}
}

// A handler error that is not classified reaches the client as outcome
// unknown; a classified one keeps its kind.
func TestErrorClassification(t *testing.T) {
	reg := owner.NewRegistry()
	reg.Register(owner.Method{Name: "t.plain", Write: true, Handler: func(ctx context.Context, env *owner.Env, p json.RawMessage) (any, error) {
		return nil, os.ErrInvalid
	}})
	reg.Register(owner.Method{Name: "t.busy", Write: true, Handler: func(ctx context.Context, env *owner.Env, p json.RawMessage) (any, error) {
		return nil, errs.Unavailable("busy", "busy").WithRetryAfter(1500)
	}})
	_, rec, done := startGateway(t, reg)
	c := owner.NewClient(rec.Socket)
	call := func(m string) error {
		_, err := c.Call(context.Background(), owner.CallRequest{Method: m, Params: json.RawMessage(`{}`), ExpectedOwnerID: rec.OwnerID, Scopes: []string{"state.read", "state.write"}})
		return err
	}
	if err := call("t.plain.v1"); errs.KindOf(err) != errs.KindUnknown {
		t.Fatalf("unclassified: %v (kind %v)", err, errs.KindOf(err))
	}
	err := call("t.busy.v1")
	if e := errs.As(err); e == nil || e.Kind != errs.KindUnavailable || e.RetryAfterMs != 1500 {
		t.Fatalf("classified: %#v", err)
	}
	c.Stop(context.Background())
	<-done
}

// Operation names are versioned: a CLI whose registry needs a version the
// running gateway lacks is refused (exit 3) before any effect, with a hint
// to restart the gateway, and never runs the call locally instead.
func TestOutdatedGatewayRefused(t *testing.T) {
	ran := 0
	old := owner.NewRegistry()
	old.Register(owner.Method{Name: "t.echo", Write: true, Handler: func(ctx context.Context, env *owner.Env, p json.RawMessage) (any, error) {
		ran++
		return map[string]int{"v": 1}, nil
	}})
	h, _, done := startGateway(t, old)
	if _, ok := old.LookupWire("t.echo.v1"); !ok {
		t.Fatal("an unversioned name is not registered as version 1")
	}
	ranLocal := 0
	cur := owner.NewRegistry()
	cur.Register(owner.Method{Name: "t.echo.v2", Write: true, Handler: func(ctx context.Context, env *owner.Env, p json.RawMessage) (any, error) {
		ranLocal++
		return map[string]int{"v": 2}, nil
	}})
	r := &owner.Router{Home: h, Registry: cur, LockTimeout: time.Second}
	err := r.Call(context.Background(), "t.echo.v2", map[string]any{}, nil)
	e := errs.As(err)
	if e == nil || e.Kind != errs.KindRefused || e.Code != "gateway_outdated" || !strings.Contains(e.Hint, "clawkit gateway stop") {
		t.Fatalf("got %#v", err)
	}
	if ran != 0 || ranLocal != 0 {
		t.Fatalf("ran on gateway %d, locally %d", ran, ranLocal)
	}
	// The version it has is still served.
	r.Registry = old
	var out map[string]int
	if err := r.Call(context.Background(), "t.echo", map[string]any{}, &out); err != nil || out["v"] != 1 {
		t.Fatalf("%v %v", err, out)
	}
	owner.NewClient(filepath.Join(h.Dir, "gateway.sock")).Stop(context.Background())
	<-done
}
