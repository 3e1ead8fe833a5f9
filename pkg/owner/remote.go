package owner

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/fsx"
)

// CallRequest is the body of POST /v1/call. Params is the operation's
// parameter value, encoded in the same pass as the envelope; it comes last
// so that a gateway knows the method before it reads them and decodes them
// straight into the operation's P (ReadCall).
type CallRequest struct {
	Method          string   `json:"method"`
	ExpectedOwnerID string   `json:"expectedOwnerId"`
	Scopes          []string `json:"scopes"`
	// Env is the caller's value of each variable the operation declares
	// (Op.Env) that is set in the caller: a gateway answers the call
	// with these, not its own environment.
	Env    map[string]string `json:"env,omitempty"`
	Params any               `json:"params"`
}

// CallError is a gateway's refusal or failure. MutationAccepted is a
// pointer because its absence means "unknown".
type CallError struct {
	Code             errs.Code `json:"code"`
	Message          string    `json:"message"`
	Hint             string    `json:"hint,omitempty"`
	Kind             int       `json:"kind,omitempty"`
	MutationAccepted *bool     `json:"mutationAccepted,omitempty"`
	RetryAfterMs     int64     `json:"retryAfterMs,omitempty"`
	// The fields naming what the failure is about (errs.Fields), so a
	// routed command's error document carries them as a local one does.
	errs.Fields
}

// CallReply is the body the gateway answers.
type CallReply struct {
	OK     bool            `json:"ok"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *CallError      `json:"error,omitempty"`
}

// Status is GET /v1/status.
type Status struct {
	OwnerID       string    `json:"ownerId"`
	PID           int       `json:"pid"`
	Socket        string    `json:"socket"`
	Version       string    `json:"version"`
	Engine        string    `json:"engine"`
	StartedAt     time.Time `json:"startedAt"`
	Incarnation   int64     `json:"incarnation"`
	SchemaVersion int       `json:"schemaVersion"`
	InFlight      int       `json:"inFlight"`
	Retiring      bool      `json:"retiring"`
	Methods       int       `json:"methods"`
	// DBRoundTrips counts the requests this gateway sent to PostgreSQL
	// (queries, statements, prepares, transaction begin/commit; a batch
	// counts once): what scripts/bench-scale.sh divides by polls.
	DBRoundTrips int64 `json:"dbRoundTrips,omitempty"`
	// UptimeSeconds is how long the gateway has served.
	UptimeSeconds float64 `json:"uptimeSeconds"`
	// MetricsAddr is where `--metrics-listen` serves (host:port), "" when off.
	MetricsAddr string `json:"metricsAddr"`

	// The rest is answered to GET /v1/status?detail=1 (`gateway status`)
	// only: it reads the database, which the cheap probe every routed
	// command makes must not (docs/operations.md).
	Detail *StatusDetail `json:"detail,omitempty"`
}

// StatusDetail is the readiness and work of a gateway (`gateway status`).
type StatusDetail struct {
	// Ready is /readyz's answer; NotReady lists why not.
	Ready    bool      `json:"ready"`
	NotReady []string  `json:"notReady,omitempty"`
	Lease    LeaseInfo `json:"lease"`
	// Jobs counts research jobs by state (empty when the database did not
	// answer).
	Jobs map[string]int `json:"jobs"`
	// QueueDepth is the research work waiting for a worker: river jobs
	// available in the research queue (PostgreSQL), or jobs due for a poll
	// (SQLite); -1 when the database did not answer.
	QueueDepth int `json:"queueDepth"`
}

// LeaseInfo is a gateway's owner lease as `gateway status` shows it.
type LeaseInfo struct {
	// State: "held", "renewing" (held, but the last renewal failed),
	// "lost", or "none" (SQLite: the owner lock is the whole ownership).
	State       string    `json:"state"`
	Incarnation int64     `json:"incarnation,omitempty"`
	ExpiresAt   time.Time `json:"expiresAt,omitzero"`
	RenewError  string    `json:"renewError,omitempty"`
}

// Client talks HTTP/1.1 to a gateway over its unix socket. It is a small
// sequential client rather than net/http's pooled Transport: a routed
// command makes two requests (status, then the call) on one connection, and
// a pool's per-connection reader and writer goroutines cost a stateful
// command's start-up more than the requests themselves. Not for concurrent
// use.
type Client struct {
	Socket string
	conn   net.Conn
	br     *bufio.Reader
}

// NewClient returns a client for a socket path.
func NewClient(socket string) *Client { return &Client{Socket: socket} }

// Close closes the connection, if any.
func (c *Client) Close() error {
	if c.conn == nil {
		return nil
	}
	err := c.conn.Close()
	c.conn, c.br = nil, nil
	return err
}

// errNoResponse marks failures before any byte of a response was read.
type roundTripError struct {
	stage string
	err   error
}

func (e *roundTripError) Error() string { return e.stage + ": " + e.err.Error() }
func (e *roundTripError) Unwrap() error { return e.err }

// roundTrip sends one request and reads the whole response body (at most
// limit bytes), so the connection is ready for the next request.
func (c *Client) roundTrip(ctx context.Context, method, path string, body []byte, limit int64) (int, []byte, error) {
	if c.conn == nil {
		var d net.Dialer
		conn, err := d.DialContext(ctx, "unix", c.Socket)
		if err != nil {
			return 0, nil, &roundTripError{"dial", err}
		}
		c.conn, c.br = conn, bufio.NewReader(conn)
	}
	conn := c.conn
	// SetDeadline fails only on a closed connection, which the write
	// below then reports.
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	} else {
		_ = conn.SetDeadline(time.Time{})
	}
	// Cancellation interrupts a blocked read or write.
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	var req bytes.Buffer
	fmt.Fprintf(&req, "%s %s HTTP/1.1\r\nHost: gateway\r\n", method, path)
	if body != nil {
		fmt.Fprintf(&req, "Content-Type: application/json\r\nContent-Length: %d\r\n", len(body))
	}
	req.WriteString("\r\n")
	req.Write(body)
	if _, err := conn.Write(req.Bytes()); err != nil {
		_ = c.Close() // dropped after a failed exchange; that failure is reported
		return 0, nil, &roundTripError{"write", err}
	}
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		_ = c.Close() // dropped after a failed exchange; that failure is reported
		return 0, nil, &roundTripError{"read", err}
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	fsx.CloseRead(resp.Body)
	if err != nil {
		_ = c.Close() // dropped after a failed exchange; that failure is reported
		return resp.StatusCode, nil, &roundTripError{"read", err}
	}
	if int64(len(data)) > limit {
		_ = c.Close() // dropped after a failed exchange; that failure is reported
		return resp.StatusCode, nil, &roundTripError{"read", fmt.Errorf("reply larger than %d bytes", limit)}
	}
	if resp.Close {
		_ = c.Close() // the server closes it too; the reply is complete
	}
	return resp.StatusCode, data, nil
}

// Status asks the gateway who it is; errors mean "not answering".
func (c *Client) Status(ctx context.Context) (*Status, error) {
	return c.status(ctx, "/v1/status")
}

// StatusDetail asks for the status with readiness, lease and work
// (`gateway status`); it may take the database's time to answer.
func (c *Client) StatusDetail(ctx context.Context) (*Status, error) {
	return c.status(ctx, "/v1/status?detail=1")
}

func (c *Client) status(ctx context.Context, path string) (*Status, error) {
	code, data, err := c.roundTrip(ctx, http.MethodGet, path, nil, 1<<20)
	if err != nil {
		return nil, err
	}
	if code != http.StatusOK {
		return nil, fmt.Errorf("gateway status: HTTP %d", code)
	}
	var st Status
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, fmt.Errorf("gateway status: %w", err)
	}
	if st.OwnerID == "" {
		return nil, fmt.Errorf("gateway status: no owner id")
	}
	return &st, nil
}

// Stop asks the gateway to stop (drain then exit).
func (c *Client) Stop(ctx context.Context) error {
	code, _, err := c.roundTrip(ctx, http.MethodPost, "/v1/stop", []byte("{}"), 1<<20)
	if err != nil {
		return err
	}
	if code != http.StatusOK {
		return fmt.Errorf("gateway stop: HTTP %d", code)
	}
	return nil
}

// Call dispatches one call and answers its result as JSON.
func (c *Client) Call(ctx context.Context, creq CallRequest) (json.RawMessage, error) {
	var rep CallReply
	if err := c.CallInto(ctx, creq, &rep); err != nil {
		return nil, err
	}
	return rep.Result, nil
}

// CallInto dispatches one call: the request is encoded once (its params
// inside it) and the answer decoded once, into into. Once the request may
// have been written, every failure that the gateway did not classify as
// "mutation not accepted" is outcome-unknown: the caller must not replay
// it locally.
func (c *Client) CallInto(ctx context.Context, creq CallRequest, into Reply) error {
	body, err := json.Marshal(creq)
	if err != nil {
		return fmt.Errorf("encode %s params: %w", creq.Method, err)
	}
	code, data, err := c.roundTrip(ctx, http.MethodPost, "/v1/call", body, 256<<20)
	if err != nil {
		var rt *roundTripError
		if errors.As(err, &rt) && rt.stage == "dial" {
			// Nothing was sent: the gateway went away before the call.
			return errs.Unavailable(CodeGatewayUnavailable, "the gateway went away before the call was sent: %v", rt.err).
				WithRetryAfter(100).WithHint("nothing was sent; run the command again")
		}
		return unknown(creq.Method, fmt.Sprintf("the connection to the gateway failed after dispatch: %v", err))
	}
	return decodeReply(creq.Method, code, data, into)
}

// decodeReply classifies a gateway reply body. Only an explicit
// mutationAccepted:false lets an error keep its own kind; anything else that
// is not a success is outcome-unknown.
func decodeReply(method string, code int, data []byte, into Reply) error {
	if err := json.Unmarshal(data, into); err != nil {
		return unknown(method, fmt.Sprintf("the gateway's reply could not be read (HTTP %d): %v", code, err))
	}
	ok, e := into.head()
	if ok {
		return nil
	}
	if e == nil {
		return unknown(method, fmt.Sprintf("the gateway failed without saying why (HTTP %d)", code))
	}
	if e.MutationAccepted == nil {
		if errs.Kind(e.Kind) == errs.KindUnknown {
			return &errs.Error{Kind: errs.KindUnknown, Code: e.Code, Message: e.Message, Hint: e.Hint, Fields: e.Fields}
		}
		return unknown(method, fmt.Sprintf("the gateway reported %s: %s", described(e.Code), e.Message))
	}
	if *e.MutationAccepted {
		// The operation ran and classified its own outcome after an effect
		// began: keep its kind (a definitive failure stays definitive, an
		// unknown outcome stays unknown); without a kind it is unknown.
		kind := errs.Kind(e.Kind)
		if kind < errs.KindFailed || kind > errs.KindUnavailable {
			return unknown(method, fmt.Sprintf("the gateway reported %s: %s", described(e.Code), e.Message))
		}
		return &errs.Error{Kind: kind, Code: e.Code, Message: e.Message, Hint: e.Hint, RetryAfterMs: e.RetryAfterMs, Fields: e.Fields}
	}
	if e.Code == errs.CodeUnknownMethod {
		// The gateway lacks this operation version: it runs an older (or
		// newer) clawkit. Nothing was done; the call must not be retried
		// against it, nor run locally while it owns the state.
		return errs.Refused(CodeGatewayOutdated, "the running gateway does not offer operation %s that this clawkit needs", method).
			WithHint("restart the gateway with this clawkit: 'clawkit gateway stop', then 'clawkit gateway run --detach'")
	}
	kind := errs.Kind(e.Kind)
	if kind < errs.KindFailed || kind > errs.KindUnavailable {
		kind = errs.KindFailed
	}
	return &errs.Error{Kind: kind, Code: e.Code, Message: e.Message, Hint: e.Hint, RetryAfterMs: e.RetryAfterMs, Fields: e.Fields}
}

func unknown(method, msg string) error {
	return errs.Unknown(CodeOutcomeUnknown, "%s: outcome unknown: %s", method, msg).
		WithHint("the operation may have taken effect; inspect the state before retrying (it is never replayed automatically)")
}

// described names a gateway's error code in a message, or says "an error"
// when it sent none. (A reply without a code keeps none: errs.CodeOf reads
// an empty code as errs.CodeFailed, the one default.)
func described(c errs.Code) string {
	if c == "" {
		return "an error"
	}
	return string(c)
}

// ReadCall decodes a call's body in one pass: the envelope, and its params
// straight into the operation's P once the method is known (Router's
// calls write "method" first and "params" last). A body whose params come
// before its method keeps them raw and decodes them after. m is the zero
// Method when the gateway has no operation of that exact name; paramsErr
// is a refusal of the params alone (invalid_params), reported after the
// envelope's own checks.
func ReadCall(body io.Reader, lookup func(name string) (Method, bool)) (req CallRequest, m Method, p any, paramsErr, err error) {
	dec := json.NewDecoder(body)
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		if err == nil {
			err = fmt.Errorf("the call is not a JSON object")
		}
		return req, m, nil, nil, err
	}
	var raw json.RawMessage
	seen, known := false, false
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return req, m, nil, nil, err
		}
		key, _ := t.(string)
		switch key {
		case "method":
			err = dec.Decode(&req.Method)
			m, known = lookup(req.Method)
		case "expectedOwnerId":
			err = dec.Decode(&req.ExpectedOwnerID)
		case "scopes":
			err = dec.Decode(&req.Scopes)
		case "env":
			err = dec.Decode(&req.Env)
		case "params":
			seen = true
			if !known {
				err = dec.Decode(&raw)
				break
			}
			// The params are the operation's: decoded strictly, once.
			// A refusal ends the read (the decoder cannot go on), and
			// the params come last.
			if p, paramsErr = m.decode(dec); paramsErr != nil {
				return req, m, nil, paramsErr, nil
			}
		default:
			var skip json.RawMessage
			err = dec.Decode(&skip)
		}
		if err != nil {
			return req, m, nil, nil, err
		}
	}
	if _, err := dec.Token(); err != nil {
		return req, m, nil, nil, err
	}
	if !known {
		return req, Method{}, nil, nil, nil
	}
	if !seen || raw != nil {
		p, paramsErr = m.Decode(raw)
	}
	return req, m, p, paramsErr, nil
}
