package oauth

import (
	"errors"
	"io"
	"net/http"

	"github.com/clawkit/clawkit/pkg/errs"
)

// maxAttempts bounds the sends of one request: the first, one with a
// DPoP server's nonce, one after a renewal, one after a step-up or a new
// authorization.
const maxAttempts = 4

// AuthError carries an authorization failure out of RoundTrip (which
// http.Client wraps in a *url.Error): the MCP HTTP client reports Err as
// it is, code and exit code included.
type AuthError struct{ Err error }

func (e *AuthError) Error() string { return e.Err.Error() }
func (e *AuthError) Unwrap() error { return e.Err }

// Wrap returns a RoundTripper that sends base's requests with the
// profile's Authorization header and, on a 401 or 403, lets Retry decide
// whether to send them again (a request whose body cannot be replayed is
// not resent).
func (a *Authorizer) Wrap(base http.RoundTripper) http.RoundTripper {
	return &transport{base: base, a: a}
}

type transport struct {
	base http.RoundTripper
	a    *Authorizer
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	for attempt := 1; ; attempt++ {
		r := req.Clone(ctx)
		if attempt > 1 && req.Body != nil && req.Body != http.NoBody {
			if req.GetBody == nil {
				return nil, &AuthError{Err: errs.Failed(CodeTokenFailed, "the request cannot be sent again with the renewed token")}
			}
			b, err := req.GetBody()
			if err != nil {
				return nil, err
			}
			r.Body = b
		}
		sent, err := t.a.authorize(ctx, r)
		if err != nil {
			return nil, &AuthError{Err: err}
		}
		resp, err := t.base.RoundTrip(r)
		if err == nil {
			t.a.noteNonce(resp.Header)
		}
		if err != nil || (resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden) || attempt >= maxAttempts {
			return resp, err
		}
		if req.Body != nil && req.Body != http.NoBody && req.GetBody == nil {
			return resp, nil
		}
		retry, rerr := t.a.Retry(ctx, resp.StatusCode, sent, resp.Header.Values("WWW-Authenticate"))
		if rerr != nil {
			drainClose(resp.Body)
			return nil, &AuthError{Err: rerr}
		}
		if !retry {
			return resp, nil
		}
		drainClose(resp.Body)
	}
}

func drainClose(b io.ReadCloser) {
	_, _ = io.Copy(io.Discard, io.LimitReader(b, 64<<10))
	_ = b.Close()
}

// AsAuthError finds an AuthError in err's chain.
func AsAuthError(err error) (error, bool) {
	var ae *AuthError
	if errors.As(err, &ae) {
		return ae.Err, true
	}
	return nil, false
}
