// Package riversched schedules research jobs' background work with
// riverqueue/river when several gateways share one PostgreSQL database
// (docs/scale-out.md, docs/research.md "Scheduling").
//
// Three river job kinds, each unique by its arguments (the research job):
//   - clawkit_research_poll polls the job once when due, then snoozes
//     itself to the job's next due time (next_poll_at already honours
//     Retry-After and the backoff), and completes when the job needs no
//     more polls. It is inserted in the transaction that records the
//     create's receipt.
//   - clawkit_research_cancel asks the provider to cancel; it is inserted
//     in the transaction that records the cancel-request (a poll over the
//     job's budget, or `research cancel`, which asks at once itself and
//     leaves the queued job as the backstop, due later).
//   - clawkit_research_publish reads the finished interaction again and
//     publishes it; it is inserted in the transaction that records the
//     terminal status a poll saw.
//
// Cancel and publish are idempotent (a request already accepted or a
// publication already recorded is not repeated), so their errors are
// retried with river's backoff, as a poll's GET is. River locks
// a job to one gateway while it runs; a gateway that dies mid-poll leaves
// a running river job that the others rescue. The provider create is never
// a river job: the first poll is inserted in the transaction that records
// the create's receipt (InsertTx), and a retried queue job only ever GETs.
//
// Each gateway also sweeps, every few seconds: running research jobs
// without a live river job are adopted (jobs started before river was
// installed); running river jobs of a gateway whose owner lease expired
// are made available at once instead of after river's own rescue delay;
// submitting jobs whose creator's lease is gone, past the create's
// request timeout, become indeterminate (never resubmitted).
package riversched

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverdatabasesql"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"

	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/owner"
	"github.com/clawkit/clawkit/pkg/research"
	"github.com/clawkit/clawkit/pkg/store"
)

// Queue is the river queue of research work.
const Queue = "clawkit_research"

// Kinds of the research work's river jobs.
const (
	Kind        = "clawkit_research_poll"
	CancelKind  = "clawkit_research_cancel"
	PublishKind = "clawkit_research_publish"
)

// kinds are all of them (the sweep's rescue covers each).
var kinds = []string{Kind, CancelKind, PublishKind}

// MaxWorkers is how many polls one gateway runs at once: as many as the
// SQLite engine's poller (research.PollerConcurrency), so that moving to
// PostgreSQL never lowers what one gateway does. A poll mostly waits for
// the provider, so this bounds one gateway's rate at about MaxWorkers over
// the provider's latency; river fetches at most MaxWorkers jobs per
// FetchCooldown besides.
const MaxWorkers = research.PollerConcurrency

// SweepEvery is how often each gateway rescues the river jobs of dead
// gateways and gives up on submitting jobs whose creator is gone.
var SweepEvery = 2 * time.Second

// AdoptEvery is how often each gateway looks for pollable research jobs
// without a live river job (and finished ones without a publish job),
// besides once when it starts. That check reads every running research
// job against river's table, so its cost grows with the number of jobs;
// run by every gateway every SweepEvery it dominated the database at
// 10,000 jobs (its snapshot, held for the whole scan, also kept river's
// dead rows from being pruned, which made every fetch slower), and it is
// a safety net for rare cases: jobs started before river was installed
// (adopted at start) and river jobs discarded after their retries.
var AdoptEvery = 30 * time.Second

// PollArgs names the research job to poll, and the interaction (its
// handle when the poll was queued): river keeps one poll job per
// arguments, finished ones too, so the confirming turn of an approved
// plan (a new interaction of the same job, docs/research.md "Plan
// review") gets its own poll job instead of being taken for the plan
// turn's finished one.
type PollArgs struct {
	Job    string `json:"job"`
	Handle string `json:"handle,omitempty"`
}

// Kind implements river.JobArgs.
func (PollArgs) Kind() string { return Kind }

// CancelArgs names the research job whose provider cancellation is due.
type CancelArgs struct {
	Job string `json:"job"`
}

// Kind implements river.JobArgs.
func (CancelArgs) Kind() string { return CancelKind }

// PublishArgs names the finished research job to publish.
type PublishArgs struct {
	Job string `json:"job"`
}

// Kind implements river.JobArgs.
func (PublishArgs) Kind() string { return PublishKind }

// uniqueStates: one live river job per research job and kind; a finished
// one does not stop a later cancel-request from queueing a new request.
var uniqueStates = []rivertype.JobState{
	rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRunning,
	rivertype.JobStateRetryable, rivertype.JobStateScheduled,
}

// insertOpts makes the poll job available at once: its first run snoozes
// it to the due time. A job inserted "scheduled" would wait for the river
// leader's scheduler pass (every 5 s), far longer than a short first
// interval, and a snooze of up to 5 s keeps it available anyway.
func insertOpts() *river.InsertOpts {
	return &river.InsertOpts{
		Queue: Queue,
		// Errors other than snoozes (database trouble) retry with river's
		// backoff; a poll is an idempotent GET.
		MaxAttempts: 100,
		UniqueOpts:  river.UniqueOpts{ByArgs: true},
	}
}

// workOpts are a cancel's or a publication's: due at `at` (zero: now),
// retried with backoff, one live job per research job.
func workOpts(at time.Time) *river.InsertOpts {
	o := &river.InsertOpts{
		Queue:       Queue,
		MaxAttempts: 25,
		UniqueOpts:  river.UniqueOpts{ByArgs: true, ByState: uniqueStates},
	}
	if !at.IsZero() {
		o.ScheduledAt = at
	}
	return o
}

// Scheduler implements research.SharedScheduler.
type Scheduler struct {
	mu        sync.Mutex
	inserters map[*sql.DB]*river.Client[*sql.Tx]
}

// New returns a scheduler for PostgreSQL stores.
func New() *Scheduler { return &Scheduler{inserters: map[*sql.DB]*river.Client[*sql.Tx]{}} }

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// Serves implements research.SharedScheduler.
func (s *Scheduler) Serves(env *owner.OpEnv) bool { return store.IsPostgres(env.Store.Engine()) }

// inserter is an insert-only river client on the store's database/sql
// pool, so the poll job joins the research code's own transaction (also
// offline, where no river worker runs).
func (s *Scheduler) inserter(db *sql.DB) (*river.Client[*sql.Tx], error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.inserters[db]; ok {
		return c, nil
	}
	c, err := river.NewClient(riverdatabasesql.New(db), &river.Config{Schema: store.RiverSchema, Logger: quietLogger()})
	if err != nil {
		return nil, err
	}
	s.inserters[db] = c
	return c, nil
}

// EnqueuePollTx implements research.SharedScheduler.
func (s *Scheduler) EnqueuePollTx(ctx context.Context, env *owner.OpEnv, tx *sql.Tx, jobID string, at time.Time) error {
	c, err := s.inserter(env.Store.DB())
	if err != nil {
		return err
	}
	// The handle as the transaction sees it: the receipt it records.
	var handle sql.NullString
	if err := tx.QueryRowContext(ctx, `SELECT handle FROM research_jobs WHERE job_id = $1`, jobID).Scan(&handle); err != nil {
		return fmt.Errorf("schedule the first poll: %w", err)
	}
	_, err = c.InsertTx(ctx, tx, PollArgs{Job: jobID, Handle: handle.String}, insertOpts())
	if err != nil {
		return fmt.Errorf("schedule the first poll: %w", err)
	}
	return nil
}

// EnqueueCancelTx implements research.SharedScheduler.
func (s *Scheduler) EnqueueCancelTx(ctx context.Context, env *owner.OpEnv, tx *sql.Tx, jobID string, at time.Time) error {
	c, err := s.inserter(env.Store.DB())
	if err != nil {
		return err
	}
	if !at.After(time.Now()) {
		at = time.Time{}
	}
	if _, err = c.InsertTx(ctx, tx, CancelArgs{Job: jobID}, workOpts(at)); err != nil {
		return fmt.Errorf("schedule the cancellation: %w", err)
	}
	return nil
}

// EnqueuePublishTx implements research.SharedScheduler.
func (s *Scheduler) EnqueuePublishTx(ctx context.Context, env *owner.OpEnv, tx *sql.Tx, jobID string) error {
	c, err := s.inserter(env.Store.DB())
	if err != nil {
		return err
	}
	if _, err = c.InsertTx(ctx, tx, PublishArgs{Job: jobID}, workOpts(time.Time{})); err != nil {
		return fmt.Errorf("schedule the publication: %w", err)
	}
	return nil
}

const pgNowMs = `(extract(epoch FROM clock_timestamp()) * 1000)::bigint`

// CreatorGone implements research.SharedScheduler.
func (s *Scheduler) CreatorGone(ctx context.Context, env *owner.OpEnv, jobID string, requestTimeout time.Duration) bool {
	var gone bool
	// updated_at: when the job became submitting (its insert, or an
	// approve sending a plan's confirming turn).
	err := env.Store.DB().QueryRowContext(ctx, `SELECT r.updated_at < $2 AND NOT EXISTS (
  SELECT 1 FROM owners o WHERE o.incarnation = r.owner_incarnation AND o.stopped_at IS NULL AND o.lease_expires_at > `+pgNowMs+`)
FROM research_jobs r WHERE r.job_id = $1`, jobID, env.Now().Add(-requestTimeout).UnixMilli()).Scan(&gone)
	return err == nil && gone
}

// Wake implements research.SharedScheduler: the job's poll, snoozed to
// its next due time, is made available now (as the sweep makes a dead
// gateway's available); its run polls the job if it is due, else snoozes
// again. A poll that has just run may still show as running (river
// records its snooze a moment later, in a batch): the wake waits for that
// record, a bounded while, so the snooze cannot overwrite it.
func (s *Scheduler) Wake(ctx context.Context, env *owner.OpEnv, jobID string) error {
	db := env.Store.DB()
	for range wakeTries {
		var woken, running int
		err := db.QueryRowContext(ctx, `WITH w AS (UPDATE `+store.RiverSchema+`.river_job SET state = 'available', scheduled_at = now()
  WHERE kind = $1 AND args->>'job' = $2 AND state IN ('scheduled','retryable') RETURNING 1)
SELECT (SELECT count(*) FROM w), (SELECT count(*) FROM `+store.RiverSchema+`.river_job WHERE kind = $1 AND args->>'job' = $2 AND state = 'running')`,
			Kind, jobID).Scan(&woken, &running)
		if err != nil || woken > 0 || running == 0 {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wakePause):
		}
	}
	return nil
}

// A wake waits at most wakeTries × wakePause for a poll that just ran to
// be recorded (its own run, once recorded, is at the backstop anyway).
const (
	wakeTries = 50
	wakePause = 50 * time.Millisecond
)

// ClientID names a gateway's river client after its owner lease, so the
// sweep can tell which running river jobs belong to a dead gateway.
func ClientID(incarnation int64) string { return fmt.Sprintf("clawkit-owner-%d", incarnation) }

// PollStallAfter is how long a queued poll may wait for the provider
// before this gateway takes the provider for unreachable from here: the
// poll is given up (its job released at once for another gateway) and the
// gateway stops claiming work until a probe gets through. A silent
// partition makes every request wait its full request timeout (30 s);
// without this, a gateway cut off from the provider but not from the
// database would keep taking jobs and sit on each of them that long
// while healthy gateways idle (docs/scale-out.md, "Partitions").
var PollStallAfter = 5 * time.Second

// Provider back-off while this gateway cannot reach the provider: the
// first probe after ProbeFirst, doubling up to ProbeMax.
var (
	ProbeFirst = 2 * time.Second
	ProbeMax   = 30 * time.Second
)

// health is what the poll workers report about the provider: a poll that
// could not reach it (or stalled) and a poll that got an answer.
type health struct {
	failed chan struct{}
	ok     chan struct{}
}

func newHealth() *health {
	return &health{failed: make(chan struct{}, 1), ok: make(chan struct{}, 1)}
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

func (h *health) drain() {
	for _, c := range []chan struct{}{h.failed, h.ok} {
		select {
		case <-c:
		default:
		}
	}
}

// Run implements research.SharedScheduler: it works research jobs until
// ctx ends (the gateway retires).
//
// The river client runs with MaxWorkers while the provider answers. Once
// a poll cannot reach the provider, the client is stopped (its running
// polls cancelled and released at once), so this gateway claims nothing
// while the others, which may still reach the provider, take the jobs
// over; after a back-off a client with one worker probes, and one poll
// that reaches the provider brings the full client back.
func (s *Scheduler) Run(ctx context.Context, env *owner.OpEnv, w research.Worker) {
	pg := env.Store.Engine().(*store.Postgres)
	// The gateway's logger (its handler, format and redaction) when it
	// gave one; river's own lines go through it too, from warn up.
	logger := owner.LoggerFrom(ctx)
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	if rv, err := store.RiverVersion(ctx, env.Store); err != nil || rv == nil {
		logger.Error("river's tables are missing: run 'clawkit state migrate'; research jobs are not polled by this gateway")
		return
	}
	if t, err := store.RiverUnfenced(ctx, env.Store); err == nil && len(t) > 0 {
		logger.Error("river's tables lack the owner-lease trigger (a database migrated by an older clawkit): run 'clawkit state migrate' once no gateway runs", "tables", t)
	}
	sweepDone := make(chan struct{})
	go func() { defer close(sweepDone); s.sweepLoop(ctx, env, w) }()
	defer func() { <-sweepDone }()

	h := newHealth()
	backoff := time.Duration(0)
	for ctx.Err() == nil {
		probe := backoff > 0
		if probe {
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
		}
		h.drain()
		client, err := s.newClient(pg, env, w, h, probe, logger)
		if err == nil {
			err = client.Start(ctx)
		}
		if err != nil {
			logger.Error("cannot start river", "err", err)
			return
		}
		var okc <-chan struct{}
		if probe {
			okc = h.ok
		}
		select {
		case <-ctx.Done():
		case <-h.failed:
			if backoff == 0 {
				backoff = ProbeFirst
				logger.Warn("the provider does not answer from this gateway: it stops claiming research jobs and probes", "probeIn", backoff)
			} else {
				backoff = min(2*backoff, ProbeMax)
			}
		case <-okc:
			logger.Warn("the provider answers again: this gateway claims research jobs again")
			backoff = 0
		}
		stopClient(client)
	}
}

// riverLogger is river's view of the gateway's logger: river logs each
// job's routine events at info, so only its warnings and errors pass.
func riverLogger(l *slog.Logger) *slog.Logger {
	return slog.New(minLevel{h: l.With("component", "river").Handler(), min: slog.LevelWarn})
}

// minLevel drops records below min.
type minLevel struct {
	h   slog.Handler
	min slog.Level
}

func (m minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= m.min && m.h.Enabled(ctx, l)
}
func (m minLevel) Handle(ctx context.Context, r slog.Record) error { return m.h.Handle(ctx, r) }
func (m minLevel) WithAttrs(as []slog.Attr) slog.Handler {
	return minLevel{h: m.h.WithAttrs(as), min: m.min}
}
func (m minLevel) WithGroup(n string) slog.Handler { return minLevel{h: m.h.WithGroup(n), min: m.min} }

// stopClient stops a river client: running jobs get a moment to finish,
// then are cancelled (a cancelled poll releases its job at once).
func stopClient(c *river.Client[pgx.Tx]) {
	stopCtx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := c.Stop(stopCtx); err != nil {
		cctx, ccancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer ccancel()
		_ = c.StopAndCancel(cctx)
	}
}

func (s *Scheduler) newClient(pg *store.Postgres, env *owner.OpEnv, w research.Worker, h *health, probe bool, logger *slog.Logger) (*river.Client[pgx.Tx], error) {
	workers := river.NewWorkers()
	river.AddWorker(workers, &pollWorker{env: env, w: w, h: h})
	river.AddWorker(workers, &cancelWorker{env: env, w: w})
	river.AddWorker(workers, &publishWorker{env: env, w: w})
	n := MaxWorkers
	if probe {
		n = 1
	}
	timeout := 2*w.RequestTimeout() + 5*time.Second
	return river.NewClient(riverpgxv5.New(pg.Pool()), &river.Config{
		ID:                   ClientID(pg.Incarnation()),
		Schema:               store.RiverSchema,
		Queues:               map[string]river.QueueConfig{Queue: {MaxWorkers: n}},
		Workers:              workers,
		JobTimeout:           timeout,
		RescueStuckJobsAfter: timeout + 10*time.Second,
		FetchCooldown:        20 * time.Millisecond,
		FetchPollInterval:    250 * time.Millisecond,
		Logger:               riverLogger(logger),
	})
}

func (s *Scheduler) sweepLoop(ctx context.Context, env *owner.OpEnv, w research.Worker) {
	t := time.NewTicker(SweepEvery)
	defer t.Stop()
	// The cadence runs on the process clock, like the ticker and river
	// itself, not on env.Now: that clock is the research jobs' (scaled in
	// tests and benchmarks), and scaling this sweep with it would only
	// make it costlier.
	var adopted time.Time
	for {
		if env.Fence.AssertCurrent() == nil {
			adopt := adopted.IsZero() || time.Since(adopted) >= AdoptEvery
			// A full batch adopted may have left more: the next sweep
			// adopts again.
			if more := s.sweep(ctx, env, w, adopt); adopt && !more {
				adopted = time.Now()
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// sweep rescues and recovers; with adopt it also adopts (AdoptEvery), and
// answers whether more jobs may be left to adopt.
func (s *Scheduler) sweep(ctx context.Context, env *owner.OpEnv, w research.Worker, adopt bool) (more bool) {
	db := env.Store.DB()
	// Due snoozed or retried research jobs: available now. River promotes
	// them only in its leader's scheduler pass (every 5 s), and a leader
	// cut off from the database keeps that role until its 15 s TTL runs
	// out: every poll snoozed past 5 s would wait that long too, beyond
	// the bound of two intervals plus the lease (docs/scale-out.md, "What
	// happens when a gateway dies"). Any gateway does it here, within a
	// sweep interval; river's own pass finds nothing left to do.
	_, _ = db.ExecContext(ctx, `UPDATE `+store.RiverSchema+`.river_job SET state = 'available'
WHERE state IN ('scheduled','retryable') AND queue = $1 AND scheduled_at <= now() AND kind = ANY($2)`, Queue, kinds)
	// Running river jobs of gateways whose lease expired: available now.
	_, _ = db.ExecContext(ctx, `UPDATE `+store.RiverSchema+`.river_job SET state = 'available', scheduled_at = now()
WHERE state = 'running' AND kind = ANY($1) AND attempted_by[array_upper(attempted_by, 1)] IN (
  SELECT 'clawkit-owner-' || incarnation FROM owners WHERE (stopped_at IS NULL AND lease_expires_at > 0 AND lease_expires_at <= `+pgNowMs+`)
    OR stopped_at IS NOT NULL)`, kinds)
	// Backends of owners whose lease is gone: terminated, so whatever the
	// expired owner still has queued on them (a partition healing) is
	// never read, and the server does not keep them for its keepalive
	// time (docs/scale-out.md, "Partitions").
	_, _ = db.ExecContext(ctx, `SELECT pg_terminate_backend(a.pid) FROM pg_stat_activity a JOIN owners o
  ON o.incarnation = CASE WHEN a.application_name ~ '^clawkit-owner-[0-9]{1,18}$' THEN substr(a.application_name, 15)::bigint END
WHERE a.datname = current_database() AND a.pid <> pg_backend_pid()
  AND (o.stopped_at IS NOT NULL OR o.lease_expires_at <= `+pgNowMs+`)`)
	if adopt {
		more = s.adopt(ctx, env)
	}
	// Submitting jobs whose creator is gone: indeterminate.
	abandoned := jobIDs(ctx, db, `SELECT r.job_id FROM research_jobs r WHERE r.state = 'submitting' AND r.created_at < $1
AND NOT EXISTS (SELECT 1 FROM owners o WHERE o.incarnation = r.owner_incarnation AND o.stopped_at IS NULL AND o.lease_expires_at > `+pgNowMs+`)
LIMIT 1000`, env.Now().Add(-w.RequestTimeout()).UnixMilli())
	for _, id := range abandoned {
		_ = w.AbandonSubmitting(ctx, env, id)
	}
	return more
}

// adopt queues the river jobs that pollable research jobs lack, a batch
// of each kind at most; it answers whether a batch was full.
func (s *Scheduler) adopt(ctx context.Context, env *owner.OpEnv) (full bool) {
	db := env.Store.DB()
	// Finished research jobs whose publication is not queued (its river
	// job was discarded after its retries): queue it again.
	full = s.adoptPublications(ctx, env)
	// Pollable research jobs without a live river job: adopt them.
	rows, err := db.QueryContext(ctx, `SELECT r.job_id, r.next_poll_at FROM research_jobs r
WHERE r.state IN ('running','cancel-requested') AND r.provider_status NOT IN (`+terminalStatuses+`) AND NOT EXISTS (
  SELECT 1 FROM `+store.RiverSchema+`.river_job k WHERE k.kind = $1 AND k.args->>'job' = r.job_id
    AND k.state IN ('available','pending','running','retryable','scheduled'))
LIMIT $2`, Kind, adoptBatch)
	if err == nil {
		type due struct {
			id string
			at int64
		}
		var adopt []due
		for rows.Next() {
			var d due
			if rows.Scan(&d.id, &d.at) == nil {
				adopt = append(adopt, d)
			}
		}
		_ = rows.Close() // best effort, like the whole sweep: the next one adopts what this one missed
		for _, d := range adopt {
			_ = inTx(ctx, db, func(tx *sql.Tx) error { return s.EnqueuePollTx(ctx, env, tx, d.id, time.UnixMilli(d.at)) })
		}
		full = full || len(adopt) == adoptBatch
	}
	return full
}

// adoptBatch bounds each adoption query.
const adoptBatch = 1000

// jobIDs runs a sweep's query of job ids. A failed query is an empty
// sweep: the next sweep asks again.
func jobIDs(ctx context.Context, db *sql.DB, q string, args ...any) []string {
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil
	}
	defer func() { _ = rows.Close() }() // query rows: Err reports their errors
	var ids []string
	for rows.Next() {
		var id string
		if rows.Scan(&id) == nil {
			ids = append(ids, id)
		}
	}
	return ids
}

type pollWorker struct {
	river.WorkerDefaults[PollArgs]
	env *owner.OpEnv
	w   research.Worker
	h   *health
}

// Work polls once if due and snoozes to the next due time. A poll that
// cannot reach the provider (or waits for it past PollStallAfter) is
// given up and its job released at once, for a gateway that can reach it.
func (p *pollWorker) Work(ctx context.Context, job *river.Job[PollArgs]) error {
	due := !job.ScheduledAt.After(time.Now())
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var stalled atomic.Bool
	t := time.AfterFunc(PollStallAfter, func() { stalled.Store(true); cancel() })
	t0 := time.Now()
	next, pollable, err := p.w.Poll(pctx, p.env, job.Args.Job)
	t.Stop()
	// Poll latency for the gateway's metrics, and the poll at debug.
	owner.TelemetryFrom(ctx).Poll(time.Since(t0), err)
	if l := owner.LoggerFrom(ctx); l != nil {
		args := []any{"job", job.Args.Job, "duration_ms", time.Since(t0).Milliseconds()}
		if err != nil {
			args = append(args, "error.code", errs.CodeOf(err), "error", err.Error())
		}
		l.Debug("research poll", args...)
	}
	switch {
	case stalled.Load() || providerUnreachable(err) || (err != nil && ctx.Err() != nil):
		if p.h != nil && ctx.Err() == nil {
			signal(p.h.failed)
		}
		return river.JobSnooze(0)
	case err == nil && due && p.h != nil:
		signal(p.h.ok)
	}
	if err != nil || !pollable {
		return workResult(0, err)
	}
	return river.JobSnooze(max(time.Until(next), 0))
}

// providerUnreachable: a poll failed without any answer from the provider
// (research.ProviderUnreachable).
func providerUnreachable(err error) bool { return research.ProviderUnreachable(err) }

// terminalStatuses are the provider's final statuses, as SQL literals: a
// pollable job with one of them is waiting for its publication.
const terminalStatuses = `'completed','failed','cancelled','incomplete','budget_exceeded'`

func (s *Scheduler) adoptPublications(ctx context.Context, env *owner.OpEnv) (full bool) {
	db := env.Store.DB()
	ids := jobIDs(ctx, db, `SELECT r.job_id FROM research_jobs r
WHERE r.state IN ('running','cancel-requested') AND r.provider_status IN (`+terminalStatuses+`) AND NOT EXISTS (
  SELECT 1 FROM `+store.RiverSchema+`.river_job k WHERE k.kind = $1 AND k.args->>'job' = r.job_id
    AND k.state IN ('available','pending','running','retryable','scheduled'))
LIMIT $2`, PublishKind, adoptBatch)
	for _, id := range ids {
		_ = inTx(ctx, db, func(tx *sql.Tx) error { return s.EnqueuePublishTx(ctx, env, tx, id) })
	}
	return len(ids) == adoptBatch
}

// inTx runs f in a transaction of its own, committed when f succeeds (a
// sweep's insert goes through river's InsertTx, which needs one). A failed
// sweep step is left for the next sweep.
func inTx(ctx context.Context, db *sql.DB, f func(*sql.Tx) error) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := f(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

// workResult turns a queued poll's, cancel's or publication's answer into river's:
// done, snoozed (no authority now; the owner retiring leaves it to another
// gateway at once), or an error retried with backoff.
func workResult(again time.Duration, err error) error {
	if err != nil {
		if errs.CodeOf(err) == owner.CodeOwnerRetired {
			return river.JobSnooze(0)
		}
		return err
	}
	if again > 0 {
		return river.JobSnooze(again)
	}
	return nil
}

type cancelWorker struct {
	river.WorkerDefaults[CancelArgs]
	env *owner.OpEnv
	w   research.Worker
}

// Work asks the provider to cancel, unless that was done already.
func (c *cancelWorker) Work(ctx context.Context, job *river.Job[CancelArgs]) error {
	return workResult(c.w.Cancel(ctx, c.env, job.Args.Job))
}

type publishWorker struct {
	river.WorkerDefaults[PublishArgs]
	env *owner.OpEnv
	w   research.Worker
}

// Work publishes the finished job, unless that was done already.
func (p *publishWorker) Work(ctx context.Context, job *river.Job[PublishArgs]) error {
	return workResult(p.w.Publish(ctx, p.env, job.Args.Job))
}
