package owner

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/lockedfile"
)

// An offline command releases the owner lock only after its store is
// closed: the next owner never finds the database still open (on SQLite,
// its write-ahead log is gone by the time the lock is free).
func TestOfflineStoreClosedBeforeLockReleased(t *testing.T) {
	h := shortHome(t)
	next := make(chan bool, 1)
	reg := NewRegistry()
	Register(reg, Op[struct{}, bool]{Name: "t.settle", Write: true,
		Run: func(ctx context.Context, env *OpEnv, _ struct{}) (bool, error) {
			if _, err := env.Writer().CreateSession(ctx, "main", "settle", env.Now()); err != nil {
				return false, err
			}
			if _, err := os.Stat(h.DB() + "-wal"); err != nil {
				t.Errorf("the test cannot see an open store: no write-ahead log while it is open (%v)", err)
			}
			// The next owner waits for the lock from now on.
			started := make(chan struct{})
			go func() {
				close(started)
				unlock, err := lockedfile.MutexAt(h.Lock()).Lock()
				if err != nil {
					t.Error(err)
					next <- false
					return
				}
				_, walErr := os.Stat(h.DB() + "-wal")
				unlock()
				next <- os.IsNotExist(walErr)
			}()
			<-started
			return true, nil
		}})
	r := &Router{Home: h, Registry: reg, LockTimeout: time.Second}
	if ok, err := (Handle[struct{}, bool]{Name: "t.settle"}).Call(context.Background(), r, struct{}{}); err != nil || !ok {
		t.Fatalf("call: %v %v", ok, err)
	}
	select {
	case closed := <-next:
		if !closed {
			t.Fatal("the owner lock was free while the store was still open (its write-ahead log was still there)")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the lock was never released")
	}
}
