// Queued work besides polls (shared scheduler): the provider cancellation a
// recorded cancel-request calls for, and the publication a terminal
// observation calls for. Each runs under the job's own binding, with the
// same checks as a poll, and is safe to run again: a cancellation already
// made, or a publication already recorded, is not repeated.

package research

import (
	"context"
	"time"

	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/owner"
	"github.com/clawkit/clawkit/pkg/research/google"
	"github.com/clawkit/clawkit/pkg/store"
)

// deferAuthority is how long queued work without authority (refused,
// failed definitively) waits before looking again, as the poller does.
const deferAuthority = 5 * time.Minute

// queuedOutcome maps an error of queued work to what the scheduler does:
// owner_retired is returned (another gateway takes the job over), a
// session being refreshed is looked at again after its retry delay, a
// refusal later, and anything else (the provider or the database busy, a
// file not written) is returned to be retried with backoff.
func (w Worker) queuedOutcome(err error) (time.Duration, error) {
	e := errs.As(err)
	switch {
	case e == nil || e.Code == owner.CodeOwnerRetired:
		return 0, err
	case e.Code == store.CodeSessionRefreshing:
		if d := time.Duration(e.RetryAfterMs) * time.Millisecond; d > 0 {
			return d, nil
		}
		return w.s.budgets().FastInterval, nil
	case e.Kind == errs.KindRefused:
		return deferAuthority, nil
	}
	return 0, err
}

// bindingCheck returns the check run right before each effect of queued
// work on j: the binding's authority, then the provider credential (set
// into *cred).
func (s *Service) bindingCheck(ctx context.Context, env *owner.OpEnv, j *Job, cred *credential) func() error {
	assert := bindingAssert(ctx, env, j)
	return func() error {
		if err := assert(); err != nil {
			return err
		}
		c, err := s.providerAuthority(env, j)
		*cred = c
		return err
	}
}

// Cancel asks the provider to cancel job id once its cancel-request is
// recorded and no request was accepted since. It answers how long to wait
// before running again (0 and nil: done); an error is retried with
// backoff — asking again is harmless, so even a request whose outcome is
// unknown is repeated. Confirmation is a poll's business.
func (w Worker) Cancel(ctx context.Context, env *owner.OpEnv, id string) (time.Duration, error) {
	s := w.s
	j, unlock, err := s.queuedJob(ctx, env, id)
	if j == nil {
		return 0, err
	}
	defer unlock()
	if j.State != StateCancelRequested || j.Handle == "" || j.CancelSentAt >= j.CancelRequestedAt {
		return 0, nil
	}
	var cred credential
	if err := s.assertWithRefresh(ctx, s.bindingCheck(ctx, env, j, &cred)); err != nil {
		return w.queuedOutcome(err)
	}
	if cerr := s.client(j, cred).Cancel(ctx, j.Handle); cerr != nil {
		ge := google.AsError(cerr)
		switch {
		case ge != nil && ge.Auth:
			return deferAuthority, nil
		case ge != nil && !ge.Temporary && ge.HTTPStatus >= 400 && ge.HTTPStatus < 500:
			// A definitive answer (the interaction already ended, or is
			// unknown): asking again would get the same; polls tell the rest.
			return 0, nil
		}
		return 0, classifyPollErr(j, cerr)
	}
	s.markCancelSent(context.WithoutCancel(ctx), env, j)
	return 0, nil
}

// Publish publishes job id after a queued poll saw it end: it reads the
// interaction again (an idempotent GET; the report is never kept in the
// database) and applies it, which publishes the files and records the
// terminal state, under the binding's authority checked right before the
// request and before publication. It answers as Cancel does.
func (w Worker) Publish(ctx context.Context, env *owner.OpEnv, id string) (time.Duration, error) {
	s := w.s
	j, unlock, err := s.queuedJob(ctx, env, id)
	if j == nil {
		return 0, err
	}
	defer unlock()
	if !PublishPending(j) {
		return 0, nil
	}
	var cred credential
	check := s.bindingCheck(ctx, env, j, &cred)
	if err := s.assertWithRefresh(ctx, check); err != nil {
		return w.queuedOutcome(err)
	}
	it, err := s.client(j, cred).Get(ctx, j.Handle)
	if err != nil {
		out := classifyPollErr(j, err)
		if out.RetryAfterMs > 0 {
			return time.Duration(out.RetryAfterMs) * time.Millisecond, nil
		}
		return w.queuedOutcome(out)
	}
	if _, err := s.apply(ctx, env, j, it, cred, check); err != nil {
		return w.queuedOutcome(err)
	}
	return 0, nil
}

// queuedJob locks and reads job id for a queued job's worker. A job that
// no longer exists (nil, nil) needs nothing more: the queued job ends.
func (s *Service) queuedJob(ctx context.Context, env *owner.OpEnv, id string) (*Job, func(), error) {
	unlock := s.lockJob(id)
	j, err := jobsOf(env).get(ctx, id)
	if err != nil {
		unlock()
		if errs.CodeOf(err) == CodeJobNotFound {
			return nil, nil, nil
		}
		return nil, nil, err
	}
	return j, unlock, nil
}
