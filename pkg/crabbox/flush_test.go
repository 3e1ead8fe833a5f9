package crabbox

import (
	"errors"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// TestFlusherKeepsABackgroundError: syncfs reports a write-back error once
// per descriptor, so an error only a background flush saw must still fail
// the install, although the final flush succeeds.
func TestFlusherKeepsABackgroundError(t *testing.T) {
	var calls atomic.Int32
	fl, err := startFlusherWith(t.TempDir(), time.Millisecond, func(int) error {
		if calls.Add(1) == 1 {
			return syscall.EIO // the first background flush
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer fl.close()
	for calls.Load() < 3 {
		time.Sleep(time.Millisecond)
	}
	if err := fl.finish(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("finish = %v, want the background flush's EIO", err)
	}
}

// TestFlusherFlushesAtTheEnd: finish flushes once more after the background
// flushes stop, and close after finish (the deferred one) neither flushes
// nor panics; nothing flushes after a failed install's close.
func TestFlusherFlushesAtTheEnd(t *testing.T) {
	var calls atomic.Int32
	fl, err := startFlusherWith(t.TempDir(), time.Hour, func(int) error {
		calls.Add(1)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := fl.finish(); err != nil {
		t.Fatal(err)
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("%d flushes, want the final one only", n)
	}
	fl.close()
	if n := calls.Load(); n != 1 {
		t.Fatalf("close flushed again (%d flushes)", n)
	}

	calls.Store(0)
	fl, err = startFlusherWith(t.TempDir(), time.Hour, func(int) error { calls.Add(1); return nil })
	if err != nil {
		t.Fatal(err)
	}
	fl.close()
	if n := calls.Load(); n != 0 {
		t.Fatalf("a closed (failed) install flushed %d times", n)
	}
	if _, err := startFlusherWith(t.TempDir()+"/missing", time.Hour, func(int) error { return nil }); err == nil {
		t.Fatal("a flusher on a missing folder started")
	}
}
