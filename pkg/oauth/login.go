package oauth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/fsx"
	"github.com/clawkit/clawkit/pkg/redact"
	"github.com/clawkit/clawkit/pkg/termsafe"
)

// probeVersion is the protocol version the probe's initialize asks for
// and its second request names (MCP-Protocol-Version).
const probeVersion = "2025-11-25"

// Probe asks serverURL, unauthenticated, what authorization it wants and
// returns the Bearer challenge of its 401 or 403 (nil when it refused
// without one). First an MCP initialize request; a server that lets
// initialize through without a token (the MCP conformance suite's
// scope-step-up scenario; the spec requires a token only from the
// requests after it) is asked a tools/list in the session it opened,
// whose refusal carries the scope the first authorization asks for
// (docs/mcp.md, "Login"). A server that answers both needs no login.
func (c *Client) Probe(ctx context.Context, serverURL string) (*Challenge, error) {
	if err := CheckEndpoint(serverURL, "MCP server URL"); err != nil {
		return nil, err
	}
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + probeVersion + `","capabilities":{},"clientInfo":{"name":"clawkit","version":"login"}}}`
	status, h, err := c.probe(ctx, serverURL, initialize, nil)
	if err != nil {
		return nil, err
	}
	if status/100 == 2 {
		next := http.Header{"Mcp-Protocol-Version": {probeVersion}}
		if id := h.Get("Mcp-Session-Id"); id != "" && !strings.ContainsAny(id, "\r\n\x00") {
			next.Set("Mcp-Session-Id", id)
		}
		status, h, err = c.probe(ctx, serverURL, `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`, next)
		if err != nil {
			return nil, err
		}
	}
	if status == http.StatusUnauthorized || status == http.StatusForbidden {
		if ch, ok := Bearer(ParseChallenges(h.Values("WWW-Authenticate"))); ok {
			return &ch, nil
		}
		return nil, nil
	}
	if status/100 == 2 {
		return nil, errs.Failed(CodeNoAuthRequired, "%s answered without asking for authorization", termsafe.Text(serverURL)).
			WithHint("no login is needed: use 'clawkit mcp call --url %s' directly", termsafe.Text(serverURL))
	}
	return nil, nil
}

// probe POSTs one JSON-RPC message as the MCP HTTP transport does
// (accepting JSON or an event stream) and answers the status and headers;
// the body is not read (an event stream could stay open), only closed.
func (c *Client) probe(ctx context.Context, serverURL, body string, extra http.Header) (int, http.Header, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, serverURL, strings.NewReader(body))
	if err != nil {
		return 0, nil, errs.Usage(errs.CodeInvalidParams, "invalid MCP server URL %s", termsafe.Text(serverURL))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range extra {
		req.Header[k] = v
	}
	resp, err := c.httpClient().Do(req)
	if err != nil {
		if ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return 0, nil, slow("MCP server", serverURL, c.timeout())
		}
		return 0, nil, errs.Unavailable(CodeDiscoveryFailed, "cannot reach the MCP server %s: %v", termsafe.Text(serverURL), termsafe.Text(err.Error()))
	}
	fsx.CloseRead(resp.Body) // the status and the challenge are the answer
	return resp.StatusCode, resp.Header, nil
}

// LoginOptions is one login's request.
type LoginOptions struct {
	ServerURL string
	// Challenge is the 401's Bearer challenge, if any (Probe).
	Challenge    *Challenge
	Registration Registration
	// Grant is GrantAuthorizationCode (the default),
	// GrantClientCredentials or GrantJWTBearer.
	Grant string
	// CrossApp, with GrantJWTBearer, makes the assertion an ID-JAG the
	// enterprise IdP issues for its ID token (cross-app access, idjag.go)
	// instead of Registration.Assertion.
	CrossApp *CrossApp
	// Scopes, when set, are requested as they are (a step-up's union).
	Scopes []string
	// Open opens the authorization URL; nil prints it to Prompt.
	Open Opener
	// Paste, when set, is read for the redirected URL (--no-browser).
	Paste io.Reader
	// Prompt receives the instructions for the user (stderr).
	Prompt  io.Writer
	Timeout time.Duration
}

// Result is a successful login.
type Result struct {
	Discovery *Discovery
	Client    ClientAuth
	Token     *Token
	Scopes    []string
	Grant     string
	// CrossApp is the IdP side of a cross-app login (no secret kept:
	// its token endpoint and client id), for the renewal's hint.
	CrossApp *CrossApp
}

// chooseScopes follows the MCP spec: the challenge's scope, else the PRM's
// scopes_supported, else none; offline_access is added when the
// authorization server lists it (to get a refresh token).
func chooseScopes(d *Discovery) []string {
	var s []string
	switch {
	case d.ChallengeScope != "":
		s = Scopes(d.ChallengeScope)
	case d.PRM != nil && len(d.PRM.ScopesSupported) > 0:
		s = slices.Clone(d.PRM.ScopesSupported)
	}
	if d.AS != nil && slices.Contains(d.AS.ScopesSupported, "offline_access") && !slices.Contains(s, "offline_access") {
		s = append(s, "offline_access")
	}
	return s
}

// UnionScopes merges scope lists keeping the first order.
func UnionScopes(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		for _, s := range l {
			if !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	return out
}

func randomString(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b64.EncodeToString(b)
}

// Login discovers, registers and obtains a token for opts.ServerURL.
func (c *Client) Login(ctx context.Context, opts LoginOptions) (*Result, error) {
	d, err := c.Discover(ctx, opts.ServerURL, opts.Challenge)
	if err != nil {
		return nil, err
	}
	scopes := opts.Scopes
	if scopes == nil {
		scopes = chooseScopes(d)
	}
	if opts.Grant == GrantClientCredentials {
		// No refresh token for a client that can always ask again.
		if opts.Scopes == nil {
			scopes = slices.DeleteFunc(scopes, func(s string) bool { return s == "offline_access" })
		}
		ca, err := c.Register(ctx, d.AS, opts.Registration, "", []string{GrantClientCredentials})
		if err == nil {
			err = withDPoP(d.AS, &ca)
		}
		if err != nil {
			return nil, err
		}
		tok, err := c.ClientCredentials(ctx, d.AS.TokenEndpoint, d.AS.Issuer, ca, scopes, d.Resource)
		if err != nil {
			return nil, err
		}
		return &Result{Discovery: d, Client: ca, Token: tok, Scopes: grantedScopes(tok, scopes), Grant: GrantClientCredentials}, nil
	}
	if opts.Grant == GrantJWTBearer {
		scopes = slices.DeleteFunc(scopes, func(s string) bool { return s == "offline_access" })
		ca, err := c.Register(ctx, d.AS, Registration{ClientID: opts.Registration.ClientID, ClientSecret: opts.Registration.ClientSecret}, "", []string{GrantJWTBearer})
		if err == nil {
			err = withDPoP(d.AS, &ca)
		}
		if err != nil {
			return nil, err
		}
		assertion := opts.Registration.Assertion
		var idp *CrossApp
		if x := opts.CrossApp; x != nil {
			if x.IDPTokenEndpoint == "" {
				if x.IDPTokenEndpoint, err = c.IDPTokenEndpointOf(ctx, x.IDPIssuer); err != nil {
					return nil, err
				}
			}
			// The ID-JAG names the authorization server as its audience and
			// the MCP server as its resource: the server takes it only for
			// itself, and for that resource.
			if assertion, err = c.RequestIDJAG(ctx, *x, d.AS.Issuer, d.Resource, scopes); err != nil {
				return nil, err
			}
			idp = &CrossApp{IDPTokenEndpoint: x.IDPTokenEndpoint, IDPClientID: x.IDPClientID}
		}
		tok, err := c.JWTBearer(ctx, d.AS.TokenEndpoint, d.AS.Issuer, ca, assertion, scopes, d.Resource)
		if err != nil {
			// The assertion and the client's secret are removed from a
			// refusal that echoes them.
			return nil, redactErr(err, assertion, ca.ClientSecret)
		}
		return &Result{Discovery: d, Client: ca, Token: tok, Scopes: grantedScopes(tok, scopes), Grant: GrantJWTBearer, CrossApp: idp}, nil
	}
	if !d.Legacy && !d.AS.supportsS256() {
		return nil, errs.Refused(CodePKCEUnsupported, "the authorization server %s does not advertise PKCE S256", termsafe.Text(d.AS.Issuer)).
			WithHint("the MCP authorization spec requires PKCE; the server must list S256 in code_challenge_methods_supported")
	}
	if d.AS.AuthorizationEndpoint == "" {
		return nil, errs.Failed(CodeInvalidMetadata, "the authorization server %s has no authorization endpoint", termsafe.Text(d.AS.Issuer))
	}
	l, err := listenLoopback()
	if err != nil {
		return nil, err
	}
	defer l.close()
	redirect := l.redirectURI()
	ca, err := c.Register(ctx, d.AS, opts.Registration, redirect, []string{GrantAuthorizationCode, GrantRefreshToken})
	if err == nil {
		err = withDPoP(d.AS, &ca)
	}
	if err != nil {
		return nil, err
	}
	verifier := randomString(48)
	sum := sha256.Sum256([]byte(verifier))
	state := randomString(24)
	au, err := url.Parse(d.AS.AuthorizationEndpoint)
	if err != nil {
		return nil, errs.Failed(CodeInvalidMetadata, "the authorization endpoint is not a URL")
	}
	q := au.Query()
	q.Set("response_type", "code")
	q.Set("client_id", ca.ClientID)
	q.Set("redirect_uri", redirect)
	q.Set("code_challenge", b64.EncodeToString(sum[:]))
	q.Set("code_challenge_method", "S256")
	q.Set("state", state)
	if len(scopes) > 0 {
		q.Set("scope", strings.Join(scopes, " "))
	}
	q.Set("resource", d.Resource)
	au.RawQuery = q.Encode()
	authURL := au.String()

	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = 5 * time.Minute
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	opened := false
	if opts.Open != nil && opts.Paste == nil {
		ok, err := opts.Open(authURL)
		opened = ok && err == nil
	}
	// The instructions are best effort: a closed stderr must not stop a
	// login whose browser is already open.
	if opts.Prompt != nil {
		switch {
		case opened:
			_, _ = fmt.Fprintf(opts.Prompt, "clawkit: a browser was opened to log in to %s; if it did not open, visit:\n%s\n", termsafe.Text(d.AS.Issuer), authURL)
		case opts.Paste != nil:
			_, _ = fmt.Fprintf(opts.Prompt, "clawkit: open this URL in a browser, approve, then paste the address you are sent to here:\n%s\n", authURL)
		default:
			_, _ = fmt.Fprintf(opts.Prompt, "clawkit: open this URL in a browser on this machine to log in:\n%s\n", authURL)
		}
	}
	query, err := waitCallback(wctx, l, opts.Paste, timeout)
	if err != nil {
		return nil, err
	}
	code, err := checkCallback(query, state, d.AS)
	if err != nil {
		return nil, err
	}
	tok, err := c.Exchange(ctx, d.AS, ca, code, verifier, redirect, d.Resource)
	if err != nil {
		return nil, err
	}
	return &Result{Discovery: d, Client: ca, Token: tok, Scopes: grantedScopes(tok, scopes), Grant: GrantAuthorizationCode}, nil
}

// withDPoP gives ca a DPoP proof key of its own when the authorization
// server accepts ES256 proofs: the tokens it issues are then bound to that
// key (RFC 9449), useless to whoever copies them without it.
func withDPoP(as *AuthServer, ca *ClientAuth) error {
	if as == nil || !as.supportsDPoP() {
		return nil
	}
	k, err := NewDPoPKey()
	if err != nil {
		return errs.Failed(CodeTokenFailed, "cannot make a DPoP key: %v", err)
	}
	ca.DPoPKey = k
	return nil
}

// grantedScopes are the token's scopes when the server says, else those
// requested (RFC 6749 §5.1: scope is omitted when it is what was asked).
func grantedScopes(t *Token, asked []string) []string {
	if t.Scope != "" {
		return Scopes(t.Scope)
	}
	return asked
}

// redactErr removes secrets from err's message and hint when it is an
// errs.Error (redact.Values).
func redactErr(err error, secrets ...string) error {
	var e *errs.Error
	if !errors.As(err, &e) {
		return err
	}
	r := *e
	r.Message, r.Hint = redact.Values(e.Message, secrets...), redact.Values(e.Hint, secrets...)
	return &r
}
