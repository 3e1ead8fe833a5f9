package research

import (
	"context"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/clawkit/clawkit/pkg/owner"
	"github.com/clawkit/clawkit/pkg/research/google"
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
	// StreamBackstop is the poll interval of a job whose stream is live:
	// the stream says when the job ends, polls only confirm it.
	StreamBackstop time.Duration
	// FileProcessingWait bounds the wait for an uploaded file the
	// provider is still processing (uploads.go).
	FileProcessingWait time.Duration
}

// DefaultBudgets are docs/research.md's.
var DefaultBudgets = Budgets{
	WallClock:      65 * time.Minute,
	MaxPolls:       400,
	FastInterval:   5 * time.Second,
	FastPeriod:     2 * time.Minute,
	SlowInterval:   15 * time.Second,
	Jitter:         0.2,
	RequestTimeout: 30 * time.Second,
	StreamBackstop: time.Minute,
	// Documents are usually ACTIVE at once; a large one may take minutes.
	FileProcessingWait: 10 * time.Minute,
	MaxCitations:       DefaultCitationMax,
	RefreshRetries:     5,
	MaxRefreshWait:     30 * time.Second,
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
	// Shared, when set, schedules the background work of jobs on a shared
	// database (river, on PostgreSQL) instead of the gateway's own poller.
	// The registry wires it explicitly (pkg/ops).
	Shared SharedScheduler

	locksMu sync.Mutex
	locks   map[string]*jobLock // job id → its lock while anyone holds or waits for it: one poll of a job at a time
	pending sync.Map            // job id → chan struct{} (closed when done): creates in flight in this process
	streams sync.Map            // job id → *liveStream: interaction streams followed in this process (stream.go)
	// keeper is the running gateway's own streams (gatewaystreams.go),
	// set by RunGateway for its life.
	keeperMu sync.Mutex
	keeper   *streamKeeper

	authMu   sync.Mutex
	authHome string
	authKey  string
	authView *authView
}

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
		d.WallClock, d.FastInterval, d.FastPeriod, d.SlowInterval, d.MaxRefreshWait, d.StreamBackstop, d.FileProcessingWait =
			scale(d.WallClock), scale(d.FastInterval), scale(d.FastPeriod), scale(d.SlowInterval), scale(d.MaxRefreshWait), scale(d.StreamBackstop), scale(d.FileProcessingWait)
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
	b.StreamBackstop = positiveOr(b.StreamBackstop, d.StreamBackstop)
	b.FileProcessingWait = positiveOr(b.FileProcessingWait, d.FileProcessingWait)
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

// callEnv is the environment a call's reads see: the injected one in
// tests, else the caller's (owner.OpEnv.Getenv: in a gateway, the variables
// the operation declares come from the call).
func (s *Service) callEnv(env *owner.OpEnv) func(string) string {
	if s.Getenv != nil || env == nil {
		return s.getenv
	}
	return env.Getenv
}

// sleepOrPoke sleeps as sleep does, or until poke is closed (poked).
func (s *Service) sleepOrPoke(ctx context.Context, d time.Duration, poke <-chan struct{}) (poked bool, err error) {
	if poke == nil || s.Sleep != nil {
		return false, s.sleep(ctx, d)
	}
	select {
	case <-poke:
		return true, ctx.Err()
	default:
	}
	if d <= 0 {
		return false, ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false, ctx.Err()
	case <-poke:
		return true, nil
	case <-t.C:
		return false, nil
	}
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

// jobLock is one job's lock and how many callers hold or wait for it.
type jobLock struct {
	mu   sync.Mutex
	refs int
}

// lockJob takes job id's lock and returns its release. The lock leaves
// the map with its last holder, so a long-lived gateway keeps no lock per
// job it ever polled.
func (s *Service) lockJob(id string) func() {
	s.locksMu.Lock()
	if s.locks == nil {
		s.locks = map[string]*jobLock{}
	}
	l := s.locks[id]
	if l == nil {
		l = &jobLock{}
		s.locks[id] = l
	}
	l.refs++
	s.locksMu.Unlock()
	l.mu.Lock()
	return func() {
		l.mu.Unlock()
		s.locksMu.Lock()
		if l.refs--; l.refs == 0 {
			delete(s.locks, id)
		}
		s.locksMu.Unlock()
	}
}

func (s *Service) client(j *Job, cred credential) *google.Client {
	h := s.HTTP
	if h == nil {
		h = defaultHTTP()
	}
	return &google.Client{BaseURL: j.BaseURL, APIKey: cred.secret, Agent: j.Agent, Timeout: s.budgets().RequestTimeout, HTTP: h}
}
