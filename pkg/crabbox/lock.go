package crabbox

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/rogpeppe/go-internal/lockedfile"
	"golang.org/x/sys/unix"

	"github.com/clawkit/clawkit/pkg/artifacts"
	"github.com/clawkit/clawkit/pkg/errs"
)

// DefaultLockWait is how long an install waits for another install of the
// same runtime to finish (`crabbox install --lock-wait`). An install of the
// real runtime takes seconds on a quiet machine and under a minute on a
// loaded one; ten minutes covers a slow disk without letting a stuck job
// hang a CI run forever.
const DefaultLockWait = 10 * time.Minute

// LockPath is the per-runtime lock file of the runtime at l: a hidden,
// empty file beside the runtime folder, kept between installs.
func LockPath(l Layout) string {
	return filepath.Join(l.RuntimesDir, "."+filepath.Base(l.RuntimeDir)+".lock")
}

// RuntimeLock is the held per-runtime lock: while it is held no install
// of that runtime stages, replaces or removes anything. Every command that
// changes a runtime folder, its staging folders or its lock file takes it
// (docs/crabbox.md, "The runtime lock"), through LockRuntime.
type RuntimeLock struct {
	f    *lockedfile.File
	path string
	// Created reports that this holder created the lock file (it did not
	// exist before LockRuntime).
	Created bool
}

// Path is the lock file's path.
func (k *RuntimeLock) Path() string { return k.path }

// Unlock releases the lock and keeps the lock file.
func (k *RuntimeLock) Unlock() error {
	if k == nil || k.f == nil {
		return nil
	}
	err := k.f.Close()
	k.f = nil
	return err
}

// Discard removes the lock file while still holding the lock, then
// releases it: for a holder that created the file and undoes everything it
// created. A waiter that then locks the unlinked file notices (its file is
// no longer the one at the path) and locks again.
func (k *RuntimeLock) Discard() error {
	if k == nil || k.f == nil {
		return nil
	}
	rerr := os.Remove(k.path)
	if err := k.Unlock(); err != nil {
		return err
	}
	return rerr
}

// MinLockWait is the shortest wait LockRuntime accepts: an uncontended
// lock is granted in microseconds, so any wait this long means the lock
// was really held by another process for all of it.
const MinLockWait = time.Second

// LockRuntime takes the per-runtime lock of the runtime at l, waiting at
// most wait (at least MinLockWait) and no longer than ctx lives. The
// runtime cache folder (l.RuntimesDir) must exist; the lock file is created
// when missing.
//
// The lock file is never followed through a link, and it must be a
// regular file: anything else at its path (a symlink, dangling or not, a
// FIFO, a folder) is refused with runtime_lock_unsafe and nothing is
// created, since a link there would make the install create or lock a
// file outside the target. Waiting ends with runtime_lock_busy (exit 5)
// after wait, or with interrupted (exit 1) when ctx is cancelled
// (SIGINT/SIGTERM); in both cases nothing was changed.
func LockRuntime(ctx context.Context, l Layout, wait time.Duration) (*RuntimeLock, error) {
	return lockRuntime(ctx, l, wait, nil)
}

// waitNotice is how long a lock attempt runs before onWait is called: an
// uncontended lock is granted well within it.
const waitNotice = 200 * time.Millisecond

// lockRuntime is LockRuntime; onWait, when not nil, is called once when the
// lock is not granted within waitNotice (install's progress line).
func lockRuntime(ctx context.Context, l Layout, wait time.Duration, onWait func()) (*RuntimeLock, error) {
	path := LockPath(l)
	if err := CheckLockWait(wait); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(wait)
	for {
		created := false
		switch st, err := os.Lstat(path); {
		case errors.Is(err, fs.ErrNotExist):
			created = true
		case err != nil:
			return nil, installErr("cannot inspect the runtime lock %s: %v", path, err)
		case !st.Mode().IsRegular():
			return nil, unsafeLock(path, st.Mode())
		}
		f, err := lockWithin(ctx, path, deadline, wait, onWait)
		if err != nil {
			return nil, err
		}
		// The file locked must still be the one at the path: a failed
		// install that created it removes it (Discard) before unlocking,
		// and a waiter holding the unlinked file must lock again.
		held, err1 := f.Stat()
		now, err2 := os.Lstat(path)
		if err1 == nil && !held.Mode().IsRegular() {
			f.Close()
			return nil, unsafeLock(path, held.Mode())
		}
		if err1 == nil && err2 == nil && os.SameFile(held, now) {
			return &RuntimeLock{f: f, path: path, Created: created}, nil
		}
		f.Close()
		if ctx.Err() != nil {
			return nil, artifacts.Interrupted("install")
		}
		if !time.Now().Before(deadline) {
			return nil, lockBusy(path, wait)
		}
	}
}

// lockWithin opens path without following a link and locks it, giving up
// at deadline or when ctx ends. lockedfile only offers a blocking lock, so
// the attempt runs on its own goroutine; an abandoned attempt releases the
// lock as soon as it gets it.
func lockWithin(ctx context.Context, path string, deadline time.Time, wait time.Duration, onWait func()) (*lockedfile.File, error) {
	type result struct {
		f   *lockedfile.File
		err error
	}
	var (
		mu   sync.Mutex
		gave bool
	)
	done := make(chan result, 1)
	go func() {
		f, err := lockedfile.OpenFile(path, os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW, 0o666)
		mu.Lock()
		defer mu.Unlock()
		if gave {
			if f != nil {
				f.Close()
			}
			return
		}
		done <- result{f, err}
	}()
	// abandon gives the attempt up; a result that is already there is
	// returned instead (keep says whether to use it or drop it).
	abandon := func(keep bool) (result, bool) {
		mu.Lock()
		defer mu.Unlock()
		gave = true
		select {
		case r := <-done:
			if keep {
				return r, true
			}
			if r.f != nil {
				r.f.Close()
			}
		default:
		}
		return result{}, false
	}
	timer := time.NewTimer(max(time.Until(deadline), 0))
	defer timer.Stop()
	var notice <-chan time.Time
	if onWait != nil {
		nt := time.NewTimer(waitNotice)
		defer nt.Stop()
		notice = nt.C
	}
	var r result
	for got := false; !got; {
		select {
		case <-notice:
			onWait()
			notice = nil
		case r = <-done:
			got = true
		case <-ctx.Done():
			abandon(false)
			return nil, artifacts.Interrupted("install")
		case <-timer.C:
			var ok bool
			if r, ok = abandon(true); !ok {
				return nil, lockBusy(path, wait)
			}
			got = true
		}
	}
	if r.err != nil {
		if errors.Is(r.err, unix.ELOOP) {
			return nil, unsafeLock(path, fs.ModeSymlink)
		}
		return nil, installErr("cannot lock the runtime cache: %v", r.err)
	}
	return r.f, nil
}

// CheckLockWait refuses a lock wait shorter than MinLockWait (a usage
// error, before anything is touched).
func CheckLockWait(wait time.Duration) error {
	if wait < MinLockWait {
		return errs.Usage(CodeInvalidLockWait, "--lock-wait %v is shorter than %v", wait, MinLockWait).
			WithHint("pass --lock-wait %v or more (default %v)", MinLockWait, DefaultLockWait)
	}
	return nil
}

func unsafeLock(path string, mode fs.FileMode) *errs.Error {
	what := "a " + describeType(mode)
	return errs.Failed(CodeRuntimeLockUnsafe, "the runtime lock %s is %s, not a regular file; nothing was installed", path, what).
		WithHint("remove %s (an install creates it again) and retry; the lock is never followed through a link", path)
}

func lockBusy(path string, wait time.Duration) *errs.Error {
	return errs.Unavailable(CodeRuntimeLockBusy, "another install of this runtime has held its lock %s for %v; gave up waiting, nothing was installed", path, wait).
		WithHint("let the other install finish and retry, or wait longer with --lock-wait (default %v)", DefaultLockWait)
}

func describeType(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "symbolic link"
	case m.IsDir():
		return "folder"
	case m&fs.ModeNamedPipe != 0:
		return "named pipe"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeDevice != 0:
		return "device"
	}
	return fmt.Sprintf("file of type %v", m.Type())
}
