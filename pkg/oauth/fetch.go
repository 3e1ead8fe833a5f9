package oauth

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/fsx"
	"github.com/clawkit/clawkit/pkg/termsafe"
)

// Bounds on what an authorization or resource server may send: metadata
// and token responses are a few kilobytes; a server that sends more, or
// takes longer, is refused rather than waited on (docs/mcp.md, "Login").
const (
	DefaultMaxBytes = 256 << 10
	DefaultTimeout  = 30 * time.Second
)

// Client makes the HTTP requests of discovery, registration and token
// exchange, each bounded in size and time.
type Client struct {
	HTTP     *http.Client
	MaxBytes int64
	Timeout  time.Duration
	// Now is the clock (tests); nil is time.Now.
	Now func() time.Time
}

func (c *Client) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

func (c *Client) maxBytes() int64 {
	if c.MaxBytes > 0 {
		return c.MaxBytes
	}
	return DefaultMaxBytes
}

func (c *Client) timeout() time.Duration {
	if c.Timeout > 0 {
		return c.Timeout
	}
	return DefaultTimeout
}

func (c *Client) httpClient() *http.Client {
	base := c.HTTP
	if base == nil {
		base = http.DefaultClient
	}
	hc := *base
	// Redirects are not followed, as by the MCP HTTP client (docs/mcp.md,
	// "Over HTTP"): a token request's body carries the client's
	// credentials, and a 307 would send them where the metadata did not
	// point. A redirected metadata URL counts as absent.
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &hc
}

// IsLoopback reports whether host (no port) names this machine.
func IsLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// CheckEndpoint refuses a URL that is neither https nor http on a loopback
// address (OAuth 2.1 §1.5: every endpoint but a native app's loopback
// redirect is https), or that carries user info or a fragment.
func CheckEndpoint(raw, what string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return errs.Failed(CodeInvalidMetadata, "the %s %q is not an absolute URL", what, termsafe.Text(raw))
	}
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && IsLoopback(u.Hostname()):
	default:
		return errs.Refused(CodeInsecureEndpoint, "the %s %s is not https", what, termsafe.Text(raw)).
			WithHint("OAuth endpoints must use https (plain http is allowed only on 127.0.0.1, ::1 or localhost)")
	}
	if u.User != nil || u.Fragment != "" {
		return errs.Failed(CodeInvalidMetadata, "the %s %s carries user info or a fragment", what, termsafe.Text(raw))
	}
	return nil
}

// response is a bounded, fully read HTTP response.
type response struct {
	Status int
	Header http.Header
	Body   []byte
	URL    string
}

// do sends req (built by mk under a per-request deadline) and reads the
// whole body within MaxBytes.
func (c *Client) do(ctx context.Context, what string, mk func(ctx context.Context) (*http.Request, error)) (*response, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout())
	defer cancel()
	req, err := mk(ctx)
	if err != nil {
		return nil, err
	}
	if err := CheckEndpoint(req.URL.String(), what); err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.httpClient().Do(req)
	if err != nil {
		var e *errs.Error
		if errors.As(err, &e) {
			return nil, e
		}
		if ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, slow(what, req.URL.String(), c.timeout())
		}
		return nil, errs.Unavailable(CodeDiscoveryFailed, "cannot reach the %s %s: %v", what, termsafe.Text(req.URL.String()), termsafe.Text(err.Error()))
	}
	defer fsx.CloseRead(resp.Body)
	max := c.maxBytes()
	body, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	if err != nil {
		if ctx.Err() != nil {
			return nil, slow(what, req.URL.String(), c.timeout())
		}
		return nil, errs.Unavailable(CodeDiscoveryFailed, "reading the %s %s: %v", what, termsafe.Text(req.URL.String()), termsafe.Text(err.Error()))
	}
	if int64(len(body)) > max {
		return nil, errs.Refused(CodeResponseTooLarge, "the %s %s sent more than %d bytes", what, termsafe.Text(req.URL.String()), max).
			WithHint("metadata and token responses are a few kilobytes; check the server URL")
	}
	return &response{Status: resp.StatusCode, Header: resp.Header, Body: body, URL: resp.Request.URL.String()}, nil
}

func slow(what, u string, d time.Duration) error {
	return errs.Unavailable(CodeSlowResponse, "the %s %s did not answer within %s", what, termsafe.Text(u), d).
		WithHint("try again later; a server that does not answer is not waited on")
}

// get fetches u.
func (c *Client) get(ctx context.Context, what, u string) (*response, error) {
	return c.do(ctx, what, func(ctx context.Context) (*http.Request, error) {
		return http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	})
}

// postForm posts a form to u; basic, when set, is the client's HTTP Basic
// credentials (RFC 6749 §2.3.1).
// dpop, when set, is the request's DPoP proof (RFC 9449).
func (c *Client) postForm(ctx context.Context, what, u string, form url.Values, basic *[2]string, dpop string) (*response, error) {
	return c.do(ctx, what, func(ctx context.Context) (*http.Request, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader(form.Encode()))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if basic != nil {
			req.SetBasicAuth(url.QueryEscape(basic[0]), url.QueryEscape(basic[1]))
		}
		if dpop != "" {
			req.Header.Set("DPoP", dpop)
		}
		return req, nil
	})
}

// postJSON posts a JSON document to u.
func (c *Client) postJSON(ctx context.Context, what, u string, body []byte) (*response, error) {
	return c.do(ctx, what, func(ctx context.Context) (*http.Request, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader(string(body)))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		return req, nil
	})
}

// snippet is a short, escaped excerpt of a server's body for a message.
func snippet(b []byte) string {
	const n = 200
	s := string(b)
	if len(s) > n {
		s = s[:n] + "…"
	}
	return termsafe.Text(strings.TrimSpace(s))
}
