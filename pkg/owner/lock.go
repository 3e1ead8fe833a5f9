package owner

import (
	"context"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/rogpeppe/go-internal/lockedfile"

	"github.com/clawkit/clawkit/pkg/fsx"
)

// Lock is a held owner lock.
type Lock struct {
	f    *lockedfile.File
	path string
	ino  uint64
}

// Release drops the lock.
func (l *Lock) Release() error { return l.f.Close() }

// Held reports whether the lock is still the one at its path: if the lock
// file was removed or replaced, another process could lock the new file, so
// the fence must fail.
func (l *Lock) Held() bool {
	var st syscall.Stat_t
	if err := syscall.Stat(l.path, &st); err != nil {
		return false
	}
	return st.Ino == l.ino
}

// lockAttempt is one background attempt at the lock. lockedfile only offers
// a blocking lock, so the router waits on it from a goroutine while it keeps
// looking for a gateway; an attempt that is abandoned releases the lock as
// soon as it gets it.
type lockAttempt struct {
	done chan struct{}
	mu   sync.Mutex
	lock *Lock
	err  error
	gave bool // abandoned
}

func startLockAttempt(path string) *lockAttempt {
	a := &lockAttempt{done: make(chan struct{})}
	go func() {
		defer close(a.done)
		f, err := fsx.OpenLockFile(path, 0o600)
		a.mu.Lock()
		defer a.mu.Unlock()
		if err != nil {
			a.err = err
			return
		}
		if a.gave {
			f.Close()
			return
		}
		l := &Lock{f: f, path: path}
		var st syscall.Stat_t
		if err := syscall.Fstat(int(f.Fd()), &st); err == nil {
			l.ino = st.Ino
		}
		// Say who holds it, for the "held by pid N" refusal.
		_ = f.Truncate(0)
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
		a.lock = l
	}()
	return a
}

// abandon gives up the attempt; if it already succeeded the lock is freed.
func (a *lockAttempt) abandon() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.gave = true
	if a.lock != nil {
		a.lock.Release()
		a.lock = nil
	}
}

// AcquireLock waits for the owner lock until ctx ends.
func AcquireLock(ctx context.Context, path string) (*Lock, error) {
	a := startLockAttempt(path)
	select {
	case <-a.done:
		return a.lock, a.err
	case <-ctx.Done():
		a.abandon()
		return nil, ctx.Err()
	}
}

// HolderPID reads the pid the current holder wrote into the lock file (0
// when unknown). Reading does not take the lock, follow a link or block,
// and reads a few bytes at most.
func HolderPID(path string) int {
	b, err := fsx.ReadRegular(path, 64)
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return n
}

// PIDAlive reports whether pid names a live process: it exists (signal 0;
// one we may not signal still exists) and has not exited. A killed process
// stays visible as a zombie until its parent reaps it; it owns nothing any
// more, so it is not alive. The tests' process checks use it too.
func PIDAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	if err != nil && err != syscall.EPERM {
		return false
	}
	return !isZombie(pid)
}
