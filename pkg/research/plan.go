// Plan review and follow-ups (docs/research.md, "Plan review",
// "Follow-ups"): a job started with --plan stops in plan-proposed with
// plan.md; approve sends the confirming turn as a new billed create under
// the same custody as a start (one create, its own receipt, never
// resent), reject ends the job without a provider call. A follow-up is a
// start whose interaction follows a completed job's.

package research

import (
	"context"
	"errors"
	"path/filepath"

	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/fsx"
	"github.com/clawkit/clawkit/pkg/owner"
	"github.com/clawkit/clawkit/pkg/research/google"
)

// PlanFile is the proposed plan's file under <home>/research/<job>/.
const PlanFile = "plan.md"

// MaxReviseBytes bounds an approve's revision text.
const MaxReviseBytes = MaxQuestionBytes

// ApproveText is the confirming turn's input when the approve carries no
// revision.
const ApproveText = "The research plan is approved. Proceed with the research."

// ApproveParams are research.approve's parameters.
type ApproveParams struct {
	JobParams
	// Revise, when set, is sent as the confirming turn instead of
	// ApproveText: the plan is approved with these changes.
	Revise string `json:"revise,omitempty"`
	// Wait makes the approve wait for the job in the same operation.
	Wait *StartWait `json:"wait,omitempty"`
}

// checkApprove is approve's Check: the caller, a job id (the CLI names
// the job; an envelope's approve by handle runs through RPC), the
// revision's size and the wait's timeout and report destination.
func checkApprove(p ApproveParams) (ApproveParams, error) {
	var err error
	if p.JobParams, err = checkJobRef(p.JobParams); err != nil {
		return p, err
	}
	if p.Job == "" {
		return p, errInvalidJobID(p.Job)
	}
	if len(p.Revise) > MaxReviseBytes {
		return p, errs.Usage(CodeInvalidQuestion, "the revision is longer than %d bytes", MaxReviseBytes)
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

// checkReject is reject's Check: the caller and a job id.
func checkReject(p JobParams) (JobParams, error) {
	p, err := checkJobRef(p)
	if err != nil {
		return p, err
	}
	if p.Job == "" {
		return p, errInvalidJobID(p.Job)
	}
	return p, nil
}

// followUpParent finds a follow-up's parent and checks that the caller is
// its current owner (agent, session, incarnation; the provider authority
// it was created under) and that it completed. Nothing is sent before.
func (s *Service) followUpParent(ctx context.Context, env *owner.OpEnv, p StartParams) (*Job, error) {
	parent, err := s.lookup(ctx, env, p.FollowUp.ref)
	if err != nil {
		return nil, err
	}
	if err := checkCaller(parent, p.Caller); err != nil {
		return nil, err
	}
	if _, err := s.custody(ctx, env, parent, p.Caller); err != nil {
		return nil, err
	}
	if parent.State != StateCompleted || parent.Handle == "" {
		return nil, errs.Failed(CodeParentNotCompleted, "research job %s is %s; only a completed job can be followed up", parent.ID, parent.State).WithJob(parent.ID).
			WithHint("'clawkit research wait %s' until it completes", parent.ID)
	}
	return parent, nil
}

// notAwaiting refuses a plan review of a job that has no proposed plan,
// saying what it is instead.
func notAwaiting(j *Job) error {
	switch {
	case j.State == StateSubmitting:
		return errs.Unavailable(CodeApproveInProgress, "research job %s is being submitted right now", j.ID).WithJob(j.ID).
			WithRetryAfter(1000).WithHint("look again in a moment: 'clawkit research show %s'", j.ID)
	case j.State == StateIndeterminate && j.PlanHandle != "":
		return errs.Failed(CodeNotAwaitingReview, "research job %s has no plan to review: the confirming turn of plan %s may or may not have been accepted", j.ID, j.PlanHandle).WithJob(j.ID).
			WithHint("it is never resent: inspect the provider account for interactions after %s before starting the research again", j.PlanHandle)
	case Pollable(j.State) && j.PlanHandle != "":
		return errs.Failed(CodeNotAwaitingReview, "the plan of research job %s was already approved; the job is %s", j.ID, j.State).WithJob(j.ID).
			WithHint("'clawkit research wait %s' waits for the report", j.ID)
	case !j.plan():
		return errs.Failed(CodeNotAwaitingReview, "research job %s was not started with --plan", j.ID).WithJob(j.ID).
			WithHint("'clawkit research start --plan QUESTION' asks for a plan to review")
	}
	return errs.Failed(CodeNotAwaitingReview, "research job %s is %s, not plan-proposed", j.ID, j.State).WithJob(j.ID).
		WithHint("'clawkit research show %s' shows its state", j.ID)
}

// Approve sends the confirming turn of a proposed plan: a create with
// previous_interaction_id = the plan's interaction, under the job's
// custody (the caller is its owner, checked before HTTP), sent at most
// once. Two approves of one job make one create: the second finds the
// job no longer plan-proposed.
func (s *Service) Approve(ctx context.Context, env *owner.OpEnv, p ApproveParams) (*StartResult, error) {
	j, err := s.ownedJob(ctx, env, &p.JobParams)
	if err != nil {
		return nil, err
	}
	if j.State != StatePlanProposed {
		return nil, notAwaiting(j)
	}
	if _, err := s.custody(ctx, env, j, p.Caller); err != nil {
		return nil, err
	}
	if b := s.budgets(); j.PollCount >= b.MaxPolls {
		return nil, errs.Failed(CodePollBudgetExceeded, "research job %s spent its poll budget (%d polls) on its plan", j.ID, j.PollCount).WithJob(j.ID).
			WithHint("reject it and start again")
	}
	var tools []google.Tool
	var secrets []string
	if j.Options != nil {
		if tools, secrets, err = resolveTools(env.Home, j.Options.Tools); err != nil {
			return nil, err
		}
	}
	unlock := s.lockJob(j.ID)
	defer unlock()
	js := jobsOf(env)
	if j, err = js.get(ctx, j.ID); err != nil {
		return nil, err
	}
	if j.State != StatePlanProposed {
		return nil, notAwaiting(j)
	}
	// The fence and the provider authority once more before the job
	// leaves plan-proposed: a refusal now changes nothing.
	if err := env.Fence.AssertCurrent(); err != nil {
		return nil, err
	}
	if _, err := s.providerAuthority(env, j); err != nil {
		return nil, err
	}
	done := make(chan struct{})
	s.pending.Store(j.ID, done)
	defer func() { s.pending.Delete(j.ID); close(done) }()
	now := env.Now()
	proposed := *j
	// The confirming turn is a new create: the job has no receipt for it
	// until it is recorded (a crash in between makes it indeterminate).
	// The wall clock did not run while the plan waited for its review.
	j.State, j.Handle = StateSubmitting, ""
	j.ErrorCode, j.ErrorMessage = "", ""
	if j.PlanProposedAt > 0 && now.UnixMilli() > j.PlanProposedAt {
		j.DeadlineAt += now.UnixMilli() - j.PlanProposedAt
	}
	opts := *j.Options
	opts.Revision = p.Revise
	j.Options = &opts
	if err := js.update(ctx, j, now); err != nil {
		if errors.Is(err, errStale) {
			return nil, errs.Unavailable(CodeApproveInProgress, "research job %s changed while approving", j.ID).WithJob(j.ID).
				WithRetryAfter(1000).WithHint("look again: 'clawkit research show %s'", j.ID)
		}
		return nil, err
	}
	restore := func(code errs.Code, msg string) {
		// Nothing was sent: the plan is still there to approve.
		back := proposed
		back.RowVersion, back.ErrorCode, back.ErrorMessage = j.RowVersion, string(code), msg
		_ = js.update(context.WithoutCancel(ctx), &back, env.Now())
	}
	cred, err := s.effectAuthority(env, j)
	if err != nil {
		restore(errs.CodeOf(err), err.Error())
		return nil, err
	}
	input := ApproveText
	if p.Revise != "" {
		input = p.Revise
	}
	req := google.CreateRequest{Input: input, PreviousInteractionID: j.PlanHandle, CollaborativePlanning: boolPtr(false),
		Visualization: j.visualization(), Tools: tools}
	cctx, cdone := createContext(ctx)
	it, err := s.client(j, cred).CreateWith(cctx, req)
	cdone()
	wctx := context.WithoutCancel(ctx)
	if err != nil {
		state, out := classifyCreateErr(j, err, secrets)
		if state == StateNotSent {
			restore(out.Code, out.Message)
			return nil, out.WithHint("nothing was sent; the plan still waits: 'clawkit research approve %s' again", j.ID)
		}
		j.State, j.ErrorCode, j.ErrorMessage = state, string(out.Code), out.Message
		j.FinishedAt = ms(env.Now())
		if uerr := js.update(wctx, j, env.Now()); uerr != nil {
			return nil, errs.Unknown(CodeCreateOutcomeUnknown, "%s; recording it also failed: %v", out.Message, uerr).
				WithHint("inspect the provider account before starting it again")
		}
		return nil, &JobStateError{State: state, Err: out.WithHint("the confirming turn is never resent: inspect the provider account for an interaction after plan %s; a second approve is refused", j.PlanHandle)}
	}
	j.Handle, j.ProviderStatus, j.ProviderUpdated = it.ID, it.Status, it.Updated
	j.State = StateRunning
	// The job's interaction is now the confirming turn: submittedAt is
	// its submission (as handle is its id), and polling starts at the
	// fast interval again.
	j.SubmittedAt = ms(env.Now())
	j.NextPollAt = ms(env.Now().Add(s.interval(env.Now(), j.SubmittedAt, 0)))
	if err := s.recordReceipt(wctx, env, js, j); err != nil {
		return nil, errs.Unknown(CodeReceiptNotRecorded, "the provider accepted the confirming turn of research job %s as interaction %s, but recording the receipt failed: %v", j.ID, it.ID, err).WithJob(j.ID).
			WithHint("do not approve it again; inspect the provider account for interaction %s", it.ID)
	}
	res := &StartResult{Job: j.ID, Handle: j.Handle, State: j.State, Status: j.ProviderStatus}
	return res, nil
}

// ApproveAndWait approves and, with p.Wait, waits in the same operation.
func (s *Service) ApproveAndWait(ctx context.Context, env *owner.OpEnv, p ApproveParams) (*StartResult, error) {
	res, err := s.Approve(ctx, env, p)
	if err != nil || p.Wait == nil {
		return res, err
	}
	wp := WaitParams{JobParams: JobParams{Caller: p.Caller, Job: res.Job, Out: p.Wait.Out, ref: ownRef(res.Job)}, TimeoutMs: p.Wait.TimeoutMs}
	pr, err := s.Wait(ctx, env, wp)
	if err != nil {
		return nil, err
	}
	res.Waited = pr
	return res, nil
}

// Reject ends a plan-proposed job cancelled, without a provider call (the
// plan's interaction has already ended). Its owner only.
func (s *Service) Reject(ctx context.Context, env *owner.OpEnv, p JobParams) (*PollResult, error) {
	j, err := s.ownedJob(ctx, env, &p)
	if err != nil {
		return nil, err
	}
	if j.State == StateCancelled && j.PlanHandle != "" && j.Handle == j.PlanHandle {
		return s.view(env, j), nil // rejected already
	}
	if j.State != StatePlanProposed {
		return nil, notAwaiting(j)
	}
	if err := s.deliveryAuthority(ctx, env, j, p.Caller); err != nil {
		return nil, err
	}
	unlock := s.lockJob(j.ID)
	defer unlock()
	js := jobsOf(env)
	if j, err = js.get(ctx, j.ID); err != nil {
		return nil, err
	}
	if j.State != StatePlanProposed {
		return nil, notAwaiting(j)
	}
	if err := env.Fence.AssertCurrent(); err != nil {
		return nil, err
	}
	now := env.Now()
	j.State, j.FinishedAt = StateCancelled, ms(now)
	j.ErrorCode, j.ErrorMessage = "plan_rejected", "the proposed plan was rejected; nothing more was sent"
	if err := js.update(ctx, j, now); err != nil {
		if errors.Is(err, errStale) {
			return nil, errs.Unavailable(CodeApproveInProgress, "research job %s changed while rejecting", j.ID).WithJob(j.ID).
				WithRetryAfter(1000).WithHint("look again: 'clawkit research show %s'", j.ID)
		}
		return nil, err
	}
	return s.view(env, j), nil
}

// proposePlan records a plan turn's end: plan.md is published (the plan
// text is the SDKs' output_text of the plan interaction), then the job
// becomes plan-proposed, so a crash in between publishes it again.
func (s *Service) proposePlan(ctx context.Context, env *owner.OpEnv, j *Job, text string, assert func() error) (*Job, error) {
	js := jobsOf(env)
	now := env.Now()
	if err := assert(); err != nil {
		return nil, err
	}
	dir := jobDir(env.Home, j.ID)
	if err := mkdirJob(dir); err != nil {
		return nil, err
	}
	if err := fsx.WriteFile(filepath.Join(dir, PlanFile), []byte(text), 0o600); err != nil {
		return nil, errs.Failed(CodePublishFailed, "cannot publish %s: %v", filepath.Join(dir, PlanFile), err)
	}
	j.State, j.PlanHandle, j.PlanProposedAt, j.NextPollAt = StatePlanProposed, j.Handle, ms(now), 0
	j.ErrorCode, j.ErrorMessage = "", ""
	if err := js.update(context.WithoutCancel(ctx), j, now); err != nil {
		if errors.Is(err, errStale) {
			return js.get(context.WithoutCancel(ctx), j.ID)
		}
		return nil, err
	}
	return j, nil
}

// ReadPlan returns a job's proposed plan (for RPC answers).
func ReadPlan(home, id string) (string, error) {
	b, err := fsx.ReadRegular(filepath.Join(jobDir(home, id), PlanFile), HardReportMax)
	return string(b), err
}
