// Gateway streams: a gateway follows the interaction stream of the jobs
// it owns — the ones its own scheduler polls (the poller on SQLite, river's
// poll jobs on PostgreSQL) — as a routed wait does. While a job's stream is
// live its polls only back it up (Budgets.StreamBackstop); the stream's
// report of the end makes the gateway poll at once, and usage the stream
// reports is recorded on the job between polls (the token budget and the
// gateway's usage metrics see it). Polling stays the authority on the
// terminal state, and custody is unchanged: a stream is opened only after
// the job's binding was checked, with the job's own credential, and the
// check is made again before every reopening (docs/research.md, "Live
// progress").

package research

import (
	"context"
	"sync"
	"time"

	"github.com/clawkit/clawkit/pkg/owner"
	"github.com/clawkit/clawkit/pkg/research/google"
)

// MaxGatewayStreams bounds the streams one gateway follows at once: past
// it, jobs are polled alone, as before (each stream is one open
// connection to the provider for as long as the job runs).
const MaxGatewayStreams = 64

// streamKeeper is one gateway's set of followed streams. It lives for
// the gateway's background work (RunGateway) and is closed with it: every
// stream ends and is waited for before RunGateway returns.
type streamKeeper struct {
	s      *Service
	env    *owner.OpEnv
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	max    int

	mu   sync.Mutex
	jobs map[string]*keptStream // job id → its stream, followed by this gateway
	// off are jobs whose stream the provider does not serve (or that
	// broke too often): they are polled alone until they end.
	off map[string]struct{}
}

// keptStream is one job followed by the gateway.
type keptStream struct {
	stop context.CancelFunc
	// polled is when this gateway last polled the job: a job no longer
	// polled here (another gateway took it over, or its authority was
	// refused and its polls deferred) is no longer this gateway's to
	// follow (release).
	polled time.Time
	// usageAt is when the stream's usage was last recorded on the job:
	// recorded at most once per fast poll interval (a poll records it
	// anyway), unless it passes the job's token budget.
	usageAt   time.Time
	maxTokens int64
}

// startKeeper installs the gateway's stream keeper until ctx ends.
func (s *Service) startKeeper(ctx context.Context, env *owner.OpEnv, limit int) *streamKeeper {
	kctx, cancel := context.WithCancel(ctx)
	k := &streamKeeper{s: s, env: env, ctx: kctx, cancel: cancel, max: limit, jobs: map[string]*keptStream{}, off: map[string]struct{}{}}
	s.keeperMu.Lock()
	s.keeper = k
	s.keeperMu.Unlock()
	k.wg.Add(1)
	go k.releaseLoop()
	return k
}

// close ends every stream of the keeper and waits for them: a draining
// gateway leaves no stream open behind it.
func (k *streamKeeper) close() {
	k.s.keeperMu.Lock()
	if k.s.keeper == k {
		k.s.keeper = nil
	}
	k.s.keeperMu.Unlock()
	k.cancel()
	k.wg.Wait()
}

// gatewayKeeper is the running gateway's stream keeper (nil offline).
func (s *Service) gatewayKeeper() *streamKeeper {
	s.keeperMu.Lock()
	defer s.keeperMu.Unlock()
	return s.keeper
}

// polled is what a gateway scheduler reports after it polled j: a job
// still running is followed (when a stream is free), one that ended is
// let go.
func (s *Service) polled(j *Job) {
	k := s.gatewayKeeper()
	if k == nil || j == nil {
		return
	}
	if !Pollable(j.State) || j.Handle == "" || google.Terminal(j.ProviderStatus) {
		k.release(j.ID, true)
		return
	}
	k.adopt(j)
}

// adopt follows j's stream unless it is followed already, its stream was
// given up, or the keeper is full.
func (k *streamKeeper) adopt(j *Job) {
	now := k.env.Now()
	k.mu.Lock()
	if ks := k.jobs[j.ID]; ks != nil {
		ks.polled = now
		k.mu.Unlock()
		return
	}
	if _, off := k.off[j.ID]; off || len(k.jobs) >= k.max || k.ctx.Err() != nil {
		k.mu.Unlock()
		return
	}
	sctx, stop := context.WithCancel(k.ctx)
	ks := &keptStream{stop: stop, polled: now}
	if j.Options != nil {
		ks.maxTokens = j.Options.MaxTokens
	}
	k.jobs[j.ID] = ks
	k.wg.Add(1)
	k.mu.Unlock()
	go k.run(sctx, j, ks)
}

// release stops following job id; done says the job ended (its
// given-up mark goes too).
func (k *streamKeeper) release(id string, done bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if ks := k.jobs[id]; ks != nil {
		ks.stop()
		delete(k.jobs, id)
	}
	if done {
		delete(k.off, id)
	}
}

// run follows one job's stream until it reports the end (then polls at
// once), is given up, or is released.
func (k *streamKeeper) run(ctx context.Context, j *Job, ks *keptStream) {
	defer k.wg.Done()
	defer func() {
		k.mu.Lock()
		if k.jobs[j.ID] == ks {
			delete(k.jobs, j.ID)
		}
		k.mu.Unlock()
		ks.stop()
	}()
	s, env := k.s, k.env
	assert := bindingAssert(ctx, env, j)
	authorize := func() (credential, error) {
		if err := assert(); err != nil {
			return credential{}, err
		}
		return s.providerAuthority(env, j)
	}
	ls, owned := s.follow(ctx, j, credential{}, nil, streamHooks{
		authorize: authorize,
		event:     func(ev google.StreamEvent) { k.streamUsage(ctx, j, ks, ev) },
	})
	if !owned {
		// A routed wait follows it already: that wait polls at its end.
		return
	}
	select {
	case <-ls.terminal:
		// The poll decides at once; the stream (ending with the
		// interaction) is not waited for first.
		k.pollNow(j.ID)
		ks.stop()
		<-ls.ended
		return
	case <-ls.ended:
	case <-ctx.Done():
		<-ls.ended
		return
	}
	if ls.unauthorized.Load() {
		// Custody refused: the job's polls are deferred for the same
		// reason (deferRefused); its next successful poll follows it
		// again.
		return
	}
	if why, _ := ls.fallback.Load().(string); why != "" && ctx.Err() == nil {
		// Given up (no stream served, broken too often, or no authority
		// now): the job is polled alone. Its next poll was set at the
		// backstop while the stream was live: bring it back to the
		// polling interval.
		k.mu.Lock()
		if len(k.off) < 4*k.max {
			k.off[j.ID] = struct{}{}
		}
		k.mu.Unlock()
		k.pullIn(j.ID)
	}
}

// releaseLoop lets go of jobs this gateway no longer polls: on a shared
// database another gateway's poll took the job over (that gateway follows
// it now), or its polls were deferred for want of authority.
func (k *streamKeeper) releaseLoop() {
	defer k.wg.Done()
	b := k.s.budgets()
	stale := max(3*b.StreamBackstop, 2*time.Second)
	t := time.NewTicker(max(b.StreamBackstop, time.Second))
	defer t.Stop()
	for {
		select {
		case <-k.ctx.Done():
			return
		case <-t.C:
		}
		now := k.env.Now()
		k.mu.Lock()
		for id, ks := range k.jobs {
			if now.Sub(ks.polled) > stale {
				ks.stop()
				delete(k.jobs, id)
			}
		}
		k.mu.Unlock()
	}
}

// pollNow polls job id at once under its own binding, as the gateway's
// scheduler would when it is due: the stream reported its end (or its
// usage passed the token budget), and the poll decides.
func (k *streamKeeper) pollNow(id string) {
	s, env := k.s, k.env
	ctx := k.ctx
	if ctx.Err() != nil {
		return
	}
	if sc := s.sharedFor(env); sc != nil {
		// On a shared database the poll stays river's, one at a time per
		// job across gateways: the job is made due and its queued poll
		// woken.
		k.wake(sc, id)
		return
	}
	j, err := jobsOf(env).get(ctx, id)
	if err != nil || !Pollable(j.State) {
		return
	}
	cred, err := credentialFor(j, s.loadAuthView(env))
	if err == nil {
		t0 := time.Now()
		var polled *Job
		polled, err = s.pollOnce(ctx, env, id, cred, bindingAssert(ctx, env, j), false)
		owner.TelemetryFrom(ctx).Poll(time.Since(t0), err)
		if err == nil {
			s.polled(polled)
			return
		}
	}
	s.deferRefused(ctx, env, id, err)
}

// wake makes job id due now and wakes its queued poll (shared database).
// A job whose end is already recorded (its publication queued) is left
// alone.
func (k *streamKeeper) wake(sc SharedScheduler, id string) {
	env := k.env
	js := jobsOf(env)
	j, err := js.get(k.ctx, id)
	if err != nil || !Pollable(j.State) || PublishPending(j) {
		return
	}
	// Only next_poll_at moves: a poll another gateway has in flight still
	// records what it saw (its row version is unchanged).
	if _, err := js.pollSoon(k.ctx, id, ms(env.Now())); err != nil {
		return
	}
	_ = sc.Wake(k.ctx, env, id) // best effort: the poll comes at the backstop anyway
}

// pullIn brings job id's next poll back to the polling interval (it was
// put at the backstop while its stream was live).
func (k *streamKeeper) pullIn(id string) {
	s, env := k.s, k.env
	js := jobsOf(env)
	j, err := js.get(k.ctx, id)
	if err != nil || !Pollable(j.State) {
		return
	}
	now := env.Now()
	// Only next_poll_at moves (pollSoon): a poll in flight still records
	// what it saw.
	if moved, err := js.pollSoon(k.ctx, id, ms(now.Add(s.interval(now, j.SubmittedAt, 0)))); err == nil && moved {
		if sc := s.sharedFor(env); sc != nil {
			// Its queued poll was snoozed to the old time: woken, it
			// snoozes to the new one.
			_ = sc.Wake(k.ctx, env, id) // best effort: the old time still comes
		}
	}
}

// streamUsage records the usage a stream event reports on the job (at
// most once per fast poll interval, and at once when it passes the job's
// token budget, which then is polled at once: the poll decides the
// cancellation, with the provider's usage as polled).
func (k *streamKeeper) streamUsage(ctx context.Context, j *Job, ks *keptStream, ev google.StreamEvent) {
	if ev.Usage == nil || ev.Type == google.EventCompleted || (ev.Type == google.EventStatusUpdate && google.Terminal(ev.Status)) {
		// The end's usage is the poll's to record: the end polls at once.
		return
	}
	now := k.env.Now()
	over := ks.maxTokens > 0 && ev.Usage.Tokens() > ks.maxTokens
	if !over && now.Sub(ks.usageAt) < k.s.budgets().FastInterval {
		return
	}
	ks.usageAt = now
	s, env := k.s, k.env
	unlock := s.lockJob(j.ID)
	js := jobsOf(env)
	cur, err := js.get(ctx, j.ID)
	if err != nil || !Pollable(cur.State) || cur.Handle != j.Handle || env.Fence.AssertCurrent() != nil {
		unlock()
		return
	}
	if old, known := cur.TurnUsage[cur.Handle]; known && ev.Usage.Tokens() <= old.Tokens() {
		unlock()
		return // nothing new: no write
	}
	if cur.recordParsedUsage(ctx, cur.Handle, *ev.Usage) {
		// Only the usage is written: a poll in flight (here or on another
		// gateway) still records what it saw.
		_ = js.recordUsage(context.WithoutCancel(ctx), cur) // best effort: the next poll records usage too
	}
	over = cur.State == StateRunning && cur.overTokenBudget()
	unlock()
	if over {
		k.pollNow(j.ID)
	}
}
