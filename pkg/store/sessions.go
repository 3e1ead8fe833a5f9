package store

import (
	"context"
	"database/sql"
	"errors"
	"regexp"
	"sync"
	"time"

	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/fsx"
)

// Session statuses.
const (
	SessionActive     = "active"
	SessionRefreshing = "refreshing"
	SessionRevoked    = "revoked"
)

// Default agent and session, created on first use.
const (
	DefaultAgent   = "main"
	DefaultSession = "cli"
)

// Session is one agent session.
type Session struct {
	AgentID      string    `json:"agentId"`
	SessionKey   string    `json:"sessionKey"`
	Incarnation  int64     `json:"incarnation"`
	Status       string    `json:"status"`
	RetryAfterMs int64     `json:"retryAfterMs,omitempty"`
	CreatedAt    time.Time `json:"createdAt"`
	UpdatedAt    time.Time `json:"updatedAt"`
}

// idRE leaves the length (≤ 128) to validID: a counted repetition compiles
// into a program 128 times larger, which every process start would pay.
// Compiled on first use (start-up cost is paid by every command).
var idRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:@-]*$`) })

func validID(s string) bool { return len(s) <= 128 && idRE().MatchString(s) }

// ValidateIDs checks an agent id and a session key.
func ValidateIDs(agentID, key string) error {
	if !validID(agentID) {
		return errs.Usage(CodeInvalidAgentID, "invalid agent id %q", agentID).
			WithHint("use letters, digits and . _ : @ - (at most 128), starting with a letter or digit")
	}
	if !validID(key) {
		return errs.Usage(CodeInvalidSessionKey, "invalid session key %q", key).
			WithHint("use letters, digits and . _ : @ - (at most 128), starting with a letter or digit")
	}
	return nil
}

const sessionCols = `agent_id, session_key, incarnation, status, retry_after_ms, created_at, updated_at`

func scanSession(row interface{ Scan(...any) error }) (Session, error) {
	var s Session
	var c, u string
	if err := row.Scan(&s.AgentID, &s.SessionKey, &s.Incarnation, &s.Status, &s.RetryAfterMs, &c, &u); err != nil {
		return s, err
	}
	s.CreatedAt, _ = time.Parse(time.RFC3339Nano, c)
	s.UpdatedAt, _ = time.Parse(time.RFC3339Nano, u)
	return s, nil
}

// GetSession loads one session.
func (s *Store) GetSession(ctx context.Context, agentID, key string) (Session, error) {
	row := s.db.QueryRowContext(ctx, s.Rebind(`SELECT `+sessionCols+` FROM sessions WHERE agent_id = ? AND session_key = ?`), agentID, key)
	sess, err := scanSession(row)
	if errors.Is(err, sql.ErrNoRows) {
		hint := "create it with 'clawkit session create " + key + " --agent " + agentID + "'"
		if agentID == DefaultAgent && key == DefaultSession {
			hint = "the default session is created on first use by a stateful command, or with 'clawkit session create cli'"
		}
		return sess, errs.Failed(errs.CodeSessionNotFound, "no session %s for agent %s", key, agentID).WithHint("%s", hint)
	}
	if err != nil {
		return sess, errs.Failed(errs.CodeStoreError, "cannot read session: %v", err).Wrap(err)
	}
	return sess, nil
}

// ListSessions lists sessions, optionally of one agent.
func (s *Store) ListSessions(ctx context.Context, agentID string) ([]Session, error) {
	q := `SELECT ` + sessionCols + ` FROM sessions`
	var args []any
	if agentID != "" {
		q += ` WHERE agent_id = ?`
		args = append(args, agentID)
	}
	q += ` ORDER BY agent_id, session_key`
	rows, err := s.db.QueryContext(ctx, s.Rebind(q), args...)
	if err != nil {
		return nil, errs.Failed(errs.CodeStoreError, "cannot list sessions: %v", err).Wrap(err)
	}
	defer fsx.CloseRead(rows)
	out := []Session{}
	for rows.Next() {
		sess, err := scanSession(rows)
		if err != nil {
			return nil, errs.Failed(errs.CodeStoreError, "cannot list sessions: %v", err).Wrap(err)
		}
		out = append(out, sess)
	}
	return out, rows.Err()
}

// CreateSession creates an active session; an existing one is refused.
func (s *Store) CreateSession(ctx context.Context, agentID, key string, now time.Time) (Session, error) {
	if err := ValidateIDs(agentID, key); err != nil {
		return Session{}, err
	}
	// An existing session is refused by this read, before any write: the
	// INSERT below refuses only one created meanwhile.
	if _, err := s.GetSession(ctx, agentID, key); err == nil {
		return Session{}, sessionExists(agentID, key)
	} else if errs.CodeOf(err) != errs.CodeSessionNotFound {
		// The read failed (a server that cannot be reached): write nothing.
		return Session{}, err
	}
	ts := now.UTC().Format(time.RFC3339Nano)
	if err := s.beginWrite(); err != nil {
		return Session{}, err
	}
	res, err := s.db.ExecContext(ctx, s.Rebind(`INSERT INTO sessions (agent_id, session_key, incarnation, status, created_at, updated_at) VALUES (?, ?, 1, 'active', ?, ?) ON CONFLICT DO NOTHING`), agentID, key, ts, ts)
	if err != nil {
		return Session{}, errs.Failed(errs.CodeStoreError, "cannot create session: %v", err).Wrap(err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return Session{}, sessionExists(agentID, key)
	}
	return s.GetSession(ctx, agentID, key)
}

func sessionExists(agentID, key string) error {
	return errs.Failed(CodeSessionExists, "session %s of agent %s already exists", key, agentID).
		WithHint("use 'clawkit session reset %s --agent %s' to start it over", key, agentID)
}

// EnsureSession returns a session, creating it only when it is the default
// main/cli session (any other must be created explicitly).
func (s *Store) EnsureSession(ctx context.Context, agentID, key string, now time.Time) (Session, error) {
	// The ids were checked with the call's parameters (ValidateIDs in the
	// operation's Check): only the default session, whose ids are valid,
	// is ever created here.
	sess, err := s.GetSession(ctx, agentID, key)
	if err == nil || errs.CodeOf(err) != errs.CodeSessionNotFound || agentID != DefaultAgent || key != DefaultSession {
		return sess, err
	}
	sess, err = s.CreateSession(ctx, agentID, key, now)
	if errs.CodeOf(err) == CodeSessionExists { // lost a race with another creator
		return s.GetSession(ctx, agentID, key)
	}
	return sess, err
}

// UpdateSession applies a status change: reset bumps the incarnation and
// reactivates; revoke is permanent; refreshing and activate toggle the
// temporary state.
func (s *Store) UpdateSession(ctx context.Context, agentID, key, action string, retryAfterMs int64, now time.Time) (Session, error) {
	cur, err := s.GetSession(ctx, agentID, key)
	if err != nil {
		return cur, err
	}
	ts := now.UTC().Format(time.RFC3339Nano)
	var q string
	var args []any
	switch action {
	case "reset":
		q, args = `UPDATE sessions SET incarnation = incarnation + 1, status = 'active', retry_after_ms = 0, updated_at = ? WHERE agent_id = ? AND session_key = ?`, []any{ts, agentID, key}
	case "revoke":
		q, args = `UPDATE sessions SET status = 'revoked', retry_after_ms = 0, updated_at = ? WHERE agent_id = ? AND session_key = ?`, []any{ts, agentID, key}
	case "refreshing", "activate":
		if cur.Status == SessionRevoked {
			return cur, errs.Refused(CodeSessionRevoked, "session %s of agent %s is revoked", key, agentID).
				WithHint("revocation is permanent; create a new session")
		}
		status := SessionActive
		if action == "refreshing" {
			status = SessionRefreshing
		} else {
			retryAfterMs = 0
		}
		// The revoked check is repeated inside the statement: a revoke that
		// lands between the read above and this write must not be undone.
		q, args = `UPDATE sessions SET status = ?, retry_after_ms = ?, updated_at = ? WHERE agent_id = ? AND session_key = ? AND status <> 'revoked'`, []any{status, retryAfterMs, ts, agentID, key}
	default:
		return cur, errs.Usage(CodeInvalidAction, "unknown session action %q", action)
	}
	if err := s.beginWrite(); err != nil {
		return cur, err
	}
	res, err := s.db.ExecContext(ctx, s.Rebind(q), args...)
	if err != nil {
		return cur, errs.Failed(errs.CodeStoreError, "cannot update session: %v", err).Wrap(err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return cur, errs.Refused(CodeSessionRevoked, "session %s of agent %s is revoked", key, agentID).
			WithHint("revocation is permanent; create a new session")
	}
	return s.GetSession(ctx, agentID, key)
}

// CheckSessionUsable refuses a revoked session (permanent, exit 3) and a
// refreshing one (temporary, exit 5 with retryAfterMs).
func CheckSessionUsable(sess Session) error {
	switch sess.Status {
	case SessionRevoked:
		return errs.Refused(CodeSessionRevoked, "session %s of agent %s is revoked", sess.SessionKey, sess.AgentID).
			WithHint("revocation is permanent; create a new session with 'clawkit session create'")
	case SessionRefreshing:
		ms := sess.RetryAfterMs
		if ms <= 0 {
			ms = 1000
		}
		return errs.Unavailable(CodeSessionRefreshing, "session %s of agent %s is refreshing its authority", sess.SessionKey, sess.AgentID).
			WithRetryAfter(ms).WithHint("retry shortly; 'clawkit session activate %s --agent %s' ends the refresh", sess.SessionKey, sess.AgentID)
	}
	return nil
}

// RecordOwner inserts an owners row and returns its incarnation.
func (s *Store) RecordOwner(ctx context.Context, ownerID, kind string, pid int, version string, now time.Time) (int64, error) {
	var inc int64
	err := s.db.QueryRowContext(ctx, s.Rebind(`INSERT INTO owners (owner_id, kind, pid, version, started_at) VALUES (?, ?, ?, ?, ?) RETURNING incarnation`),
		ownerID, kind, pid, version, now.UTC().Format(time.RFC3339Nano)).Scan(&inc)
	if err != nil {
		return 0, errs.Failed(errs.CodeStoreError, "cannot record owner: %v", err).Wrap(err)
	}
	return inc, nil
}

// OwnerStopped marks an owner's clean stop.
func (s *Store) OwnerStopped(ctx context.Context, ownerID string, now time.Time) error {
	_, err := s.db.ExecContext(ctx, s.Rebind(`UPDATE owners SET stopped_at = ? WHERE owner_id = ?`), now.UTC().Format(time.RFC3339Nano), ownerID)
	return err
}
