package oauth

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/termsafe"
)

// Discovery is what discovery found for one MCP server.
type Discovery struct {
	// ServerURL is the MCP endpoint as given.
	ServerURL string
	// Resource is the RFC 8707 resource indicator sent in the authorization
	// and token requests: the PRM's resource, else the server URL.
	Resource string
	// PRM is nil under the 2025-03-26 fallback (no protected-resource
	// metadata).
	PRM *ProtectedResource
	// Issuer is the authorization server's issuer identifier.
	Issuer string
	AS     *AuthServer
	// Legacy marks the 2025-03-26 fallback endpoints (no metadata at all).
	Legacy bool
	// ChallengeScope is the scope of the 401's Bearer challenge.
	ChallengeScope string
}

// origin is scheme://host[:port] of u.
func origin(u *url.URL) string { return strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Host) }

// CanonicalResource is the server URL as a resource indicator (RFC 8707
// §2: absolute, no fragment), scheme and host in lower case.
func CanonicalResource(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "", errs.Usage(errs.CodeInvalidParams, "%q is not an absolute URL", termsafe.Text(raw))
	}
	u.Fragment = ""
	u.Scheme = strings.ToLower(u.Scheme)
	u.Host = strings.ToLower(u.Host)
	return u.String(), nil
}

// resourceMatches reports whether the PRM resource covers the server URL:
// the same origin and a path that is the server's path or a parent of it
// on a segment boundary (the TypeScript SDK's rule).
func resourceMatches(resource, server string) bool {
	r, err1 := url.Parse(resource)
	s, err2 := url.Parse(server)
	if err1 != nil || err2 != nil || r.Host == "" {
		return false
	}
	if origin(r) != origin(s) {
		return false
	}
	rp := strings.TrimSuffix(r.Path, "/")
	sp := strings.TrimSuffix(s.Path, "/")
	return sp == rp || strings.HasPrefix(sp, rp+"/")
}

// wellKnown inserts a well-known suffix between origin and path (RFC 8414
// §3.1, RFC 9728 §3.1): https://h/.well-known/NAME/path.
func wellKnown(u *url.URL, name string) string {
	p := strings.TrimSuffix(u.EscapedPath(), "/")
	return origin(u) + "/.well-known/" + name + p
}

// Discover finds the protected-resource and authorization-server metadata
// for serverURL, starting from the Bearer challenge of its 401 (nil when
// there was none), in the MCP authorization spec's order.
func (c *Client) Discover(ctx context.Context, serverURL string, ch *Challenge) (*Discovery, error) {
	su, err := url.Parse(serverURL)
	if err != nil || su.Host == "" {
		return nil, errs.Usage(errs.CodeInvalidParams, "%q is not an absolute URL", termsafe.Text(serverURL))
	}
	if err := CheckEndpoint(serverURL, "MCP server URL"); err != nil {
		return nil, err
	}
	d := &Discovery{ServerURL: serverURL}
	var candidates []string
	if ch != nil {
		d.ChallengeScope = ch.Params["scope"]
		if rm := ch.Params["resource_metadata"]; rm != "" {
			ru, err := url.Parse(rm)
			if err != nil || ru.Host == "" {
				return nil, errs.Failed(CodeInvalidMetadata, "the server's resource_metadata %q is not an absolute URL", termsafe.Text(rm))
			}
			// A resource's metadata is the resource's own (RFC 9728 §3):
			// a challenge must not send the client to another origin.
			if origin(ru) != origin(su) {
				return nil, errs.Refused(CodeCrossOrigin, "the server's resource_metadata %s is on another origin than %s", termsafe.Text(rm), termsafe.Text(serverURL)).
					WithHint("a server's protected-resource metadata must be served by the server itself")
			}
			candidates = append(candidates, rm)
		}
	}
	if len(candidates) == 0 {
		if p := strings.TrimSuffix(su.EscapedPath(), "/"); p != "" {
			candidates = append(candidates, wellKnown(su, "oauth-protected-resource"))
		}
		candidates = append(candidates, origin(su)+"/.well-known/oauth-protected-resource")
	}
	for _, u := range candidates {
		r, err := c.get(ctx, "protected-resource metadata", u)
		if err != nil {
			return nil, err
		}
		if r.Status != http.StatusOK {
			continue
		}
		prm, err := DecodeProtectedResource(r.Body, termsafe.Text(u))
		if err != nil {
			return nil, err
		}
		d.PRM = prm
		break
	}
	if d.PRM != nil {
		if !resourceMatches(d.PRM.Resource, serverURL) {
			return nil, errs.Refused(CodeResourceMismatch, "the protected-resource metadata names resource %s, which does not cover %s", termsafe.Text(d.PRM.Resource), termsafe.Text(serverURL)).
				WithHint("the server's metadata is for another resource; a token for it must not be sent here")
		}
		d.Resource = d.PRM.Resource
		if len(d.PRM.AuthorizationServers) == 0 {
			return nil, errs.Failed(CodeDiscoveryFailed, "the protected-resource metadata of %s lists no authorization server", termsafe.Text(serverURL))
		}
		d.Issuer = d.PRM.AuthorizationServers[0]
	} else {
		// 2025-03-26: the MCP server's origin is the authorization server.
		res, err := CanonicalResource(serverURL)
		if err != nil {
			return nil, err
		}
		d.Resource = res
		d.Issuer = origin(su)
	}
	if err := CheckEndpoint(d.Issuer, "authorization server"); err != nil {
		return nil, err
	}
	as, err := c.authServerMetadata(ctx, d.Issuer, d.PRM == nil)
	if err != nil {
		return nil, err
	}
	if as == nil {
		if d.PRM != nil {
			return nil, errs.Failed(CodeDiscoveryFailed, "the authorization server %s publishes no metadata", termsafe.Text(d.Issuer)).
				WithHint("it must serve RFC 8414 or OpenID discovery metadata")
		}
		// 2025-03-26 fallback: default endpoints on the server's origin.
		o := origin(su)
		d.Legacy = true
		d.AS = &AuthServer{Issuer: o, AuthorizationEndpoint: o + "/authorize", TokenEndpoint: o + "/token", RegistrationEndpoint: o + "/register",
			CodeChallengeMethodsSupported: []string{"S256"}}
		return d, nil
	}
	d.AS = as
	return d, nil
}

// authServerMetadata tries the well-known URLs of issuer in the MCP spec's
// order; nil when none answers 200. legacy skips the issuer check (the
// 2025-03-26 fallback).
func (c *Client) authServerMetadata(ctx context.Context, issuer string, legacy bool) (*AuthServer, error) {
	iu, err := url.Parse(issuer)
	if err != nil || iu.Host == "" {
		return nil, errs.Failed(CodeInvalidMetadata, "the authorization server %q is not an absolute URL", termsafe.Text(issuer))
	}
	var urls []string
	if p := strings.TrimSuffix(iu.EscapedPath(), "/"); p != "" {
		urls = []string{
			wellKnown(iu, "oauth-authorization-server"),
			wellKnown(iu, "openid-configuration"),
			origin(iu) + p + "/.well-known/openid-configuration",
		}
	} else {
		urls = []string{origin(iu) + "/.well-known/oauth-authorization-server", origin(iu) + "/.well-known/openid-configuration"}
	}
	for _, u := range urls {
		r, err := c.get(ctx, "authorization-server metadata", u)
		if err != nil {
			return nil, err
		}
		if r.Status != http.StatusOK {
			continue
		}
		as, err := DecodeAuthServer(r.Body, termsafe.Text(u))
		if err != nil {
			return nil, err
		}
		// Under the 2025-03-26 fallback clawkit, not the server, chose the
		// identifier (the server's origin), and that spec let the
		// metadata name its own issuer: nothing to compare.
		if !legacy && as.Issuer != issuer {
			// RFC 8414 §3.3: the issuer must be the one the URL was built
			// from, compared as strings.
			return nil, errs.Refused(CodeIssuerMismatch, "the authorization-server metadata at %s names issuer %s, not %s", termsafe.Text(u), termsafe.Text(as.Issuer), termsafe.Text(issuer)).
				WithHint("the metadata is not the authorization server's own; do not log in there")
		}
		return as, nil
	}
	return nil, nil
}
