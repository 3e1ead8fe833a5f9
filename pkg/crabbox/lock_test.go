package crabbox_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/clawkit/clawkit/pkg/crabbox"
	"github.com/clawkit/clawkit/pkg/crabbox/crabboxtest"
	"github.com/clawkit/clawkit/pkg/errs"
)

// lockLayout is the layout of a hand export's runtime below a new home,
// with the runtime cache folder created.
func lockLayout(t *testing.T) crabbox.Layout {
	t.Helper()
	dir := t.TempDir()
	mp, err := crabboxtest.HandExport(filepath.Join(dir, "x"), crabboxtest.NodeBootstrap(crabboxtest.Version))
	if err != nil {
		t.Fatal(err)
	}
	in, err := crabbox.LoadInputs(mp, crabbox.Expect{})
	if err != nil {
		t.Fatal(err)
	}
	l, err := crabbox.LayoutFor(filepath.Join(dir, "home"), in.Manifest)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(l.RuntimesDir, 0o755); err != nil {
		t.Fatal(err)
	}
	return l
}

// TestRuntimeLockAPI: the exported per-runtime lock (for any command that
// changes a runtime: install, a future prune) excludes a second holder,
// whose wait is bounded (runtime_lock_busy, exit 5) and ends with its
// context (interrupted); Unlock lets the next holder in and keeps the
// file; Discard removes the file a holder created.
func TestRuntimeLockAPI(t *testing.T) {
	l := lockLayout(t)
	ctx := context.Background()
	a, err := crabbox.LockRuntime(ctx, l, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if !a.Created || a.Path() != crabbox.LockPath(l) {
		t.Fatalf("created %v path %s", a.Created, a.Path())
	}
	if _, err := crabbox.LockRuntime(ctx, l, crabbox.MinLockWait); errs.CodeOf(err) != "runtime_lock_busy" || errs.KindOf(err) != errs.KindUnavailable {
		t.Fatalf("second holder: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	go func() { time.Sleep(50 * time.Millisecond); cancel() }()
	if _, err := crabbox.LockRuntime(cctx, l, time.Minute); errs.CodeOf(err) != "interrupted" {
		t.Fatalf("cancelled wait: %v", err)
	}
	if _, err := crabbox.LockRuntime(ctx, l, 0); errs.CodeOf(err) != "invalid_lock_wait" || errs.KindOf(err) != errs.KindUsage {
		t.Fatalf("zero wait: %v", err)
	}
	// A waiter gets the lock once it is released.
	got := make(chan error, 1)
	go func() {
		b, err := crabbox.LockRuntime(ctx, l, time.Minute)
		if err == nil {
			if b.Created {
				err = errors.New("the second holder says it created the file")
			}
			b.Unlock()
		}
		got <- err
	}()
	time.Sleep(50 * time.Millisecond)
	if err := a.Unlock(); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(crabbox.LockPath(l)); err != nil {
		t.Fatalf("Unlock removed the lock file: %v", err)
	}
	// Discard: removed while held; a waiter on the old file locks again.
	os.Remove(crabbox.LockPath(l))
	c, err := crabbox.LockRuntime(ctx, l, time.Minute)
	if err != nil || !c.Created {
		t.Fatalf("%v %v", c, err)
	}
	go func() {
		d, err := crabbox.LockRuntime(ctx, l, time.Minute)
		if err == nil {
			d.Unlock()
		}
		got <- err
	}()
	time.Sleep(50 * time.Millisecond)
	if err := c.Discard(); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
}

// TestRuntimeLockRefusesNonFiles: a symlink (dangling or not), a FIFO or
// a folder at the lock path is refused at once, and nothing is created
// through a link.
func TestRuntimeLockRefusesNonFiles(t *testing.T) {
	for _, kind := range []string{"dangling", "symlink", "fifo", "dir"} {
		t.Run(kind, func(t *testing.T) {
			l := lockLayout(t)
			lp := crabbox.LockPath(l)
			outside := filepath.Join(t.TempDir(), "outside")
			var err error
			switch kind {
			case "dangling":
				err = os.Symlink(outside, lp)
			case "symlink":
				os.WriteFile(outside, []byte("x"), 0o644)
				err = os.Symlink(outside, lp)
			case "fifo":
				err = mkfifo(lp)
			case "dir":
				err = os.Mkdir(lp, 0o755)
			}
			if err != nil {
				t.Fatal(err)
			}
			_, err = crabbox.LockRuntime(context.Background(), l, time.Minute)
			if errs.CodeOf(err) != "runtime_lock_unsafe" {
				t.Fatalf("%v", err)
			}
			if b, _ := os.ReadFile(outside); kind == "dangling" && b != nil || kind == "symlink" && string(b) != "x" {
				t.Fatalf("the link's target changed: %q", b)
			}
			if _, err := os.Lstat(outside); kind == "dangling" && err == nil {
				t.Fatal("created the dangling link's target")
			}
		})
	}
}

func mkfifo(p string) error { return syscall.Mkfifo(p, 0o644) }
