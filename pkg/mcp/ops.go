package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"time"

	"github.com/clawkit/clawkit/pkg/errs"
)

// BuildEnv assembles a server's exact environment from --env K=V pairs and
// --env-pass names looked up with getenv. Nothing else is passed on.
func BuildEnv(pairs, pass []string, lookup func(string) (string, bool)) ([]string, error) {
	seen := map[string]int{}
	var env []string
	add := func(k, v string) {
		if i, ok := seen[k]; ok {
			env[i] = k + "=" + v // the last one wins, as in a shell
			return
		}
		seen[k] = len(env)
		env = append(env, k+"="+v)
	}
	for _, name := range pass {
		if err := checkEnvName(name); err != nil {
			return nil, err
		}
		v, ok := lookup(name)
		if !ok {
			return nil, errs.Usage(CodeEnvPassUnset, "--env-pass %s: the variable is not set in clawkit's environment", name).
				WithHint("set it, or give the value explicitly with --env %s=VALUE", name)
		}
		add(name, v)
	}
	for _, kv := range pairs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, errs.Usage(CodeInvalidEnv, "--env %q: expected NAME=VALUE", kv).WithHint("write --env NAME=VALUE (an empty value is NAME=)")
		}
		if err := checkEnvName(k); err != nil {
			return nil, err
		}
		if strings.IndexByte(v, 0) >= 0 {
			return nil, errs.Usage(CodeInvalidEnv, "--env %s: the value contains a NUL byte", k)
		}
		add(k, v)
	}
	if env == nil {
		env = []string{}
	}
	return env, nil
}

func checkEnvName(k string) error {
	if k == "" || strings.ContainsAny(k, "=\x00") {
		return errs.Usage(CodeInvalidEnv, "invalid environment variable name %q", k).WithHint("names are non-empty and contain no '=' or NUL")
	}
	return nil
}

// Timings of a one-shot call, in milliseconds.
type Timings struct {
	StartupMs int64 `json:"startupMs"`
	RequestMs int64 `json:"requestMs"`
	StopMs    int64 `json:"stopMs"`
}

// CallReport is the outcome of Call.
type CallReport struct {
	Result        json.RawMessage `json:"result"`
	ServerInfo    Implementation  `json:"serverInfo"`
	Protocol      Negotiated      `json:"protocol"`
	Transport     string          `json:"transport"`
	CleanupResult *CleanupResult  `json:"cleanupResult,omitempty"`
	Timings       Timings         `json:"timings"`
}

// Conn is a connection of either transport, as Call and Session use it:
// an *mcpstdio.Client or an *mcphttp.Client.
type Conn interface {
	RequestTimeout(ctx context.Context, method string, params json.RawMessage, timeout time.Duration) (json.RawMessage, error)
	ServerInfo() Implementation
	Negotiated() Negotiated
	// Transport is "stdio", "streamable" or "sse".
	Transport() string
	Stop() (*CleanupResult, error)
}

// Dialer opens one connection with the common options: mcpstdio.Dialer
// starts a server over stdio, mcphttp.Dialer connects to a URL.
type Dialer func(ctx context.Context, opts Options) (Conn, error)

// Call starts the server, sends one request, stops the server and reports.
// When the request succeeded but cleanup could not be confirmed, the report
// carries the result and the error says so.
func Call(ctx context.Context, dial Dialer, opts Options, method string, params json.RawMessage) (*CallReport, error) {
	t0 := time.Now()
	c, err := dial(ctx, opts)
	if err != nil {
		return nil, Coded(err)
	}
	t1 := time.Now()
	res, rerr := RequestResolved(ctx, c, &opts.Requests, method, params, 0)
	t2 := time.Now()
	cr, serr := c.Stop()
	rep := &CallReport{
		Result: res, ServerInfo: c.ServerInfo(), Protocol: c.Negotiated(), Transport: c.Transport(), CleanupResult: cr,
		Timings: Timings{StartupMs: t1.Sub(t0).Milliseconds(), RequestMs: t2.Sub(t1).Milliseconds(), StopMs: time.Since(t2).Milliseconds()},
	}
	if rerr != nil {
		return rep, Coded(rerr)
	}
	if serr != nil {
		return rep, Coded(serr)
	}
	return rep, nil
}

// SessionLine is one request read by Session.
type SessionLine struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params,omitempty"`
	// TimeoutMs, when set, replaces the session's request timeout for
	// this request alone (docs/mcp.md, "mcp session").
	TimeoutMs *int64 `json:"timeoutMs,omitempty"`
}

// SessionResult is one answer written by Session: exactly one of Result
// and Error is set.
type SessionResult struct {
	OK     bool            `json:"ok"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *SessionError   `json:"error,omitempty"`
	// Code, Message and Hint: a request clawkit itself could not complete
	// on a connection that stays usable (an input_required result it cannot
	// answer, docs/mcp.md "Server requests"), in the form of clawkit's own
	// --json errors.
	Code    errs.Code `json:"code,omitempty"`
	Message string    `json:"message,omitempty"`
	Hint    string    `json:"hint,omitempty"`
}

// requestLocal reports whether err ends one request only: the server
// answered it, the connection is as good as before, and the next line can
// go on.
func requestLocal(err error) bool {
	switch errs.CodeOf(err) {
	case CodeInputRequiredUnanswered, CodeInputRequiredRounds, CodeInvalidInputRequired:
		return true
	}
	return false
}

// SessionError is a request's JSON-RPC error as the server gave it.
type SessionError struct {
	Code    int64           `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// SessionReport summarises a session.
type SessionReport struct {
	ServerInfo    Implementation `json:"serverInfo"`
	Protocol      Negotiated     `json:"protocol"`
	Transport     string         `json:"transport"`
	Requests      int            `json:"requests"`
	Errors        int            `json:"errors"`
	CleanupResult *CleanupResult `json:"cleanupResult,omitempty"`
}

// maxTimeoutMs bounds a session line's timeoutMs (24 h): beyond it the
// value is a mistake, not a deadline.
const maxTimeoutMs = 24 * 60 * 60 * 1000

// parseSessionLine decodes one stdin line of a session strictly: one JSON
// object, a method, params an object or array, no other fields.
func parseSessionLine(line []byte, n int) (*SessionLine, error) {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	var sl SessionLine
	if err := dec.Decode(&sl); err != nil {
		return nil, errs.Usage(CodeInvalidSessionLine, "stdin line %d: %s", n, ShortErr(err)).
			WithHint(`each line is one JSON object {"method":"…","params":{…}}`)
	}
	if dec.More() {
		return nil, errs.Usage(CodeInvalidSessionLine, "stdin line %d: more than one JSON value", n).
			WithHint(`each line is one JSON object {"method":"…","params":{…}}`)
	}
	if sl.Method == "" {
		return nil, errs.Usage(CodeInvalidSessionLine, "stdin line %d: \"method\" is required", n).
			WithHint(`each line is one JSON object {"method":"…","params":{…}}`)
	}
	if t := sl.TimeoutMs; t != nil && (*t < 1 || *t > maxTimeoutMs) {
		return nil, errs.Usage(CodeInvalidSessionLine, "stdin line %d: \"timeoutMs\" must be between 1 and %d", n, maxTimeoutMs).
			WithHint(`give a whole number of milliseconds, e.g. "timeoutMs":5000, or leave it out for --request-timeout`)
	}
	if p := sl.Params; len(p) > 0 && string(p) != "null" {
		if c := FirstByte(p); c != '{' && c != '[' {
			return nil, errs.Usage(CodeInvalidSessionLine, "stdin line %d: \"params\" must be an object or an array", n)
		}
	} else {
		sl.Params = nil
	}
	return &sl, nil
}

// Session runs JSON lines of {method, params} from in over one connection,
// in order, calling emit with one result per line. A JSON-RPC error answer,
// or an input_required result clawkit cannot answer, is reported as that
// line's result and the session goes on; a fatal
// connection error or a bad input line ends it. The returned error is nil
// when every request succeeded.
func Session(ctx context.Context, dial Dialer, opts Options, in io.Reader, emit func(SessionResult) error) (*SessionReport, error) {
	if err := opts.SetDefaults(); err != nil {
		return nil, Coded(err)
	}
	c, err := dial(ctx, opts)
	if err != nil {
		return nil, Coded(err)
	}
	rep := &SessionReport{ServerInfo: c.ServerInfo(), Protocol: c.Negotiated(), Transport: c.Transport()}
	runErr := func() error {
		sc := bufio.NewScanner(in)
		sc.Buffer(make([]byte, 64<<10), opts.MaxFrameBytes+1)
		n := 0
		for sc.Scan() {
			n++
			line := sc.Bytes()
			if len(bytes.TrimSpace(line)) == 0 {
				continue
			}
			sl, err := parseSessionLine(line, n)
			if err != nil {
				return err
			}
			rep.Requests++
			var timeout time.Duration
			if sl.TimeoutMs != nil {
				timeout = time.Duration(*sl.TimeoutMs) * time.Millisecond
			}
			res, rerr := RequestResolved(ctx, c, &opts.Requests, sl.Method, sl.Params, timeout)
			if rerr != nil {
				var me *Error
				if errors.As(rerr, &me) && me.RPC != nil && me.Code == errs.CodeRPCError {
					rep.Errors++
					if err := emit(SessionResult{Error: &SessionError{Code: me.RPC.Code, Message: me.RPC.Message, Data: me.RPC.Data}}); err != nil {
						return err
					}
					continue
				}
				if ce := errs.As(Coded(rerr)); ce != nil && requestLocal(ce) {
					rep.Errors++
					r := SessionResult{Code: ce.Code, Message: ce.Error(), Hint: ce.Hint}
					if err := emit(r); err != nil {
						return err
					}
					continue
				}
				return Coded(rerr)
			}
			if err := emit(SessionResult{OK: true, Result: res}); err != nil {
				return err
			}
		}
		if err := sc.Err(); err != nil {
			if errors.Is(err, bufio.ErrTooLong) {
				return errs.Usage(CodeInvalidSessionLine, "stdin line %d is longer than the frame limit (%d bytes)", n+1, opts.MaxFrameBytes)
			}
			return errs.Failed(errs.CodeStdinFailed, "reading stdin: %v", err)
		}
		return nil
	}()
	cr, serr := c.Stop()
	rep.CleanupResult = cr
	if runErr != nil {
		return rep, runErr
	}
	if serr != nil {
		return rep, Coded(serr)
	}
	if rep.Errors > 0 {
		return rep, errs.Failed(errs.CodeRPCError, "%d of %d requests were answered with an error", rep.Errors, rep.Requests).
			WithHint("the error lines on stdout carry the server's code and message (\"error\"), or clawkit's (\"code\", \"message\", \"hint\")")
	}
	return rep, nil
}
