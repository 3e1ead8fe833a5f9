package oauth

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/clawkit/clawkit/pkg/auth"
	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/fsx"
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

// editLocked runs change on the home's credentials under their edit lock
// (the lock every credentials edit takes: pkg/ops editCredentials), saving
// when change returns save.
func editLocked(home string, change func(s *auth.Store) (save bool, err error)) error {
	path := filepath.Join(home, auth.FileName)
	if err := os.MkdirAll(home, 0o700); err != nil {
		return auth.WriteFailed(path, err)
	}
	err := fsx.EditLocked(path, func() error {
		s, err := auth.Load(home)
		if err != nil {
			return err
		}
		save, err := change(s)
		if err != nil || !save {
			return err
		}
		return s.Save()
	})
	var e *errs.Error
	if err != nil && !asErr(err, &e) {
		return auth.WriteFailed(path, err)
	}
	return err
}

// SaveResult stores a login as an OAuth profile (id empty: ProfileID),
// replacing any profile for the same issuer and resource.
func SaveResult(home, id string, r *Result, now time.Time) (auth.Profile, error) {
	d := r.Discovery
	if id == "" {
		id = ProfileID(d.AS.Issuer, d.Resource)
	}
	p := auth.Profile{ID: id, Provider: ProviderMCP, Kind: auth.KindOAuth, Secret: r.Token.AccessToken, CreatedAt: now.UTC().Truncate(time.Second),
		OAuth: &auth.OAuth{Server: d.ServerURL, Issuer: d.AS.Issuer, Resource: d.Resource, Scopes: r.Scopes, ExpiresAt: r.Token.ExpiresAt, IssuedAt: now.UTC().Truncate(time.Second),
			RefreshToken: r.Token.RefreshToken, TokenEndpoint: d.AS.TokenEndpoint, Grant: r.Grant,
			ClientID: r.Client.ClientID, ClientSecret: r.Client.ClientSecret, AuthMethod: r.Client.Method,
			PrivateKey: r.Client.PrivateKey, SigningAlg: r.Client.SigningAlg, DynamicClient: r.Client.Dynamic}}
	err := editLocked(home, func(s *auth.Store) (bool, error) {
		for _, old := range s.List() {
			if old.OAuth != nil && old.ID != id && old.OAuth.Issuer == p.OAuth.Issuer && old.OAuth.Resource == p.OAuth.Resource {
				_ = s.Remove(old.ID)
			}
		}
		return true, s.Add(p, true)
	})
	return p, err
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
		p, ok := s.Get(id)
		if !ok || p.OAuth == nil {
			return auth.Profile{}, false, errs.Failed(CodeNotLoggedIn, "no OAuth profile %s", termsafe.Text(id)).
				WithHint("log in with 'clawkit mcp login URL'; 'clawkit auth list' shows the profiles")
		}
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

// Logout removes the OAuth profile(s) for serverURL (or the named one).
func Logout(home, id, serverURL string) ([]auth.Public, error) {
	var removed []auth.Public
	err := editLocked(home, func(s *auth.Store) (bool, error) {
		for _, p := range s.List() {
			if p.OAuth == nil {
				continue
			}
			if (id != "" && p.ID == id) || (id == "" && (p.OAuth.Server == serverURL || resourceMatches(p.OAuth.Resource, serverURL))) {
				removed = append(removed, p.Public())
				_ = s.Remove(p.ID)
			}
		}
		if len(removed) == 0 {
			what := termsafe.Text(serverURL)
			if id != "" {
				what = termsafe.Text(id)
			}
			return false, errs.Failed(CodeNotLoggedIn, "no OAuth profile for %s", what).
				WithHint("'clawkit auth list' shows the profiles")
		}
		return true, nil
	})
	return removed, err
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
	return ClientAuth{ClientID: o.ClientID, ClientSecret: o.ClientSecret, Method: o.AuthMethod, PrivateKey: o.PrivateKey, SigningAlg: o.SigningAlg}
}

// Renew gets a new access token for profile id, unless another process
// already did: under the credentials' edit lock it reloads the profile,
// and when its access token is no longer the one the caller saw (and has
// not expired) uses that one. Otherwise it refreshes
// (or, for client credentials, asks again) and saves the tokens, the
// rotated refresh token with them, before the lock is released.
func (c *Client) Renew(ctx context.Context, home, id, stale string) (auth.Profile, error) {
	var out auth.Profile
	err := editLocked(home, func(s *auth.Store) (bool, error) {
		p, ok := s.Get(id)
		if !ok || p.OAuth == nil {
			return false, errs.Failed(CodeNotLoggedIn, "the OAuth profile %s was removed", termsafe.Text(id)).
				WithHint("log in again with 'clawkit mcp login URL'")
		}
		o := p.OAuth
		// Another process renewed it while this one waited on the lock:
		// its token is as fresh as a new one would be.
		if p.Secret != stale && (o.ExpiresAt.IsZero() || c.now().Before(o.ExpiresAt)) {
			out = p
			return false, nil
		}
		var tok *Token
		var err error
		switch {
		case o.Grant == GrantClientCredentials:
			tok, err = c.ClientCredentials(ctx, o.TokenEndpoint, o.Issuer, clientAuthOf(o), o.Scopes, o.Resource)
		case o.RefreshToken != "":
			tok, err = c.Refresh(ctx, o.TokenEndpoint, o.Issuer, clientAuthOf(o), o.RefreshToken, o.Resource)
		case o.Grant == GrantJWTBearer:
			return false, errs.Failed(CodeNotLoggedIn, "the OAuth token for %s expired; a workload identity token is used once", termsafe.Text(o.Server)).
				WithHint("log in again with a fresh identity token: clawkit mcp login %s --grant jwt-bearer --client-id ID --assertion-stdin", termsafe.Text(o.Server))
		default:
			return false, errs.Failed(CodeNotLoggedIn, "the OAuth token for %s expired and there is no refresh token", termsafe.Text(o.Server)).
				WithHint("log in again with 'clawkit mcp login %s'", termsafe.Text(o.Server))
		}
		if err != nil {
			return false, err
		}
		p.Secret = tok.AccessToken
		p.OAuth.ExpiresAt = tok.ExpiresAt
		p.OAuth.IssuedAt = c.now().UTC().Truncate(time.Second)
		if tok.RefreshToken != "" {
			p.OAuth.RefreshToken = tok.RefreshToken
		}
		if tok.Scope != "" {
			p.OAuth.Scopes = Scopes(tok.Scope)
		}
		out = p
		return true, s.Add(p, true)
	})
	return out, err
}

// Fresh returns the profile's access token, renewed first when it is about
// to expire.
func (c *Client) Fresh(ctx context.Context, home string, p auth.Profile) (auth.Profile, error) {
	if o := p.OAuth; o != nil && !o.ExpiresAt.IsZero() && !c.now().Add(margin(o)).Before(o.ExpiresAt) {
		return c.Renew(ctx, home, p.ID, p.Secret)
	}
	return p, nil
}
