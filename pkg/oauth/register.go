package oauth

import (
	"context"
	"encoding/json"
	"net/url"
	"slices"

	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/termsafe"
)

// Registration is how the client gets its identity, tried in the MCP
// spec's order: a pre-registered client id, a Client ID Metadata Document
// URL, dynamic client registration.
type Registration struct {
	ClientID          string
	ClientSecret      string
	ClientMetadataURL string
	// PrivateKey and SigningAlg select private_key_jwt (client credentials).
	PrivateKey string
	SigningAlg string
	ClientName string
	// Assertion is the workload identity token of GrantJWTBearer.
	Assertion string
}

// chooseSecretMethod picks how a client with a secret authenticates from
// what the server supports (RFC 8414 §2: the default is basic).
func chooseSecretMethod(as *AuthServer) string {
	sup := as.TokenEndpointAuthMethodsSupported
	switch {
	case len(sup) == 0, slices.Contains(sup, AuthBasic):
		return AuthBasic
	case slices.Contains(sup, AuthPost):
		return AuthPost
	}
	return AuthBasic
}

// CheckClientMetadataURL holds a Client ID Metadata Document URL to its
// rules: https with a path.
func CheckClientMetadataURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "https" || u.Host == "" || u.Path == "" || u.Path == "/" || u.Fragment != "" || u.User != nil {
		return errs.Usage(errs.CodeInvalidParams, "--client-metadata-url %q is not an https URL with a path", termsafe.Text(raw)).
			WithHint("a Client ID Metadata Document is served at an https URL such as https://example.com/clawkit.json")
	}
	return nil
}

// Register returns the client's credentials for the authorization server,
// registering dynamically when nothing else applies. redirectURI is the
// loopback redirect (empty for client credentials).
func (c *Client) Register(ctx context.Context, as *AuthServer, reg Registration, redirectURI string, grants []string) (ClientAuth, error) {
	if reg.ClientID != "" {
		ca := ClientAuth{ClientID: reg.ClientID, ClientSecret: reg.ClientSecret, Method: AuthNone}
		switch {
		case reg.PrivateKey != "":
			ca.Method, ca.PrivateKey, ca.SigningAlg = AuthPrivateKeyJWT, reg.PrivateKey, reg.SigningAlg
		case reg.ClientSecret != "":
			ca.Method = chooseSecretMethod(as)
		}
		return ca, nil
	}
	if reg.ClientMetadataURL != "" && as.ClientIDMetadataDocumentSupported {
		return ClientAuth{ClientID: reg.ClientMetadataURL, Method: AuthNone}, nil
	}
	if as.RegistrationEndpoint == "" {
		return ClientAuth{}, errs.Failed(CodeNoRegistration, "the authorization server %s offers no dynamic client registration", termsafe.Text(as.Issuer)).
			WithHint("register clawkit with it and pass --client-id (the secret on stdin with --client-secret-stdin), or --client-metadata-url when it accepts Client ID Metadata Documents")
	}
	method := AuthNone
	if sup := as.TokenEndpointAuthMethodsSupported; len(sup) > 0 && !slices.Contains(sup, AuthNone) {
		method = chooseSecretMethod(as)
	}
	name := reg.ClientName
	if name == "" {
		name = "clawkit"
	}
	doc := map[string]any{
		"client_name":                name,
		"grant_types":                grants,
		"response_types":             []string{"code"},
		"token_endpoint_auth_method": method,
		"application_type":           "native",
	}
	if redirectURI != "" {
		doc["redirect_uris"] = []string{redirectURI}
	}
	body, _ := json.Marshal(doc)
	r, err := c.postJSON(ctx, "registration endpoint", as.RegistrationEndpoint, body)
	if err != nil {
		return ClientAuth{}, err
	}
	if r.Status != 200 && r.Status != 201 {
		return ClientAuth{}, errs.Failed(CodeRegistration, "dynamic client registration at %s answered HTTP %d: %s", termsafe.Text(as.RegistrationEndpoint), r.Status, snippet(r.Body)).
			WithHint("register clawkit with the server's operator and pass --client-id")
	}
	var out struct {
		ClientID                string `json:"client_id"`
		ClientSecret            string `json:"client_secret"`
		TokenEndpointAuthMethod string `json:"token_endpoint_auth_method"`
	}
	if err := decodeObject(r.Body, "registration response", termsafe.Text(as.RegistrationEndpoint), &out); err != nil {
		return ClientAuth{}, err
	}
	if out.ClientID == "" {
		return ClientAuth{}, errs.Failed(CodeRegistration, "the registration response of %s has no client_id", termsafe.Text(as.RegistrationEndpoint))
	}
	ca := ClientAuth{ClientID: out.ClientID, ClientSecret: out.ClientSecret, Method: method, Dynamic: true}
	if out.TokenEndpointAuthMethod != "" {
		ca.Method = out.TokenEndpointAuthMethod
	}
	if ca.ClientSecret != "" && ca.Method == AuthNone {
		ca.Method = chooseSecretMethod(as)
	}
	switch ca.Method {
	case AuthNone, AuthBasic, AuthPost:
	default:
		return ClientAuth{}, errs.Failed(CodeRegistration, "the server registered clawkit for token endpoint auth %q, which clawkit does not do", termsafe.Text(ca.Method))
	}
	return ca, nil
}
