package oauth

import (
	"context"
	"encoding/json"
	"io"
	"net/url"
	"strings"
	"time"

	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/fsx"
	"github.com/clawkit/clawkit/pkg/redact"
	"github.com/clawkit/clawkit/pkg/termsafe"
)

// Cross-app access, the MCP extension "enterprise-managed authorization"
// (docs/mcp.md, "Login"): the enterprise IdP's ID token is exchanged at
// the IdP's token endpoint (RFC 8693) for an Identity Assertion JWT
// Authorization Grant (ID-JAG) meant for the MCP server's authorization
// server, which takes it as an RFC 7523 JWT bearer grant.
const (
	GrantTokenExchange = "urn:ietf:params:oauth:grant-type:token-exchange"
	TokenTypeIDToken   = "urn:ietf:params:oauth:token-type:id_token"
	TokenTypeIDJAG     = "urn:ietf:params:oauth:token-type:id-jag"
)

// CrossApp is the enterprise IdP's side of a cross-app login.
type CrossApp struct {
	// IDPTokenEndpoint is the IdP's token endpoint (the exchange); when
	// empty, IDPIssuer's metadata names it (IDPTokenEndpointOf).
	IDPTokenEndpoint string
	IDPIssuer        string
	// IDPClientID and IDPClientSecret (empty: a public client) are
	// clawkit's client at the IdP.
	IDPClientID     string
	IDPClientSecret string
	// IDToken is the user's identity assertion from the IdP (a JWT).
	IDToken string
}

// idJAGJSON is an RFC 8693 §2.2 token exchange response (or §2.2.2
// error), the fields clawkit reads.
type idJAGJSON struct {
	AccessToken     string `json:"access_token"`
	IssuedTokenType string `json:"issued_token_type"`
	TokenType       string `json:"token_type"`
	Error           string `json:"error"`
	ErrorDesc       string `json:"error_description"`
}

// DecodeIDJAG decodes the IdP's answer to the token exchange: the ID-JAG
// (a JWT) when status is 200 and issued_token_type says it is one. An
// answer of another type is refused rather than sent on to the MCP
// authorization server: it would hand that server a credential not meant
// for it.
func DecodeIDJAG(status int, b []byte) (string, error) {
	var t idJAGJSON
	if err := decodeObject(b, "token exchange response", "the IdP's token endpoint", &t); err != nil {
		if status != 200 {
			return "", errs.Failed(CodeIDJAGFailed, "the IdP's token endpoint answered the token exchange with HTTP %d: %s", status, snippet(b)).
				WithHint("check --idp-token-url and --idp-client-id")
		}
		return "", err
	}
	if t.Error != "" || status != 200 {
		msg := errorText(t.Error, t.ErrorDesc, b)
		return "", errs.Failed(CodeIDJAGFailed, "the IdP refused the token exchange (HTTP %d): %s", status, msg).
			WithHint("the ID token may have expired or belong to another client: get a fresh one from the IdP (and check --idp-client-id) and log in again")
	}
	if t.IssuedTokenType != TokenTypeIDJAG {
		return "", errs.Refused(CodeNotIDJAG, "the IdP issued a token of type %q, not an ID-JAG (%s)", termsafe.Text(t.IssuedTokenType), TokenTypeIDJAG).
			WithHint("the IdP must support the Identity Assertion JWT Authorization Grant for this client; ask its administrator")
	}
	if strings.Count(t.AccessToken, ".") != 2 || strings.ContainsAny(t.AccessToken, " \t\r\n\x00") {
		return "", errs.Failed(CodeIDJAGFailed, "the IdP's ID-JAG is not a JWT")
	}
	return t.AccessToken, nil
}

// RequestIDJAG exchanges x's ID token at the IdP for an ID-JAG whose
// audience is the MCP authorization server's issuer and whose resource is
// the MCP server (RFC 8693 §2.1; the scopes, when any, are those the
// access token will carry). The IdP client authenticates with HTTP Basic
// when it has a secret (RFC 6749 §2.3.1), else names itself.
func (c *Client) RequestIDJAG(ctx context.Context, x CrossApp, audience, resource string, scopes []string) (string, error) {
	form := url.Values{
		"grant_type":           {GrantTokenExchange},
		"requested_token_type": {TokenTypeIDJAG},
		"subject_token":        {x.IDToken},
		"subject_token_type":   {TokenTypeIDToken},
		"audience":             {audience},
		"resource":             {resource},
	}
	if len(scopes) > 0 {
		form.Set("scope", strings.Join(scopes, " "))
	}
	var basic *[2]string
	if x.IDPClientSecret != "" {
		basic = &[2]string{x.IDPClientID, x.IDPClientSecret}
	} else {
		form.Set("client_id", x.IDPClientID)
	}
	r, err := c.postForm(ctx, "IdP token endpoint", x.IDPTokenEndpoint, form, basic, "")
	if err != nil {
		return "", err
	}
	// An IdP that echoes the ID token or its client's secret in a refusal
	// must not put them in clawkit's message (docs/design.md §2).
	return DecodeIDJAG(r.Status, redact.Bytes(r.Body, x.IDToken, x.IDPClientSecret))
}

// IDPTokenEndpointOf finds the token endpoint of the IdP whose issuer is
// given, from its metadata (RFC 8414 or OpenID Connect discovery, tried
// as for an authorization server; the document's issuer must be the one
// asked for).
func (c *Client) IDPTokenEndpointOf(ctx context.Context, issuer string) (string, error) {
	m, err := c.authServerMetadata(ctx, issuer, false)
	if err != nil {
		return "", err
	}
	if m == nil {
		return "", errs.Failed(CodeDiscoveryFailed, "the IdP %s publishes no OpenID Connect or OAuth metadata", termsafe.Text(issuer)).
			WithHint("check --idp-issuer, or give the token endpoint with --idp-token-url")
	}
	if m.TokenEndpoint == "" {
		return "", errs.Failed(CodeInvalidMetadata, "the IdP %s's metadata names no token endpoint", termsafe.Text(issuer)).
			WithHint("give the token endpoint with --idp-token-url")
	}
	if err := CheckEndpoint(m.TokenEndpoint, "IdP token endpoint"); err != nil {
		return "", err
	}
	return m.TokenEndpoint, nil
}

// IDTokenExpiry reads the exp claim of a JWT without verifying it (the
// IdP does that): ok is false when the token has no readable exp. A login
// checks it first, so that an expired ID token is named as such rather
// than as the IdP's invalid_grant.
func IDTokenExpiry(jwt string) (time.Time, bool) {
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 || len(parts[1]) > 64<<10 {
		return time.Time{}, false
	}
	b, err := b64.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return time.Time{}, false
	}
	var claims struct {
		Exp *float64 `json:"exp"`
	}
	if json.Unmarshal(b, &claims) != nil || claims.Exp == nil || *claims.Exp <= 0 || *claims.Exp > 1<<40 {
		return time.Time{}, false
	}
	return time.Unix(int64(*claims.Exp), 0).UTC(), true
}

// CheckIDToken refuses what cannot be an ID token to exchange: not a JWT
// (header.payload.signature), or one whose exp is past at now.
func CheckIDToken(jwt string, now time.Time) error {
	if strings.Count(jwt, ".") != 2 || strings.ContainsAny(jwt, " \t\r\n\x00") {
		return errs.Usage(CodeInvalidIDToken, "the ID token is not a JWT (header.payload.signature)").
			WithHint("give the ID token the enterprise IdP issued you with --id-token-file FILE or --id-token-stdin")
	}
	if exp, ok := IDTokenExpiry(jwt); ok && !now.Before(exp) {
		return errs.Usage(CodeInvalidIDToken, "the ID token expired at %s", exp.Format(time.RFC3339)).
			WithHint("log in to the enterprise IdP again for a fresh ID token, then run mcp login with it")
	}
	return nil
}

// maxIDToken bounds an ID token read from a file or stdin: real ones are a
// few kilobytes.
const maxIDToken = 64 << 10

// ReadIDTokenFile reads an ID token from path: a regular file (no link,
// no FIFO) that only its owner can read, as a secret's file must be
// (docs/design.md §5), at most 64 KiB; the first line is the token.
func ReadIDTokenFile(path string) (string, error) {
	bad := func(format string, args ...any) error {
		return errs.Usage(CodeInvalidIDToken, format, args...).
			WithHint("write the ID token to a file only you can read (chmod 600) and pass it with --id-token-file, or pipe it with --id-token-stdin")
	}
	f, err := fsx.OpenRegular(path)
	if err != nil {
		return "", bad("cannot read the ID token file: %v", termsafe.Text(err.Error()))
	}
	defer fsx.CloseRead(f)
	st, err := f.Stat()
	if err != nil {
		return "", bad("cannot read the ID token file: %v", termsafe.Text(err.Error()))
	}
	if st.Mode().Perm()&0o077 != 0 {
		return "", bad("the ID token file %s can be read by others (mode %04o)", termsafe.Text(path), st.Mode().Perm())
	}
	b, err := io.ReadAll(io.LimitReader(f, maxIDToken+1))
	if err != nil {
		return "", bad("cannot read the ID token file: %v", termsafe.Text(err.Error()))
	}
	if len(b) > maxIDToken {
		return "", bad("the ID token file %s is larger than %d bytes", termsafe.Text(path), maxIDToken)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	return strings.TrimSpace(line), nil
}
