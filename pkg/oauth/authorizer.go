// Package oauth is the OAuth 2.1 client of the MCP authorization spec:
// discovery, registration, authorization and renewal of the tokens an MCP
// server over HTTP asks for (docs/mcp.md, "Login").
package oauth

import (
	"context"
	"net/http"
	"strings"
	"sync"

	"github.com/clawkit/clawkit/pkg/auth"
	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/termsafe"
)

// Authorizer supplies the Authorization header of one MCP server's
// requests from its OAuth profile and reacts to the server's refusals:
// a 401 invalid_token renews the token once, a 403 insufficient_scope
// starts a step-up authorization with the union of scopes when a browser
// is available (else fails naming the scope). Both are bounded: one
// renewal per token, maxStepUps step-ups per process (docs/mcp.md,
// "Login"). It is safe for concurrent use.
type Authorizer struct {
	Client *Client
	// Keep writes renewed and new tokens through the home's owner.
	Keep Keeper
	// Open is the browser for a step-up; nil means none is available.
	Open   Opener
	Prompt interface{ Write([]byte) (int, error) }

	mu       sync.Mutex
	profile  auth.Profile
	nonce    string // the MCP server's last DPoP-Nonce
	nonceFor string // the nonce a use_dpop_nonce retry already sent
	renewed  string // the access token a 401 already renewed away from
	stepUps  int
	lastStep string
}

const maxStepUps = 2

// NewAuthorizer starts from profile p, writing through k.
func NewAuthorizer(c *Client, k Keeper, p auth.Profile) *Authorizer {
	return &Authorizer{Client: c, Keep: k, profile: p}
}

// Secrets are the values to redact from anything printed.
func (a *Authorizer) Secrets() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.profile.Secrets()
}

// authorize sets req's Authorization header ("Bearer TOKEN", or "DPoP
// TOKEN" with a fresh DPoP proof for a DPoP-bound token), renewing a
// token about to expire first. It answers the access token it sent.
func (a *Authorizer) authorize(ctx context.Context, req *http.Request) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	p, err := a.Client.Fresh(ctx, a.Keep, a.profile)
	if err != nil {
		return "", err
	}
	a.profile = p
	if strings.ContainsAny(p.Secret, "\r\n\x00") {
		return "", errs.Failed(CodeTokenFailed, "the access token of profile %s holds a line break or NUL", p.ID)
	}
	if o := p.OAuth; o != nil && o.TokenType == SchemeDPoP {
		proof, err := DPoPProof(o.DPoPKey, req.Method, req.URL.String(), a.nonce, p.Secret, a.Client.now())
		if err != nil {
			return "", err
		}
		req.Header.Set("Authorization", SchemeDPoP+" "+p.Secret)
		req.Header.Set("DPoP", proof)
		return p.Secret, nil
	}
	req.Header.Set("Authorization", "Bearer "+p.Secret)
	return p.Secret, nil
}

// noteNonce keeps the DPoP-Nonce an MCP server sent, for the next proofs
// (RFC 9449 §9: a server may send a new one with any response).
func (a *Authorizer) noteNonce(h http.Header) {
	if n, ok := ParseDPoPNonce(h.Get("DPoP-Nonce")); ok {
		a.mu.Lock()
		a.nonce = n
		a.mu.Unlock()
	}
}

// Retry decides, after a response of status with these WWW-Authenticate
// values to a request sent with the access token sent, whether to send it
// again (authorized anew). It returns an error when the refusal is final.
func (a *Authorizer) Retry(ctx context.Context, status int, sent string, wwwAuth []string) (bool, error) {
	ch, _ := Bearer(ParseChallenges(wwwAuth))
	a.mu.Lock()
	defer a.mu.Unlock()
	switch status {
	case http.StatusUnauthorized:
		// A DPoP server that wants (another) nonce in the proof: once per
		// nonce it gave (RFC 9449 §9).
		if isNonceChallenge(ch.Params["error"]) && a.nonce != "" && a.nonce != a.nonceFor {
			a.nonceFor = a.nonce
			return true, nil
		}
		if a.profile.Secret != sent {
			return true, nil // another request already renewed it
		}
		o := a.profile.OAuth
		if a.renewed == sent {
			return false, errs.Failed(CodeNotLoggedIn, "%s refused the renewed OAuth token", termsafe.Text(o.Server)).
				WithHint("log in again with 'clawkit mcp login %s'", termsafe.Text(o.Server))
		}
		a.renewed = sent
		// The server may have moved to another authorization server
		// (SEP-2352): its metadata is read again, and a new issuer means a
		// new registration and authorization there, never the old
		// client's credentials.
		if d, err := a.Client.Discover(ctx, o.Server, &ch); err == nil && d.AS.Issuer != o.Issuer {
			return a.relogin(ctx, &ch, nil, Registration{ClientMetadataURL: cimdOf(o)}, "moved to authorization server "+termsafe.Text(d.AS.Issuer))
		}
		p, err := a.Keep.Renew(ctx, a.profile.ID, auth.Fingerprint(sent))
		if err != nil {
			var e *errs.Error
			if asErr(err, &e) && e.Code == CodeTokenFailed && a.profile.OAuth.Grant != GrantClientCredentials {
				// The refresh token was refused: authorize again.
				return a.relogin(ctx, &ch, a.profile.OAuth.Scopes, stepUpRegistration(a.profile.OAuth), "refused the refresh token")
			}
			return false, err
		}
		a.profile = p
		return true, nil
	case http.StatusForbidden:
		if ch.Params["error"] != "insufficient_scope" {
			return false, nil
		}
		need := Scopes(ch.Params["scope"])
		scopes := UnionScopes(a.profile.OAuth.Scopes, need)
		key := strings.Join(scopes, " ")
		if a.Open == nil {
			return false, errs.Refused(CodeInsufficientScope, "%s needs scope %s, which the OAuth token lacks", termsafe.Text(a.profile.OAuth.Server), termsafe.Text(ch.Params["scope"])).
				WithHint("log in again with it: clawkit mcp login %s --scope ... (each scope of: %s)", termsafe.Text(a.profile.OAuth.Server), termsafe.Text(key))
		}
		if a.stepUps >= maxStepUps || key == a.lastStep {
			return false, errs.Refused(CodeInsufficientScope, "%s still needs scope %s after %d step-up authorizations", termsafe.Text(a.profile.OAuth.Server), termsafe.Text(ch.Params["scope"]), a.stepUps).
				WithHint("the server grants less than it asks for; ask its operator")
		}
		a.stepUps++
		a.lastStep = key
		return a.relogin(ctx, &ch, scopes, stepUpRegistration(a.profile.OAuth), "")
	}
	return false, nil
}

// relogin authorizes again in the browser (once per process) and saves
// the result under the same profile id. why says what happened, for the
// refusal when there is no browser.
func (a *Authorizer) relogin(ctx context.Context, ch *Challenge, scopes []string, reg Registration, why string) (bool, error) {
	o := a.profile.OAuth
	// A jwt-bearer login's assertion (a workload identity token, or the
	// ID-JAG of a cross-app login) was used once and is not kept: a new
	// authorization needs a fresh one, which only the user can bring.
	if o.Grant == GrantJWTBearer {
		if o.IDPTokenEndpoint != "" {
			return false, expiredCrossApp(o, "needs a new authorization")
		}
		return false, errs.Failed(CodeNotLoggedIn, "%s needs a new authorization; a workload identity token is used once", termsafe.Text(o.Server)).
			WithHint("log in again with a fresh identity token: clawkit mcp login %s --grant jwt-bearer --client-id ID --assertion-stdin", termsafe.Text(o.Server))
	}
	if a.Open == nil && why != "" {
		return false, errs.Failed(CodeNotLoggedIn, "%s %s", termsafe.Text(o.Server), why).
			WithHint("log in again with 'clawkit mcp login %s'", termsafe.Text(o.Server))
	}
	if o.Grant == GrantClientCredentials {
		reg = Registration{ClientID: o.ClientID, ClientSecret: o.ClientSecret, PrivateKey: o.PrivateKey, SigningAlg: o.SigningAlg}
	}
	res, err := a.Client.Login(ctx, LoginOptions{ServerURL: o.Server, Challenge: ch, Scopes: scopes, Open: a.Open, Prompt: a.Prompt,
		Registration: reg, Grant: o.Grant})
	if err != nil {
		return false, err
	}
	p, err := a.Keep.Save(ctx, ProfileOf(a.profile.ID, res, a.Client.now()))
	if err != nil {
		return false, err
	}
	a.profile = p
	return true, nil
}

// cimdOf is the Client ID Metadata Document URL a profile's client id is,
// if it is one.
func cimdOf(o *auth.OAuth) string {
	if strings.HasPrefix(o.ClientID, "https://") {
		return o.ClientID
	}
	return ""
}

// clientIDForStepUp reuses a pre-registered or metadata-document client;
// a dynamically registered one registers again (its redirect URI was the
// previous login's port).
func stepUpRegistration(o *auth.OAuth) Registration {
	if o.DynamicClient {
		return Registration{}
	}
	return Registration{ClientID: o.ClientID, ClientSecret: o.ClientSecret}
}
