package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
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
	t.Cleanup(func() {
		if err := os.RemoveAll(dir); err != nil {
			t.Error(err)
		}
	})
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
	owner.Register(reg, owner.Op[json.RawMessage, any]{Name: "t.slow", Write: true, Run: func(ctx context.Context, env *owner.OpEnv, p json.RawMessage) (any, error) {
		if err := env.Fence.AssertCurrent(); err != nil {
			return nil, err
		}
		close(entered)
		<-release
		// About to publish: must be refused now.
		return map[string]bool{"published": true}, env.Fence.AssertCurrent()
	}})
	h, rec, done := startGateway(t, reg)
	c := owner.NewClient(rec.Socket)
	type result struct {
		out json.RawMessage
		err error
	}
	res := make(chan result, 1)
	go func() {
		out, err := owner.NewClient(rec.Socket).Call(context.Background(), owner.CallRequest{Method: "t.slow.v1", Params: json.RawMessage(`{}`), ExpectedOwnerID: rec.OwnerID, Scopes: []string{"operator.admin"}})
		res <- result{out, err}
	}()
	<-entered
	if err := owner.NewClient(rec.Socket).Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	// New calls are refused while draining: the stop was acknowledged, so
	// no call sent after it is admitted.
	_, err := c.Call(context.Background(), owner.CallRequest{Method: "t.slow.v1", Params: json.RawMessage(`{}`), ExpectedOwnerID: rec.OwnerID, Scopes: []string{"operator.admin"}})
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
	owner.Register(reg, owner.Op[json.RawMessage, any]{Name: "t.plain", Write: true, Run: func(ctx context.Context, env *owner.OpEnv, p json.RawMessage) (any, error) {
		return nil, os.ErrInvalid
	}})
	owner.Register(reg, owner.Op[json.RawMessage, any]{Name: "t.busy", Write: true, Run: func(ctx context.Context, env *owner.OpEnv, p json.RawMessage) (any, error) {
		return nil, errs.Unavailable("busy", "busy").WithRetryAfter(1500)
	}})
	_, rec, done := startGateway(t, reg)
	c := owner.NewClient(rec.Socket)
	call := func(m string) error {
		_, err := c.Call(context.Background(), owner.CallRequest{Method: m, Params: json.RawMessage(`{}`), ExpectedOwnerID: rec.OwnerID, Scopes: []string{"operator.admin"}})
		return err
	}
	if err := call("t.plain.v1"); errs.KindOf(err) != errs.KindUnknown {
		t.Fatalf("unclassified: %v (kind %v)", err, errs.KindOf(err))
	}
	err := call("t.busy.v1")
	if e := errs.As(err); e == nil || e.Kind != errs.KindUnavailable || e.RetryAfterMs != 1500 {
		t.Fatalf("classified: %#v", err)
	}
	if err := c.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
}

// Operation names are versioned: a CLI whose registry needs a version the
// running gateway lacks is refused (exit 3) before any effect, with a hint
// to restart the gateway, and never runs the call locally instead.
func TestOutdatedGatewayRefused(t *testing.T) {
	ran := 0
	old := owner.NewRegistry()
	owner.Register(old, owner.Op[json.RawMessage, any]{Name: "t.echo", Write: true, Run: func(ctx context.Context, env *owner.OpEnv, p json.RawMessage) (any, error) {
		ran++
		return map[string]int{"v": 1}, nil
	}})
	h, rec, done := startGateway(t, old)
	if _, ok := old.LookupWire("t.echo.v1"); !ok {
		t.Fatal("an unversioned name is not registered as version 1")
	}
	ranLocal := 0
	cur := owner.NewRegistry()
	owner.Register(cur, owner.Op[json.RawMessage, any]{Name: "t.echo.v2", Write: true, Run: func(ctx context.Context, env *owner.OpEnv, p json.RawMessage) (any, error) {
		ranLocal++
		return map[string]int{"v": 2}, nil
	}})
	r := &owner.Router{Home: h, Registry: cur, LockTimeout: time.Second}
	_, err := (owner.Handle[json.RawMessage, any]{Name: "t.echo.v2"}).Call(context.Background(), r, json.RawMessage(`{}`))
	e := errs.As(err)
	if e == nil || e.Kind != errs.KindRefused || e.Code != "gateway_outdated" || !strings.Contains(e.Hint, "clawkit gateway stop") {
		t.Fatalf("got %#v", err)
	}
	if ran != 0 || ranLocal != 0 {
		t.Fatalf("ran on gateway %d, locally %d", ran, ranLocal)
	}
	// The version it has is still served.
	r.Registry = old
	out, err := (owner.Handle[json.RawMessage, map[string]int]{Name: "t.echo"}).Call(context.Background(), r, json.RawMessage(`{}`))
	if err != nil || out["v"] != 1 {
		t.Fatalf("%v %v", err, out)
	}
	// The record's socket: under a long TMPDIR it is not in the home.
	if err := owner.NewClient(rec.Socket).Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
}

// rawCall posts a call and returns the gateway's reply body as sent.
func rawCall(t *testing.T, socket string, req owner.CallRequest) owner.CallReply {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", socket)
	}}}
	defer hc.CloseIdleConnections()
	body, _ := json.Marshal(req)
	resp, err := hc.Post("http://gateway/v1/call", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := resp.Body.Close(); err != nil {
			t.Error(err)
		}
	}()
	var rep owner.CallReply
	if err := json.NewDecoder(resp.Body).Decode(&rep); err != nil {
		t.Fatal(err)
	}
	return rep
}

// A handler that entered method work and began an effect never has its
// error reported as mutationAccepted:false; only an error raised before any
// effect is. The client keeps the handler's own classification either way.
func TestNoMutationAcceptedFalseAfterAnEffect(t *testing.T) {
	reg := owner.NewRegistry()
	owner.Register(reg, owner.Op[json.RawMessage, any]{Name: "t.before", Write: true, Run: func(ctx context.Context, env *owner.OpEnv, p json.RawMessage) (any, error) {
		return nil, errs.Refused("nope", "refused before any effect")
	}})
	owner.Register(reg, owner.Op[json.RawMessage, any]{Name: "t.after", Write: true, Run: func(ctx context.Context, env *owner.OpEnv, p json.RawMessage) (any, error) {
		if err := env.BeginWrite(); err != nil { // a write is about to happen
			return nil, err
		}
		return nil, errs.Unavailable("busy", "the provider is busy").WithRetryAfter(100)
	}})
	_, rec, done := startGateway(t, reg)
	call := func(m string) owner.CallReply {
		return rawCall(t, rec.Socket, owner.CallRequest{Method: m, Params: json.RawMessage(`{}`), ExpectedOwnerID: rec.OwnerID, Scopes: []string{"operator.admin"}})
	}
	if rep := call("t.before.v1"); rep.Error == nil || rep.Error.MutationAccepted == nil || *rep.Error.MutationAccepted {
		t.Fatalf("before: %+v", rep.Error)
	}
	rep := call("t.after.v1")
	if rep.Error == nil || rep.Error.MutationAccepted == nil || !*rep.Error.MutationAccepted {
		t.Fatalf("after an effect the reply must not say mutationAccepted:false: %+v", rep.Error)
	}
	_, err := owner.NewClient(rec.Socket).Call(context.Background(), owner.CallRequest{Method: "t.after.v1", Params: json.RawMessage(`{}`), ExpectedOwnerID: rec.OwnerID, Scopes: []string{"operator.admin"}})
	if e := errs.As(err); e == nil || e.Kind != errs.KindUnavailable || e.Code != "busy" {
		t.Fatalf("client: %#v", err)
	}
	if err := owner.NewClient(rec.Socket).Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
}

// Calls carry scopes and the gateway checks them: operator.admin is the
// default (no scopes), write grants read, read-only operations ask only for
// operator.read, and a call lacking its scope is refused before any effect.
func TestScopes(t *testing.T) {
	reg := owner.NewRegistry()
	ran := map[string]int{}
	handler := func(name string) func(context.Context, *owner.OpEnv, json.RawMessage) (any, error) {
		return func(ctx context.Context, env *owner.OpEnv, p json.RawMessage) (any, error) {
			ran[name]++
			return map[string]bool{"ok": true}, nil
		}
	}
	owner.Register(reg, owner.Op[json.RawMessage, any]{Name: "t.read", Run: handler("read")})
	owner.Register(reg, owner.Op[json.RawMessage, any]{Name: "t.write", Write: true, Scope: owner.ScopeWrite, Run: handler("write")})
	owner.Register(reg, owner.Op[json.RawMessage, any]{Name: "t.admin", Write: true, Run: handler("admin")})
	_, rec, done := startGateway(t, reg)
	call := func(m string, scopes ...string) error {
		_, err := owner.NewClient(rec.Socket).Call(context.Background(), owner.CallRequest{Method: m, Params: json.RawMessage(`{}`), ExpectedOwnerID: rec.OwnerID, Scopes: scopes})
		return err
	}
	for _, tc := range []struct {
		method string
		scopes []string
		ok     bool
	}{
		{"t.read.v1", []string{"operator.read"}, true},
		{"t.read.v1", []string{"operator.write"}, true},
		{"t.read.v1", nil, true},
		{"t.write.v1", []string{"operator.read"}, false},
		{"t.write.v1", []string{"operator.write"}, true},
		{"t.write.v1", []string{"operator.admin"}, true},
		{"t.admin.v1", []string{"operator.write"}, false},
		{"t.admin.v1", []string{"state.write"}, false},
		{"t.admin.v1", nil, true},
	} {
		err := call(tc.method, tc.scopes...)
		if tc.ok && err != nil {
			t.Errorf("%s %v: %v", tc.method, tc.scopes, err)
		}
		if !tc.ok && (errs.KindOf(err) != errs.KindRefused || errs.CodeOf(err) != "scope_missing") {
			t.Errorf("%s %v: %v, want scope_missing", tc.method, tc.scopes, err)
		}
	}
	if ran["read"] != 3 || ran["write"] != 2 || ran["admin"] != 1 {
		t.Fatalf("ran %v", ran)
	}
	// What the router asks for is only what the operation needs.
	for m, want := range map[string]string{"t.read": "operator.read", "t.write": "operator.write", "t.admin": "operator.admin"} {
		mm, _ := reg.Lookup(m)
		if got := mm.NeedScope(); got != want {
			t.Errorf("%s needs %s, want %s", m, got, want)
		}
	}
	if err := owner.NewClient(rec.Socket).Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
}

// A routed operation reads the variables it declares (Op.Env) as its
// caller has them, not as the gateway's process does; an undeclared one
// is the gateway's own. Params are decoded strictly on the gateway side
// (invalid_params), and Check refuses there too.
func TestRoutedCallSeesCallerEnv(t *testing.T) {
	t.Setenv("CK_DECLARED", "gateway")
	t.Setenv("CK_UNDECLARED", "gateway")
	type in struct {
		N int `json:"n"`
	}
	reg := owner.NewRegistry()
	owner.Register(reg, owner.Op[in, map[string]string]{Name: "t.env", Write: true, Env: []string{"CK_DECLARED", "CK_UNSET"},
		Check: owner.Refusals(func(p in) error {
			if p.N < 0 {
				return errs.Usage("negative", "n is negative")
			}
			return nil
		}),
		Run: func(ctx context.Context, env *owner.OpEnv, p in) (map[string]string, error) {
			return map[string]string{"declared": env.Getenv("CK_DECLARED"), "undeclared": env.Getenv("CK_UNDECLARED"), "unset": env.Getenv("CK_UNSET")}, nil
		}})
	h, rec, done := startGateway(t, reg)
	caller := map[string]string{"CK_DECLARED": "caller", "CK_UNDECLARED": "caller"}
	r := &owner.Router{Home: h, Registry: reg, LockTimeout: time.Second, LookupEnv: func(k string) (string, bool) {
		v, ok := caller[k]
		return v, ok
	}}
	out, err := (owner.Handle[in, map[string]string]{Name: "t.env"}).Call(context.Background(), r, in{N: 1})
	if err != nil {
		t.Fatal(err)
	}
	if out["declared"] != "caller" || out["undeclared"] != "gateway" || out["unset"] != "" {
		t.Fatalf("the operation saw %v", out)
	}
	rep := rawCall(t, rec.Socket, owner.CallRequest{Method: "t.env.v1", Params: json.RawMessage(`{"n":1,"x":2}`), ExpectedOwnerID: rec.OwnerID})
	if rep.Error == nil || rep.Error.Code != errs.CodeInvalidParams || rep.Error.Kind != int(errs.KindUsage) {
		t.Fatalf("unknown field: %+v", rep.Error)
	}
	rep = rawCall(t, rec.Socket, owner.CallRequest{Method: "t.env.v1", Params: json.RawMessage(`{"n":-1}`), ExpectedOwnerID: rec.OwnerID})
	if rep.Error == nil || rep.Error.Code != "negative" {
		t.Fatalf("check: %+v", rep.Error)
	}
	if err := owner.NewClient(rec.Socket).Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
}
