package owner

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/store"
)

// BindSession refuses revoked (3) and refreshing (5) sessions, and the
// scope fails once the bound session is reset mid-operation.
func TestBindSession(t *testing.T) {
	h := shortHome(t)
	ctx := context.Background()
	reg := NewRegistry()
	var step func(env *OpEnv) error
	Register(reg, Op[json.RawMessage, any]{Name: "t.bound", Write: true, Run: func(ctx context.Context, env *OpEnv, p json.RawMessage) (any, error) {
		var in struct{ Key string }
		json.Unmarshal(p, &in)
		if _, err := env.BindSession(ctx, "main", in.Key); err != nil {
			return nil, err
		}
		if step != nil {
			if err := step(env); err != nil {
				return nil, err
			}
		}
		return nil, env.Fence.AssertCurrent()
	}})
	r := &Router{Home: h, Registry: reg, LockTimeout: time.Second}
	call := func(key string) error {
		_, err := (Handle[json.RawMessage, any]{Name: "t.bound"}).Call(ctx, r, json.RawMessage(fmt.Sprintf(`{"Key":%q}`, key)))
		return err
	}

	// The default session is created on first use; others must exist.
	if err := call("cli"); err != nil {
		t.Fatalf("default session: %v", err)
	}
	if err := call("other"); errs.CodeOf(err) != "session_not_found" {
		t.Fatalf("unknown session: %v", err)
	}
	st, err := OpenStore(ctx, h, false)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := time.Now()
	st.UpdateSession(ctx, "main", "cli", "refreshing", 700, now)
	if err := call("cli"); errs.KindOf(err) != errs.KindUnavailable || errs.As(err).RetryAfterMs != 700 {
		t.Fatalf("refreshing: %v", err)
	}
	st.UpdateSession(ctx, "main", "cli", "revoke", 0, now)
	if err := call("cli"); errs.KindOf(err) != errs.KindRefused {
		t.Fatalf("revoked: %v", err)
	}
	st.UpdateSession(ctx, "main", "cli", "reset", 0, now)
	// Reset while the operation runs: the scope goes stale.
	step = func(env *OpEnv) error {
		_, err := env.Store.UpdateSession(ctx, "main", "cli", "reset", 0, now)
		return err
	}
	if err := call("cli"); errs.CodeOf(err) != "session_stale" {
		t.Fatalf("reset mid-operation: %v", err)
	}
	_ = store.SessionActive
}
