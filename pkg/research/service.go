package research

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/clawkit/clawkit/pkg/auth"
	"github.com/clawkit/clawkit/pkg/config"
	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/owner"
	"github.com/clawkit/clawkit/pkg/research/google"
	"github.com/clawkit/clawkit/pkg/store"
)

// Budgets bound a job. Zero fields take the defaults.
type Budgets struct {
	// WallClock is the longest a job may run before clawkit cancels it.
	WallClock time.Duration
	// MaxPolls is the poll count after which clawkit cancels it.
	MaxPolls int
	// FastInterval is the poll interval during FastPeriod after submission,
	// SlowInterval after it; both are jittered by ±Jitter.
	FastInterval time.Duration
	FastPeriod   time.Duration
	SlowInterval time.Duration
	Jitter       float64
	// RequestTimeout bounds each HTTP request.
	RequestTimeout time.Duration
	MaxCitations   int
	// RefreshRetries is how many times a refreshing session is waited for
	// (reacquiring authority each time) before giving up with exit 5.
	RefreshRetries int
	// MaxRefreshWait caps one wait for a refreshing session.
	MaxRefreshWait time.Duration
}

// DefaultBudgets are DESIGN §6's.
var DefaultBudgets = Budgets{
	WallClock:      65 * time.Minute,
	MaxPolls:       400,
	FastInterval:   5 * time.Second,
	FastPeriod:     2 * time.Minute,
	SlowInterval:   15 * time.Second,
	Jitter:         0.2,
	RequestTimeout: 30 * time.Second,
	MaxCitations:   DefaultCitationMax,
	RefreshRetries: 5,
	MaxRefreshWait: 30 * time.Second,
}

// cancelGracePolls is how many polls past MaxPolls a budget cancellation
// may take to be confirmed before clawkit stops polling.
const cancelGracePolls = 20

// Service runs research operations. Its clock-free parts (Sleep, Rand,
// HTTP, Getenv) are injectable so tests run the budgets fast.
type Service struct {
	Budgets Budgets
	HTTP    *http.Client
	Getenv  func(string) string
	// Sleep waits d or until ctx ends.
	Sleep func(ctx context.Context, d time.Duration) error
	Rand  func() float64

	locks   sync.Map // job id → *sync.Mutex: one poll of a job at a time
	pending sync.Map // job id → struct{}: creates in flight in this process

	authMu   sync.Mutex
	authHome string
	authKey  string
	authView *authView
}

// Default is the service the registered methods use.
var Default = &Service{}

// EnvTimeScale divides every research interval and budget duration (poll
// intervals, wall clock, refresh waits; not the per-request HTTP timeout).
// It exists for tests and demos against the fake API: 1000 turns a 65-minute
// budget into 3.9 s. Values below 1 are ignored, and so is the whole setting
// unless CLAWKIT_GOOGLE_BASE_URL names a loopback host: a scaled poller must
// never hammer the real provider.
const EnvTimeScale = "CLAWKIT_RESEARCH_TIME_SCALE"

// timeScale returns the honoured EnvTimeScale factor (1 when unset or not
// allowed).
func (s *Service) timeScale() float64 {
	v := s.getenv(EnvTimeScale)
	if v == "" {
		return 1
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 1 {
		return 1
	}
	u, err := url.Parse(s.getenv(EnvBaseURL))
	if err != nil {
		return 1
	}
	host := u.Hostname()
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return 1
	}
	return f
}

func (s *Service) budgets() Budgets {
	b := s.Budgets
	d := DefaultBudgets
	if f := s.timeScale(); f > 1 {
		scale := func(x time.Duration) time.Duration { return time.Duration(float64(x) / f) }
		d.WallClock, d.FastInterval, d.FastPeriod, d.SlowInterval, d.MaxRefreshWait =
			scale(d.WallClock), scale(d.FastInterval), scale(d.FastPeriod), scale(d.SlowInterval), scale(d.MaxRefreshWait)
	}
	// Unset (zero or negative) fields take the defaults.
	b.WallClock = positiveOr(b.WallClock, d.WallClock)
	b.MaxPolls = positiveOr(b.MaxPolls, d.MaxPolls)
	b.FastInterval = positiveOr(b.FastInterval, d.FastInterval)
	b.FastPeriod = positiveOr(b.FastPeriod, d.FastPeriod)
	b.SlowInterval = positiveOr(b.SlowInterval, d.SlowInterval)
	b.Jitter = positiveOr(b.Jitter, d.Jitter)
	b.RequestTimeout = positiveOr(b.RequestTimeout, d.RequestTimeout)
	b.MaxCitations = positiveOr(b.MaxCitations, d.MaxCitations)
	b.RefreshRetries = positiveOr(b.RefreshRetries, d.RefreshRetries)
	b.MaxRefreshWait = positiveOr(b.MaxRefreshWait, d.MaxRefreshWait)
	return b
}

func positiveOr[T int | float64 | time.Duration](v, d T) T {
	if v <= 0 {
		return d
	}
	return v
}

func (s *Service) getenv(k string) string {
	if s.Getenv != nil {
		return s.Getenv(k)
	}
	return os.Getenv(k)
}

func (s *Service) sleep(ctx context.Context, d time.Duration) error {
	if s.Sleep != nil {
		return s.Sleep(ctx, d)
	}
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func (s *Service) rand() float64 {
	if s.Rand != nil {
		return s.Rand()
	}
	return rand.Float64()
}

func (s *Service) lockJob(id string) func() {
	m, _ := s.locks.LoadOrStore(id, &sync.Mutex{})
	mu := m.(*sync.Mutex)
	mu.Lock()
	return mu.Unlock
}

func (s *Service) client(j *Job, cred credential) *google.Client {
	h := s.HTTP
	if h == nil {
		h = defaultHTTP()
	}
	return &google.Client{BaseURL: j.BaseURL, APIKey: cred.secret, Agent: j.Agent, Timeout: s.budgets().RequestTimeout, HTTP: h}
}

// interval is the wait before the next poll of a job submitted at
// submitted: fast at first, slower later, jittered, never shorter than a
// Retry-After the provider asked for.
func (s *Service) interval(now time.Time, submitted int64, retryAfter time.Duration) time.Duration {
	b := s.budgets()
	base := b.SlowInterval
	if submitted == 0 || now.Sub(fromMs(submitted)) < b.FastPeriod {
		base = b.FastInterval
	}
	j := 1 + b.Jitter*(2*s.rand()-1)
	d := time.Duration(float64(base) * j)
	if retryAfter > d {
		d = retryAfter
	}
	return d
}

// ---------------------------------------------------------------------------
// Authority.

// Caller is who asks: the custody identity compared with a job's binding.
type Caller struct {
	AgentID    string `json:"agentId"`
	SessionKey string `json:"sessionKey"`
}

func (c *Caller) defaults() error {
	if c.AgentID == "" {
		c.AgentID = store.DefaultAgent
	}
	if c.SessionKey == "" {
		c.SessionKey = store.DefaultSession
	}
	return store.ValidateIDs(c.AgentID, c.SessionKey)
}

// bind binds the caller's session to env's scope, waiting a bounded number
// of times while it is refreshing (reacquiring authority each time). A
// revoked session is refused at once.
func (s *Service) bind(ctx context.Context, env *owner.Env, c Caller) (store.Session, error) {
	b := s.budgets()
	for attempt := 0; ; attempt++ {
		sess, err := env.BindSession(ctx, c.AgentID, c.SessionKey)
		if err == nil {
			return sess, nil
		}
		e := errs.As(err)
		if e == nil || e.Code != "session_refreshing" || attempt >= b.RefreshRetries {
			return sess, err
		}
		if err := s.sleep(ctx, refreshWait(e, b)); err != nil {
			return sess, err
		}
	}
}

func refreshWait(e *errs.Error, b Budgets) time.Duration {
	d := time.Duration(e.RetryAfterMs) * time.Millisecond
	if d <= 0 {
		d = time.Second
	}
	if d > b.MaxRefreshWait {
		d = b.MaxRefreshWait
	}
	return d
}

// assertWithRefresh calls assert; while it reports a refreshing session it
// waits and re-checks, a bounded number of times.
func (s *Service) assertWithRefresh(ctx context.Context, assert func() error) error {
	b := s.budgets()
	for attempt := 0; ; attempt++ {
		err := assert()
		e := errs.As(err)
		if err == nil || e == nil || e.Code != "session_refreshing" || attempt >= b.RefreshRetries {
			return err
		}
		if err := s.sleep(ctx, refreshWait(e, b)); err != nil {
			return err
		}
	}
}

// custody checks, before any HTTP request, that caller may act on j: the
// same agent and session, the session's incarnation unchanged since the
// job was bound, research still enabled, and the same profile, credential
// account and endpoint as at submission. It returns the pinned credential.
func (s *Service) custody(ctx context.Context, env *owner.Env, j *Job, c Caller) (credential, error) {
	if err := checkCaller(j, c); err != nil {
		return credential{}, err
	}
	sess, err := s.bind(ctx, env, c)
	if err != nil {
		return credential{}, err
	}
	return s.jobAuthority(env.Home, j, sess)
}

// checkCaller refuses a caller that is not the job's agent and session.
// It guards every job operation, including reading a finished job's
// report, and needs no HTTP.
func checkCaller(j *Job, c Caller) error {
	if c.AgentID != j.AgentID || c.SessionKey != j.SessionKey {
		return errs.Refused("foreign_owner", "research job %s belongs to session %s of agent %s, not %s of %s", j.ID, j.SessionKey, j.AgentID, c.SessionKey, c.AgentID).
			WithHint("use --agent %s --session %s, the identity that started it", j.AgentID, j.SessionKey)
	}
	return nil
}

// jobAuthority is the part of custody that does not depend on the caller:
// the session's incarnation, then the pinned credential (credentialFor).
func (s *Service) jobAuthority(home string, j *Job, sess store.Session) (credential, error) {
	if sess.Incarnation != j.SessionIncarnation {
		return credential{}, errs.Refused("stale_owner", "research job %s was started in incarnation %d of session %s; the session is now at %d", j.ID, j.SessionIncarnation, j.SessionKey, sess.Incarnation).
			WithHint("the session was reset; the job can no longer be polled or cancelled from it")
	}
	return credentialFor(j, s.loadAuthView(home))
}

// authView is the configuration and the configured credential, loaded
// once (per command, or per poller batch) and compared with each job's
// binding.
type authView struct {
	set     Settings
	setErr  error
	cred    credential
	credErr error
}

// loadAuthView returns the current config and credential view. It is
// cached on the identity (inode, size, mtime) of config.json and
// credentials.json and the base URL override: both files are only ever
// replaced by atomic renames, so any change gives a new identity and a
// fresh read, while the poller's batches cost two stat calls.
func (s *Service) loadAuthView(home string) *authView {
	key := fileIdentity(filepath.Join(home, config.FileName)) + "|" + fileIdentity(filepath.Join(home, auth.FileName)) + "|" + s.getenv(EnvBaseURL)
	s.authMu.Lock()
	defer s.authMu.Unlock()
	if s.authHome == home && s.authKey == key && s.authView != nil {
		return s.authView
	}
	v := s.readAuthView(home)
	s.authHome, s.authKey, s.authView = home, key, v
	return v
}

func fileIdentity(path string) string {
	fi, err := os.Stat(path)
	if err != nil {
		return "absent"
	}
	ino := uint64(0)
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		ino = uint64(st.Ino)
	}
	return fmt.Sprintf("%d:%d:%d", ino, fi.Size(), fi.ModTime().UnixNano())
}

func (s *Service) readAuthView(home string) *authView {
	v := &authView{}
	v.set, v.setErr = LoadSettings(home, s.getenv)
	if v.setErr == nil {
		if v.setErr = v.set.requireEnabled(); v.setErr == nil {
			v.cred, v.credErr = loadCredential(home, v.set)
		}
	}
	return v
}

// credentialFor checks that research is still enabled with the job's
// profile, endpoint and credential account, and returns the credential.
func credentialFor(j *Job, v *authView) (credential, error) {
	if v.setErr != nil {
		return credential{}, v.setErr
	}
	if v.set.ProfileID != j.ProfileID {
		return credential{}, errs.Refused("profile_substituted", "research job %s is pinned to profile %q; the configured profile is now %q", j.ID, j.ProfileID, v.set.ProfileID).
			WithHint("set %s.profileId back to %q to poll or cancel it", ConfigPath, j.ProfileID)
	}
	if v.set.BaseURL != j.BaseURL {
		return credential{}, errs.Refused("endpoint_changed", "research job %s was submitted to %s; the configured endpoint is now %s", j.ID, j.BaseURL, v.set.BaseURL).
			WithHint("restore the endpoint (%s.baseUrl or %s) the job was submitted to", ConfigPath, EnvBaseURL)
	}
	if v.credErr != nil {
		return credential{}, v.credErr
	}
	if v.cred.Account != j.CredentialAccount {
		return credential{}, errs.Refused("credential_substituted", "profile %q now holds a different credential (account %s) than the one research job %s was submitted with (%s)", j.ProfileID, v.cred.Account, j.ID, j.CredentialAccount).
			WithHint("restore the original API key in profile %q; a job is only polled with the key that created it", j.ProfileID)
	}
	return v.cred, nil
}

// ---------------------------------------------------------------------------
// Start.

// StartParams are research.start's parameters.
type StartParams struct {
	Caller
	Question       string `json:"question"`
	OutputFormat   string `json:"outputFormat,omitempty"`
	MaxReportBytes int64  `json:"maxReportBytes,omitempty"`
	AsOf           string `json:"asOf,omitempty"`
	IdempotencyKey string `json:"idempotencyKey,omitempty"`
}

// StartResult is research.start's result.
type StartResult struct {
	Job    string `json:"job"`
	Handle string `json:"handle"`
	State  string `json:"state"`
	Status string `json:"status,omitempty"`
	// Existing is true when an --idempotency-key matched a recorded job.
	Existing bool `json:"existing"`
}

func validIdempotencyKey(k string) bool {
	if k == "" || len(k) > 128 {
		return false
	}
	for _, r := range k {
		if r <= ' ' || r == 0x7f {
			return false
		}
	}
	return true
}

// Start submits a research job. The create request is sent at most once:
// whatever happens after it may have left, it is never sent again for this
// job.
func (s *Service) Start(ctx context.Context, env *owner.Env, p StartParams) (*StartResult, error) {
	if err := p.Caller.defaults(); err != nil {
		return nil, err
	}
	if strings.TrimSpace(p.Question) == "" {
		return nil, errs.Usage("invalid_question", "the question is empty").WithHint("clawkit research start \"QUESTION\"")
	}
	if len(p.Question) > MaxQuestionBytes || strings.ContainsRune(p.Question, 0) {
		return nil, errs.Usage("invalid_question", "the question is longer than %d bytes or contains NUL", MaxQuestionBytes)
	}
	if p.AsOf != "" {
		return nil, errAsOf()
	}
	out := Output{Format: p.OutputFormat, MaxReportBytes: p.MaxReportBytes}
	if err := out.Validate(); err != nil {
		return nil, err
	}
	if out.Format == "" {
		out.Format = "markdown"
	}
	if out.MaxReportBytes == 0 {
		out.MaxReportBytes = DefaultReportMax
	}
	if p.IdempotencyKey != "" && !validIdempotencyKey(p.IdempotencyKey) {
		return nil, errs.Usage("invalid_idempotency_key", "the idempotency key must be 1–128 printable characters without spaces")
	}
	set, err := LoadSettings(env.Home, s.getenv)
	if err != nil {
		return nil, err
	}
	if err := set.requireEnabled(); err != nil {
		return nil, err
	}
	cred, err := loadCredential(env.Home, set)
	if err != nil {
		return nil, err
	}
	sess, err := s.bind(ctx, env, p.Caller)
	if err != nil {
		return nil, err
	}
	js := jobStore{env.Store}
	now := env.Now()
	existing := func() (*StartResult, bool, error) {
		if p.IdempotencyKey == "" {
			return nil, false, nil
		}
		old, err := js.byIdempotencyKey(ctx, p.AgentID, p.SessionKey, p.IdempotencyKey)
		if err != nil {
			return nil, true, err
		}
		if old == nil {
			return nil, false, nil
		}
		if old.Question != p.Question {
			return nil, true, errs.Usage("idempotency_key_reused", "idempotency key %q was used for research job %s with a different question", p.IdempotencyKey, old.ID).
				WithHint("use a new key for a new question")
		}
		if _, err := s.jobAuthority(env.Home, old, sess); err != nil {
			return nil, true, err
		}
		return &StartResult{Job: old.ID, Handle: old.Handle, State: old.State, Status: old.ProviderStatus, Existing: true}, true, jobOutcomeErr(old)
	}
	if res, found, err := existing(); found {
		return res, err
	}
	j := &Job{
		ID: newJobID(), AgentID: p.AgentID, SessionKey: p.SessionKey, SessionIncarnation: sess.Incarnation,
		ProfileID: cred.ProfileID, CredentialAccount: cred.Account, BaseURL: set.BaseURL, Agent: set.Agent,
		State: StateSubmitting, Question: p.Question, OutputFormat: out.Format, MaxReportBytes: out.MaxReportBytes,
		IdempotencyKey: p.IdempotencyKey, CreatedAt: ms(now), UpdatedAt: ms(now),
		DeadlineAt: ms(now.Add(s.budgets().WallClock)), RowVersion: 1,
	}
	// The job exists (submitting, no receipt) before anything is sent, so a
	// crash during the create is found by recovery and made indeterminate.
	s.pending.Store(j.ID, struct{}{})
	defer s.pending.Delete(j.ID)
	if err := js.insert(ctx, j); err != nil {
		// A concurrent start with the same key won the insert (the key is
		// unique per agent and session): answer with its job.
		if res, found, eerr := existing(); found {
			return res, eerr
		}
		return nil, err
	}
	if err := env.Scope.AssertCurrent(); err != nil {
		j.State, j.ErrorCode, j.ErrorMessage = StateNotSent, errs.CodeOf(err), err.Error()
		_ = js.update(context.WithoutCancel(ctx), j, env.Now())
		return nil, err
	}
	it, err := s.client(j, cred).Create(ctx, p.Question)
	// From here on the create may have happened: record what we know even
	// if our own context is being cancelled.
	wctx := context.WithoutCancel(ctx)
	if err != nil {
		return nil, s.createFailed(wctx, env, js, j, err)
	}
	j.Handle, j.ProviderStatus, j.ProviderUpdated = it.ID, it.Status, it.Updated
	j.State = StateRunning
	j.SubmittedAt = ms(env.Now())
	j.NextPollAt = ms(env.Now().Add(s.interval(env.Now(), j.SubmittedAt, 0)))
	if err := js.update(wctx, j, env.Now()); err != nil {
		return nil, errs.Unknown("receipt_not_recorded", "the provider accepted research job %s as interaction %s, but recording the receipt failed: %v", j.ID, it.ID, err).
			WithHint("do not start it again; inspect the provider account for interaction %s", it.ID)
	}
	return &StartResult{Job: j.ID, Handle: j.Handle, State: j.State, Status: j.ProviderStatus}, nil
}

// createFailed records a failed create as not-sent (proved not accepted)
// or indeterminate (may have been accepted) and returns the classified
// error.
func (s *Service) createFailed(ctx context.Context, env *owner.Env, js jobStore, j *Job, err error) error {
	ge := google.AsError(err)
	var out *errs.Error
	state := StateIndeterminate
	switch {
	case ge != nil && ge.NotSent && ge.Auth:
		state = StateNotSent
		out = errs.Refused("provider_refused_credential", "%s", ge.Msg).
			WithHint("check the API key of profile %q (clawkit auth add %s --provider google --api-key-env GEMINI_API_KEY)", j.ProfileID, j.ProfileID)
	case ge != nil && ge.NotSent && ge.Temporary:
		state = StateNotSent
		out = errs.Unavailable("provider_busy", "%s; research job %s was not submitted", ge.Msg, j.ID).
			WithHint("start it again later")
		if ge.RetryAfter > 0 {
			out = out.WithRetryAfter(ge.RetryAfter.Milliseconds())
		}
	case ge != nil && ge.NotSent:
		state = StateNotSent
		out = errs.Failed("not_sent", "%s; research job %s was not submitted", ge.Msg, j.ID).
			WithHint("fix the cause and start it again; nothing was submitted")
	default:
		msg := err.Error()
		if ge != nil {
			msg = ge.Msg
		}
		out = errs.Unknown("create_outcome_unknown", "%s; research job %s may or may not have been submitted", msg, j.ID).
			WithHint("it is never resubmitted automatically: inspect the Interactions of your provider account before starting it again")
	}
	out = out.Wrap(err)
	j.State, j.ErrorCode, j.ErrorMessage = state, out.Code, out.Message
	j.FinishedAt = ms(env.Now())
	if uerr := js.update(ctx, j, env.Now()); uerr != nil {
		return errs.Unknown("create_outcome_unknown", "%s; recording it also failed: %v", out.Message, uerr).
			WithHint("inspect the provider account before starting it again")
	}
	return &JobStateError{State: state, Err: out}
}

// jobOutcomeErr turns a recorded failed submission into its error again,
// so repeating a start with the same idempotency key reports the same
// outcome instead of resubmitting.
func jobOutcomeErr(j *Job) error {
	switch j.State {
	case StateIndeterminate:
		return &JobStateError{State: j.State, Err: errs.Unknown("create_outcome_unknown", "research job %s has an unknown submission outcome: %s", j.ID, j.ErrorMessage).
			WithHint("inspect the provider account; clawkit never resubmits it")}
	case StateNotSent:
		return &JobStateError{State: j.State, Err: errs.Failed("not_sent", "research job %s was never submitted: %s", j.ID, j.ErrorMessage).
			WithHint("use a new idempotency key to submit the question again")}
	}
	return nil
}

// ---------------------------------------------------------------------------
// Poll.

// JobParams name a job (by id, or by provider handle for RPC).
type JobParams struct {
	Caller
	Job    string `json:"job,omitempty"`
	Handle string `json:"handle,omitempty"`
	// Out, when set, is an absolute path the report is also published to.
	Out string `json:"out,omitempty"`
	// deliver is set by the RPC path, whose answer carries the report.
	deliver bool
}

// deliveryAuthority checks, without any HTTP, that the caller may receive
// a finished job's report: its session is usable and still at the
// incarnation the job was bound to. The session is bound to the scope, so
// AssertCurrent right before delivery re-checks it.
func (s *Service) deliveryAuthority(ctx context.Context, env *owner.Env, j *Job, c Caller) error {
	sess, err := s.bind(ctx, env, c)
	if err != nil {
		return err
	}
	if sess.Incarnation != j.SessionIncarnation {
		return errs.Refused("stale_owner", "research job %s was started in incarnation %d of session %s; the session is now at %d", j.ID, j.SessionIncarnation, j.SessionKey, sess.Incarnation).
			WithHint("the session was reset; the job's report is not delivered to it (it stays under %s)", jobDir(env.Home, j.ID))
	}
	return nil
}

// PollResult is the view of a job after an operation.
type PollResult struct {
	*Job
	Done      bool   `json:"done"`
	ReportDir string `json:"reportDir,omitempty"`
	Report    string `json:"report,omitempty"`
	// Citations are included only in RPC answers.
	Citations []google.Citation `json:"citations,omitempty"`
}

func (s *Service) lookup(ctx context.Context, env *owner.Env, p JobParams) (*Job, error) {
	js := jobStore{env.Store}
	if p.Job != "" {
		if !ValidJobID(p.Job) {
			return nil, errs.Usage("invalid_job_id", "%q is not a research job id (rj_…)", p.Job)
		}
		return js.get(ctx, p.Job)
	}
	if err := google.CheckHandle(p.Handle); err != nil {
		return nil, errs.Usage("invalid_handle", "invalid handle: %v", err)
	}
	j, err := js.byHandle(ctx, p.Handle)
	if err != nil {
		return nil, err
	}
	if j == nil {
		// An unknown handle is someone else's interaction as far as this
		// home knows: it is never sent to the provider.
		return nil, errs.Refused("unknown_handle", "no research job of this home has handle %q", p.Handle).
			WithHint("a handle is only an identifier; poll jobs started from this home")
	}
	return j, nil
}

// Poll polls a job once (after custody checks) and applies the result.
func (s *Service) Poll(ctx context.Context, env *owner.Env, p JobParams) (*PollResult, error) {
	if err := p.Caller.defaults(); err != nil {
		return nil, err
	}
	j, err := s.lookup(ctx, env, p)
	if err != nil {
		return nil, err
	}
	if err := checkCaller(j, p.Caller); err != nil {
		return nil, err
	}
	if TerminalState(j.State) || !Pollable(j.State) {
		if p.Out != "" || p.deliver {
			if err := s.deliveryAuthority(ctx, env, j, p.Caller); err != nil {
				return nil, err
			}
		}
		if err := s.deliver(ctx, env, j, p.Out, env.Scope.AssertCurrent); err != nil {
			return nil, err
		}
		return s.view(env, j), jobOutcomeErr(j)
	}
	cred, err := s.custody(ctx, env, j, p.Caller)
	if err != nil {
		return nil, err
	}
	j, err = s.pollOnce(ctx, env, j.ID, cred, env.Scope.AssertCurrent, false)
	if err != nil {
		return nil, err
	}
	if err := s.deliver(ctx, env, j, p.Out, env.Scope.AssertCurrent); err != nil {
		return nil, err
	}
	return s.view(env, j), nil
}

func (s *Service) view(env *owner.Env, j *Job) *PollResult {
	r := &PollResult{Job: j, Done: TerminalState(j.State)}
	if j.Published {
		r.ReportDir = jobDir(env.Home, j.ID)
	}
	return r
}

// pollOnce is the one operation both schedulers (wait, the gateway
// poller) call: poll the provider once and apply what it says. The caller
// has checked custody; assert is checked right before the request and
// before publication.
func (s *Service) pollOnce(ctx context.Context, env *owner.Env, id string, cred credential, assert func() error, dueOnly bool) (*Job, error) {
	unlock := s.lockJob(id)
	defer unlock()
	js := jobStore{env.Store}
	j, err := js.get(ctx, id)
	if err != nil {
		return nil, err
	}
	if !Pollable(j.State) {
		return j, nil
	}
	if dueOnly && j.NextPollAt > ms(env.Now()) {
		// Another scheduler (the gateway poller, a concurrent wait) polled
		// it meanwhile: one poll per interval, whoever does it.
		return j, nil
	}
	b := s.budgets()
	if j.PollCount >= b.MaxPolls+cancelGracePolls {
		return j, errs.Failed("poll_budget_exhausted", "research job %s reached its poll budget (%d polls) without a confirmed end", j.ID, j.PollCount).
			WithHint("inspect the interaction %s in the provider account", j.Handle)
	}
	if err := s.assertWithRefresh(ctx, assert); err != nil {
		return nil, err
	}
	it, err := s.client(j, cred).Get(ctx, j.Handle)
	now := env.Now()
	wctx := context.WithoutCancel(ctx)
	j.PollCount++
	if err != nil {
		ge := google.AsError(err)
		var ra time.Duration
		if ge != nil {
			ra = ge.RetryAfter
		}
		j.NextPollAt = ms(now.Add(s.interval(now, j.SubmittedAt, ra)))
		out := classifyPollErr(j, err)
		j.ErrorCode, j.ErrorMessage = out.Code, out.Message
		if uerr := js.update(wctx, j, now); uerr != nil && uerr != errStale {
			return nil, uerr
		}
		return j, out
	}
	return s.apply(ctx, env, j, it, cred, assert)
}

func classifyPollErr(j *Job, err error) *errs.Error {
	ge := google.AsError(err)
	switch {
	case ge == nil:
		return errs.Unavailable("poll_failed", "poll of research job %s failed: %v", j.ID, err).Wrap(err)
	case ge.Auth:
		return errs.Refused("provider_refused_credential", "%s", ge.Msg).
			WithHint("the API key of profile %q no longer has access to interaction %s", j.ProfileID, j.Handle).Wrap(err)
	case ge.Temporary:
		e := errs.Unavailable("provider_unavailable", "%s", ge.Msg).WithHint("the job keeps its state; poll again later")
		if ge.RetryAfter > 0 {
			e = e.WithRetryAfter(ge.RetryAfter.Milliseconds())
		}
		return e.Wrap(err)
	case ge.HTTPStatus == http.StatusNotFound:
		return errs.Failed("interaction_not_found", "%s", ge.Msg).
			WithHint("the provider does not know interaction %s for this key", j.Handle).Wrap(err)
	}
	return errs.Failed("poll_failed", "%s", ge.Msg).Wrap(err)
}

// apply folds one interaction observation into the job: progress for a
// running one, publication and the terminal state for a finished one, and
// budget enforcement. An observation older than the recorded one is
// ignored, and a job that changed meanwhile is never overwritten.
func (s *Service) apply(ctx context.Context, env *owner.Env, j *Job, it *google.Interaction, cred credential, assert func() error) (*Job, error) {
	js := jobStore{env.Store}
	now := env.Now()
	wctx := context.WithoutCancel(ctx)
	if it.Updated != "" && j.ProviderUpdated != "" && olderStamp(it.Updated, j.ProviderUpdated) {
		// An older view of the interaction than one already applied.
		j.NextPollAt = ms(now.Add(s.interval(now, j.SubmittedAt, 0)))
		if err := js.update(wctx, j, now); err != nil && err != errStale {
			return nil, err
		}
		return js.get(wctx, j.ID)
	}
	j.ProviderStatus = it.Status
	if it.Updated != "" {
		j.ProviderUpdated = it.Updated
	}
	if !budgetCode(j.ErrorCode) {
		// A successful poll clears the last transient error; the reason of
		// a budget cancellation stays until the job ends.
		j.ErrorCode, j.ErrorMessage = "", ""
	}
	if !google.Terminal(it.Status) {
		j.NextPollAt = ms(now.Add(s.interval(now, j.SubmittedAt, 0)))
		b := s.budgets()
		overTime := now.UnixMilli() >= j.DeadlineAt
		overPolls := j.PollCount >= b.MaxPolls
		if j.State == StateRunning && (overTime || overPolls) {
			code := "wall_clock_budget_exceeded"
			if !overTime {
				code = "poll_budget_exceeded"
			}
			return s.budgetCancel(ctx, env, j, cred, assert, code)
		}
		if err := js.update(wctx, j, now); err != nil {
			if err == errStale {
				return js.get(wctx, j.ID)
			}
			return nil, err
		}
		return j, nil
	}
	// Terminal: publish first (idempotent), then record the state, so a
	// crash in between leaves a pollable job that publishes again.
	rep := google.ExtractReport(it, google.Bounds{MaxReportBytes: j.MaxReportBytes, MaxCitations: s.budgets().MaxCitations})
	j.State = terminalState(it.Status)
	j.Partial = it.Status != google.StatusCompleted && rep.Text != ""
	j.FinishedAt = ms(now)
	j.NextPollAt = 0
	j.ReportBytes, j.CitationCount, j.DroppedCitations = int64(len(rep.Text)), len(rep.Citations), rep.DroppedCitations
	if it.Error != nil && !budgetCode(j.ErrorCode) {
		j.ErrorCode = "provider_" + strings.ToLower(nonEmpty(it.Error.Status, "error"))
		j.ErrorMessage = truncate(it.Error.Message, 500)
	}
	if it.Status == google.StatusBudgetExceeded {
		j.ErrorCode = "provider_budget_exceeded"
	}
	if err := assert(); err != nil {
		return nil, err
	}
	if err := publish(env.Home, j, &rep, it); err != nil {
		return nil, err
	}
	j.Published = true
	if err := js.update(wctx, j, now); err != nil {
		if err == errStale {
			return js.get(wctx, j.ID)
		}
		return nil, err
	}
	return j, nil
}

func budgetCode(c string) bool {
	return c == "wall_clock_budget_exceeded" || c == "poll_budget_exceeded"
}

func nonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func truncate(s string, n int) string {
	s = strings.ToValidUTF8(s, "?")
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }

// olderStamp reports whether RFC 3339 time a is strictly before b; if
// either does not parse, nothing is considered older.
func olderStamp(a, b string) bool {
	ta, err1 := time.Parse(time.RFC3339Nano, a)
	tb, err2 := time.Parse(time.RFC3339Nano, b)
	return err1 == nil && err2 == nil && ta.Before(tb)
}

func terminalState(status string) string {
	switch status {
	case google.StatusCompleted:
		return StateCompleted
	case google.StatusCancelled:
		return StateCancelled
	case google.StatusIncomplete, google.StatusBudgetExceeded:
		return StateIncomplete
	}
	return StateFailed
}

// budgetCancel records cancellation intent for a job over its budget and
// asks the provider; the job stays cancel-requested until a poll confirms.
func (s *Service) budgetCancel(ctx context.Context, env *owner.Env, j *Job, cred credential, assert func() error, code string) (*Job, error) {
	js := jobStore{env.Store}
	now := env.Now()
	wctx := context.WithoutCancel(ctx)
	j.State, j.CancelRequestedAt = StateCancelRequested, ms(now)
	j.ErrorCode, j.ErrorMessage = code, fmt.Sprintf("clawkit cancelled research job %s: %s", j.ID, strings.ReplaceAll(code, "_", " "))
	if err := js.update(wctx, j, now); err != nil {
		if err == errStale {
			return js.get(wctx, j.ID)
		}
		return nil, err
	}
	if err := assert(); err != nil {
		return nil, err
	}
	// A failed request leaves the intent recorded: polling goes on until a
	// final status or the poll budget, and 'research cancel' asks again.
	_ = s.client(j, cred).Cancel(ctx, j.Handle)
	return j, nil
}

// ---------------------------------------------------------------------------
// Cancel.

// Cancel records the intent, asks the provider, and polls once: the job is
// cancelled only when a poll shows status cancelled.
func (s *Service) Cancel(ctx context.Context, env *owner.Env, p JobParams) (*PollResult, error) {
	if err := p.Caller.defaults(); err != nil {
		return nil, err
	}
	j, err := s.lookup(ctx, env, p)
	if err != nil {
		return nil, err
	}
	if err := checkCaller(j, p.Caller); err != nil {
		return nil, err
	}
	switch {
	case j.State == StateCancelled:
		return s.view(env, j), nil
	case TerminalState(j.State) && j.Handle != "":
		return nil, errs.Failed("job_finished", "research job %s already ended (%s)", j.ID, j.State).
			WithHint("'clawkit research show %s' shows its result", j.ID)
	case j.Handle == "":
		return nil, errs.Failed("no_handle", "research job %s has no provider handle (state %s); there is nothing to cancel", j.ID, j.State).
			WithHint("for an indeterminate job, inspect the provider account")
	}
	cred, err := s.custody(ctx, env, j, p.Caller)
	if err != nil {
		return nil, err
	}
	unlock := s.lockJob(j.ID)
	js := jobStore{env.Store}
	if j, err = js.get(ctx, j.ID); err != nil {
		unlock()
		return nil, err
	}
	if !Pollable(j.State) {
		unlock()
		return s.view(env, j), nil
	}
	now := env.Now()
	j.State = StateCancelRequested
	if j.CancelRequestedAt == 0 {
		j.CancelRequestedAt = ms(now)
	}
	if err := js.update(ctx, j, now); err != nil {
		unlock()
		if err == errStale {
			return nil, errs.Unavailable("job_busy", "research job %s changed while cancelling", j.ID).WithHint("run the cancel again")
		}
		return nil, err
	}
	if err := env.Scope.AssertCurrent(); err != nil {
		unlock()
		return nil, err
	}
	cerr := s.client(j, cred).Cancel(ctx, j.Handle)
	unlock()
	if cerr != nil {
		out := classifyPollErr(j, cerr)
		return nil, out.WithHint("the cancellation intent is recorded; run 'clawkit research cancel %s' again", j.ID)
	}
	// A 200 only says "asked". Look once; confirmation may come later.
	if j2, err := s.pollOnce(ctx, env, j.ID, cred, env.Scope.AssertCurrent, false); err == nil {
		j = j2
	}
	return s.view(env, j), nil
}

// ---------------------------------------------------------------------------
// Wait.

// WaitParams are research.wait's parameters.
type WaitParams struct {
	JobParams
	// TimeoutMs bounds this wait (not the job); 0 waits for the job's own
	// budget.
	TimeoutMs int64 `json:"timeoutMs,omitempty"`
}

// Wait polls with backoff until the job ends, its budget is spent or the
// wait times out. Progress goes to env.Progress when set.
func (s *Service) Wait(ctx context.Context, env *owner.Env, p WaitParams) (*PollResult, error) {
	if err := p.Caller.defaults(); err != nil {
		return nil, err
	}
	j, err := s.lookup(ctx, env, p.JobParams)
	if err != nil {
		return nil, err
	}
	if err := checkCaller(j, p.Caller); err != nil {
		return nil, err
	}
	start := env.Now()
	var cred credential
	if Pollable(j.State) {
		if cred, err = s.custody(ctx, env, j, p.Caller); err != nil {
			return nil, err
		}
	} else if p.Out != "" {
		if err := s.deliveryAuthority(ctx, env, j, p.Caller); err != nil {
			return nil, err
		}
	}
	js := jobStore{env.Store}
	for {
		if j, err = js.get(ctx, j.ID); err != nil {
			return nil, err
		}
		progress(env.Progress, env.Now().Sub(start), j)
		if !Pollable(j.State) {
			if env.Progress != nil {
				fmt.Fprintln(env.Progress)
			}
			if err := s.deliver(ctx, env, j, p.Out, env.Scope.AssertCurrent); err != nil {
				return nil, err
			}
			return s.view(env, j), jobOutcomeErr(j)
		}
		now := env.Now()
		if p.TimeoutMs > 0 && now.Sub(start) >= time.Duration(p.TimeoutMs)*time.Millisecond {
			return s.view(env, j), errs.Unavailable("wait_timeout", "research job %s is still %s after %s", j.ID, j.State, now.Sub(start).Round(time.Second)).
				WithHint("the job keeps running; 'clawkit research wait %s' again later", j.ID)
		}
		d := time.Duration(j.NextPollAt-now.UnixMilli()) * time.Millisecond
		if p.TimeoutMs > 0 {
			if left := time.Duration(p.TimeoutMs)*time.Millisecond - now.Sub(start); d > left {
				d = left
			}
		}
		if d > 0 {
			// Sleep in slices of at most a second so that a gateway that
			// retires (or a session that is revoked) ends the wait promptly.
			if d > time.Second {
				d = time.Second
			}
			if err := s.sleep(ctx, d); err != nil {
				return s.view(env, j), errs.Unavailable("wait_interrupted", "waiting for research job %s was interrupted", j.ID).
					WithHint("the job keeps running; 'clawkit research wait %s' resumes", j.ID)
			}
			if err := env.Scope.AssertCurrent(); err != nil {
				if errs.CodeOf(err) == "owner_retired" {
					return nil, errs.Unavailable("wait_interrupted", "the state owner stopped while waiting for research job %s", j.ID).
						WithHint("the job keeps running; 'clawkit research wait %s' resumes", j.ID).Wrap(err)
				}
				if errs.CodeOf(err) != "session_refreshing" {
					return nil, err
				}
			}
			if env.Now().UnixMilli() < j.NextPollAt {
				continue // woke early (a slice, or the wait's own timeout)
			}
		}
		// After the await: authority must still be current.
		if _, err := s.pollOnce(ctx, env, j.ID, cred, env.Scope.AssertCurrent, true); err != nil {
			e := errs.As(err)
			if e != nil && e.Kind == errs.KindUnavailable && e.Code != "session_refreshing" {
				continue // temporary provider trouble: next_poll_at honours Retry-After
			}
			return nil, err
		}
	}
}

func progress(w io.Writer, elapsed time.Duration, j *Job) {
	if w == nil {
		return
	}
	status := j.ProviderStatus
	if status == "" {
		status = j.State
	}
	fmt.Fprintf(w, "\r\x1b[Kresearch %s: %s, %s, %d polls, %s elapsed", j.ID, j.State, status, j.PollCount, elapsed.Round(time.Second))
}

// ---------------------------------------------------------------------------
// Recover.

// RecoverResult summarises a recovery pass.
type RecoverResult struct {
	Indeterminate []string `json:"indeterminate"`
	Resumed       []string `json:"resumed"`
	Finished      []string `json:"finished"`
	Skipped       []Skip   `json:"skipped"`
}

// Skip is a job recovery could not act on, and why.
type Skip struct {
	Job    string `json:"job"`
	Code   string `json:"code"`
	Reason string `json:"reason"`
}

// Recover applies DESIGN §6 recovery: submitting jobs without a receipt
// become indeterminate (never resubmitted); running jobs are polled once
// under their own binding's authority when it is still current, and left
// alone otherwise. Nothing is cancelled or resubmitted.
func (s *Service) Recover(ctx context.Context, env *owner.Env, poll bool) (*RecoverResult, error) {
	js := jobStore{env.Store}
	res := &RecoverResult{Indeterminate: []string{}, Resumed: []string{}, Finished: []string{}, Skipped: []Skip{}}
	jobs, err := js.list(ctx, `WHERE state IN ('submitting','running','cancel-requested') ORDER BY created_at, job_id`)
	if err != nil {
		return nil, err
	}
	view := s.loadAuthView(env.Home)
	for _, j := range jobs {
		if j.State == StateSubmitting {
			if _, inFlight := s.pending.Load(j.ID); inFlight {
				continue
			}
			if err := env.Scope.AssertCurrent(); err != nil {
				return nil, err
			}
			j.State, j.ErrorCode = StateIndeterminate, "create_outcome_unknown"
			j.ErrorMessage = "the create request of this job may have been sent, but no receipt was recorded (interrupted); it is never resubmitted: inspect the provider account"
			j.FinishedAt = ms(env.Now())
			if err := js.update(ctx, j, env.Now()); err != nil && err != errStale {
				return nil, err
			}
			res.Indeterminate = append(res.Indeterminate, j.ID)
			continue
		}
		if !poll {
			res.Resumed = append(res.Resumed, j.ID)
			continue
		}
		j2, err := s.pollUnderBinding(ctx, env, j, view)
		if err != nil {
			res.Skipped = append(res.Skipped, Skip{Job: j.ID, Code: errs.CodeOf(err), Reason: err.Error()})
			if errs.KindOf(err) == errs.KindRefused && errs.CodeOf(err) == "owner_retired" {
				return res, err
			}
			continue
		}
		if Pollable(j2.State) {
			res.Resumed = append(res.Resumed, j.ID)
		} else {
			res.Finished = append(res.Finished, j.ID)
		}
	}
	return res, nil
}

// pollUnderBinding polls j under the authority of its own binding (the
// gateway poller and recovery have no caller): the session must still be
// usable at the bound incarnation, and that is re-checked right before the
// request and before publication, together with the owner fence.
func (s *Service) pollUnderBinding(ctx context.Context, env *owner.Env, j *Job, view *authView) (*Job, error) {
	if view == nil {
		view = s.loadAuthView(env.Home)
	}
	cred, err := credentialFor(j, view)
	if err != nil {
		return nil, err
	}
	// The session is checked fresh right before the request (and again
	// before publication), not from a cached view.
	assert := func() error {
		if err := env.Scope.AssertCurrent(); err != nil {
			return err
		}
		cur, err := env.Store.GetSession(ctx, j.AgentID, j.SessionKey)
		if err != nil {
			return errs.Refused("session_gone", "session %s of agent %s no longer exists", j.SessionKey, j.AgentID)
		}
		if err := store.CheckSessionUsable(cur); err != nil {
			return err
		}
		if cur.Incarnation != j.SessionIncarnation {
			return errs.Refused("stale_owner", "research job %s was started in incarnation %d of session %s; the session is now at %d", j.ID, j.SessionIncarnation, j.SessionKey, cur.Incarnation).
				WithHint("the session was reset; the job can no longer be polled or cancelled from it")
		}
		return nil
	}
	return s.pollOnce(ctx, env, j.ID, cred, assert, true)
}

// ---------------------------------------------------------------------------
// List and show.

// ListParams filter research.list.
type ListParams struct {
	AgentID    string `json:"agentId,omitempty"`
	SessionKey string `json:"sessionKey,omitempty"`
	State      string `json:"state,omitempty"`
}

// List returns jobs, newest first.
func (s *Service) List(ctx context.Context, env *owner.Env, p ListParams) ([]*Job, error) {
	where := []string{}
	var args []any
	if p.AgentID != "" {
		where, args = append(where, "agent_id = ?"), append(args, p.AgentID)
	}
	if p.SessionKey != "" {
		where, args = append(where, "session_key = ?"), append(args, p.SessionKey)
	}
	if p.State != "" {
		switch p.State {
		case StateSubmitting, StateRunning, StateCancelRequested, StateCompleted, StateFailed, StateCancelled, StateIncomplete, StateNotSent, StateIndeterminate:
		default:
			return nil, errs.Usage("invalid_state", "unknown job state %q", p.State).
				WithHint("one of submitting, running, cancel-requested, completed, failed, cancelled, incomplete, not-sent, indeterminate")
		}
		where, args = append(where, "state = ?"), append(args, p.State)
	}
	q := ""
	if len(where) > 0 {
		q = "WHERE " + strings.Join(where, " AND ")
	}
	jobs, err := jobStore{env.Store}.list(ctx, q+" ORDER BY created_at DESC, job_id DESC LIMIT 1000", args...)
	if jobs == nil {
		jobs = []*Job{}
	}
	return jobs, err
}

// Show returns one job and its published result, if any. It reads only.
func (s *Service) Show(ctx context.Context, env *owner.Env, p JobParams) (*PollResult, error) {
	if !ValidJobID(p.Job) {
		return nil, errs.Usage("invalid_job_id", "%q is not a research job id (rj_…)", p.Job)
	}
	jobs, err := jobStore{env.Store}.list(ctx, "WHERE job_id = ?", p.Job)
	if err != nil {
		return nil, err
	}
	if len(jobs) == 0 {
		return nil, errs.Failed("job_not_found", "no research job %s", p.Job).WithHint("'clawkit research list' shows the jobs of this home")
	}
	return s.view(env, jobs[0]), nil
}
