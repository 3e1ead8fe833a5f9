package gateway

import (
	"context"
	"log/slog"
	"net/http"
	"runtime"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/fsx"
	"github.com/clawkit/clawkit/pkg/redact"
	"github.com/clawkit/clawkit/pkg/store"
)

// metrics are one gateway's Prometheus metrics (docs/operations.md lists
// them). Each gateway has a registry of its own: nothing is global.
type metrics struct {
	reg              *prometheus.Registry
	calls            *prometheus.CounterVec
	callSeconds      *prometheus.HistogramVec
	providerRequests *prometheus.CounterVec
	providerSeconds  prometheus.Histogram
	pollSeconds      *prometheus.HistogramVec
	researchTokens   *prometheus.CounterVec
	groundingCalls   prometheus.Counter
	log              *slog.Logger
}

func newMetrics(g *Gateway) *metrics {
	m := &metrics{reg: prometheus.NewRegistry(), log: g.log}
	m.calls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "clawkit_gateway_calls_total",
		Help: "Calls the gateway answered, by operation and outcome (ok, or the error's kind: usage, failed, refused, unknown, unavailable).",
	}, []string{"method", "outcome"})
	m.callSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "clawkit_gateway_call_duration_seconds",
		Help:    "How long the gateway took to answer a call, by operation.",
		Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300},
	}, []string{"method"})
	m.providerRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "clawkit_provider_requests_total",
		Help: "HTTP requests to the research provider, by status class (2xx, 3xx, 4xx, 5xx, or error when no answer came).",
	}, []string{"class"})
	m.providerSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "clawkit_provider_request_duration_seconds",
		Help:    "How long a request to the research provider took.",
		Buckets: []float64{.05, .1, .25, .5, 1, 2.5, 5, 10, 30},
	})
	m.pollSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "clawkit_research_poll_duration_seconds",
		Help:    "How long one background research poll took (river, or the SQLite poller), by outcome (ok or error).",
		Buckets: []float64{.01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
	}, []string{"outcome"})
	m.researchTokens = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "clawkit_research_tokens_total",
		Help: "Tokens the research provider reported for the jobs this gateway polled, by kind (total, input, output, thought, tool_use, cached), counted as each job's reported usage grows.",
	}, []string{"kind"})
	m.groundingCalls = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "clawkit_research_grounding_tool_calls_total",
		Help: "Grounding tool calls (Google Search, Maps, retrieval) the research provider reported for the jobs this gateway polled.",
	})
	build := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "clawkit_build_info",
		Help:        "The running clawkit's version and Go version (always 1).",
		ConstLabels: prometheus.Labels{"version": g.opts.Version, "goversion": runtime.Version()},
	})
	build.Set(1)
	// Every known label value starts at zero, so a rate or an alert on a
	// series works before its first event.
	for _, c := range []string{"2xx", "3xx", "4xx", "5xx", "error"} {
		m.providerRequests.WithLabelValues(c)
	}
	for _, o := range []string{"ok", "error"} {
		m.pollSeconds.WithLabelValues(o)
	}
	for _, k := range []string{"total", "input", "output", "thought", "tool_use", "cached"} {
		m.researchTokens.WithLabelValues(k)
	}
	m.reg.MustRegister(m.calls, m.callSeconds, m.providerRequests, m.providerSeconds, m.pollSeconds, m.researchTokens, m.groundingCalls, build,
		&stateCollector{g: g},
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// telemetry is the gateway's owner.Telemetry: metrics, and provider
// requests at debug in the log.
type telemetry struct{ g *Gateway }

func (t telemetry) ProviderRequest(method, url string, status int, err error, d time.Duration) {
	class := "error"
	if status > 0 {
		class = strconv.Itoa(status/100) + "xx"
	}
	if m := t.g.metrics; m != nil {
		m.providerRequests.WithLabelValues(class).Inc()
		m.providerSeconds.Observe(d.Seconds())
	}
	args := []any{"http_method", method, "url", redact.URL(url), "status", status, KeyDurationMs, d.Milliseconds()}
	if err != nil {
		args = append(args, "error", err.Error())
	}
	t.g.log.Debug("provider request", args...)
}

func (t telemetry) Poll(d time.Duration, err error) {
	outcome := "ok"
	if err != nil {
		outcome = "error"
	}
	if m := t.g.metrics; m != nil {
		m.pollSeconds.WithLabelValues(outcome).Observe(d.Seconds())
	}
}

func (t telemetry) ResearchUsage(tokens map[string]int64, grounding int64) {
	m := t.g.metrics
	if m == nil {
		return
	}
	for k, n := range tokens {
		if n > 0 {
			m.researchTokens.WithLabelValues(k).Add(float64(n))
		}
	}
	if grounding > 0 {
		m.groundingCalls.Add(float64(grounding))
	}
}

// outcomeOf is a call's outcome label: ok, or its error's kind.
func outcomeOf(err error) string {
	if err == nil {
		return "ok"
	}
	switch errs.KindOf(err) {
	case errs.KindUsage:
		return "usage"
	case errs.KindRefused:
		return "refused"
	case errs.KindUnknown:
		return "unknown"
	case errs.KindUnavailable:
		return "unavailable"
	default:
		return "failed"
	}
}

// stateCollector reads what is counted in the database and the lease at
// scrape time: research jobs by state, river jobs per queue, the lease's
// renewals and losses, open database connections, in-flight calls and
// readiness. A database that does not answer (within scrapeTimeout) leaves
// its series out for that scrape; clawkit_database_up says so.
type stateCollector struct{ g *Gateway }

const scrapeTimeout = 2 * time.Second

var (
	descJobs       = prometheus.NewDesc("clawkit_research_jobs", "Research jobs in the database, by state.", []string{"state"}, nil)
	descRiver      = prometheus.NewDesc("clawkit_river_jobs", "River jobs available or running, per queue (PostgreSQL).", []string{"queue", "state"}, nil)
	descRenewals   = prometheus.NewDesc("clawkit_owner_lease_renewals_total", "Successful renewals of this gateway's owner lease (PostgreSQL).", nil, nil)
	descRenewFails = prometheus.NewDesc("clawkit_owner_lease_renewal_failures_total", "Failed renewals of this gateway's owner lease (PostgreSQL).", nil, nil)
	descLosses     = prometheus.NewDesc("clawkit_owner_lease_losses_total", "Owner leases this gateway lost (it then retires and exits 5).", nil, nil)
	descLeaseHeld  = prometheus.NewDesc("clawkit_owner_lease_held", "1 while this gateway holds its owner lease (PostgreSQL), else 0.", nil, nil)
	descOpenConns  = prometheus.NewDesc("clawkit_db_open_connections", "Open database connections, per pool (sql: the store's; river: the scheduler's on PostgreSQL).", []string{"pool"}, nil)
	descDBUp       = prometheus.NewDesc("clawkit_database_up", "1 when the database answered this scrape's queries, else 0.", nil, nil)
	descInFlight   = prometheus.NewDesc("clawkit_gateway_in_flight_calls", "Calls the gateway is answering now.", nil, nil)
	descReady      = prometheus.NewDesc("clawkit_gateway_ready", "1 when /readyz answers 200, else 0.", nil, nil)
)

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descJobs, descRiver, descRenewals, descRenewFails, descLosses, descLeaseHeld, descOpenConns, descDBUp, descInFlight, descReady} {
		ch <- d
	}
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	g := c.g
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	up := 1.0
	if jobs, err := g.jobsByState(ctx); err != nil {
		up = 0
	} else {
		for st, n := range jobs {
			ch <- prometheus.MustNewConstMetric(descJobs, prometheus.GaugeValue, float64(n), st)
		}
	}
	if store.IsPostgres(g.store.Engine()) && up == 1 {
		if rows, err := g.riverJobs(ctx); err != nil {
			up = 0
		} else {
			for _, r := range rows {
				ch <- prometheus.MustNewConstMetric(descRiver, prometheus.GaugeValue, float64(r.n), r.queue, r.state)
			}
		}
	}
	ch <- prometheus.MustNewConstMetric(descDBUp, prometheus.GaugeValue, up)
	if g.lease != nil {
		ls := g.lease.State()
		held, lost := 0.0, 0.0
		if ls.Held {
			held = 1
		}
		if ls.LostReason != "" {
			lost = 1
		}
		ch <- prometheus.MustNewConstMetric(descRenewals, prometheus.CounterValue, float64(ls.Renewals))
		ch <- prometheus.MustNewConstMetric(descRenewFails, prometheus.CounterValue, float64(ls.Failures))
		ch <- prometheus.MustNewConstMetric(descLosses, prometheus.CounterValue, lost)
		ch <- prometheus.MustNewConstMetric(descLeaseHeld, prometheus.GaugeValue, held)
	}
	ch <- prometheus.MustNewConstMetric(descOpenConns, prometheus.GaugeValue, float64(g.store.DB().Stats().OpenConnections), "sql")
	if pg, ok := g.store.Engine().(*store.Postgres); ok && pg.Pool() != nil {
		ch <- prometheus.MustNewConstMetric(descOpenConns, prometheus.GaugeValue, float64(pg.Pool().Stat().TotalConns()), "river")
	}
	ch <- prometheus.MustNewConstMetric(descInFlight, prometheus.GaugeValue, float64(g.nflight.Load()))
	ready := 0.0
	if len(g.notReady(ctx)) == 0 {
		ready = 1
	}
	ch <- prometheus.MustNewConstMetric(descReady, prometheus.GaugeValue, ready)
}

// jobsByState counts research jobs by state.
func (g *Gateway) jobsByState(ctx context.Context) (map[string]int, error) {
	rows, err := g.store.DB().QueryContext(ctx, `SELECT state, count(*) FROM research_jobs GROUP BY state`)
	if err != nil {
		return nil, err
	}
	defer fsx.CloseRead(rows)
	out := map[string]int{}
	for rows.Next() {
		var st string
		var n int
		if err := rows.Scan(&st, &n); err != nil {
			return nil, err
		}
		out[st] = n
	}
	return out, rows.Err()
}

type riverRow struct {
	queue, state string
	n            int
}

// riverJobs counts river jobs available or running, per queue.
func (g *Gateway) riverJobs(ctx context.Context) ([]riverRow, error) {
	rows, err := g.store.DB().QueryContext(ctx, `SELECT queue, state::text, count(*) FROM `+store.RiverSchema+`.river_job
WHERE state IN ('available','running') GROUP BY queue, state`)
	if err != nil {
		return nil, err
	}
	defer fsx.CloseRead(rows)
	var out []riverRow
	for rows.Next() {
		var r riverRow
		if err := rows.Scan(&r.queue, &r.state, &r.n); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// queueDepth is the research work waiting for a worker: river jobs
// available in any queue (PostgreSQL), or research jobs due for a poll
// (SQLite, whose gateway polls them itself).
func (g *Gateway) queueDepth(ctx context.Context) (int, error) {
	var n int
	var err error
	if store.IsPostgres(g.store.Engine()) {
		err = g.store.DB().QueryRowContext(ctx, `SELECT count(*) FROM `+store.RiverSchema+`.river_job WHERE state = 'available'`).Scan(&n)
	} else {
		err = g.store.DB().QueryRowContext(ctx, `SELECT count(*) FROM research_jobs WHERE state IN ('running','cancel-requested') AND next_poll_at <= ?`, g.opts.Now().UnixMilli()).Scan(&n)
	}
	return n, err
}
