package research

// Job states (docs/research.md).
const (
	StateSubmitting      = "submitting"
	StateRunning         = "running"
	StateCancelRequested = "cancel-requested"
	StateCompleted       = "completed"
	StateFailed          = "failed"
	StateCancelled       = "cancelled"
	StateIncomplete      = "incomplete"
	StateNotSent         = "not-sent"
	StateIndeterminate   = "indeterminate"
	// StatePlanProposed: the plan turn of a job started with --plan has
	// ended with a plan (plan.md); the job waits for approve or reject.
	// Not terminal, not polled (docs/research.md, "Plan review").
	StatePlanProposed = "plan-proposed"
)

// TerminalState reports whether a job state is final: such a job is never
// overwritten.
func TerminalState(s string) bool {
	switch s {
	case StateCompleted, StateFailed, StateCancelled, StateIncomplete, StateNotSent, StateIndeterminate:
		return true
	}
	return false
}

// Pollable reports whether a job in state s has an interaction that may
// still change.
func Pollable(s string) bool { return s == StateRunning || s == StateCancelRequested }
