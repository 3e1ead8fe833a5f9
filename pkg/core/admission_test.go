package core

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/owner"
	"github.com/clawkit/clawkit/pkg/store"
)

// run invokes a core operation as the executors do (config snapshot taken after
// ownership) with a fence the test controls, and returns its Env.
func run(t *testing.T, home string, st *store.Store, fence func() error, method string, params any) (*owner.OpEnv, error) {
	t.Helper()
	r := owner.NewRegistry()
	Register(r)
	m, ok := r.Lookup(method)
	if !ok {
		t.Fatalf("no method %s", method)
	}
	if fence == nil {
		fence = func() error { return nil }
	}
	env := owner.NewOpEnv(home, st, fence, time.Now, nil, false)
	env.SnapshotConfig()
	_, err := owner.Invoke(context.Background(), m, env, params)
	return env, err
}

func openStore(t *testing.T) (string, *store.Store) {
	home := t.TempDir()
	st, err := store.Open(context.Background(), store.SQLite{Path: filepath.Join(home, "state.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Error(err)
		}
	})
	return home, st
}

// The write fence of state.backup runs immediately before the copy is
// published, after the (long) copy itself: an owner that retired meanwhile
// publishes no backup file.
func TestBackupAdmittedBeforePublication(t *testing.T) {
	home, st := openStore(t)
	var calls atomic.Int32
	fence := func() error {
		if calls.Add(1) >= 2 { // the operation's first check passes; the owner retires during the copy
			return owner.ErrRetired("test")
		}
		return nil
	}
	out := filepath.Join(t.TempDir(), "backup.db")
	env, err := run(t, home, st, fence, "state.backup", BackupParams{Path: out})
	if errs.CodeOf(err) != "owner_retired" {
		t.Fatalf("got %v", err)
	}
	if _, err := os.Stat(out); err == nil {
		t.Fatal("a retired owner published a backup")
	}
	if env.EffectBegun() {
		t.Fatal("a refused publication counted as an effect")
	}
	env, err = run(t, home, st, nil, "state.backup", BackupParams{Path: out})
	if err != nil || !env.EffectBegun() {
		t.Fatalf("backup: %v (effect %v)", err, env.EffectBegun())
	}
}

// Session writes pass the write fence after the read that can refuse
// them: a duplicate create or an update of a missing session is a refusal
// before any effect; a write through the fence is an effect; a retired owner
// writes nothing.
func TestSessionWritesAdmitted(t *testing.T) {
	home, st := openStore(t)
	s1 := SessionParams{AgentID: "main", SessionKey: "s1"}
	env, err := run(t, home, st, nil, "session.create", s1)
	if err != nil || !env.EffectBegun() {
		t.Fatalf("create: %v (effect %v)", err, env.EffectBegun())
	}
	env, err = run(t, home, st, nil, "session.create", s1)
	if errs.CodeOf(err) != "session_exists" || env.EffectBegun() {
		t.Fatalf("duplicate create: %v (effect %v)", err, env.EffectBegun())
	}
	env, err = run(t, home, st, nil, "session.reset", SessionParams{AgentID: "main", SessionKey: "nope"})
	if errs.CodeOf(err) != "session_not_found" || env.EffectBegun() {
		t.Fatalf("reset of a missing session: %v (effect %v)", err, env.EffectBegun())
	}
	var calls atomic.Int32
	fence := func() error {
		if calls.Add(1) >= 2 { // retired between the operation's check and its write
			return owner.ErrRetired("test")
		}
		return nil
	}
	if _, err := run(t, home, st, fence, "session.revoke", s1); errs.CodeOf(err) != "owner_retired" {
		t.Fatalf("revoke by a retired owner: %v", err)
	}
	if sess, err := st.GetSession(context.Background(), "main", "s1"); err != nil || sess.Status != store.SessionActive {
		t.Fatalf("a retired owner revoked the session: %+v %v", sess, err)
	}
}
