package gateway

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/netaddr"
	"github.com/clawkit/clawkit/pkg/owner"
	"github.com/clawkit/clawkit/pkg/redact"
)

// pingTimeout bounds readiness's database check: a healthy database
// answers a ping in milliseconds, and a cut one must turn /readyz 503
// well within the lease's renewal interval (docs/operations.md).
const pingTimeout = 2 * time.Second

// notReady says why the gateway is not ready (nil: ready): /readyz,
// `gateway status` and the systemd watchdog ask it.
//   - the gateway is stopping;
//   - the store does not answer a ping;
//   - on PostgreSQL, the owner lease is not held, or its last renewal
//     failed (the lease may still be valid: the gateway is not ready for
//     new work until a renewal succeeds);
//   - the background scheduler (river, or the SQLite poller) stopped.
//
// A provider outage is not a readiness failure: the gateway still serves
// every other call, and river already stops claiming polls it cannot
// reach (docs/scale-out.md, "A provider partition").
func (g *Gateway) notReady(ctx context.Context) []string {
	var why []string
	if g.retiring.Load() {
		why = append(why, "the gateway is stopping")
	}
	if g.store != nil {
		pctx, cancel := context.WithTimeout(ctx, pingTimeout)
		err := g.store.DB().PingContext(pctx)
		cancel()
		if err != nil {
			why = append(why, "the database does not answer: "+g.secrets.scrub(redact.URLsIn(err.Error())))
		}
	}
	if g.lease != nil {
		ls := g.lease.State()
		switch {
		case ls.LostReason != "":
			why = append(why, "the owner lease is lost: "+ls.LostReason)
		case !ls.Held:
			why = append(why, "the owner lease has expired")
		case ls.RenewError != "":
			why = append(why, "the owner lease's last renewal failed: "+g.secrets.scrub(redact.URLsIn(ls.RenewError)))
		}
	}
	if n := g.startersDown.Load(); n > 0 && !g.retiring.Load() {
		why = append(why, fmt.Sprintf("the background scheduler stopped (%d of %d; see the gateway log)", n, g.starters))
	}
	return why
}

// leaseInfo is the lease as `gateway status` shows it.
func (g *Gateway) leaseInfo() owner.LeaseInfo {
	if g.lease == nil {
		return owner.LeaseInfo{State: "none"}
	}
	ls := g.lease.State()
	li := owner.LeaseInfo{Incarnation: ls.Incarnation, ExpiresAt: ls.ValidUntil.UTC(), RenewError: g.secrets.scrub(ls.RenewError)}
	switch {
	case ls.LostReason != "" || !ls.Held:
		li.State = "lost"
	case ls.RenewError != "":
		li.State = "renewing"
	default:
		li.State = "held"
	}
	return li
}

// serveMetrics starts the --metrics-listen server: /healthz, /readyz and
// /metrics. Off unless asked for (it opens a TCP port).
func (g *Gateway) listenMetrics(addr string) (net.Listener, *http.Server, error) {
	if err := CheckMetricsListen(addr); err != nil {
		return nil, nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, errs.Failed(CodeMetricsListenFailed, "cannot listen on %s for metrics: %v", addr, err).
			WithHint("pick a free port, or leave --metrics-listen off")
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		// A probe's answer: a client that went away is no one's concern.
		_, _ = fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if why := g.notReady(r.Context()); len(why) > 0 {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = fmt.Fprintln(w, "not ready: "+strings.Join(why, "; "))
			return
		}
		_, _ = fmt.Fprintln(w, "ready")
	})
	mux.Handle("GET /metrics", g.metrics.handler())
	return ln, &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}, nil
}

// CheckMetricsListen refuses a --metrics-listen value that is not
// HOST:PORT (exit 2), before anything is created or started.
func CheckMetricsListen(addr string) error {
	if addr == "" {
		return nil
	}
	if err := netaddr.CheckTCPListen(addr); err != nil {
		return errs.Usage(CodeInvalidMetricsListen, "invalid --metrics-listen address %q: %v", addr, err).
			WithHint("use HOST:PORT, for example 127.0.0.1:9464 (port 0 picks a free one)")
	}
	return nil
}
