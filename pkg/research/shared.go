// Shared scheduling: when several gateways share one database
// (PostgreSQL), background work is scheduled by a SharedScheduler (river,
// in package riversched) instead of this process's poller: polls, the
// provider cancellation a recorded cancel-request calls for, and the
// publication a terminal observation calls for are separate queued jobs,
// each inserted in the transaction of the state change that calls for it.
// This file is the seam: research knows nothing about river.

package research

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/owner"
	"github.com/clawkit/clawkit/pkg/research/google"
)

// SharedScheduler schedules the background work of research jobs on a
// database shared by several gateways.
type SharedScheduler interface {
	// Serves reports whether env's store is one this scheduler serves.
	Serves(env *owner.OpEnv) bool
	// EnqueuePollTx schedules the polling of job (first due at `at`; a
	// scheduler may start it earlier and wait for the due time) inside tx:
	// the transaction that records the job's receipt, so a job is never
	// running without a scheduled poll, nor a poll scheduled for a job
	// whose receipt was not recorded.
	EnqueuePollTx(ctx context.Context, env *owner.OpEnv, tx *sql.Tx, jobID string, at time.Time) error
	// EnqueueCancelTx schedules the provider cancellation of job (due at
	// `at`) inside tx, the transaction that records its cancel-request.
	EnqueueCancelTx(ctx context.Context, env *owner.OpEnv, tx *sql.Tx, jobID string, at time.Time) error
	// EnqueuePublishTx schedules the publication of job inside tx, the
	// transaction that records the provider's terminal status.
	EnqueuePublishTx(ctx context.Context, env *owner.OpEnv, tx *sql.Tx, jobID string) error
	// Run replaces the gateway's recovery and poller for its life.
	Run(ctx context.Context, env *owner.OpEnv, w Worker)
	// CreatorGone reports whether a submitting job's creator can no
	// longer record its receipt (its lease is gone and the create's
	// request timeout has passed): only then may recovery give up on it.
	CreatorGone(ctx context.Context, env *owner.OpEnv, jobID string, requestTimeout time.Duration) bool
	// Wake makes job's queued poll due now (a gateway's stream reported
	// the interaction's end): the poll stays the scheduler's, one at a
	// time per job across gateways. The caller has made the job's
	// next_poll_at due.
	Wake(ctx context.Context, env *owner.OpEnv, jobID string) error
}

// sharedFor is the service's shared scheduler (Service.Shared) when it
// serves env's store, else nil (research's own poller).
func (s *Service) sharedFor(env *owner.OpEnv) SharedScheduler {
	if s.Shared != nil && s.Shared.Serves(env) {
		return s.Shared
	}
	return nil
}

// recordReceipt stores a created job's receipt (running, with its handle),
// and with a shared scheduler its first poll, in one transaction.
func (s *Service) recordReceipt(ctx context.Context, env *owner.OpEnv, js jobStore, j *Job) error {
	sc := s.sharedFor(env)
	if sc == nil {
		return js.update(ctx, j, env.Now())
	}
	tx, err := env.Store.DB().BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }() // after Commit a no-op (sql.ErrTxDone)
	if err := js.updateIn(ctx, tx, j, env.Now()); err != nil {
		return err
	}
	if err := sc.EnqueuePollTx(ctx, env, tx, j.ID, fromMs(j.NextPollAt)); err != nil {
		return err
	}
	return tx.Commit()
}

// updateWith writes j and, with a shared scheduler, the queued job that
// change calls for (enqueue), in one transaction: a state change and the
// work it calls for are recorded together or not at all.
func (s *Service) updateWith(ctx context.Context, env *owner.OpEnv, js jobStore, j *Job, enqueue func(SharedScheduler, *sql.Tx) error) error {
	sc := s.sharedFor(env)
	if sc == nil || enqueue == nil {
		return js.update(ctx, j, env.Now())
	}
	if err := js.beginWrite(); err != nil {
		return err
	}
	tx, err := env.Store.DB().BeginTx(ctx, nil)
	if err != nil {
		return storeErr("update the research job", err)
	}
	defer func() { _ = tx.Rollback() }() // after Commit a no-op (sql.ErrTxDone)
	v := j.RowVersion
	if err := js.updateIn(ctx, tx, j, env.Now()); err != nil {
		return err
	}
	if err := enqueue(sc, tx); err != nil {
		j.RowVersion = v
		return storeErr("schedule the research job's work", err)
	}
	if err := tx.Commit(); err != nil {
		j.RowVersion = v
		return storeErr("update the research job", err)
	}
	return nil
}

// background marks a context as a shared scheduler's worker: its poll
// leaves a cancellation or a publication to their own queued jobs instead
// of doing them inline. A foreground operation (a command's poll, wait or
// cancel, where a caller waits for the outcome and no queue worker may run
// at all, offline) does them inline and records them, so the queued jobs
// it also inserts, as backstops, find nothing left to do.
type backgroundKey struct{}

func asBackground(ctx context.Context) context.Context {
	return context.WithValue(ctx, backgroundKey{}, true)
}

func isBackground(ctx context.Context) bool { return ctx.Value(backgroundKey{}) != nil }

// PublishPending reports whether the provider's terminal status of j was
// observed by a background poll and its publication is queued: the job
// needs no further polls.
func PublishPending(j *Job) bool { return Pollable(j.State) && google.Terminal(j.ProviderStatus) }

// markIndeterminate gives up on a submitting job whose creator is gone:
// the create may have been sent, so it is never resubmitted.
func (s *Service) markIndeterminate(ctx context.Context, env *owner.OpEnv, js jobStore, j *Job) error {
	j.State, j.ErrorCode = StateIndeterminate, "create_outcome_unknown"
	j.ErrorMessage = "the create request of this job may have been sent, but no receipt was recorded (interrupted); it is never resubmitted: inspect the provider account"
	if j.uploading() {
		// Interrupted while uploading its inputs: no create had left.
		j.State, j.ErrorCode = StateNotSent, string(CodeUploadInterrupted)
		j.ErrorMessage = "interrupted while uploading its inputs; the create was never sent"
		j.Options.Uploading = false
	}
	j.FinishedAt = ms(env.Now())
	if err := js.update(ctx, j, env.Now()); err != nil && !errors.Is(err, errStale) {
		return err
	}
	return nil
}

// Worker is what a shared scheduler calls.
type Worker struct{ s *Service }

// RequestTimeout bounds one provider request (a create can take no longer,
// so a submitting job older than this whose creator is gone is stuck).
func (w Worker) RequestTimeout() time.Duration { return w.s.budgets().RequestTimeout }

// Poll polls job id once if it is due, under its own binding's authority,
// and says when it is next due and whether it still needs polling. A job
// whose authority is refused or that failed definitively is looked at
// again later (as the built-in poller does); owner_retired is returned so
// the scheduler leaves the job to another gateway.
func (w Worker) Poll(ctx context.Context, env *owner.OpEnv, id string) (next time.Time, pollable bool, err error) {
	s := w.s
	js := jobsOf(env)
	// One read of the row per poll, under the job's lock (as pollOnce),
	// and the row the poll wrote answers when it is next due: database
	// round trips are most of a queued poll's cost.
	unlock := s.lockJob(id)
	j, sess, err := js.getWithSession(ctx, id)
	if err != nil {
		unlock()
		if errs.CodeOf(err) == CodeJobNotFound {
			return time.Time{}, false, nil
		}
		return time.Time{}, true, err
	}
	if !Pollable(j.State) || PublishPending(j) {
		unlock()
		return time.Time{}, false, nil
	}
	if j.NextPollAt > ms(env.Now()) {
		unlock()
		return fromMs(j.NextPollAt), true, nil
	}
	cred, err := credentialFor(j, s.loadAuthView(env))
	var polled *Job
	if err == nil {
		polled, err = s.pollLocked(asBackground(ctx), env, j, cred, bindingAssertFrom(ctx, env, j, sess, true), true)
	}
	unlock()
	if err == nil {
		s.polled(polled)
		return fromMs(polled.NextPollAt), Pollable(polled.State) && !PublishPending(polled), nil
	}
	if !s.deferRefused(ctx, env, j.ID, err) {
		return time.Time{}, true, err
	}
	if j, err = js.get(ctx, id); err != nil {
		return time.Time{}, true, err
	}
	return fromMs(j.NextPollAt), Pollable(j.State) && !PublishPending(j), nil
}

// AbandonSubmitting makes a submitting job indeterminate (its creator's
// lease is gone); a job that moved on meanwhile is left alone.
func (w Worker) AbandonSubmitting(ctx context.Context, env *owner.OpEnv, id string) error {
	js := jobsOf(env)
	j, err := js.get(ctx, id)
	if err != nil || j.State != StateSubmitting {
		return err
	}
	if err := env.Fence.AssertCurrent(); err != nil {
		return err
	}
	return w.s.markIndeterminate(ctx, env, js, j)
}
