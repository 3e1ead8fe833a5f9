package mcp

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// ExitInfo is how the server's main process ended. Exactly one of Code and
// Signal is set once it has ended.
type ExitInfo struct {
	Code   *int    `json:"code"`
	Signal *string `json:"signal"`
}

func (x ExitInfo) String() string {
	switch {
	case x.Code != nil:
		return "code " + strconv.Itoa(*x.Code)
	case x.Signal != nil:
		return "signal " + *x.Signal
	}
	return "unknown status"
}

// CleanupResult is reported when Stop had to signal the process tree.
type CleanupResult struct {
	Reason          string `json:"reason"`
	SignalRequested string `json:"signalRequested"`
	// SignalError is the first failure to deliver a signal (a member we
	// may not signal, say); a member already gone is not a failure.
	SignalError       string   `json:"signalError,omitempty"`
	Exit              ExitInfo `json:"exit"`
	DurationMs        int64    `json:"durationMs"`
	EscalationAfterMs int64    `json:"escalationAfterMs"`
	// OutsideGroup lists descendants that had left the server's process
	// group (setsid) and were signalled by pid.
	OutsideGroup []int `json:"outsideGroup,omitempty"`
	// When cleanup could not be confirmed: what was done, in order
	// (closure, signals, exit), and which pids were still alive.
	Causes    []string `json:"causes,omitempty"`
	Remaining []int    `json:"remaining,omitempty"`
	// Session is set for an HTTP connection instead of the process
	// fields: whether the server confirmed the session's end.
	Session *SessionCleanup `json:"session,omitempty"`
}

// MarshalJSON writes an HTTP connection's result without the process
// fields, which do not apply to it.
func (r CleanupResult) MarshalJSON() ([]byte, error) {
	type plain CleanupResult
	if r.Session != nil {
		return json.Marshal(struct {
			Reason     string          `json:"reason"`
			Session    *SessionCleanup `json:"session"`
			DurationMs int64           `json:"durationMs"`
		}{r.Reason, r.Session, r.DurationMs})
	}
	return json.Marshal(plain(r))
}

// SessionCleanup is what closing an HTTP connection did: whether the
// server confirmed the session's end (a DELETE answered 2xx).
type SessionCleanup struct {
	Transport string `json:"transport"`
	// Deleted: the server confirmed the DELETE of the session.
	Deleted bool `json:"deleted"`
	// Status is the DELETE's HTTP status (0: no answer).
	Status int    `json:"status,omitempty"`
	Error  string `json:"error,omitempty"`
}

// FormatCleanup is the one-line diagnostic for a forced cleanup.
func FormatCleanup(cr *CleanupResult) string {
	b, _ := json.Marshal(cr)
	return fmt.Sprintf("cleanup: %s", b)
}
