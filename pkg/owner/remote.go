package owner

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/clawkit/clawkit/pkg/errs"
)

// CallRequest is the body of POST /v1/call.
type CallRequest struct {
	Method          string          `json:"method"`
	Params          json.RawMessage `json:"params"`
	ExpectedOwnerID string          `json:"expectedOwnerId"`
	Scopes          []string        `json:"scopes"`
}

// CallError is a gateway's refusal or failure. MutationAccepted is a
// pointer because its absence means "unknown".
type CallError struct {
	Code             string `json:"code"`
	Message          string `json:"message"`
	Hint             string `json:"hint,omitempty"`
	Kind             int    `json:"kind,omitempty"`
	MutationAccepted *bool  `json:"mutationAccepted,omitempty"`
	RetryAfterMs     int64  `json:"retryAfterMs,omitempty"`
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
}

// Client talks HTTP/1.1 to a gateway over its unix socket.
type Client struct {
	Socket string
	hc     *http.Client
}

// NewClient returns a client for a socket path.
func NewClient(socket string) *Client {
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		},
		// One connection carries the status check and the call.
		MaxIdleConnsPerHost: 1,
	}
	return &Client{Socket: socket, hc: &http.Client{Transport: tr}}
}

// Status asks the gateway who it is; errors mean "not answering".
func (c *Client) Status(ctx context.Context) (*Status, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://gateway/v1/status", nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("gateway status: HTTP %d", resp.StatusCode)
	}
	var st Status
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&st); err != nil {
		return nil, fmt.Errorf("gateway status: %w", err)
	}
	if st.OwnerID == "" {
		return nil, fmt.Errorf("gateway status: no owner id")
	}
	return &st, nil
}

// Stop asks the gateway to stop (drain then exit).
func (c *Client) Stop(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://gateway/v1/stop", nil)
	if err != nil {
		return err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("gateway stop: HTTP %d", resp.StatusCode)
	}
	return nil
}

// Call dispatches one call. Once the request may have been written, every
// failure that the gateway did not classify as "mutation not accepted" is
// outcome-unknown: the caller must not replay it locally.
func (c *Client) Call(ctx context.Context, creq CallRequest) (json.RawMessage, error) {
	body, err := json.Marshal(creq)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://gateway/v1/call", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, unknown(creq.Method, fmt.Sprintf("the connection to the gateway failed after dispatch: %v", err))
	}
	defer resp.Body.Close()
	var rep CallReply
	if err := json.NewDecoder(io.LimitReader(resp.Body, 256<<20)).Decode(&rep); err != nil {
		return nil, unknown(creq.Method, fmt.Sprintf("the gateway's reply could not be read (HTTP %d): %v", resp.StatusCode, err))
	}
	if rep.OK {
		return rep.Result, nil
	}
	if rep.Error == nil {
		return nil, unknown(creq.Method, fmt.Sprintf("the gateway failed without saying why (HTTP %d)", resp.StatusCode))
	}
	e := rep.Error
	if e.MutationAccepted == nil || *e.MutationAccepted {
		if errs.Kind(e.Kind) == errs.KindUnknown {
			return nil, &errs.Error{Kind: errs.KindUnknown, Code: e.Code, Message: e.Message, Hint: e.Hint}
		}
		return nil, unknown(creq.Method, fmt.Sprintf("the gateway reported %s: %s", orDefault(e.Code, "an error"), e.Message))
	}
	kind := errs.Kind(e.Kind)
	if kind < errs.KindFailed || kind > errs.KindUnavailable {
		kind = errs.KindFailed
	}
	return nil, &errs.Error{Kind: kind, Code: orDefault(e.Code, "failed"), Message: e.Message, Hint: e.Hint, RetryAfterMs: e.RetryAfterMs}
}

func unknown(method, msg string) error {
	return errs.Unknown("outcome_unknown", "%s: outcome unknown: %s", method, msg).
		WithHint("the operation may have taken effect; inspect the state before retrying (it is never replayed automatically)")
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
