package oauth

import (
	"bytes"
	"encoding/json"
	"slices"

	"github.com/clawkit/clawkit/pkg/errs"
)

// ProtectedResource is RFC 9728 protected-resource metadata (the fields
// clawkit reads).
type ProtectedResource struct {
	Resource             string   `json:"resource"`
	AuthorizationServers []string `json:"authorization_servers"`
	ScopesSupported      []string `json:"scopes_supported"`
}

// AuthServer is RFC 8414 authorization-server metadata, or an OpenID
// provider configuration (the fields clawkit reads).
type AuthServer struct {
	Issuer                                     string   `json:"issuer"`
	AuthorizationEndpoint                      string   `json:"authorization_endpoint"`
	TokenEndpoint                              string   `json:"token_endpoint"`
	RegistrationEndpoint                       string   `json:"registration_endpoint,omitempty"`
	ScopesSupported                            []string `json:"scopes_supported,omitempty"`
	GrantTypesSupported                        []string `json:"grant_types_supported,omitempty"`
	CodeChallengeMethodsSupported              []string `json:"code_challenge_methods_supported,omitempty"`
	TokenEndpointAuthMethodsSupported          []string `json:"token_endpoint_auth_methods_supported,omitempty"`
	TokenEndpointAuthSigningAlgValuesSupported []string `json:"token_endpoint_auth_signing_alg_values_supported,omitempty"`
	ClientIDMetadataDocumentSupported          bool     `json:"client_id_metadata_document_supported,omitempty"`
	AuthorizationResponseIssParameterSupported bool     `json:"authorization_response_iss_parameter_supported,omitempty"`
	DPoPSigningAlgValuesSupported              []string `json:"dpop_signing_alg_values_supported,omitempty"`
}

// Bounds on a decoded document's lists: real servers list a handful.
const maxListItems = 256

// decodeObject decodes a JSON object into v: one value, an object, within
// the byte bound; anything else is invalid metadata that names the URL.
func decodeObject(b []byte, what, from string, v any) error {
	t := bytes.TrimSpace(b)
	if len(t) == 0 || t[0] != '{' {
		return errs.Failed(CodeInvalidMetadata, "the %s at %s is not a JSON object", what, from)
	}
	dec := json.NewDecoder(bytes.NewReader(t))
	if err := dec.Decode(v); err != nil {
		return errs.Failed(CodeInvalidMetadata, "the %s at %s is not valid: %v", what, from, err).
			WithHint("the server's metadata is broken; tell its operator")
	}
	if dec.More() {
		return errs.Failed(CodeInvalidMetadata, "the %s at %s holds more than one JSON value", what, from)
	}
	return nil
}

func tooMany(what, from string, lists ...[]string) error {
	for _, l := range lists {
		if len(l) > maxListItems {
			return errs.Failed(CodeInvalidMetadata, "the %s at %s lists more than %d values", what, from, maxListItems)
		}
	}
	return nil
}

// DecodeProtectedResource decodes and checks protected-resource metadata.
func DecodeProtectedResource(b []byte, from string) (*ProtectedResource, error) {
	var m ProtectedResource
	if err := decodeObject(b, "protected-resource metadata", from, &m); err != nil {
		return nil, err
	}
	if err := tooMany("protected-resource metadata", from, m.AuthorizationServers, m.ScopesSupported); err != nil {
		return nil, err
	}
	if m.Resource == "" {
		return nil, errs.Failed(CodeInvalidMetadata, "the protected-resource metadata at %s has no resource", from)
	}
	return &m, nil
}

// DecodeAuthServer decodes and checks authorization-server metadata.
func DecodeAuthServer(b []byte, from string) (*AuthServer, error) {
	var m AuthServer
	if err := decodeObject(b, "authorization-server metadata", from, &m); err != nil {
		return nil, err
	}
	if err := tooMany("authorization-server metadata", from, m.ScopesSupported, m.GrantTypesSupported,
		m.CodeChallengeMethodsSupported, m.TokenEndpointAuthMethodsSupported, m.TokenEndpointAuthSigningAlgValuesSupported); err != nil {
		return nil, err
	}
	if m.Issuer == "" || m.TokenEndpoint == "" {
		return nil, errs.Failed(CodeInvalidMetadata, "the authorization-server metadata at %s lacks issuer or token_endpoint", from)
	}
	for what, u := range map[string]string{"authorization endpoint": m.AuthorizationEndpoint, "token endpoint": m.TokenEndpoint, "registration endpoint": m.RegistrationEndpoint} {
		if u == "" {
			continue
		}
		if err := CheckEndpoint(u, what); err != nil {
			return nil, err
		}
	}
	return &m, nil
}

// supportsS256 reports PKCE S256 support as the metadata states it.
func (m *AuthServer) supportsS256() bool {
	return slices.Contains(m.CodeChallengeMethodsSupported, "S256")
}
