package oauth

import (
	"context"
	"net/url"
	"strings"
	"time"

	"github.com/clawkit/clawkit/pkg/auth"
	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/termsafe"
)

// ProviderMCP is the provider of MCP OAuth profiles.
const ProviderMCP = "mcp"

// ProfileID is the default id of the profile for issuer and resource:
// "mcp-oauth:" + the resource's host + a fingerprint of the pair, so one
// profile exists per issuer and resource.
func ProfileID(issuer, resource string) string {
	host := "server"
	if u, err := url.Parse(resource); err == nil && u.Host != "" {
		host = strings.NewReplacer("[", "", "]", "", "/", "_").Replace(u.Host)
	}
	id := "mcp-oauth:" + host + ":" + auth.Fingerprint(issuer + "\n" + resource)[:8]
	if len(id) > 128 {
		id = id[:128]
	}
	return id
}

// Keeper writes a home's OAuth profiles through its owner: in a CLI,
// the owner router (a live gateway, else this process under the owner
// lock: pkg/ops' auth.oauth.* operations), so a gateway and a command
// never race on credentials.json (docs/mcp.md, "Login").
type Keeper interface {
	// Save stores p (its ID set), replacing any profile for the same
	// issuer and resource, and returns it as stored.
	Save(ctx context.Context, p auth.Profile) (auth.Profile, error)
	// Renew renews profile id's access token unless the stored one is no
	// longer the one whose account fingerprint is stale (RenewIn).
	Renew(ctx context.Context, id, stale string) (auth.Profile, error)
}

// ProfileOf is the profile a login's result is stored as (id empty:
// ProfileID).
func ProfileOf(id string, r *Result, now time.Time) auth.Profile {
	d := r.Discovery
	if id == "" {
		id = ProfileID(d.AS.Issuer, d.Resource)
	}
	p := auth.Profile{ID: id, Provider: ProviderMCP, Kind: auth.KindOAuth, Secret: r.Token.AccessToken, CreatedAt: now.UTC().Truncate(time.Second),
		OAuth: &auth.OAuth{Server: d.ServerURL, Issuer: d.AS.Issuer, Resource: d.Resource, Scopes: r.Scopes, ExpiresAt: r.Token.ExpiresAt, IssuedAt: now.UTC().Truncate(time.Second),
			RefreshToken: r.Token.RefreshToken, TokenEndpoint: d.AS.TokenEndpoint, Grant: r.Grant,
			ClientID: r.Client.ClientID, ClientSecret: r.Client.ClientSecret, AuthMethod: r.Client.Method,
			PrivateKey: r.Client.PrivateKey, SigningAlg: r.Client.SigningAlg, DynamicClient: r.Client.Dynamic,
			DPoPKey: r.Client.DPoPKey, TokenType: tokenType(r.Token)}}
	if x := r.CrossApp; x != nil {
		p.OAuth.IDPTokenEndpoint, p.OAuth.IDPClientID = x.IDPTokenEndpoint, x.IDPClientID
	}
	return p
}

// CheckProfile refuses what is not an MCP OAuth profile (a Keeper's
// Save, checked on each side of the owner's socket).
func CheckProfile(p auth.Profile) error {
	if err := auth.CheckNew(p.ID, p.Secret); err != nil {
		return err
	}
	if p.Provider != ProviderMCP || p.Kind != auth.KindOAuth || p.OAuth == nil || p.OAuth.Server == "" || p.OAuth.Issuer == "" || p.OAuth.Resource == "" {
		return errs.Usage(errs.CodeInvalidParams, "profile %s is not an MCP OAuth profile (provider mcp, kind oauth, with its server, issuer and resource)", termsafe.Text(p.ID))
	}
	for _, v := range []string{p.OAuth.RefreshToken, p.OAuth.ClientSecret} {
		if v != "" {
			if err := auth.CheckSecret(p.ID, v); err != nil {
				return err
			}
		}
	}
	return nil
}

// Put stores p in s, replacing any other profile for the same issuer and
// resource (one profile per pair).
func Put(s *auth.Store, p auth.Profile) error {
	for _, old := range s.List() {
		if old.OAuth != nil && old.ID != p.ID && old.OAuth.Issuer == p.OAuth.Issuer && old.OAuth.Resource == p.OAuth.Resource {
			_ = s.Remove(old.ID) // listed just above: it exists
		}
	}
	return s.Add(p, true)
}

// Stored refuses an id that names no OAuth profile in s.
func Stored(s *auth.Store, id string) error {
	if p, ok := s.Get(id); ok && p.OAuth != nil {
		return nil
	}
	return errs.Failed(CodeNotLoggedIn, "no OAuth profile %s", termsafe.Text(id)).
		WithHint("log in with 'clawkit mcp login URL'; 'clawkit auth list' shows the profiles")
}

// FindProfile returns the OAuth profile for serverURL: the named one when
// id is set, else the one logged in to that URL, else one whose resource
// covers it.
func FindProfile(home, id, serverURL string) (auth.Profile, bool, error) {
	s, err := auth.Load(home)
	if err != nil {
		return auth.Profile{}, false, err
	}
	if id != "" {
		if err := Stored(s, id); err != nil {
			return auth.Profile{}, false, err
		}
		p, _ := s.Get(id)
		return p, true, nil
	}
	var best auth.Profile
	found := false
	for _, p := range s.List() {
		if p.OAuth == nil {
			continue
		}
		if p.OAuth.Server == serverURL {
			return p, true, nil
		}
		if !found && resourceMatches(p.OAuth.Resource, serverURL) {
			best, found = p, true
		}
	}
	return best, found, nil
}

// LogoutIn removes from s the OAuth profile(s) for serverURL (or the
// named one), refusing when there is none.
func LogoutIn(s *auth.Store, id, serverURL string) ([]auth.Public, error) {
	var removed []auth.Public
	for _, p := range s.List() {
		if p.OAuth == nil {
			continue
		}
		if (id != "" && p.ID == id) || (id == "" && (p.OAuth.Server == serverURL || resourceMatches(p.OAuth.Resource, serverURL))) {
			removed = append(removed, p.Public())
			_ = s.Remove(p.ID) // listed just above: it exists
		}
	}
	if len(removed) == 0 {
		what := termsafe.Text(serverURL)
		if id != "" {
			what = termsafe.Text(id)
		}
		return nil, errs.Failed(CodeNotLoggedIn, "no OAuth profile for %s", what).
			WithHint("'clawkit auth list' shows the profiles")
	}
	return removed, nil
}

// refreshMargin is how long before expiry a token is refreshed: 60 s, or
// half its lifetime when that is shorter (a token that lives 30 s is not
// renewed on every request).
const refreshMargin = 60 * time.Second

func margin(o *auth.OAuth) time.Duration {
	if !o.IssuedAt.IsZero() {
		if half := o.ExpiresAt.Sub(o.IssuedAt) / 2; half < refreshMargin {
			return half
		}
	}
	return refreshMargin
}

func clientAuthOf(o *auth.OAuth) ClientAuth {
	return ClientAuth{ClientID: o.ClientID, ClientSecret: o.ClientSecret, Method: o.AuthMethod, PrivateKey: o.PrivateKey, SigningAlg: o.SigningAlg, DPoPKey: o.DPoPKey}
}

// RenewIn renews profile id's access token in s, unless another
// process already did: when the stored access token is no longer the one
// whose account fingerprint (auth.Fingerprint) is stale, and has not
// expired, it answers the stored profile and save false. Otherwise it
// calls before (the owner fence, right before the token request), then
// refreshes (or, for client credentials, asks again) and answers the
// profile with the new tokens, the rotated refresh token with them, and
// save true. The caller runs it under the credentials' edit lock and
// saves s when told to, so two renewals at once make one request.
func (c *Client) RenewIn(ctx context.Context, s *auth.Store, id, stale string, before func() error) (auth.Profile, bool, error) {
	p, ok := s.Get(id)
	if !ok || p.OAuth == nil {
		return p, false, errs.Failed(CodeNotLoggedIn, "the OAuth profile %s was removed", termsafe.Text(id)).
			WithHint("log in again with 'clawkit mcp login URL'")
	}
	o := p.OAuth
	// Another process renewed it while this one waited: its token is as
	// fresh as a new one would be.
	if p.Account() != stale && (o.ExpiresAt.IsZero() || c.now().Before(o.ExpiresAt)) {
		return p, false, nil
	}
	if err := before(); err != nil {
		return p, false, err
	}
	var tok *Token
	var err error
	switch {
	case o.Grant == GrantClientCredentials:
		tok, err = c.ClientCredentials(ctx, o.TokenEndpoint, o.Issuer, clientAuthOf(o), o.Scopes, o.Resource)
	case o.RefreshToken != "":
		tok, err = c.Refresh(ctx, o.TokenEndpoint, o.Issuer, clientAuthOf(o), o.RefreshToken, o.Resource)
	case o.Grant == GrantJWTBearer && o.IDPTokenEndpoint != "":
		return p, false, expiredCrossApp(o, "expired")
	case o.Grant == GrantJWTBearer:
		return p, false, errs.Failed(CodeNotLoggedIn, "the OAuth token for %s expired; a workload identity token is used once", termsafe.Text(o.Server)).
			WithHint("log in again with a fresh identity token: clawkit mcp login %s --grant jwt-bearer --client-id ID --assertion-stdin", termsafe.Text(o.Server))
	default:
		return p, false, errs.Failed(CodeNotLoggedIn, "the OAuth token for %s expired and there is no refresh token", termsafe.Text(o.Server)).
			WithHint("log in again with 'clawkit mcp login %s'", termsafe.Text(o.Server))
	}
	if err != nil {
		return p, false, err
	}
	q := *o
	p.OAuth = &q
	p.Secret = tok.AccessToken
	q.ExpiresAt = tok.ExpiresAt
	q.IssuedAt = c.now().UTC().Truncate(time.Second)
	if tok.RefreshToken != "" {
		q.RefreshToken = tok.RefreshToken
	}
	if tok.Scope != "" {
		q.Scopes = Scopes(tok.Scope)
	}
	q.TokenType = tokenType(tok)
	return p, true, s.Add(p, true)
}

// Fresh returns the profile's access token, renewed through k first when
// it is about to expire.
func (c *Client) Fresh(ctx context.Context, k Keeper, p auth.Profile) (auth.Profile, error) {
	if o := p.OAuth; o != nil && !o.ExpiresAt.IsZero() && !c.now().Add(margin(o)).Before(o.ExpiresAt) {
		return k.Renew(ctx, p.ID, p.Account())
	}
	return p, nil
}

// tokenType is what a profile stores of a token's type: "DPoP", or empty
// for Bearer.
func tokenType(t *Token) string {
	if t.Type == SchemeDPoP {
		return SchemeDPoP
	}
	return ""
}

// expiredCrossApp is the end of a cross-app login's token without a
// refresh token: a new ID-JAG needs a fresh ID token, which only the user
// can get from the IdP (docs/mcp.md, "Login").
func expiredCrossApp(o *auth.OAuth, what string) error {
	secret := ""
	if o.ClientSecret != "" {
		secret = " --client-secret-stdin"
	}
	return errs.Failed(CodeNotLoggedIn, "the OAuth token for %s %s; a new one needs a fresh ID token from the enterprise IdP", termsafe.Text(o.Server), what).
		WithHint("log in to the IdP again, then: clawkit mcp login %s --grant cross-app --idp-token-url %s --idp-client-id %s --id-token-file FILE --client-id %s%s",
			termsafe.Text(o.Server), termsafe.Text(o.IDPTokenEndpoint), termsafe.Text(o.IDPClientID), termsafe.Text(o.ClientID), secret)
}
