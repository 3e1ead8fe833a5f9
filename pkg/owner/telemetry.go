package owner

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/clawkit/clawkit/pkg/auth"
)

// Telemetry is what a gateway counts of the work it runs, for its metrics
// and debug log (docs/operations.md). The domains report through the
// context their work runs under (a call's, or the background work's), so
// nothing is global and an offline command reports to nobody.
type Telemetry interface {
	// ProviderRequest is one HTTP request to a provider: its status (0
	// when no answer came: err says why) and how long it took.
	ProviderRequest(method, url string, status int, err error, d time.Duration)
	// Poll is one queued research poll and how long it took.
	Poll(d time.Duration, err error)
	// ResearchUsage is usage a research job newly reported: tokens by
	// kind (total, input, output, thought, tool_use, cached) and
	// grounding tool calls, each the growth since the job's last report.
	ResearchUsage(tokens map[string]int64, groundingCalls int64)
}

type telemetryKey struct{}

// WithTelemetry returns ctx carrying t.
func WithTelemetry(ctx context.Context, t Telemetry) context.Context {
	return context.WithValue(ctx, telemetryKey{}, t)
}

// TelemetryFrom is the telemetry ctx carries, or one that drops
// everything.
func TelemetryFrom(ctx context.Context) Telemetry {
	if t, ok := ctx.Value(telemetryKey{}).(Telemetry); ok && t != nil {
		return t
	}
	return noTelemetry{}
}

type noTelemetry struct{}

func (noTelemetry) ProviderRequest(string, string, int, error, time.Duration) {}
func (noTelemetry) Poll(time.Duration, error)                                 {}
func (noTelemetry) ResearchUsage(map[string]int64, int64)                     {}

// ObserveTransport wraps rt so that each request is reported to the
// telemetry of its context (nothing when it carries none).
func ObserveTransport(rt http.RoundTripper) http.RoundTripper {
	if rt == nil {
		rt = http.DefaultTransport
	}
	return observed{rt}
}

type observed struct{ rt http.RoundTripper }

func (o observed) RoundTrip(r *http.Request) (*http.Response, error) {
	t0 := time.Now()
	resp, err := o.rt.RoundTrip(r)
	status := 0
	if resp != nil {
		status = resp.StatusCode
	}
	TelemetryFrom(r.Context()).ProviderRequest(r.Method, r.URL.String(), status, err, time.Since(t0))
	return resp, err
}

type loggerKey struct{}

// WithLogger returns ctx carrying the gateway's logger, for background work
// (river's own logger goes through it).
func WithLogger(ctx context.Context, l *slog.Logger) context.Context {
	return context.WithValue(ctx, loggerKey{}, l)
}

// LoggerFrom is the logger ctx carries, or nil.
func LoggerFrom(ctx context.Context) *slog.Logger {
	l, _ := ctx.Value(loggerKey{}).(*slog.Logger)
	return l
}

// HomeSecrets are the secrets stored in the home's credentials.json (API
// keys, header profile values, the database password entry): a gateway
// keeps them out of every log line.
func HomeSecrets(home string) []string {
	a, err := auth.Load(home)
	if err != nil {
		return nil
	}
	var out []string
	for _, p := range a.List() {
		out = append(out, p.Secret)
	}
	return out
}
