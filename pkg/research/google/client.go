package google

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/clawkit/clawkit/pkg/redact"
)

// Defaults of the Interactions API binding.
const (
	// DefaultServer is the Gemini API's server; the endpoint is it plus
	// an API version (docs/research.md, "API version").
	DefaultServer     = "https://generativelanguage.googleapis.com"
	DefaultAPIVersion = "v1"
	DefaultBaseURL    = DefaultServer + "/" + DefaultAPIVersion
	DefaultAgent      = "deep-research-preview-04-2026"
	// APIRevision is sent on every request, as google.golang.org/genai's
	// interactions client does (docs/research.md, "Api-Revision").
	APIRevision       = "2026-05-20"
	DefaultTimeout    = 30 * time.Second
	MaxResponseBytes  = 32 << 20
	maxRetryAfter     = time.Hour
	maxErrMessageSize = 300
)

// Client talks to one Interactions API endpoint with one API key.
type Client struct {
	BaseURL string
	APIKey  string
	Agent   string
	// Timeout bounds each HTTP request (connect to last body byte).
	Timeout time.Duration
	HTTP    *http.Client
	// Now is used to interpret HTTP-date Retry-After values.
	Now func() time.Time
}

// NewHTTPClient returns the HTTP client clawkit uses for the provider:
// redirects are not followed (the API key must never be replayed to
// another URL) and idle connections are reused for polling.
func NewHTTPClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64
	tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	return &http.Client{
		Transport:     tr,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// Error is a classified provider failure. The classification says what the
// failure proves about the request, which is what custody needs.
type Error struct {
	Op string // create, poll, cancel
	// NotSent is true when the failure proves the request was not accepted:
	// no connection was made, or the server answered with a refusal.
	NotSent bool
	// Auth is true for 401/403: the credential was refused.
	Auth bool
	// Temporary is true for 429/503 and transport failures on reads.
	Temporary bool
	// TooLarge is true when the response was longer than
	// MaxResponseBytes: asking again would download it again.
	TooLarge   bool
	RetryAfter time.Duration
	HTTPStatus int
	Status     *RPCStatus
	Msg        string
	Err        error
}

func (e *Error) Error() string { return e.Msg }
func (e *Error) Unwrap() error { return e.Err }

// AsError returns the *Error in err's chain, or nil.
func AsError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return nil
}

func (c *Client) base() string {
	b := c.BaseURL
	if b == "" {
		b = DefaultBaseURL
	}
	return strings.TrimRight(b, "/")
}

func (c *Client) httpClient() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return NewHTTPClient()
}

// CheckBaseURL validates a configured base URL.
func CheckBaseURL(raw string) error {
	// The refusal names the URL without its secrets (userinfo, key
	// parameters): the URL is refused because it carries them.
	shown := redact.URL(raw)
	u, err := url.Parse(raw)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // url.Error quotes the whole URL
		}
		return fmt.Errorf("base URL %q does not parse: %v", shown, err)
	}
	if u.Scheme != "https" && u.Scheme != "http" {
		return fmt.Errorf("base URL %q must be http or https", shown)
	}
	if u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("base URL %q must be scheme://host[/path] without credentials, query or fragment", shown)
	}
	return nil
}

// Create submits a background deep-research interaction for a plain
// question (CreateWith without options).
func (c *Client) Create(ctx context.Context, question string) (*Interaction, error) {
	return c.CreateWith(ctx, CreateRequest{Input: question})
}

// CreateWith submits a background deep-research interaction. It is never
// retried here: the API has no idempotency key, so a second attempt could
// start a second paid job. On failure the *Error says whether the request
// was definitively not accepted (NotSent) or may have been (everything
// else). The body is the SDKs' CreateAgentInteraction (request.go).
func (c *Client) CreateWith(ctx context.Context, cr CreateRequest) (*Interaction, error) {
	agent := c.Agent
	if agent == "" {
		agent = DefaultAgent
	}
	for _, p := range cr.Parts {
		if PartType(p.MimeType) == "" {
			return nil, &Error{Op: "create", NotSent: true, Msg: fmt.Sprintf("create: %q is not a document or image type the API accepts; nothing was sent", p.MimeType)}
		}
	}
	body, err := json.Marshal(cr.body(agent))
	if err != nil {
		return nil, &Error{Op: "create", NotSent: true, Msg: "create: cannot encode the request: " + err.Error(), Err: err}
	}
	status, hdr, resp, sent, err := c.do(ctx, http.MethodPost, "/interactions", body)
	if errors.Is(err, errTooLarge) {
		return nil, &Error{Op: "create", TooLarge: true, Msg: fmt.Sprintf("create: the provider's answer is larger than %d bytes and was not read", MaxResponseBytes), Err: err}
	}
	if err != nil {
		// A transport failure before any connection proves nothing left;
		// after it, the server may have read and accepted the create.
		return nil, &Error{Op: "create", NotSent: !sent, Msg: transportMsg("create", err, sent), Err: err}
	}
	if status >= 200 && status < 300 {
		it, perr := ParseInteraction(resp)
		if perr != nil {
			// A returned id is a receipt even when the rest of the
			// body is unusable: the handle must never be lost.
			if id, ok := receiptID(resp); ok {
				return &Interaction{ID: id, Status: receiptStatus(resp)}, nil
			}
			return nil, &Error{Op: "create", HTTPStatus: status, Msg: "the provider accepted the create but its response is unusable: " + perr.Error(), Err: perr}
		}
		return it, nil
	}
	e := c.statusError("create", status, hdr, resp)
	// 5xx may come after acceptance: outcome unknown. A 503 proves the
	// create was refused only when the body is the API's own
	// google.rpc.Status for it; a proxy's 503 may follow a forwarded create.
	e.NotSent = status < 500 || (status == http.StatusServiceUnavailable && googleUnavailable(e.Status))
	return nil, e
}

// Get polls one interaction. Failures that a later poll may not repeat
// (transport, 5xx, 429) are Temporary.
func (c *Client) Get(ctx context.Context, id string) (*Interaction, error) {
	if err := CheckHandle(id); err != nil {
		return nil, &Error{Op: "poll", NotSent: true, Msg: err.Error(), Err: err}
	}
	status, hdr, resp, sent, err := c.do(ctx, http.MethodGet, "/interactions/"+id, nil)
	if errors.Is(err, errTooLarge) {
		return nil, &Error{Op: "poll", TooLarge: true, Msg: fmt.Sprintf("poll: the provider's answer for interaction %s is larger than %d bytes and was refused", id, MaxResponseBytes), Err: err}
	}
	if err != nil {
		return nil, &Error{Op: "poll", NotSent: !sent, Temporary: true, Msg: transportMsg("poll", err, sent), Err: err}
	}
	if status >= 200 && status < 300 {
		it, perr := ParseInteraction(resp)
		if perr != nil {
			return nil, &Error{Op: "poll", HTTPStatus: status, Temporary: true, Msg: "unusable poll response: " + perr.Error(), Err: perr}
		}
		if it.ID != id {
			return nil, &Error{Op: "poll", HTTPStatus: status, Msg: fmt.Sprintf("the provider answered a poll of %s with interaction %s", id, truncateForMsg(it.ID))}
		}
		return it, nil
	}
	e := c.statusError("poll", status, hdr, resp)
	if status >= 500 {
		e.Temporary = true
	}
	return nil, e
}

// Cancel asks the provider to cancel. Success means only "asked": the
// cancellation is confirmed by a later poll showing status cancelled.
func (c *Client) Cancel(ctx context.Context, id string) error {
	if err := CheckHandle(id); err != nil {
		return &Error{Op: "cancel", NotSent: true, Msg: err.Error(), Err: err}
	}
	// No body, as the SDKs send it (CancelInteractionByIDRequest has none).
	status, hdr, resp, sent, err := c.do(ctx, http.MethodPost, "/interactions/"+id+"/cancel", nil)
	if err != nil {
		return &Error{Op: "cancel", NotSent: !sent, Temporary: true, Msg: transportMsg("cancel", err, sent), Err: err}
	}
	if status >= 200 && status < 300 {
		return nil
	}
	e := c.statusError("cancel", status, hdr, resp)
	if status >= 500 {
		e.Temporary = true
	}
	return e
}

func transportMsg(op string, err error, sent bool) string {
	var ue *url.Error
	inner := err
	if errors.As(err, &ue) {
		inner = ue.Err
	}
	if errors.Is(err, context.DeadlineExceeded) {
		inner = errors.New("request timed out")
	}
	if sent {
		return fmt.Sprintf("%s: connection failed after the request was sent: %v", op, inner)
	}
	return fmt.Sprintf("%s: could not reach the provider: %v", op, inner)
}

func (c *Client) do(ctx context.Context, method, path string, body []byte) (status int, hdr http.Header, resp []byte, sent bool, err error) {
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// sent turns true once a connection exists: from then on any byte of
	// the request may have reached the server.
	trace := &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) { sent = true }}
	ctx = httptrace.WithClientTrace(ctx, trace)
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base()+path, rd)
	if err != nil {
		return 0, nil, nil, false, err
	}
	req.Header.Set("x-goog-api-key", c.APIKey)
	req.Header.Set("Api-Revision", APIRevision)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "clawkit-research")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	r, err := c.httpClient().Do(req)
	if err != nil {
		return 0, nil, nil, sent, err
	}
	defer r.Body.Close()
	data, err := io.ReadAll(io.LimitReader(r.Body, MaxResponseBytes+1))
	if err != nil {
		return 0, nil, nil, true, err
	}
	if len(data) > MaxResponseBytes {
		return 0, nil, nil, true, errTooLarge
	}
	// The caller's own key, echoed anywhere in the answer (an error
	// message, an errors[] entry, a status), is removed before anything
	// reads the body: no message, job record, result.json or log can
	// carry it (docs/research.md, "Secrets in provider text").
	return r.StatusCode, r.Header, redact.Bytes(data, c.APIKey), true, nil
}

// receiptID finds the interaction id of a create answer whose other
// fields do not decode: a JSON object with a valid string "id".
func receiptID(body []byte) (string, bool) {
	var v struct {
		ID json.RawMessage `json:"id"`
	}
	var id string
	if json.Unmarshal(body, &v) != nil || json.Unmarshal(v.ID, &id) != nil || CheckHandle(id) != nil {
		return "", false
	}
	return id, true
}

// receiptStatus is the status of such an answer when it is a string
// ("" otherwise: not finished).
func receiptStatus(body []byte) string {
	var v struct {
		Status json.RawMessage `json:"status"`
	}
	var st string
	if json.Unmarshal(body, &v) == nil {
		_ = json.Unmarshal(v.Status, &st)
	}
	return st
}

var errTooLarge = fmt.Errorf("response larger than %d bytes", MaxResponseBytes)

func (c *Client) statusError(op string, status int, hdr http.Header, body []byte) *Error {
	e := &Error{Op: op, HTTPStatus: status}
	var env struct {
		Error *RPCStatus `json:"error"`
	}
	if json.Unmarshal(body, &env) == nil && env.Error != nil {
		e.Status = env.Error
	}
	detail := http.StatusText(status)
	if e.Status != nil && e.Status.Message != "" {
		detail = truncateForMsg(e.Status.Message)
		if len(detail) > maxErrMessageSize {
			detail = detail[:maxErrMessageSize]
		}
		if e.Status.Status != "" {
			detail = strings.ToValidUTF8(e.Status.Status, "?") + ": " + detail
		}
	}
	e.Msg = fmt.Sprintf("%s: provider answered HTTP %d (%s)", op, status, detail)
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		e.Auth = true
	case status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable:
		e.Temporary = true
		e.RetryAfter = parseRetryAfter(hdr.Get("Retry-After"), c.now())
	}
	return e
}

// googleUnavailable reports whether st is the google.rpc.Status the API
// sends with its own 503: code 503 and status UNAVAILABLE.
func googleUnavailable(st *RPCStatus) bool {
	return st != nil && st.Code == http.StatusServiceUnavailable && st.Status == "UNAVAILABLE"
}

func (c *Client) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// parseRetryAfter reads delta-seconds or an HTTP-date, capped at an hour;
// 0 means absent or unusable.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	var d time.Duration
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n < 0 {
			return 0
		}
		if n > int64(maxRetryAfter/time.Second) {
			return maxRetryAfter
		}
		d = time.Duration(n) * time.Second
	} else if t, err := http.ParseTime(v); err == nil {
		d = t.Sub(now)
		if d < 0 {
			d = 0
		}
	}
	if d > maxRetryAfter {
		d = maxRetryAfter
	}
	return d
}
