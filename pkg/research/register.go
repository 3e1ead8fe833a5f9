package research

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/owner"
	"github.com/clawkit/clawkit/pkg/store"
)

// The research operations' handles: each names its operation (versioned:
// a CLI needing a version a running gateway lacks is refused with a hint
// to restart the gateway, owner.VersionedName) with its types, and
// Register registers each Op through its handle, so the name is written
// once and the compiler holds the handle's types to the Op's.
var (
	OpStart   = owner.Handle[StartParams, *StartResult]{Name: "research.start.v5"} // v2: optional wait in the same call; v3: plan, followUp, inputs, tools, visualization; v4: maxTokens; v5: an input's layers and resolution (a gateway of v4 would read past them and send the input without them)
	OpPoll    = owner.Handle[JobParams, *PollResult]{Name: "research.poll.v1"}
	OpWait    = owner.Handle[WaitParams, *PollResult]{Name: "research.wait.v2"} // v2: events, noStream
	OpCancel  = owner.Handle[JobParams, *PollResult]{Name: "research.cancel.v1"}
	OpApprove = owner.Handle[ApproveParams, *StartResult]{Name: "research.approve.v1"}
	OpReject  = owner.Handle[JobParams, *PollResult]{Name: "research.reject.v1"}
	OpList    = owner.Handle[ListParams, []*Job]{Name: "research.list.v1"}
	OpShow    = owner.Handle[JobParams, *PollResult]{Name: "research.show.v1"}
	OpRecover = owner.Handle[RecoverParams, *RecoverResult]{Name: "research.recover.v1"}
	OpRPC     = owner.Handle[json.RawMessage, Response]{Name: "research.rpc.v1"}
	// OpDescribe is read-only: it reads config and the caller's session,
	// never credentials or the network, and creates nothing.
	OpDescribe = owner.Handle[DescribeParams, *Describe]{Name: "research.describe.v1"}
)

// DescribeParams are research.describe's parameters: the caller whose
// session access policy applies.
type DescribeParams struct {
	Caller
}

// Describe applies the caller's session access policy (describeAccess),
// then describes the service from config alone.
func (s *Service) Describe(ctx context.Context, env *owner.OpEnv, p DescribeParams) (*Describe, error) {
	if err := p.defaults(); err != nil {
		return nil, err
	}
	if err := s.describeAccess(ctx, env, p.Caller); err != nil {
		return nil, err
	}
	cfg, err := env.Config()
	if err != nil {
		return nil, err
	}
	d, err := DescribeFrom(cfg, s.callEnv(env))
	if err != nil {
		return nil, err
	}
	return &d, nil
}

// callVars lists the variables the research operations read per call: a
// call carries the caller's values to a gateway (owner.Op.Env), so the
// endpoint a routed start submits to and checks against is the caller's.
// EnvTimeScale is not among them: it paces the owner's poller for every
// job, so it is the owner's setting (a caller cannot speed up a gateway).
var callVars = []string{EnvBaseURL}

// Register adds s's operations to r, and the gateway start hook (recovery,
// then the background poller; or s.Shared's scheduler). Scopes
// (owner.NeedScope): describe, list and show need operator.read; start,
// poll, wait, cancel and rpc need operator.write; recover needs
// operator.admin (the default for writers). Check holds each operation's
// stateless refusals (caller, job id, handle, start parameters); start's
// Admit adds the ones config and credentials decide, before the home is
// created.
func (s *Service) Register(r *owner.Registry) {
	OpStart.Register(r, owner.Op[StartParams, *StartResult]{Write: true, Scope: owner.ScopeWrite, Env: callVars,
		Check: checkStartParams, Admit: s.admitStart, Run: s.StartAndWait})
	OpPoll.Register(r, owner.Op[JobParams, *PollResult]{Write: true, Scope: owner.ScopeWrite, Env: callVars,
		Check: checkJobRef, Run: s.Poll})
	OpWait.Register(r, owner.Op[WaitParams, *PollResult]{Write: true, Scope: owner.ScopeWrite, Env: callVars,
		Check: checkWait, Run: s.Wait})
	OpCancel.Register(r, owner.Op[JobParams, *PollResult]{Write: true, Scope: owner.ScopeWrite, Env: callVars,
		Check: checkJobRef, Run: s.Cancel})
	OpApprove.Register(r, owner.Op[ApproveParams, *StartResult]{Write: true, Scope: owner.ScopeWrite, Env: callVars,
		Check: checkApprove, Run: s.ApproveAndWait})
	OpReject.Register(r, owner.Op[JobParams, *PollResult]{Write: true, Scope: owner.ScopeWrite, Env: callVars,
		Check: checkReject, Run: s.Reject})
	OpList.Register(r, owner.Op[ListParams, []*Job]{Env: callVars,
		Run: s.List})
	OpShow.Register(r, owner.Op[JobParams, *PollResult]{Env: callVars,
		Check: func(p JobParams) (JobParams, error) {
			if !ValidJobID(p.Job) {
				return p, errInvalidJobID(p.Job)
			}
			return p, nil
		}, Run: s.Show})
	OpDescribe.Register(r, owner.Op[DescribeParams, *Describe]{Env: callVars,
		Check: func(p DescribeParams) (DescribeParams, error) {
			err := p.defaults()
			return p, err
		}, Run: s.Describe})
	OpRecover.Register(r, owner.Op[RecoverParams, *RecoverResult]{Write: true, Env: callVars,
		Run: func(ctx context.Context, env *owner.OpEnv, _ RecoverParams) (*RecoverResult, error) {
			return s.Recover(ctx, env, true)
		}})
	OpRPC.Register(r, owner.Op[json.RawMessage, Response]{Write: true, Scope: owner.ScopeWrite, Env: callVars, Admit: s.admitRPC,
		Run: func(ctx context.Context, env *owner.OpEnv, raw json.RawMessage) (Response, error) {
			// The params are the raw envelope, decoded here exactly as
			// strictly as the CLI does (DecodeRPC), whoever sent them.
			rpc, err := DecodeRPC(raw)
			if err != nil {
				return ErrorResponse(err).WithVersion(EnvelopeVersion(raw)), nil
			}
			return s.RPC(ctx, env, rpc), nil
		}})
	r.OnGatewayStart(func(ctx context.Context, env *owner.OpEnv) {
		s.RunGateway(ctx, env)
	})
}

// RecoverParams are research.recover's (none).
type RecoverParams struct{}

// StartAndWait starts a job and, when p.Wait is set, waits for it in the
// same operation (see StartParams.Wait).
func (s *Service) StartAndWait(ctx context.Context, env *owner.OpEnv, p StartParams) (*StartResult, error) {
	res, err := s.Start(ctx, env, p)
	if err != nil || p.Wait == nil {
		return res, err
	}
	wp := WaitParams{JobParams: JobParams{Caller: p.Caller, Job: res.Job, Out: p.Wait.Out, ref: ownRef(res.Job)}, TimeoutMs: p.Wait.TimeoutMs, Events: p.Wait.Events, NoStream: p.Wait.NoStream}
	pr, err := s.Wait(ctx, env, wp)
	if err != nil {
		return nil, err
	}
	res.Waited = pr
	return res, nil
}

// AnswerRPC answers one google.research.v1 envelope through c (the owner
// router): describe, which is read-only and must not create the home,
// runs as research.describe with the session access policy; every other
// action runs as research.rpc with the envelope as read (the operation
// decodes it again, as strictly, on whichever side of a gateway it runs).
func AnswerRPC(ctx context.Context, c owner.Caller, data []byte) Response {
	rpc, err := DecodeRPC(data)
	if err != nil {
		return ErrorResponse(err).WithVersion(EnvelopeVersion(data))
	}
	v := rpc.Request.Version
	if rpc.Request.Action == ActionDescribe {
		p := DescribeParams{Caller: Caller{AgentID: rpc.AgentID, SessionKey: rpc.SessionKey}}
		d, err := OpDescribe.Call(ctx, c, p)
		if err != nil {
			return ErrorResponse(err).WithVersion(v)
		}
		return OKResponse(d.ForVersion(v)).WithVersion(v)
	}
	resp, err := OpRPC.Call(ctx, c, json.RawMessage(data))
	if err != nil {
		return ErrorResponse(err).WithVersion(v)
	}
	return resp
}

// RPC answers one decoded request with its envelope, in the request's
// contract version.
func (s *Service) RPC(ctx context.Context, env *owner.OpEnv, rpc *RPC) Response {
	return s.rpc(ctx, env, rpc).WithVersion(rpc.Request.Version)
}

func (s *Service) rpc(ctx context.Context, env *owner.OpEnv, rpc *RPC) Response {
	c := Caller{AgentID: rpc.AgentID, SessionKey: rpc.SessionKey}
	req := rpc.Request
	switch req.Action {
	case ActionDescribe:
		d, err := s.Describe(ctx, env, DescribeParams{Caller: c})
		if err != nil {
			return ErrorResponse(err)
		}
		return OKResponse(d.ForVersion(req.Version))
	case ActionStart:
		// The envelope's start is checked here, once (Start trusts its
		// parameters).
		p, err := checkStartParams(rpcStart(c, req))
		if err != nil {
			return ErrorResponse(err)
		}
		res, err := s.Start(ctx, env, p)
		if err != nil {
			return ErrorResponse(err)
		}
		return OKResponse(res)
	case ActionApprove:
		// The envelope's job reference is checked here, once, as the
		// operations' Check does (checkJobRef).
		jp, err := checkJobRef(JobParams{Caller: c, Handle: req.Handle})
		if err != nil {
			return ErrorResponse(err)
		}
		res, err := s.Approve(ctx, env, ApproveParams{JobParams: jp, Revise: req.Revise})
		if err != nil {
			return ErrorResponse(err)
		}
		return OKResponse(res)
	case ActionPoll, ActionCancel, ActionReject:
		jp, err := checkJobRef(JobParams{Caller: c, Handle: req.Handle, deliver: true})
		if err != nil {
			return ErrorResponse(err)
		}
		var res *PollResult
		switch req.Action {
		case ActionPoll:
			res, err = s.Poll(ctx, env, jp)
		case ActionCancel:
			res, err = s.Cancel(ctx, env, jp)
		default:
			res, err = s.Reject(ctx, env, jp)
		}
		if res != nil && res.Job != nil && res.State == StatePlanProposed && (err == nil || errs.CodeOf(err) == CodePlanProposed) {
			// A proposed plan is a state of the job, answered with its
			// plan text: the caller approves or rejects it next.
			if plan, rerr := ReadPlan(env.Home, res.ID); rerr == nil {
				res.Plan = plan
			}
			return OKResponse(res)
		}
		if err != nil {
			return ErrorResponse(err)
		}
		if res.Published {
			if err := env.Fence.AssertCurrent(); err != nil {
				return ErrorResponse(err)
			}
			if text, cites, rerr := ReadReport(env.Home, res.ID); rerr == nil {
				res.Report, res.Citations = text, cites
			}
		}
		return OKResponse(res)
	}
	return ErrorResponse(invalid(CodeUnsupportedAction, "unsupported action %q", req.Action))
}

// RunGateway runs recovery then the poller until ctx ends.
func (s *Service) RunGateway(ctx context.Context, env *owner.OpEnv) {
	// The gateway follows the streams of the jobs its scheduler polls
	// (gatewaystreams.go); they all end before this returns.
	k := s.startKeeper(ctx, env, MaxGatewayStreams)
	defer k.close()
	if sc := s.sharedFor(env); sc != nil {
		// Several gateways share the jobs: river schedules them (shared.go).
		sc.Run(ctx, env, Worker{s})
		return
	}
	if _, err := s.Recover(ctx, env, false); err != nil && ctx.Err() == nil {
		// Recovery refuses only when ownership is gone; the poller would
		// refuse the same way, so there is nothing more to do.
		return
	}
	s.RunPoller(ctx, env)
}

// PollerConcurrency is how many jobs the gateway polls at once.
const PollerConcurrency = 16

const (
	pollBatch   = 256
	pollerPause = 200 * time.Millisecond
)

// RunPoller polls every due running job of the home until ctx ends: one
// "poll once and apply" per due job, each under its own binding's
// authority, with at most PollerConcurrency requests in flight. Jobs whose
// authority is gone are skipped and looked at again later; nothing is
// cancelled or resubmitted without it.
func (s *Service) RunPoller(ctx context.Context, env *owner.OpEnv) {
	for ctx.Err() == nil {
		n, next := s.PollDue(ctx, env, pollBatch)
		// A full batch means more are due: go on at once. Otherwise pause
		// briefly so due jobs gather into batches (a poll is at most this
		// late against intervals of 5–15 s), or until the next one is due.
		wait := min(pollerPause, s.budgets().FastInterval/10)
		switch {
		case n == pollBatch:
			wait = 0
		case n == 0 && !next.IsZero():
			if d := next.Sub(env.Now()); d > wait {
				wait = min(d, time.Second)
			}
		case n == 0:
			wait = time.Second
		}
		if wait > 0 {
			if err := s.sleep(ctx, wait); err != nil {
				return
			}
		}
	}
}

// PollDue polls up to limit due jobs once each and returns how many were
// polled and when the next one is due.
func (s *Service) PollDue(ctx context.Context, env *owner.OpEnv, limit int) (int, time.Time) {
	js := jobsOf(env)
	now := env.Now()
	due, err := js.list(ctx, `WHERE state IN ('running','cancel-requested') AND next_poll_at <= ? AND poll_count < ? ORDER BY next_poll_at LIMIT ?`,
		ms(now), s.budgets().MaxPolls+cancelGracePolls, limit)
	if err != nil || len(due) == 0 {
		var next time.Time
		if rows, err := js.list(ctx, `WHERE state IN ('running','cancel-requested') ORDER BY next_poll_at LIMIT 1`); err == nil && len(rows) == 1 {
			next = fromMs(rows[0].NextPollAt)
		}
		return 0, next
	}
	// Config and credentials are read once per batch; each job's session
	// is still checked fresh right before its request.
	view := s.loadAuthView(env)
	sem := make(chan struct{}, PollerConcurrency)
	var wg sync.WaitGroup
	for _, j := range due {
		if env.Fence.AssertCurrent() != nil {
			break
		}
		sem <- struct{}{}
		wg.Add(1)
		go func(j *Job) {
			defer wg.Done()
			defer func() { <-sem }()
			t0 := time.Now()
			polled, err := s.pollUnderBinding(ctx, env, j, view)
			// Poll latency for the gateway's metrics (docs/operations.md).
			owner.TelemetryFrom(ctx).Poll(time.Since(t0), err)
			if err != nil {
				s.deferRefused(ctx, env, j.ID, err)
				return
			}
			s.polled(polled)
		}(j)
	}
	wg.Wait()
	return len(due), time.Time{}
}

// deferRefused puts off the next poll of a job whose poll was refused: a
// refreshing session until its retry-after, no authority (or a definitive
// failure) for five minutes rather than hammering; the job keeps its
// state. It returns false when ownership is ending (owner_retired, or an
// unclassified error): the job is left as it is for the next owner.
func (s *Service) deferRefused(ctx context.Context, env *owner.OpEnv, id string, err error) bool {
	e := errs.As(err)
	switch {
	case e == nil || e.Code == owner.CodeOwnerRetired:
		return false
	case e.Code == store.CodeSessionRefreshing:
		d := time.Duration(e.RetryAfterMs) * time.Millisecond
		if d <= 0 {
			d = s.budgets().FastInterval
		}
		s.deferJob(ctx, env, id, d, e)
	case e.Kind == errs.KindRefused || e.Kind == errs.KindFailed:
		s.deferJob(ctx, env, id, 5*time.Minute, e)
	}
	return true
}

func (s *Service) deferJob(ctx context.Context, env *owner.OpEnv, id string, d time.Duration, e *errs.Error) {
	unlock := s.lockJob(id)
	defer unlock()
	js := jobsOf(env)
	j, err := js.get(ctx, id)
	if err != nil || !Pollable(j.State) {
		return
	}
	now := env.Now()
	j.NextPollAt = ms(now.Add(d))
	j.ErrorCode, j.ErrorMessage = string(e.Code), e.Message
	_ = js.update(ctx, j, now)
}
