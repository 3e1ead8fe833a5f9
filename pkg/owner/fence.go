package owner

import (
	"sync"

	"github.com/clawkit/clawkit/pkg/errs"
)

// Fence is the authority an operation runs under: ownership of the state
// and, once bound, its session. (Scope, by contrast, is the authorization
// a call needs: ScopeRead, ScopeWrite, ScopeAdmin.)
type Fence interface {
	// AssertCurrent returns nil while this process still owns the state
	// (lock held, gateway not retiring) and, when a session was bound, that
	// session is still active at the same incarnation. Operations call it
	// after every await and immediately before every external effect.
	AssertCurrent() error
}

// AssertOwner is the owner fence alone (lock held, owner not retiring), without
// session checks: the write fence for the operation's database writes and
// file publications, which must stop the moment ownership ends.
func (e *OpEnv) AssertOwner() error {
	if e.fences == nil || e.fences.fence == nil {
		return nil
	}
	return e.fences.fence()
}

// scope combines the owner fence with any bound session checks.
type callFence struct {
	fence  func() error
	mu     sync.Mutex
	checks []func() error
}

func (s *callFence) add(f func() error) {
	s.mu.Lock()
	s.checks = append(s.checks, f)
	s.mu.Unlock()
}

func (s *callFence) AssertCurrent() error {
	if err := s.fence(); err != nil {
		return err
	}
	s.mu.Lock()
	checks := append([]func() error{}, s.checks...)
	s.mu.Unlock()
	for _, c := range checks {
		if err := c(); err != nil {
			return err
		}
	}
	return nil
}

// ErrRetired is the fence's refusal once ownership is gone.
func ErrRetired(why string) error {
	return errs.Refused(CodeOwnerRetired, "this process no longer owns the clawkit state: %s", why).
		WithHint("nothing further was published; run the command again")
}
