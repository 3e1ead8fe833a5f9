// Lifecycle: the user-facing operations on a job (start, poll, cancel,
// list, show) and how their outcomes are classified.

package research

import (
	"context"
	"database/sql"
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/owner"
	"github.com/clawkit/clawkit/pkg/redact"
	"github.com/clawkit/clawkit/pkg/research/google"
	"github.com/clawkit/clawkit/pkg/store"
)

// StartParams are research.start's parameters.
type StartParams struct {
	Caller
	Question       string `json:"question"`
	OutputFormat   string `json:"outputFormat,omitempty"`
	MaxReportBytes int64  `json:"maxReportBytes,omitempty"`
	AsOf           string `json:"asOf,omitempty"`
	IdempotencyKey string `json:"idempotencyKey,omitempty"`
	// Plan asks for collaborative planning: the job stops in
	// plan-proposed with plan.md until it is approved or rejected.
	Plan bool `json:"plan,omitempty"`
	// FollowUp names the completed job this one continues (its
	// interaction is the previous_interaction_id).
	FollowUp *JobRef `json:"followUp,omitempty"`
	// Inputs are the documents and images to send (inputs.go): inline
	// within the inline bounds, else through the Files API.
	Inputs InputList `json:"inputs,omitzero"`
	// KeepUploads keeps the uploaded files when the job ends.
	KeepUploads bool `json:"keepUploads,omitempty"`
	// Tools the agent may use; header values come from header profiles.
	Tools *Tools `json:"tools,omitempty"`
	// Visualization is "", "auto" or "off".
	Visualization string `json:"visualization,omitempty"`
	// MaxTokens is the job's token budget (0: none; docs/research.md,
	// "Tokens and cost").
	MaxTokens int64 `json:"maxTokens,omitempty"`
	// Wait, when set, makes the start also wait for the job in the same
	// operation: one routed call, under the one owner that accepted the
	// create, so the wait can never move to another owner (or run
	// locally) if the gateway goes away in between.
	Wait *StartWait `json:"wait,omitempty"`
}

// JobRef names a job by id (the CLI) or by handle (the contract).
type JobRef struct {
	Job    string `json:"job,omitempty"`
	Handle string `json:"handle,omitempty"`
	// ref is Job or Handle as the start's Check accepted it.
	ref jobRef
}

// StartWait are the wait options of a start that waits.
type StartWait struct {
	TimeoutMs int64  `json:"timeoutMs,omitempty"`
	Out       string `json:"out,omitempty"`
	// Events and NoStream are WaitParams'.
	Events   bool `json:"events,omitempty"`
	NoStream bool `json:"noStream,omitempty"`
}

// StartResult is research.start's result.
type StartResult struct {
	Job    string `json:"job"`
	Handle string `json:"handle"`
	State  string `json:"state"`
	Status string `json:"status,omitempty"`
	// Existing is true when an --idempotency-key matched a recorded job.
	Existing bool `json:"existing"`
	// Waited is the job after the wait, for a start with Wait.
	Waited *PollResult `json:"waited,omitempty"`
}

func validIdempotencyKey(k string) bool {
	if k == "" || len(k) > 128 || !utf8.ValidString(k) {
		return false
	}
	for _, r := range k {
		// Control characters, spaces, and the invisible formatting and
		// bidi characters (U+202E would print the key reversed).
		// U+FFFD too: an invalid byte arrives as it once the parameters
		// have been JSON (routed calls).
		if !unicode.IsGraphic(r) || unicode.IsSpace(r) || r == utf8.RuneError {
			return false
		}
	}
	return true
}

// Start submits a research job. The create request is sent at most once:
// whatever happens after it may have left, it is never sent again for this
// job.
func (s *Service) Start(ctx context.Context, env *owner.OpEnv, p StartParams) (*StartResult, error) {
	// Check normalised p (caller, output); what can change under the lock
	// (settings, credential) is read again here.
	out := Output{Format: p.OutputFormat, MaxReportBytes: p.MaxReportBytes}
	set, cred, err := s.authority(env.Home, func() (Settings, error) { return s.settings(env) })
	if err != nil {
		return nil, err
	}
	var parent *Job
	if p.FollowUp != nil {
		// The parent's current owner only, checked before anything is
		// read or sent: as poll and cancel check it.
		if parent, err = s.followUpParent(ctx, env, p); err != nil {
			return nil, err
		}
	}
	sess, err := s.bind(ctx, env, p.Caller)
	if err != nil {
		return nil, err
	}
	js := jobsOf(env)
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
		if old.Question != p.Question || !sameStartOptions(old, &p, parent) {
			return nil, true, errs.Usage(CodeIdempotencyKeyReused, "idempotency key %q was used for research job %s with a different question or options", p.IdempotencyKey, old.ID).WithJob(old.ID).
				WithHint("use a new key for a new question")
		}
		if _, err := s.jobAuthority(env, old, sess); err != nil {
			return nil, true, err
		}
		if old.State == StateSubmitting {
			if v, _ := s.pending.Load(old.ID); v != nil {
				// A concurrent start in this process is creating it: wait
				// for its outcome and answer with that.
				select {
				case <-v.(chan struct{}):
				case <-ctx.Done():
					return nil, true, ctx.Err()
				}
			}
			// Read it again even when nothing was pending: the creator may
			// have recorded its receipt and finished between our read and
			// the look at the pending set (it is removed from the set only
			// after its last write, so this read sees that write).
			if old, err = js.get(ctx, old.ID); err != nil {
				return nil, true, err
			}
		}
		if old.State == StateSubmitting && old.uploading() {
			// Its create was never sent: the start goes on with its
			// uploads from what the provider already has.
			return nil, true, &resumeUploads{job: old}
		}
		if old.State == StateSubmitting {
			// No receipt: never an "existing job" with an empty handle.
			return nil, true, s.jobOutcomeErr(old)
		}
		return &StartResult{Job: old.ID, Handle: old.Handle, State: old.State, Status: old.ProviderStatus, Existing: true}, true, s.jobOutcomeErr(old)
	}
	var resumed *Job
	if res, found, err := existing(); found {
		var ru *resumeUploads
		if !errors.As(err, &ru) {
			return res, err
		}
		resumed = ru.job
	}
	// Each inline input is read once, here: the bytes sent are the bytes
	// whose name, size and SHA-256 the binding records. An uploaded one is
	// read as it is sent (uploads.go).
	inputs, err := readInputs(p.Inputs)
	if err != nil {
		return nil, err
	}
	tools, secrets, err := resolveTools(env.Home, p.Tools)
	if err != nil {
		return nil, err
	}
	opts := &JobOptions{Plan: p.Plan, Visualization: p.Visualization, Tools: p.Tools, MaxTokens: p.MaxTokens, KeepUploads: p.KeepUploads}
	req := google.CreateRequest{Input: p.Question, Visualization: p.Visualization, Tools: tools}
	var paths []string
	for _, in := range inputs {
		opts.Inputs = append(opts.Inputs, in.rec)
		paths = append(paths, in.path)
		opts.Uploading = opts.Uploading || in.rec.Upload
	}
	if p.Plan {
		req.CollaborativePlanning = boolPtr(true)
	}
	j := &Job{
		ID: newJobID(), AgentID: p.AgentID, SessionKey: p.SessionKey, SessionIncarnation: sess.Incarnation,
		ProfileID: cred.ProfileID, CredentialAccount: cred.Account, BaseURL: set.BaseURL, Agent: set.Agent,
		State: StateSubmitting, Question: p.Question, OutputFormat: out.Format, MaxReportBytes: out.MaxReportBytes,
		IdempotencyKey: p.IdempotencyKey, CreatedAt: ms(now), UpdatedAt: ms(now),
		DeadlineAt: ms(now.Add(s.budgets().WallClock)), RowVersion: 1, Options: opts,
	}
	if opts.empty() {
		j.Options = nil
	}
	if parent != nil {
		j.ParentJob = parent.ID
		req.PreviousInteractionID = parent.Handle
	}
	if resumed != nil {
		// The recorded job, with its upload progress: the inputs must be
		// the ones it was started with (sameStartOptions compared names
		// and ranges; the sizes and types are compared here).
		if err := sameInputs(resumed, opts.Inputs); err != nil {
			return nil, err
		}
		j = resumed
	}
	// The job exists (submitting, no receipt) before anything is sent, so a
	// crash during the create is found by recovery and made indeterminate
	// (not-sent while it was still uploading: no create had left).
	done := make(chan struct{})
	s.pending.Store(j.ID, done)
	defer func() { s.pending.Delete(j.ID); close(done) }()
	if resumed == nil {
		if err := js.insert(ctx, j); err != nil {
			// A concurrent start with the same key won the insert (the key is
			// unique per agent and session): answer with its job.
			if res, found, eerr := existing(); found {
				return res, eerr
			}
			return nil, err
		}
	}
	// Immediately before the create: the owner and session, then the
	// provider authority read again (research may have been disabled, or
	// the profile or key replaced, while the session was refreshing).
	if cred, err = s.effectAuthority(env, j); err != nil {
		j.State, j.ErrorCode, j.ErrorMessage = StateNotSent, string(errs.CodeOf(err)), err.Error()
		j.FinishedAt = ms(env.Now())
		_ = js.update(context.WithoutCancel(ctx), j, env.Now())
		return nil, err
	}
	if j.uploading() {
		if err := s.uploadInputs(ctx, env, js, j, cred, paths); err != nil {
			return nil, s.uploadFailed(ctx, env, js, j, cred, err)
		}
		// Recorded before the create leaves: from here on an interrupted
		// job may have been created. The wall-clock budget is the
		// research's: it starts with the create, not with the uploads.
		j.Options.Uploading = false
		j.DeadlineAt = ms(env.Now().Add(s.budgets().WallClock))
		if err := s.saveUpload(ctx, env, js, j); err != nil {
			return nil, err
		}
	}
	for i, in := range inputs {
		rec := j.Options.Inputs[i]
		req.Parts = append(req.Parts, google.Part{MimeType: rec.MimeType, Data: in.data, URI: rec.URI, Processing: in.processing, Resolution: rec.Resolution})
	}
	cctx, cdone := createContext(ctx)
	it, err := s.client(j, cred).CreateWith(cctx, req)
	cdone()
	// From here on the create may have happened: record what we know even
	// if our own context is being cancelled.
	wctx := context.WithoutCancel(ctx)
	if err != nil {
		if ge := google.AsError(err); ge != nil && ge.NotSent {
			// Proved not accepted: nothing will read the uploads.
			s.deleteUploads(wctx, j, cred)
		}
		return nil, s.createFailed(wctx, env, js, j, err, secrets...)
	}
	j.Handle, j.ProviderStatus, j.ProviderUpdated = it.ID, it.Status, it.Updated
	j.State = StateRunning
	j.SubmittedAt = ms(env.Now())
	j.NextPollAt = ms(env.Now().Add(s.interval(env.Now(), j.SubmittedAt, 0)))
	if err := s.recordReceipt(wctx, env, js, j); err != nil {
		return nil, errs.Unknown(CodeReceiptNotRecorded, "the provider accepted research job %s as interaction %s, but recording the receipt failed: %v", j.ID, it.ID, err).WithJob(j.ID).
			WithHint("do not start it again; inspect the provider account for interaction %s", it.ID)
	}
	return &StartResult{Job: j.ID, Handle: j.Handle, State: j.State, Status: j.ProviderStatus}, nil
}

// createFailed records a failed create as not-sent (proved not accepted)
// or indeterminate (may have been accepted) and returns the classified
// error.
func (s *Service) createFailed(ctx context.Context, env *owner.OpEnv, js jobStore, j *Job, err error, secrets ...string) error {
	state, out := classifyCreateErr(j, err, secrets)
	j.State, j.ErrorCode, j.ErrorMessage = state, string(out.Code), out.Message
	j.FinishedAt = ms(env.Now())
	if uerr := js.update(ctx, j, env.Now()); uerr != nil {
		return errs.Unknown(CodeCreateOutcomeUnknown, "%s; recording it also failed: %v", out.Message, uerr).
			WithHint("inspect the provider account before starting it again")
	}
	return &JobStateError{State: state, Err: out}
}

// classifyCreateErr says what a failed create proves: not-sent (never
// accepted) or indeterminate (may have been), with its error. A header
// value the request carried (secrets) never appears in the message, even
// when the provider echoes it.
func classifyCreateErr(j *Job, err error, secrets []string) (string, *errs.Error) {
	ge := google.AsError(err)
	if ge != nil && len(secrets) > 0 {
		c := *ge
		c.Msg = redact.Values(ge.Msg, secrets...)
		ge = &c
		err = errors.New(c.Msg)
	}
	var out *errs.Error
	state := StateIndeterminate
	switch {
	case ge != nil && ge.NotSent && ge.Auth:
		state = StateNotSent
		out = errs.Refused(CodeProviderRefusedCredential, "%s", ge.Msg).
			WithHint("check the API key of profile %q (clawkit auth add %s --provider google --api-key-env GEMINI_API_KEY)", j.ProfileID, j.ProfileID)
	case ge != nil && ge.NotSent && ge.Temporary:
		state = StateNotSent
		out = errs.Unavailable(CodeProviderBusy, "%s; research job %s was not submitted", ge.Msg, j.ID).WithJob(j.ID).
			WithHint("start it again later")
		if ge.RetryAfter > 0 {
			out = out.WithRetryAfter(ge.RetryAfter.Milliseconds())
		}
	case ge != nil && ge.NotSent:
		state = StateNotSent
		out = errs.Failed(CodeNotSent, "%s; research job %s was not submitted", ge.Msg, j.ID).WithJob(j.ID).
			WithHint("fix the cause and start it again; nothing was submitted")
	default:
		msg := err.Error()
		if ge != nil {
			msg = ge.Msg
		}
		out = errs.Unknown(CodeCreateOutcomeUnknown, "%s; research job %s may or may not have been submitted", msg, j.ID).WithJob(j.ID).
			WithHint("it is never resubmitted automatically: inspect the Interactions of your provider account before starting it again")
	}
	return state, out.Wrap(err)
}

func boolPtr(b bool) *bool { return &b }

// jobOutcomeErr turns a recorded failed submission into its error again,
// so repeating a start with the same idempotency key reports the same
// outcome instead of resubmitting. A submitting job has no receipt: while
// this process is still creating it the answer is "busy"; otherwise the
// owner that was creating it is gone (a crash) and its outcome is unknown
// until recovery classifies it.
func (s *Service) jobOutcomeErr(j *Job) error {
	switch j.State {
	case StateSubmitting:
		if _, inFlight := s.pending.Load(j.ID); inFlight {
			return errs.Unavailable(CodeSubmissionInProgress, "research job %s is being submitted right now; it has no receipt yet", j.ID).WithJob(j.ID).
				WithRetryAfter(1000).WithHint("look again in a moment: 'clawkit research show %s'", j.ID)
		}
		return &JobStateError{State: j.State, Err: errs.Unknown(CodeSubmissionInterrupted, "research job %s was being submitted by an owner that is gone; no receipt was recorded, so whether the provider accepted it is unknown", j.ID).WithJob(j.ID).
			WithHint("run 'clawkit research recover' to classify it (it is never resubmitted), then inspect the provider account")}
	case StateIndeterminate:
		return &JobStateError{State: j.State, Err: errs.Unknown(CodeCreateOutcomeUnknown, "research job %s has an unknown submission outcome: %s", j.ID, j.ErrorMessage).WithJob(j.ID).
			WithHint("inspect the provider account; clawkit never resubmits it")}
	case StatePlanProposed:
		return errs.Unavailable(CodePlanProposed, "research job %s proposed a research plan (plan.md in its folder, see 'clawkit research show %s') and waits for its review", j.ID, j.ID).WithJob(j.ID).
			WithHint("read the plan, then 'clawkit research approve %s' (--revise TEXT to change it) or 'clawkit research reject %s'", j.ID, j.ID)
	case StateNotSent:
		hint := "nothing was submitted; 'clawkit research start' submits the question again as a new job"
		if j.IdempotencyKey != "" {
			hint = "nothing was submitted; use a new idempotency key to submit the question again"
		}
		return &JobStateError{State: j.State, Err: errs.Failed(CodeNotSent, "research job %s was never submitted: %s", j.ID, j.ErrorMessage).WithJob(j.ID).
			WithHint("%s", hint)}
	}
	return nil
}

// settled returns j as it stands now when it was read as submitting and
// no creator in this process is busy with it: that creator may have
// finished between the read and the look at the pending set (it leaves the
// set only after its last write), so the job is read once more before
// anyone calls it interrupted. inFlight reports a creator still at work.
func (s *Service) settled(ctx context.Context, js jobStore, j *Job) (_ *Job, inFlight bool, err error) {
	if j.State != StateSubmitting {
		return j, false, nil
	}
	if _, busy := s.pending.Load(j.ID); busy {
		return j, true, nil
	}
	j, err = js.get(ctx, j.ID)
	return j, false, err
}

// JobParams name a job (by id, or by provider handle for RPC).
type JobParams struct {
	Caller
	Job    string `json:"job,omitempty"`
	Handle string `json:"handle,omitempty"`
	// Out, when set, is an absolute path the report is also published to.
	Out string `json:"out,omitempty"`
	// deliver is set by the RPC path, whose answer carries the report.
	deliver bool
	// ref is Job or Handle as checkJobRef accepted it (set only by a
	// Check; not on the wire).
	ref jobRef
}

// PollResult is the view of a job after an operation.
type PollResult struct {
	*Job
	Done      bool   `json:"done"`
	ReportDir string `json:"reportDir,omitempty"`
	// PlanFile is the proposed plan's path once there is one.
	PlanFile string `json:"planFile,omitempty"`
	// Plan is the proposed plan's text, in RPC answers only.
	Plan   string `json:"plan,omitempty"`
	Report string `json:"report,omitempty"`
	// Citations are included only in RPC answers.
	Citations []google.Citation `json:"citations,omitempty"`
}

// ownedJob is the custody prologue of every call on an existing job: the
// caller's defaults filled in, the job found by id or handle, and a caller
// that is not its current owner refused — all before any HTTP request
// (docs/design.md, "Custody").
func (s *Service) ownedJob(ctx context.Context, env *owner.OpEnv, p *JobParams) (*Job, error) {
	if err := p.defaults(); err != nil {
		return nil, err
	}
	j, err := s.lookup(ctx, env, p.ref)
	if err != nil {
		return nil, err
	}
	if err := checkCaller(j, p.Caller); err != nil {
		return nil, err
	}
	return j, nil
}

// lookup finds the job ref names; ref is checked (jobRef).
func (s *Service) lookup(ctx context.Context, env *owner.OpEnv, ref jobRef) (*Job, error) {
	js := jobsOf(env)
	switch {
	case ref.id != "":
		j, err := js.get(ctx, ref.id)
		if err != nil {
			return nil, err
		}
		j, _, err = s.settled(ctx, js, j)
		return j, err
	case ref.handle == "":
		// A JobParams no Check returned: a programming error, refused
		// as the invalid reference it may be.
		return nil, errInvalidJobID("")
	}
	j, err := js.byHandle(ctx, ref.handle)
	if err != nil {
		return nil, err
	}
	if j == nil {
		// A plan's interaction names its job after the approve too: the
		// job's handle is then the confirming turn's.
		if j, err = js.byPlanHandle(ctx, ref.handle); err != nil {
			return nil, err
		}
	}
	if j == nil {
		// An unknown handle is someone else's interaction as far as this
		// home knows: it is never sent to the provider.
		return nil, errs.Refused(CodeUnknownHandle, "no research job of this home has handle %q", ref.handle).
			WithHint("a handle is only an identifier; poll jobs started from this home")
	}
	return j, nil
}

// Poll polls a job once (after custody checks) and applies the result.
func (s *Service) Poll(ctx context.Context, env *owner.OpEnv, p JobParams) (*PollResult, error) {
	j, err := s.ownedJob(ctx, env, &p)
	if err != nil {
		return nil, err
	}
	if TerminalState(j.State) || !Pollable(j.State) {
		if p.Out != "" || p.deliver {
			if err := s.deliveryAuthority(ctx, env, j, p.Caller); err != nil {
				return nil, err
			}
		}
		if err := s.deliver(ctx, env, j, p.Out, env.Fence.AssertCurrent); err != nil {
			return nil, err
		}
		return s.view(env, j), s.pollErr(j, p)
	}
	cred, err := s.custody(ctx, env, j, p.Caller)
	if err != nil {
		return nil, err
	}
	j, err = s.pollOnce(ctx, env, j.ID, cred, env.Fence.AssertCurrent, false)
	if err != nil {
		return nil, err
	}
	if err := s.deliver(ctx, env, j, p.Out, env.Fence.AssertCurrent); err != nil {
		return nil, err
	}
	return s.view(env, j), s.pollErr(j, p)
}

// pollErr is the outcome of a poll: the RPC answer carries a job that
// ended without a report as its value (the envelope says so), the
// command's exit code does not say success for it (endedErr).
func (s *Service) pollErr(j *Job, p JobParams) error {
	if p.deliver {
		return s.jobOutcomeErr(j)
	}
	return s.endedErr(j)
}

func (s *Service) view(env *owner.OpEnv, j *Job) *PollResult {
	r := &PollResult{Job: j, Done: TerminalState(j.State)}
	if j.Published {
		r.ReportDir = jobDir(env.Home, j.ID)
	}
	if j.PlanHandle != "" {
		r.PlanFile = filepath.Join(jobDir(env.Home, j.ID), PlanFile)
	}
	return r
}

func classifyPollErr(j *Job, err error) *errs.Error {
	ge := google.AsError(err)
	switch {
	case ge == nil:
		return errs.Unavailable(CodePollFailed, "poll of research job %s failed: %v", j.ID, err).WithJob(j.ID).Wrap(err)
	case ge.Auth:
		return errs.Refused(CodeProviderRefusedCredential, "%s", ge.Msg).
			WithHint("the API key of profile %q no longer has access to interaction %s", j.ProfileID, j.Handle).Wrap(err)
	case ge.TooLarge:
		return errs.Failed(CodeResponseTooLarge, "%s; research job %s ends failed and is not polled again", ge.Msg, j.ID).WithJob(j.ID).
			WithHint("the handle %s is kept: inspect the interaction in the provider account", j.Handle).Wrap(err)
	case ge.Temporary:
		e := errs.Unavailable(CodeProviderUnavailable, "%s", ge.Msg).WithHint("the job keeps its state; poll again later")
		if ge.RetryAfter > 0 {
			e = e.WithRetryAfter(ge.RetryAfter.Milliseconds())
		}
		return e.Wrap(err)
	case ge.HTTPStatus == http.StatusNotFound:
		return errs.Failed(CodeInteractionNotFound, "%s", ge.Msg).
			WithHint("the provider does not know interaction %s for this key", j.Handle).Wrap(err)
	}
	return errs.Failed(CodePollFailed, "%s", ge.Msg).Wrap(err)
}

// Cancel records the intent, asks the provider, and polls once: the job is
// cancelled only when a poll shows status cancelled.
func (s *Service) Cancel(ctx context.Context, env *owner.OpEnv, p JobParams) (*PollResult, error) {
	j, err := s.ownedJob(ctx, env, &p)
	if err != nil {
		return nil, err
	}
	switch {
	case j.State == StatePlanProposed:
		// The plan's interaction has ended: cancelling is rejecting the
		// plan, without a provider call.
		return s.Reject(ctx, env, p)
	case j.State == StateCancelled:
		return s.view(env, j), nil
	case TerminalState(j.State) && j.Handle != "":
		return nil, errs.Failed(CodeJobFinished, "research job %s already ended (%s)", j.ID, j.State).WithJob(j.ID).
			WithHint("'clawkit research show %s' shows its result", j.ID)
	case j.Handle == "":
		return nil, errs.Failed(CodeNoHandle, "research job %s has no provider handle (state %s); there is nothing to cancel", j.ID, j.State).WithJob(j.ID).
			WithHint("for an indeterminate job, inspect the provider account")
	}
	// Custody is checked before the lock; the credential used is the one
	// effectAuthority gives right before the request.
	if _, err := s.custody(ctx, env, j, p.Caller); err != nil {
		return nil, err
	}
	unlock := s.lockJob(j.ID)
	js := jobsOf(env)
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
	// The queued cancellation (shared scheduler) is recorded with the
	// intent, due after this request could have finished: it asks only if
	// this process dies first or its request fails.
	backstop := now.Add(s.cancelBackstop())
	if err := s.updateWith(ctx, env, js, j, func(sc SharedScheduler, tx *sql.Tx) error {
		return sc.EnqueueCancelTx(ctx, env, tx, j.ID, backstop)
	}); err != nil {
		unlock()
		if errors.Is(err, errStale) {
			return nil, errs.Unavailable(CodeJobBusy, "research job %s changed while cancelling", j.ID).WithJob(j.ID).WithHint("run the cancel again")
		}
		return nil, err
	}
	cred, err := s.effectAuthority(env, j)
	if err != nil {
		unlock()
		return nil, err
	}
	cerr := s.client(j, cred).Cancel(ctx, j.Handle)
	if cerr == nil {
		s.markCancelSent(context.WithoutCancel(ctx), env, j)
	}
	unlock()
	if cerr != nil {
		if ge := google.AsError(cerr); ge == nil || (!ge.NotSent && ge.HTTPStatus == 0) {
			// The request may have reached the provider and taken effect:
			// that is not "try again later" but an unknown outcome.
			return nil, errs.Unknown(CodeCancelOutcomeUnknown, "%s; the provider may or may not have received the cancellation of research job %s", nonEmpty(errMsg(ge), cerr.Error()), j.ID).WithJob(j.ID).
				WithHint("the intent is recorded (cancel-requested); 'clawkit research poll %s' shows whether it took effect, and 'clawkit research cancel %s' may be repeated safely", j.ID, j.ID).Wrap(cerr)
		}
		out := classifyPollErr(j, cerr)
		return nil, out.WithHint("the cancellation intent is recorded; run 'clawkit research cancel %s' again", j.ID)
	}
	// A 200 only says "asked". Look once; confirmation may come later.
	if j2, err := s.pollOnce(ctx, env, j.ID, cred, env.Fence.AssertCurrent, false); err == nil {
		j = j2
	}
	return s.view(env, j), nil
}

// ListParams filter research.list.
type ListParams struct {
	AgentID    string `json:"agentId,omitempty"`
	SessionKey string `json:"sessionKey,omitempty"`
	State      string `json:"state,omitempty"`
}

// List returns jobs, newest first.
func (s *Service) List(ctx context.Context, env *owner.OpEnv, p ListParams) ([]*Job, error) {
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
		case StateSubmitting, StateRunning, StateCancelRequested, StateCompleted, StateFailed, StateCancelled, StateIncomplete, StateNotSent, StateIndeterminate, StatePlanProposed:
		default:
			return nil, errs.Usage(CodeInvalidState, "unknown job state %q", p.State).
				WithHint("one of submitting, running, plan-proposed, cancel-requested, completed, failed, cancelled, incomplete, not-sent, indeterminate")
		}
		where, args = append(where, "state = ?"), append(args, p.State)
	}
	q := ""
	if len(where) > 0 {
		q = "WHERE " + strings.Join(where, " AND ")
	}
	jobs, err := jobsOf(env).list(ctx, q+" ORDER BY created_at DESC, job_id DESC LIMIT 1000", args...)
	if jobs == nil {
		jobs = []*Job{}
	}
	return jobs, err
}

// Show returns one job and its published result, if any. It reads only,
// and trusts p: its Check (Register) refused a job id of another shape.
func (s *Service) Show(ctx context.Context, env *owner.OpEnv, p JobParams) (*PollResult, error) {
	jobs, err := jobsOf(env).list(ctx, "WHERE job_id = ?", p.Job)
	if err != nil {
		return nil, err
	}
	if len(jobs) == 0 {
		return nil, errs.Failed(CodeJobNotFound, "no research job %s", p.Job).WithJob(p.Job).WithHint("'clawkit research list' shows the jobs of this home")
	}
	if jobs[0].ParentJob != "" || jobs[0].Usage != nil {
		if jobs[0].ChainUsage, err = chainUsage(ctx, jobsOf(env), jobs[0]); err != nil {
			return nil, err
		}
	}
	return s.view(env, jobs[0]), nil
}

// errInvalidJobID refuses a malformed job id before any lookup.
func errInvalidJobID(id string) error {
	return errs.Usage(CodeInvalidJobID, "%q is not a research job id (rj_ and 16 letters or digits 2-7)", id).
		WithHint("'clawkit research list' shows the jobs of this home and their ids")
}

// authority reads a start's provider authority (research enabled, an
// API-key profile) without touching state: Admit runs it before the
// offline executor creates the home or the database, so a refused start
// leaves nothing behind, and Start again under the lock (config and
// credentials can change in between).
func (s *Service) authority(home string, settings func() (Settings, error)) (set Settings, cred credential, err error) {
	set, err = settings()
	if err != nil {
		return set, cred, err
	}
	if err := set.requireEnabled(); err != nil {
		return set, cred, err
	}
	cred, err = loadCredential(home, set)
	return set, cred, err
}

// CheckStart is the start operation's Check, for callers of Start in
// other packages (the operation runs it itself).
func CheckStart(p StartParams) (StartParams, error) { return checkStartParams(p) }

// checkStartParams is every rule of a start that needs only its
// parameters (owner.Op.Check): it returns them with the caller's and the
// output's defaults filled in, so Start takes them as they are.
func checkStartParams(p StartParams) (StartParams, error) {
	out, err := startOutput(&p)
	if err != nil {
		return p, err
	}
	p.OutputFormat, p.MaxReportBytes = out.Format, out.MaxReportBytes
	if err := checkMaxTokens(p.MaxTokens); err != nil {
		return p, err
	}
	if p.Wait != nil {
		if err := checkWaitTimeout(p.Wait.TimeoutMs); err != nil {
			return p, err
		}
		if err := checkOut(p.Wait.Out); err != nil {
			return p, err
		}
	}
	return p, nil
}

// checkWaitTimeout refuses a negative wait (0 waits for the job's own
// budget).
func checkWaitTimeout(ms int64) error {
	if ms < 0 {
		return errs.Usage(errs.CodeInvalidTimeout, "--timeout %s is negative", time.Duration(ms)*time.Millisecond).
			WithHint("give a duration such as 30s or 10m, or 0 to wait for the job's own budget")
	}
	return nil
}

// checkOut refuses a report destination that is not absolute: before the
// billable create, not at delivery.
func checkOut(out string) error {
	if out != "" && !filepath.IsAbs(out) {
		return errs.Usage(errs.CodeInvalidOut, "--out must be an absolute path (got %q)", out)
	}
	return nil
}

// startOutput checks a start's own parameters and returns its output
// settings, defaults applied.
func startOutput(p *StartParams) (out Output, err error) {
	if err := p.defaults(); err != nil {
		return out, err
	}
	if strings.TrimSpace(p.Question) == "" {
		return out, errs.Usage(CodeInvalidQuestion, "the question is empty").WithHint("clawkit research start \"QUESTION\"")
	}
	if len(p.Question) > MaxQuestionBytes || strings.ContainsRune(p.Question, 0) {
		return out, errs.Usage(CodeInvalidQuestion, "the question is longer than %d bytes or contains NUL", MaxQuestionBytes)
	}
	if p.AsOf != "" {
		return out, errAsOf()
	}
	out = Output{Format: p.OutputFormat, MaxReportBytes: p.MaxReportBytes}
	if err := out.Validate(); err != nil {
		return out, err
	}
	if out.Format == "" {
		out.Format = "markdown"
	}
	if out.MaxReportBytes == 0 {
		out.MaxReportBytes = DefaultReportMax
	}
	if p.IdempotencyKey != "" && !validIdempotencyKey(p.IdempotencyKey) {
		return out, errs.Usage(CodeInvalidIdempotencyKey, "the idempotency key must be 1–128 printable characters without spaces").
			WithHint("control, formatting and bidirectional characters (such as U+202E) are refused: they would show the key as another one")
	}
	if f := p.FollowUp; f != nil {
		if (f.Job == "") == (f.Handle == "") {
			return out, errs.Usage(CodeInvalidFollowUp, "a follow-up names its parent job by id or by handle")
		}
		checked, err := checkJobRef(JobParams{Caller: p.Caller, Job: f.Job, Handle: f.Handle})
		if err != nil {
			return out, err
		}
		fu := *f
		fu.ref = checked.ref
		p.FollowUp = &fu
	}
	if p.Inputs, err = checkInputList(p.Inputs); err != nil {
		return out, err
	}
	for _, err := range []error{checkTools(p.Tools), checkVisualization(p.Visualization)} {
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

func errMsg(ge *google.Error) string {
	if ge == nil {
		return ""
	}
	return ge.Msg
}

// ProviderUnreachable reports whether a poll failed without any answer from
// the provider (a transport error or a timeout; an HTTP error status is an
// answer, and a database that cannot be reached is not the provider). The
// PostgreSQL scheduler stops claiming polls while this holds
// (docs/scale-out.md, "A provider partition").
func ProviderUnreachable(err error) bool {
	return err != nil && errs.CodeOf(err) == CodePollFailed && google.AsError(err) == nil && !store.Unreachable(err)
}

// CreateGrace is how long a create already on its way is still awaited
// after its caller went away (a closed connection to the gateway, Ctrl-C).
const CreateGrace = 10 * time.Second

// createContext detaches the create from its caller's cancellation: once
// the request is sent, the provider's answer is the job's receipt, and a
// caller that leaves must not turn a job the provider accepted (and bills)
// into an untracked one. The answer is awaited for CreateGrace more after
// the caller's context ends (the client's own request timeout bounds it
// too); only then is the create given up, as indeterminate.
func createContext(ctx context.Context) (context.Context, func()) {
	c, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() { time.AfterFunc(CreateGrace, cancel) })
	return c, func() { stop(); cancel() }
}
