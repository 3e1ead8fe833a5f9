package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"

	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/redact"
)

// The stable keys of the gateway's log lines (docs/operations.md): slog's
// own time, level and msg, and these (the research scheduler, which cannot
// import this package, logs "job" with the same meaning).
const (
	KeyOwner      = "owner"
	KeyMethod     = "method"
	KeyDurationMs = "duration_ms"
	KeyEngine     = "engine"
	KeyErrorCode  = "error.code"
)

// LogConfig chooses the log's format and level.
type LogConfig struct {
	Format string // text (default) or json
	Level  string // debug, info (default), warn, error
}

// ParseLogConfig checks a format and level ("" takes the default).
func ParseLogConfig(format, level string) (LogConfig, slog.Level, error) {
	c := LogConfig{Format: strings.ToLower(format), Level: strings.ToLower(level)}
	if c.Format == "" {
		c.Format = "text"
	}
	if c.Format != "text" && c.Format != "json" {
		return c, 0, errs.Usage(CodeInvalidLogFormat, "invalid log format %q", format).
			WithHint("use text or json (--log-format, or config log.format)")
	}
	if c.Level == "" {
		c.Level = "info"
	}
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(c.Level)); err != nil || !slices.Contains([]string{"debug", "info", "warn", "error"}, c.Level) {
		return c, 0, errs.Usage(CodeInvalidLogLevel, "invalid log level %q", level).
			WithHint("use debug, info, warn or error (--log-level, or config log.level)")
	}
	return c, lv, nil
}

// Secrets is the set of values no log line may contain: API keys,
// header profile values, database passwords. It grows as the gateway
// learns them (its credentials, each call's declared variables).
type Secrets struct {
	mu   sync.RWMutex
	vals []string
}

// Add remembers values as secret (short ones are ignored, as redact does).
func (s *Secrets) Add(vals ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range vals {
		if len(v) >= 6 && !slices.Contains(s.vals, v) {
			s.vals = append(s.vals, v)
		}
	}
}

func (s *Secrets) scrub(v string) string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return redact.Values(v, s.vals...)
}

// NewLogger returns a logger writing cfg's format to w, every message and
// string value scrubbed of secrets (pkg/redact: URLs' userinfo and key
// parameters, and each value of secrets).
func NewLogger(w io.Writer, cfg LogConfig, level slog.Level, secrets *Secrets) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level}
	var h slog.Handler
	if cfg.Format == "json" {
		h = slog.NewJSONHandler(w, opts)
	} else {
		h = slog.NewTextHandler(w, opts)
	}
	if secrets == nil {
		secrets = &Secrets{}
	}
	return slog.New(&redacting{h: h, s: secrets})
}

// redacting scrubs a record's message and every attribute value before
// its handler formats it.
type redacting struct {
	h slog.Handler
	s *Secrets
}

func (r *redacting) Enabled(ctx context.Context, l slog.Level) bool { return r.h.Enabled(ctx, l) }

func (r *redacting) Handle(ctx context.Context, rec slog.Record) error {
	out := slog.NewRecord(rec.Time, rec.Level, r.s.scrub(rec.Message), rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(r.attr(a))
		return true
	})
	return r.h.Handle(ctx, out)
}

func (r *redacting) WithAttrs(as []slog.Attr) slog.Handler {
	clean := make([]slog.Attr, len(as))
	for i, a := range as {
		clean[i] = r.attr(a)
	}
	return &redacting{h: r.h.WithAttrs(clean), s: r.s}
}

func (r *redacting) WithGroup(name string) slog.Handler {
	return &redacting{h: r.h.WithGroup(name), s: r.s}
}

func (r *redacting) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, r.s.scrub(v.String()))
	case slog.KindGroup:
		g := v.Group()
		clean := make([]any, len(g))
		for i, x := range g {
			clean[i] = r.attr(x)
		}
		return slog.Group(a.Key, clean...)
	case slog.KindAny:
		// Errors and anything else formatted as text: scrub the text
		// (a provider error may echo the key).
		var err error
		if e, ok := v.Any().(error); ok {
			err = e
		}
		if err != nil {
			return slog.String(a.Key, r.s.scrub(err.Error()))
		}
		return slog.String(a.Key, r.s.scrub(fmt.Sprint(v.Any())))
	default:
		return slog.Attr{Key: a.Key, Value: v}
	}
}

// errAttrs are an error's log attributes: its catalog code (error.code)
// and message.
func errAttrs(err error) []any {
	if err == nil {
		return nil
	}
	code := "internal"
	if e := errs.As(err); e != nil {
		code = string(e.Code)
	} else if errors.Is(err, context.Canceled) {
		code = "canceled"
	}
	return []any{KeyErrorCode, code, "error", err.Error()}
}
