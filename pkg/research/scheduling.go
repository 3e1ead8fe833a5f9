// Scheduling: when a job is polled (intervals, wait, recovery) and the
// single poll operation every scheduler calls, with budget enforcement.

package research

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/owner"
	"github.com/clawkit/clawkit/pkg/research/google"
	"github.com/clawkit/clawkit/pkg/store"
	"github.com/clawkit/clawkit/pkg/termsafe"
)

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

// pollOnce is the one operation both schedulers (wait, the gateway
// poller) call: poll the provider once and apply what it says. The caller
// has checked custody; assert is checked right before the request and
// before publication.
func (s *Service) pollOnce(ctx context.Context, env *owner.OpEnv, id string, cred credential, assert func() error, dueOnly bool) (*Job, error) {
	unlock := s.lockJob(id)
	defer unlock()
	j, err := jobsOf(env).get(ctx, id)
	if err != nil {
		return nil, err
	}
	return s.pollLocked(ctx, env, j, cred, assert, dueOnly)
}

// pollLocked is pollOnce for a caller that holds the job's lock and has
// just read j under it (a queued poll: one read of the row per poll).
func (s *Service) pollLocked(ctx context.Context, env *owner.OpEnv, j *Job, cred credential, assert func() error, dueOnly bool) (*Job, error) {
	js := jobsOf(env)
	if !Pollable(j.State) || (isBackground(ctx) && PublishPending(j) && s.sharedFor(env) != nil) {
		// Ended, or (a queued poll on a shared database) its end is
		// recorded with its queued publication: another poll would queue
		// another publication once that one completed.
		return j, nil
	}
	if dueOnly && j.NextPollAt > ms(env.Now()) {
		// Another scheduler (the gateway poller, a concurrent wait) polled
		// it meanwhile: one poll per interval, whoever does it.
		return j, nil
	}
	b := s.budgets()
	if j.PollCount >= b.MaxPolls+cancelGracePolls {
		return j, errs.Failed(CodePollBudgetExhausted, "research job %s reached its poll budget (%d polls) without a confirmed end", j.ID, j.PollCount).WithJob(j.ID).
			WithHint("inspect the interaction %s in the provider account", j.Handle)
	}
	// Every effect of this poll (the request, publication, a budget
	// cancellation) is preceded by the caller's assertion and the provider
	// authority read again: a refresh wait may have outlasted either.
	check := func() error {
		if err := assert(); err != nil {
			return err
		}
		var err error
		cred, err = s.providerAuthority(env, j)
		return err
	}
	if err := s.assertWithRefresh(ctx, check); err != nil {
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
		if ge != nil && ge.TooLarge {
			// Polling again would download the same oversized answer
			// again: the job ends here, keeping its handle.
			j.State, j.FinishedAt, j.NextPollAt = StateFailed, ms(now), 0
		}
		j.ErrorCode, j.ErrorMessage = string(out.Code), out.Message
		if uerr := js.update(wctx, j, now); uerr != nil && !errors.Is(uerr, errStale) {
			return nil, uerr
		}
		return j, out
	}
	return s.apply(ctx, env, j, it, cred, check)
}

// budgetCancel records cancellation intent for a job over its budget and
// asks the provider; the job stays cancel-requested until a poll confirms.
func (s *Service) budgetCancel(ctx context.Context, env *owner.OpEnv, j *Job, cred credential, assert func() error, code string) (*Job, error) {
	js := jobsOf(env)
	now := env.Now()
	wctx := context.WithoutCancel(ctx)
	j.State, j.CancelRequestedAt = StateCancelRequested, ms(now)
	j.ErrorCode, j.ErrorMessage = code, fmt.Sprintf("clawkit cancelled research job %s: %s", j.ID, strings.ReplaceAll(code, "_", " "))
	// With a shared scheduler the cancellation is a queued job inserted
	// with the intent: a queued poll leaves the request to it; a
	// foreground one asks at once and the queued job is its backstop.
	bg := isBackground(ctx) && s.sharedFor(env) != nil
	at := now
	if !bg {
		at = now.Add(s.cancelBackstop())
	}
	if err := s.updateWith(wctx, env, js, j, func(sc SharedScheduler, tx *sql.Tx) error {
		return sc.EnqueueCancelTx(wctx, env, tx, j.ID, at)
	}); err != nil {
		if errors.Is(err, errStale) {
			return js.get(wctx, j.ID)
		}
		return nil, err
	}
	if bg {
		return j, nil
	}
	if err := assert(); err != nil {
		return nil, err
	}
	// A failed request leaves the intent recorded: polling goes on until a
	// final status or the poll budget, and 'research cancel' asks again.
	if s.client(j, cred).Cancel(ctx, j.Handle) == nil {
		s.markCancelSent(wctx, env, j)
	}
	return j, nil
}

// cancelBackstop is how long a queued cancellation waits behind a
// foreground request for the same job: longer than that request can take.
func (s *Service) cancelBackstop() time.Duration { return 2 * s.budgets().RequestTimeout }

// markCancelSent records that the provider accepted a cancellation request
// for j (so a queued cancellation does not ask again). It changes nothing
// else of the job; a row that moved on meanwhile is read again once.
func (s *Service) markCancelSent(ctx context.Context, env *owner.OpEnv, j *Job) {
	js := jobsOf(env)
	sent := ms(env.Now())
	for range 3 {
		if !Pollable(j.State) || j.CancelSentAt >= sent {
			return
		}
		j.CancelSentAt = sent
		err := js.update(ctx, j, env.Now())
		if !errors.Is(err, errStale) {
			return
		}
		cur, gerr := js.get(ctx, j.ID)
		if gerr != nil {
			return
		}
		*j = *cur
	}
}

// MinWaitTimeout is the shortest wait timeout there is: the operation
// counts in milliseconds, where a shorter duration would be 0, which means
// "the job's own budget" (the opposite of what was asked).
const MinWaitTimeout = time.Millisecond

// WaitTimeoutMs maps a --timeout to WaitParams.TimeoutMs (and
// StartWait.TimeoutMs): 0 waits for the job's own budget. A duration
// shorter than MinWaitTimeout cannot be counted in milliseconds (it would
// be 0, the opposite of what was asked): it is refused here, the one place
// that still sees it (invalid_timeout). A negative duration stays negative,
// at least -1 even below a millisecond, so the operation's Check refuses it
// (checkWaitTimeout: one place for the rule).
func WaitTimeoutMs(d time.Duration) (int64, error) {
	if d > 0 && d < MinWaitTimeout {
		return 0, errs.Usage(errs.CodeInvalidTimeout, "--timeout %s is shorter than %s, the finest a wait counts", d, MinWaitTimeout).
			WithHint("give at least %s, or 0 to wait for the job's own budget", MinWaitTimeout)
	}
	ms := d.Milliseconds()
	if d < 0 && ms == 0 {
		ms = -1
	}
	return ms, nil
}

// WaitParams are research.wait's parameters.
type WaitParams struct {
	JobParams
	// TimeoutMs bounds this wait (not the job); 0 waits for the job's own
	// budget.
	TimeoutMs int64 `json:"timeoutMs,omitempty"`
	// Events makes the progress NDJSON (one stream event per line);
	// NoStream waits by polling alone (docs/research.md, "Live progress").
	Events   bool `json:"events,omitempty"`
	NoStream bool `json:"noStream,omitempty"`
}

// Wait polls with backoff until the job ends, its budget is spent or the
// wait times out. Progress goes to env.Progress when set.
func (s *Service) Wait(ctx context.Context, env *owner.OpEnv, p WaitParams) (*PollResult, error) {
	j, err := s.ownedJob(ctx, env, &p.JobParams)
	if err != nil {
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
	js := jobsOf(env)
	var poke <-chan struct{}
	var sink *progressSink
	endStream := func() {}
	if Pollable(j.State) && j.Handle != "" && !p.NoStream {
		sctx, stop := context.WithCancel(ctx)
		sink = &progressSink{w: env.Progress, ndjson: p.Events, job: j.ID}
		ls, owned := s.follow(sctx, j, cred, sink, streamHooks{})
		endStream = sync.OnceFunc(func() {
			stop()
			if owned {
				<-ls.ended // no progress is written after the wait returns
			}
		})
		defer endStream()
		poke = ls.terminal
	}
	for {
		if j, err = js.get(ctx, j.ID); err != nil {
			return nil, err
		}
		if !p.Events {
			progress(env.Progress, env.Now().Sub(start), j)
		}
		if !Pollable(j.State) {
			if env.Progress != nil && !p.Events {
				_, _ = fmt.Fprintln(env.Progress) // progress is best effort, as in progress()
			}
			endStream()
			sink.finish(j)
			if err := s.deliver(ctx, env, j, p.Out, env.Fence.AssertCurrent); err != nil {
				return nil, err
			}
			return s.view(env, j), s.endedErr(j)
		}
		now := env.Now()
		if p.TimeoutMs > 0 && now.Sub(start) >= time.Duration(p.TimeoutMs)*time.Millisecond {
			return s.view(env, j), errs.Unavailable(CodeWaitTimeout, "research job %s is still %s after %s", j.ID, j.State, now.Sub(start).Round(time.Second)).WithJob(j.ID).
				WithHint("the job keeps running; 'clawkit research wait %s' again later", j.ID)
		}
		d := time.Duration(j.NextPollAt-now.UnixMilli()) * time.Millisecond
		force := false
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
			poked, err := s.sleepOrPoke(ctx, d, poke)
			if err != nil {
				return s.view(env, j), errs.Unavailable(CodeWaitInterrupted, "waiting for research job %s was interrupted", j.ID).WithJob(j.ID).
					WithHint("the job keeps running; 'clawkit research wait %s' resumes", j.ID)
			}
			if err := env.Fence.AssertCurrent(); err != nil {
				if errs.CodeOf(err) == owner.CodeOwnerRetired {
					return nil, errs.Unavailable(CodeWaitInterrupted, "the state owner stopped while waiting for research job %s", j.ID).WithJob(j.ID).
						WithHint("the job keeps running; 'clawkit research wait %s' resumes", j.ID).Wrap(err)
				}
				if errs.CodeOf(err) != store.CodeSessionRefreshing {
					return nil, err
				}
			}
			if poked {
				// The stream reported the end: poll now to confirm it
				// (once: the channel stays closed).
				poke, force = nil, true
			} else if env.Now().UnixMilli() < j.NextPollAt {
				continue // woke early (a slice, or the wait's own timeout)
			}
		}
		// After the await: authority must still be current.
		if _, err := s.pollOnce(ctx, env, j.ID, cred, env.Fence.AssertCurrent, !force); err != nil {
			e := errs.As(err)
			if e != nil && e.Kind == errs.KindUnavailable && e.Code != store.CodeSessionRefreshing {
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
	// Progress is best effort: a failed write must not fail the wait. The
	// status is the provider's text: escaped, it cannot drive the terminal
	// or forge a line (docs/research.md, "Text from outside").
	_, _ = fmt.Fprintf(w, "\r\x1b[Kresearch %s: %s, %s, %d polls, %s elapsed", j.ID, j.State, termsafe.Text(status), j.PollCount, elapsed.Round(time.Second))
}

// RecoverResult summarises a recovery pass.
type RecoverResult struct {
	Indeterminate []string `json:"indeterminate"`
	// NotSent are jobs interrupted while uploading their inputs: no
	// create had left (uploads.go).
	NotSent  []string `json:"notSent"`
	Resumed  []string `json:"resumed"`
	Finished []string `json:"finished"`
	Skipped  []Skip   `json:"skipped"`
}

// Skip is a job recovery could not act on, and why.
type Skip struct {
	Job    string `json:"job"`
	Code   string `json:"code"`
	Reason string `json:"reason"`
}

// Recover applies docs/research.md recovery: submitting jobs without a receipt
// become indeterminate (never resubmitted); running jobs are polled once
// under their own binding's authority when it is still current, and left
// alone otherwise. Nothing is cancelled or resubmitted.
func (s *Service) Recover(ctx context.Context, env *owner.OpEnv, poll bool) (*RecoverResult, error) {
	js := jobsOf(env)
	res := &RecoverResult{Indeterminate: []string{}, NotSent: []string{}, Resumed: []string{}, Finished: []string{}, Skipped: []Skip{}}
	jobs, err := js.list(ctx, `WHERE state IN ('submitting','running','cancel-requested') ORDER BY created_at, job_id`)
	if err != nil {
		return nil, err
	}
	view := s.loadAuthView(env)
	for _, j := range jobs {
		if j.State == StateSubmitting {
			if sc := s.sharedFor(env); sc != nil && !sc.CreatorGone(ctx, env, j.ID, s.budgets().RequestTimeout) {
				continue // another gateway may still be creating it
			}
			j, inFlight, err := s.settled(ctx, js, j)
			if err != nil {
				return nil, err
			}
			if inFlight || j.State != StateSubmitting {
				continue
			}
			if err := env.Fence.AssertCurrent(); err != nil {
				return nil, err
			}
			uploading := j.uploading()
			if err := s.markIndeterminate(ctx, env, js, j); err != nil {
				return nil, err
			}
			if uploading {
				res.NotSent = append(res.NotSent, j.ID)
				continue
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
			res.Skipped = append(res.Skipped, Skip{Job: j.ID, Code: string(errs.CodeOf(err)), Reason: err.Error()})
			if errs.KindOf(err) == errs.KindRefused && errs.CodeOf(err) == owner.CodeOwnerRetired {
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
func (s *Service) pollUnderBinding(ctx context.Context, env *owner.OpEnv, j *Job, view *authView) (*Job, error) {
	if view == nil {
		view = s.loadAuthView(env)
	}
	cred, err := credentialFor(j, view)
	if err != nil {
		return nil, err
	}
	return s.pollOnce(ctx, env, j.ID, cred, bindingAssert(ctx, env, j), true)
}

// bindingAssert is the authority of work done for a job's own binding
// (no caller): the owner fence, and the bound session still usable at the
// bound incarnation, read fresh from the store each time (not from a
// cached view) right before each request and publication.
func bindingAssert(ctx context.Context, env *owner.OpEnv, j *Job) func() error {
	return bindingAssertFrom(ctx, env, j, nil, false)
}

// bindingAssertFrom is bindingAssert whose first check uses the session
// as read together with the job a moment ago (sess; nil: it no longer
// existed) instead of reading it again; every later check reads it fresh.
func bindingAssertFrom(ctx context.Context, env *owner.OpEnv, j *Job, sess *store.Session, haveSnapshot bool) func() error {
	return func() error {
		if err := env.Fence.AssertCurrent(); err != nil {
			return err
		}
		var cur store.Session
		var err error
		if haveSnapshot {
			haveSnapshot = false
			if sess == nil {
				err = errs.Failed(errs.CodeSessionNotFound, "no session")
			} else {
				cur = *sess
			}
		} else {
			cur, err = env.Store.GetSession(ctx, j.AgentID, j.SessionKey)
		}
		if err != nil {
			return errs.Refused(errs.CodeSessionGone, "session %s of agent %s no longer exists", j.SessionKey, j.AgentID)
		}
		if err := store.CheckSessionUsable(cur); err != nil {
			return err
		}
		if cur.Incarnation != j.SessionIncarnation {
			return errs.Refused(CodeStaleOwner, "research job %s was started in incarnation %d of session %s; the session is now at %d", j.ID, j.SessionIncarnation, j.SessionKey, cur.Incarnation).WithJob(j.ID).
				WithHint("the session was reset; the job can no longer be polled or cancelled from it")
		}
		return nil
	}
}
