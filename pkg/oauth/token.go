package oauth

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"io"
	"math/big"
	"net/url"
	"strings"
	"time"

	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/fsx"
	"github.com/clawkit/clawkit/pkg/termsafe"
)

// Token endpoint authentication methods (RFC 8414 §2, RFC 7523).
const (
	AuthNone          = "none"
	AuthBasic         = "client_secret_basic"
	AuthPost          = "client_secret_post"
	AuthPrivateKeyJWT = "private_key_jwt"
)

// Grants clawkit uses.
const (
	GrantAuthorizationCode = "authorization_code"
	GrantClientCredentials = "client_credentials"
	GrantRefreshToken      = "refresh_token"
	// GrantJWTBearer exchanges a workload identity token (a CI provider's
	// OIDC token) for an access token (RFC 7523 §2.1).
	GrantJWTBearer = "urn:ietf:params:oauth:grant-type:jwt-bearer"
)

// ClientAuth is how the client identifies itself at the token endpoint.
type ClientAuth struct {
	ClientID     string
	ClientSecret string
	Method       string
	// PrivateKey (PEM) and SigningAlg (ES256, RS256) for private_key_jwt.
	PrivateKey string
	SigningAlg string
	// Dynamic marks a client registered dynamically by this login.
	Dynamic bool
	// DPoPKey (PEM), when set, signs a DPoP proof for every token
	// request (RFC 9449).
	DPoPKey string
}

// Token is a token endpoint's answer.
type Token struct {
	AccessToken  string
	RefreshToken string
	ExpiresAt    time.Time
	Scope        string
	// Type is the token_type: Bearer, or DPoP for a DPoP-bound token.
	Type string
}

type tokenJSON struct {
	AccessToken  string          `json:"access_token"`
	TokenType    string          `json:"token_type"`
	RefreshToken string          `json:"refresh_token"`
	ExpiresIn    json.RawMessage `json:"expires_in"`
	Scope        string          `json:"scope"`
	Error        string          `json:"error"`
	ErrorDesc    string          `json:"error_description"`
}

// DecodeToken decodes a token endpoint response body (RFC 6749 §5.1, §5.2)
// received at now. Only a Bearer token is accepted.
func DecodeToken(status int, b []byte, now time.Time) (*Token, error) {
	return decodeToken(status, b, now, false)
}

// decodeToken is DecodeToken; with dpop (the request carried a DPoP
// proof) a DPoP token is accepted too.
func decodeToken(status int, b []byte, now time.Time, dpop bool) (*Token, error) {
	var t tokenJSON
	if err := decodeObject(b, "token response", "the token endpoint", &t); err != nil {
		if status != 200 {
			return nil, errs.Failed(CodeTokenFailed, "the token endpoint answered HTTP %d: %s", status, snippet(b))
		}
		return nil, err
	}
	if t.Error != "" || status != 200 {
		msg := errorText(t.Error, t.ErrorDesc, b)
		return nil, errs.Failed(CodeTokenFailed, "the token endpoint refused (HTTP %d): %s", status, msg).
			WithHint("log in again with 'clawkit mcp login URL'")
	}
	if t.AccessToken == "" {
		return nil, errs.Failed(CodeTokenFailed, "the token response has no access_token")
	}
	typ := "Bearer"
	if dpop && strings.EqualFold(t.TokenType, SchemeDPoP) {
		typ = SchemeDPoP
	} else if !strings.EqualFold(t.TokenType, "Bearer") {
		return nil, errs.Refused(CodeNotBearer, "the token endpoint issued a token of type %q, not Bearer", termsafe.Text(t.TokenType)).
			WithHint("clawkit sends only Bearer tokens (RFC 6750); the authorization server must issue one")
	}
	tok := &Token{AccessToken: t.AccessToken, RefreshToken: t.RefreshToken, Scope: t.Scope, Type: typ}
	if len(t.ExpiresIn) > 0 && string(t.ExpiresIn) != "null" {
		var secs float64
		if err := json.Unmarshal(t.ExpiresIn, &secs); err != nil {
			// Some servers send the number as a string.
			var s string
			if json.Unmarshal(t.ExpiresIn, &s) != nil {
				return nil, errs.Failed(CodeTokenFailed, "the token response's expires_in is not a number")
			}
			if err := json.Unmarshal([]byte(s), &secs); err != nil {
				return nil, errs.Failed(CodeTokenFailed, "the token response's expires_in is not a number")
			}
		}
		if secs > 0 && secs < 10*365*24*3600 {
			tok.ExpiresAt = now.Add(time.Duration(secs * float64(time.Second))).UTC().Truncate(time.Second)
		}
	}
	return tok, nil
}

// token posts form to the token endpoint with the client's credentials.
func (c *Client) token(ctx context.Context, endpoint, issuer string, ca ClientAuth, form url.Values) (*Token, error) {
	var basic *[2]string
	switch ca.Method {
	case AuthBasic:
		basic = &[2]string{ca.ClientID, ca.ClientSecret}
	case AuthPost:
		form.Set("client_id", ca.ClientID)
		form.Set("client_secret", ca.ClientSecret)
	case AuthPrivateKeyJWT:
		a, err := ClientAssertion(ca, issuer, c.now())
		if err != nil {
			return nil, err
		}
		form.Set("client_id", ca.ClientID)
		form.Set("client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:jwt-bearer")
		form.Set("client_assertion", a)
	default:
		form.Set("client_id", ca.ClientID)
	}
	var nonce string
	for attempt := 1; ; attempt++ {
		var dpop string
		if ca.DPoPKey != "" {
			p, err := DPoPProof(ca.DPoPKey, "POST", endpoint, nonce, "", c.now())
			if err != nil {
				return nil, err
			}
			dpop = p
		}
		r, err := c.postForm(ctx, "token endpoint", endpoint, form, basic, dpop)
		if err != nil {
			return nil, err
		}
		// A server that wants a nonce in the proof answers 400
		// use_dpop_nonce with one (RFC 9449 §8): the request is sent once
		// more with it.
		if dpop != "" && attempt == 1 && r.Status == 400 {
			if n, ok := ParseDPoPNonce(r.Header.Get("DPoP-Nonce")); ok {
				var e struct {
					Error string `json:"error"`
				}
				if decodeObject(r.Body, "token response", "the token endpoint", &e) == nil && isNonceChallenge(e.Error) {
					nonce = n
					continue
				}
			}
		}
		return decodeToken(r.Status, r.Body, c.now(), dpop != "")
	}
}

// Exchange trades an authorization code for tokens (RFC 6749 §4.1.3 with
// the PKCE verifier and the RFC 8707 resource).
func (c *Client) Exchange(ctx context.Context, as *AuthServer, ca ClientAuth, code, verifier, redirectURI, resource string) (*Token, error) {
	form := url.Values{"grant_type": {GrantAuthorizationCode}, "code": {code}, "redirect_uri": {redirectURI}, "code_verifier": {verifier}}
	if resource != "" {
		form.Set("resource", resource)
	}
	return c.token(ctx, as.TokenEndpoint, as.Issuer, ca, form)
}

// Refresh uses a refresh token (RFC 6749 §6).
func (c *Client) Refresh(ctx context.Context, endpoint, issuer string, ca ClientAuth, refresh, resource string) (*Token, error) {
	form := url.Values{"grant_type": {GrantRefreshToken}, "refresh_token": {refresh}}
	if resource != "" {
		form.Set("resource", resource)
	}
	return c.token(ctx, endpoint, issuer, ca, form)
}

// ClientCredentials asks for a token for the client itself (RFC 6749 §4.4).
func (c *Client) ClientCredentials(ctx context.Context, endpoint, issuer string, ca ClientAuth, scopes []string, resource string) (*Token, error) {
	form := url.Values{"grant_type": {GrantClientCredentials}}
	if len(scopes) > 0 {
		form.Set("scope", strings.Join(scopes, " "))
	}
	if resource != "" {
		form.Set("resource", resource)
	}
	return c.token(ctx, endpoint, issuer, ca, form)
}

// ReadPrivateKey reads a PEM private key from the file path, or from r
// when it is set (at most 64 KiB), and checks it (ParsePrivateKey).
func ReadPrivateKey(path string, r io.Reader, alg string) (pemText, keyAlg string, err error) {
	var b []byte
	if r != nil {
		b, err = io.ReadAll(io.LimitReader(r, 64<<10))
	} else {
		b, err = fsx.ReadRegular(path, 64<<10)
	}
	if err != nil {
		return "", "", errs.Usage(CodeInvalidKey, "cannot read the private key: %v", termsafe.Text(err.Error())).
			WithHint("pass a PEM file with --private-key FILE, or pipe it with --private-key-stdin")
	}
	if _, keyAlg, err = ParsePrivateKey(string(b), alg); err != nil {
		return "", "", err
	}
	return string(b), keyAlg, nil
}

// JWTBearer exchanges a workload identity token (RFC 7523 §2.1).
func (c *Client) JWTBearer(ctx context.Context, endpoint, issuer string, ca ClientAuth, assertion string, scopes []string, resource string) (*Token, error) {
	form := url.Values{"grant_type": {GrantJWTBearer}, "assertion": {assertion}}
	if len(scopes) > 0 {
		form.Set("scope", strings.Join(scopes, " "))
	}
	if resource != "" {
		form.Set("resource", resource)
	}
	return c.token(ctx, endpoint, issuer, ca, form)
}

// ParsePrivateKey reads a PEM private key (PKCS#8, SEC 1 or PKCS#1) and the
// JWS algorithm it signs with; alg, when set, must agree with the key.
func ParsePrivateKey(pemText, alg string) (crypto.Signer, string, error) {
	bad := func(format string, args ...any) error {
		return errs.Usage(CodeInvalidKey, format, args...).
			WithHint("pass a PEM private key (EC P-256 for ES256, RSA for RS256) with --private-key FILE or --private-key-stdin")
	}
	block, _ := pem.Decode([]byte(pemText))
	if block == nil {
		return nil, "", bad("the private key is not PEM")
	}
	var key any
	var err error
	switch block.Type {
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	default:
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	}
	if err != nil {
		return nil, "", bad("the private key cannot be read (%s)", termsafe.Text(block.Type))
	}
	var want string
	var signer crypto.Signer
	switch k := key.(type) {
	case *ecdsa.PrivateKey:
		if k.Curve.Params().BitSize != 256 {
			return nil, "", bad("the EC private key is not on P-256 (ES256)")
		}
		want, signer = "ES256", k
	case *rsa.PrivateKey:
		if k.N.BitLen() < 2048 {
			return nil, "", bad("the RSA private key has fewer than 2048 bits")
		}
		want, signer = "RS256", k
	default:
		return nil, "", bad("the private key is neither EC P-256 nor RSA")
	}
	if alg != "" && !strings.EqualFold(alg, want) {
		return nil, "", bad("the key signs %s, not %s", want, termsafe.Text(alg))
	}
	return signer, want, nil
}

var b64 = base64.RawURLEncoding

// ClientAssertion signs an RFC 7523 client assertion: iss and sub the
// client id, aud the authorization server's issuer, five minutes long.
func ClientAssertion(ca ClientAuth, issuer string, now time.Time) (string, error) {
	signer, alg, err := ParsePrivateKey(ca.PrivateKey, ca.SigningAlg)
	if err != nil {
		return "", err
	}
	jti := make([]byte, 16)
	if _, err := rand.Read(jti); err != nil {
		return "", err
	}
	hdr, _ := json.Marshal(map[string]string{"alg": alg, "typ": "JWT"})
	claims, _ := json.Marshal(map[string]any{
		"iss": ca.ClientID, "sub": ca.ClientID, "aud": issuer,
		"iat": now.Unix(), "exp": now.Add(5 * time.Minute).Unix(), "jti": b64.EncodeToString(jti),
	})
	input := b64.EncodeToString(hdr) + "." + b64.EncodeToString(claims)
	sum := sha256.Sum256([]byte(input))
	var sig []byte
	switch k := signer.(type) {
	case *ecdsa.PrivateKey:
		r, s, err := ecdsa.Sign(rand.Reader, k, sum[:])
		if err != nil {
			return "", err
		}
		sig = make([]byte, 64) // JWS: R and S as 32-byte big-endian
		fill(sig[:32], r)
		fill(sig[32:], s)
	case *rsa.PrivateKey:
		sig, err = rsa.SignPKCS1v15(rand.Reader, k, crypto.SHA256, sum[:])
		if err != nil {
			return "", err
		}
	}
	return input + "." + b64.EncodeToString(sig), nil
}

func fill(dst []byte, n *big.Int) { n.FillBytes(dst) }

// errorText is an OAuth error answer as a user reads it: its error code
// and description, escaped, or the start of the body when it has neither
// (RFC 6749 section 5.2).
func errorText(code, desc string, body []byte) string {
	msg := termsafe.Text(code)
	if desc != "" {
		msg += ": " + termsafe.Text(desc)
	}
	if msg == "" {
		msg = snippet(body)
	}
	return msg
}
