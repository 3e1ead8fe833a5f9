package owner

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/clawkit/clawkit/pkg/store"
	"github.com/clawkit/clawkit/pkg/store/pgtest"
)

// An offline write on PostgreSQL holds an owner lease (kind offline, a
// fencing incarnation) for the whole operation, like a gateway: its
// writes carry the incarnation, a write after the lease is gone is refused
// by the database, and the lease is released
// when the command ends. A read-only call takes no lease.
func TestOfflineWriteHoldsAFencedLease(t *testing.T) {
	u := pgtest.URL(t)
	h := shortHome(t)
	cfg := map[string]any{"database": map[string]any{"engine": "postgres", "url": u}}
	b, _ := json.Marshal(cfg)
	if err := os.WriteFile(filepath.Join(h.Dir, "config.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	type seen struct {
		Leases    []store.LeaseInfo
		Inc       int64
		LateWrite error
	}
	var got seen
	reg := NewRegistry()
	Register(reg, Op[json.RawMessage, any]{Name: "t.write", Write: true, Run: func(ctx context.Context, env *OpEnv, _ json.RawMessage) (any, error) {
		db := env.Store.DB()
		got.Leases, _ = env.Store.LiveLeases(ctx)
		got.Inc = env.Store.Engine().(*store.Postgres).Incarnation()
		if _, err := db.ExecContext(ctx, `INSERT INTO sessions (agent_id, session_key, incarnation, status, created_at, updated_at) VALUES ('main','s1',1,'active','x','x')`); err != nil {
			t.Errorf("a write under the live lease: %v", err)
		}
		// The lease runs out (as when the process is paused past it).
		admin, err := pgx.Connect(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		defer admin.Close(ctx)
		if _, err := admin.Exec(ctx, `UPDATE owners SET lease_expires_at = 1 WHERE incarnation = $1`, got.Inc); err != nil {
			t.Fatal(err)
		}
		_, got.LateWrite = db.ExecContext(ctx, `UPDATE sessions SET status = 'revoked'`)
		return map[string]bool{"ok": true}, nil
	}})
	Register(reg, Op[json.RawMessage, any]{Name: "t.read", Run: func(ctx context.Context, env *OpEnv, _ json.RawMessage) (any, error) {
		return map[string]int64{"inc": env.Store.Engine().(*store.Postgres).Incarnation()}, nil
	}})
	r := &Router{Home: h, Registry: reg, LockTimeout: 0, Version: "test"}
	if _, err := (Handle[json.RawMessage, any]{Name: "t.write"}).Call(context.Background(), r, nil); err != nil {
		t.Fatal(err)
	}
	if got.Inc == 0 || len(got.Leases) != 1 || got.Leases[0].Kind != "offline" || got.Leases[0].Incarnation != got.Inc || got.Leases[0].PID != os.Getpid() {
		t.Fatalf("the command's lease: inc %d, leases %+v", got.Inc, got.Leases)
	}
	if !store.FenceError(got.LateWrite) {
		t.Fatalf("a write after the lease ran out: %v, want the fence error", got.LateWrite)
	}
	res, err := (Handle[json.RawMessage, any]{Name: "t.read"}).Call(context.Background(), r, nil)
	if err != nil {
		t.Fatal(err)
	}
	if read := res.(map[string]int64); read["inc"] != 0 {
		t.Fatalf("a read-only call took lease %d", read["inc"])
	}
	st, err := OpenStore(context.Background(), h, true)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	live, _ := st.LiveLeases(context.Background())
	if len(live) != 0 {
		t.Fatalf("leases left after the commands: %+v", live)
	}
}
