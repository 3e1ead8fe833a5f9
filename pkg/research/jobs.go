package research

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/base32"
	"errors"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/fsx"
	"github.com/clawkit/clawkit/pkg/owner"
	"github.com/clawkit/clawkit/pkg/research/google"
	"github.com/clawkit/clawkit/pkg/store"
)

// Job is one logical research job: the custody binding, the provider
// receipt (handle) and the observed state. Report content is never stored
// here, only in the published files.
type Job struct {
	ID                 string `json:"job"`
	AgentID            string `json:"agentId"`
	SessionKey         string `json:"sessionKey"`
	SessionIncarnation int64  `json:"sessionIncarnation"`
	ProfileID          string `json:"profileId"`
	CredentialAccount  string `json:"credentialAccount"`
	BaseURL            string `json:"baseUrl"`
	Agent              string `json:"agent"`
	Handle             string `json:"handle,omitempty"`
	State              string `json:"state"`
	ProviderStatus     string `json:"status,omitempty"`
	ProviderUpdated    string `json:"providerUpdated,omitempty"`
	Question           string `json:"question"`
	OutputFormat       string `json:"outputFormat"`
	MaxReportBytes     int64  `json:"maxReportBytes"`
	IdempotencyKey     string `json:"idempotencyKey,omitempty"`
	CreatedAt          int64  `json:"createdAtMs"`
	UpdatedAt          int64  `json:"updatedAtMs"`
	SubmittedAt        int64  `json:"submittedAtMs,omitempty"`
	FinishedAt         int64  `json:"finishedAtMs,omitempty"`
	DeadlineAt         int64  `json:"deadlineAtMs"`
	NextPollAt         int64  `json:"nextPollAtMs,omitempty"`
	PollCount          int    `json:"pollCount"`
	ErrorCode          string `json:"errorCode,omitempty"`
	ErrorMessage       string `json:"errorMessage,omitempty"`
	Partial            bool   `json:"partial"`
	Published          bool   `json:"published"`
	ReportBytes        int64  `json:"reportBytes"`
	CitationCount      int    `json:"citationCount"`
	DroppedCitations   int    `json:"droppedCitations"`
	CancelRequestedAt  int64  `json:"cancelRequestedAtMs,omitempty"`
	// CancelSentAt is when the provider was last asked to cancel (a
	// queued cancellation skips a request already made).
	CancelSentAt int64 `json:"-"`
	RowVersion   int64 `json:"-"`
	// PlanHandle is the plan interaction of a job started with --plan,
	// once the plan was proposed (Handle is then the confirming turn's,
	// after approve).
	PlanHandle string `json:"planHandle,omitempty"`
	// ParentJob is the job a follow-up continues.
	ParentJob string `json:"parentJob,omitempty"`
	// PlanProposedAt is when the plan was proposed (the wall-clock budget
	// does not count the time a plan waits for its review).
	PlanProposedAt int64 `json:"planProposedAtMs,omitempty"`
	// Options are the start's declared options (plan, inputs, tools,
	// visualization): names, sizes, digests and profile ids, never bytes
	// or secrets.
	Options *JobOptions `json:"options,omitempty"`
	// TurnUsage is the token use reported for each interaction of the job
	// (its plan turn and its run), by handle; Usage their sum, and
	// ChainUsage (show only) the sum over the job and the jobs it follows
	// up (docs/research.md, "Tokens and cost").
	TurnUsage  map[string]google.Usage `json:"-"`
	Usage      *google.Usage           `json:"usage,omitempty"`
	ChainUsage *google.Usage           `json:"chainUsage,omitempty"`
}

// Compiled on first use: package initialisation is paid by every
// invocation of the binary, a job id check only by research commands.
var jobIDRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^rj_[a-z2-7]{16}$`) })

// ValidJobID reports whether id has the shape of a job id. Ids name
// folders under <home>/research, so nothing else is ever accepted.
func ValidJobID(id string) bool { return jobIDRE().MatchString(id) }

func newJobID() string {
	var b [10]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return "rj_" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
}

const jobCols = `job_id, agent_id, session_key, session_incarnation, profile_id, credential_account, base_url, agent,
handle, state, provider_status, provider_updated, question, output_format, max_report_bytes, idempotency_key,
created_at, updated_at, submitted_at, finished_at, deadline_at, next_poll_at, poll_count, error_code, error_message,
partial, published, report_bytes, citation_count, dropped_citations, cancel_requested_at, row_version, cancel_sent_at,
plan_handle, parent_job, options, plan_proposed_at, usage`

func scanJob(row interface{ Scan(...any) error }, extra ...any) (*Job, error) {
	var j Job
	var handle, idem sql.NullString
	var partial, published int
	var options, usage string
	err := row.Scan(append([]any{&j.ID, &j.AgentID, &j.SessionKey, &j.SessionIncarnation, &j.ProfileID, &j.CredentialAccount, &j.BaseURL, &j.Agent,
		&handle, &j.State, &j.ProviderStatus, &j.ProviderUpdated, &j.Question, &j.OutputFormat, &j.MaxReportBytes, &idem,
		&j.CreatedAt, &j.UpdatedAt, &j.SubmittedAt, &j.FinishedAt, &j.DeadlineAt, &j.NextPollAt, &j.PollCount, &j.ErrorCode, &j.ErrorMessage,
		&partial, &published, &j.ReportBytes, &j.CitationCount, &j.DroppedCitations, &j.CancelRequestedAt, &j.RowVersion, &j.CancelSentAt,
		&j.PlanHandle, &j.ParentJob, &options, &j.PlanProposedAt, &usage}, extra...)...)
	if err != nil {
		return nil, err
	}
	if j.TurnUsage, err = decodeUsage(usage); err != nil {
		return nil, err
	}
	j.sumUsage()
	if j.Options, err = decodeOptions(options); err != nil {
		return nil, err
	}
	j.Handle, j.IdempotencyKey = handle.String, idem.String
	j.Partial, j.Published = partial != 0, published != 0
	return &j, nil
}

func storeErr(what string, err error) error {
	return errs.Failed(errs.CodeStoreError, "cannot %s: %v", what, err).Wrap(err)
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// jobStore is the research_jobs table. Every write goes through the write
// fence: fence (OpEnv.BeginWrite, the operation's owner fence) is checked
// immediately before it, so a process that no longer owns the state never
// writes a job row (the next owner's recovery classifies what it left).
type jobStore struct {
	st    *store.Store
	fence func() error
}

// jobsOf is the job table of an operation, behind its write fence.
func jobsOf(env *owner.OpEnv) jobStore { return jobStore{st: env.Store, fence: env.BeginWrite} }

// beginWrite runs the write fence before a write of the table.
func (s jobStore) beginWrite() error {
	if s.fence == nil {
		return nil
	}
	return s.fence()
}

func (s jobStore) q(query string) string { return s.st.Rebind(query) }

// stmt is a prepared statement of a hot query (poll get and update),
// cached on the store (store.Prepared): preparing dominated the poller's
// CPU otherwise.
func (s jobStore) stmt(ctx context.Context, query string) (*sql.Stmt, error) {
	return s.st.Prepared(ctx, query)
}

func (s jobStore) insert(ctx context.Context, j *Job) error {
	if err := s.beginWrite(); err != nil {
		return err
	}
	_, err := s.st.DB().ExecContext(ctx, s.q(`INSERT INTO research_jobs (`+jobCols+`) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`),
		j.ID, j.AgentID, j.SessionKey, j.SessionIncarnation, j.ProfileID, j.CredentialAccount, j.BaseURL, j.Agent,
		nullable(j.Handle), j.State, j.ProviderStatus, j.ProviderUpdated, j.Question, j.OutputFormat, j.MaxReportBytes, nullable(j.IdempotencyKey),
		j.CreatedAt, j.UpdatedAt, j.SubmittedAt, j.FinishedAt, j.DeadlineAt, j.NextPollAt, j.PollCount, j.ErrorCode, j.ErrorMessage,
		b2i(j.Partial), b2i(j.Published), j.ReportBytes, j.CitationCount, j.DroppedCitations, j.CancelRequestedAt, j.RowVersion, j.CancelSentAt,
		j.PlanHandle, j.ParentJob, encodeOptions(j.Options), j.PlanProposedAt, encodeUsage(j.TurnUsage))
	if err != nil {
		return storeErr("record the research job", err)
	}
	return nil
}

func (s jobStore) get(ctx context.Context, id string) (*Job, error) {
	st, err := s.stmt(ctx, `SELECT `+jobCols+` FROM research_jobs WHERE job_id = ?`)
	if err != nil {
		return nil, storeErr("read the research job", err)
	}
	j, err := scanJob(st.QueryRowContext(ctx, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, errs.Failed(CodeJobNotFound, "no research job %s", id).WithJob(id).WithHint("'clawkit research list' shows the jobs of this home")
	}
	if err != nil {
		return nil, storeErr("read the research job", err)
	}
	return j, nil
}

// jobColsOf is jobCols qualified by a table alias (for joins).
func jobColsOf(alias string) string {
	cols := strings.Split(strings.ReplaceAll(jobCols, "\n", " "), ",")
	for i, c := range cols {
		cols[i] = alias + "." + strings.TrimSpace(c)
	}
	return strings.Join(cols, ", ")
}

var jobWithSessionQuery = sync.OnceValue(func() string {
	return `SELECT ` + jobColsOf("r") + `, s.incarnation, s.status, s.retry_after_ms
FROM research_jobs r LEFT JOIN sessions s ON s.agent_id = r.agent_id AND s.session_key = r.session_key
WHERE r.job_id = ?`
})

// getWithSession reads a job and its bound session in one round trip (a
// queued poll's authority check uses this read of the session as its
// first; sess is nil when the session no longer exists).
func (s jobStore) getWithSession(ctx context.Context, id string) (*Job, *store.Session, error) {
	st, err := s.stmt(ctx, jobWithSessionQuery())
	if err != nil {
		return nil, nil, storeErr("read the research job", err)
	}
	var inc, retry sql.NullInt64
	var status sql.NullString
	j, err := scanJob(st.QueryRowContext(ctx, id), &inc, &status, &retry)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil, errs.Failed(CodeJobNotFound, "no research job %s", id).WithJob(id).WithHint("'clawkit research list' shows the jobs of this home")
	}
	if err != nil {
		return nil, nil, storeErr("read the research job", err)
	}
	if !status.Valid {
		return j, nil, nil
	}
	return j, &store.Session{AgentID: j.AgentID, SessionKey: j.SessionKey, Incarnation: inc.Int64, Status: status.String, RetryAfterMs: retry.Int64}, nil
}

func (s jobStore) byHandle(ctx context.Context, handle string) (*Job, error) {
	j, err := scanJob(s.st.DB().QueryRowContext(ctx, s.q(`SELECT `+jobCols+` FROM research_jobs WHERE handle = ?`), handle))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, storeErr("read the research job", err)
	}
	return j, nil
}

func (s jobStore) byPlanHandle(ctx context.Context, handle string) (*Job, error) {
	rows, err := s.list(ctx, `WHERE plan_handle = ? ORDER BY created_at LIMIT 1`, handle)
	if err != nil || len(rows) == 0 {
		return nil, err
	}
	return rows[0], nil
}

func (s jobStore) byIdempotencyKey(ctx context.Context, agent, session, key string) (*Job, error) {
	j, err := scanJob(s.st.DB().QueryRowContext(ctx, s.q(`SELECT `+jobCols+` FROM research_jobs WHERE agent_id = ? AND session_key = ? AND idempotency_key = ?`), agent, session, key))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, storeErr("read the research job", err)
	}
	return j, nil
}

func (s jobStore) list(ctx context.Context, where string, args ...any) ([]*Job, error) {
	rows, err := s.st.DB().QueryContext(ctx, s.q(`SELECT `+jobCols+` FROM research_jobs `+where), args...)
	if err != nil {
		if strings.Contains(err.Error(), "no such table") {
			return nil, nil // read-only view of a home without a database
		}
		return nil, storeErr("list research jobs", err)
	}
	defer fsx.CloseRead(rows)
	var out []*Job
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return nil, storeErr("list research jobs", err)
		}
		out = append(out, j)
	}
	return out, rows.Err()
}

// errStale reports a compare-and-set that lost: the row changed since it
// was read, so the caller's view is older than the stored one.
var errStale = errors.New("research job changed concurrently")

// update writes j if and only if the stored row_version is still the one j
// was read at; it bumps the version. A terminal stored state is never
// overwritten (the WHERE clause makes that hold even against a buggy
// caller).
func (s jobStore) update(ctx context.Context, j *Job, now time.Time) error {
	return s.updateIn(ctx, nil, j, now)
}

// pollSoon moves a pollable job's next poll earlier, to at, and nothing
// else: the row version stays, so a poll in flight (in this process or
// another gateway) still records what it saw, whatever it sets next_poll_at
// to then. It reports whether the row moved.
func (s jobStore) pollSoon(ctx context.Context, id string, at int64) (bool, error) {
	if err := s.beginWrite(); err != nil {
		return false, err
	}
	res, err := s.st.DB().ExecContext(ctx, s.q(`UPDATE research_jobs SET next_poll_at = ? WHERE job_id = ? AND next_poll_at > ? AND state IN ('running','cancel-requested')`), at, id, at)
	if err != nil {
		return false, storeErr("update the research job", err)
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// recordUsage writes a pollable job's usage, and nothing else: as
// pollSoon, the row version stays, so a poll in flight still records what
// it saw (a stream's usage between polls, gatewaystreams.go).
func (s jobStore) recordUsage(ctx context.Context, j *Job) error {
	if err := s.beginWrite(); err != nil {
		return err
	}
	_, err := s.st.DB().ExecContext(ctx, s.q(`UPDATE research_jobs SET usage = ? WHERE job_id = ? AND state IN ('running','cancel-requested')`), encodeUsage(j.TurnUsage), j.ID)
	if err != nil {
		return storeErr("update the research job", err)
	}
	return nil
}

// updateIn is update inside tx (nil: on its own).
func (s jobStore) updateIn(ctx context.Context, tx *sql.Tx, j *Job, now time.Time) error {
	if err := s.beginWrite(); err != nil {
		return err
	}
	j.UpdatedAt = now.UnixMilli()
	st, err := s.stmt(ctx, `UPDATE research_jobs SET handle = ?, state = ?, provider_status = ?, provider_updated = ?,
 updated_at = ?, submitted_at = ?, finished_at = ?, next_poll_at = ?, poll_count = ?, error_code = ?, error_message = ?,
 partial = ?, published = ?, report_bytes = ?, citation_count = ?, dropped_citations = ?, cancel_requested_at = ?,
 cancel_sent_at = ?, plan_handle = ?, plan_proposed_at = ?, options = ?, deadline_at = ?, usage = ?, row_version = row_version + 1
 WHERE job_id = ? AND row_version = ? AND state NOT IN ('completed','failed','cancelled','incomplete','not-sent','indeterminate')`)
	if err != nil {
		return storeErr("update the research job", err)
	}
	if tx != nil {
		st = tx.StmtContext(ctx, st)
	}
	res, err := st.ExecContext(ctx,
		nullable(j.Handle), j.State, j.ProviderStatus, j.ProviderUpdated, j.UpdatedAt, j.SubmittedAt, j.FinishedAt, j.NextPollAt,
		j.PollCount, j.ErrorCode, j.ErrorMessage, b2i(j.Partial), b2i(j.Published), j.ReportBytes, j.CitationCount, j.DroppedCitations,
		j.CancelRequestedAt, j.CancelSentAt, j.PlanHandle, j.PlanProposedAt, encodeOptions(j.Options), j.DeadlineAt, encodeUsage(j.TurnUsage), j.ID, j.RowVersion)
	if err != nil {
		return storeErr("update the research job", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return storeErr("update the research job", err)
	}
	if n != 1 {
		return errStale
	}
	j.RowVersion++
	return nil
}

func ms(t time.Time) int64 { return t.UnixMilli() }
func fromMs(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMilli(v).UTC()
}
