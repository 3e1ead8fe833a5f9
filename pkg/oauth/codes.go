package oauth

import "github.com/clawkit/clawkit/pkg/errs"

// Error codes of this package: public and stable (docs/errors.md lists
// them all with their exit codes).
const (
	CodeInsecureEndpoint  errs.Code = "oauth_insecure_endpoint"
	CodeIssuerMismatch    errs.Code = "oauth_issuer_mismatch"
	CodeResourceMismatch  errs.Code = "oauth_resource_mismatch"
	CodeStateMismatch     errs.Code = "oauth_state_mismatch"
	CodeIssMismatch       errs.Code = "oauth_iss_mismatch"
	CodeNotBearer         errs.Code = "oauth_not_bearer"
	CodeResponseTooLarge  errs.Code = "oauth_response_too_large"
	CodeSlowResponse      errs.Code = "oauth_slow_response"
	CodeCrossOrigin       errs.Code = "oauth_cross_origin"
	CodeDiscoveryFailed   errs.Code = "oauth_discovery_failed"
	CodeInvalidMetadata   errs.Code = "oauth_invalid_metadata"
	CodeRegistration      errs.Code = "oauth_registration_failed"
	CodeAuthorization     errs.Code = "oauth_authorization_failed"
	CodeTokenFailed       errs.Code = "oauth_token_failed"
	CodeLoginTimeout      errs.Code = "oauth_login_timeout"
	CodePKCEUnsupported   errs.Code = "oauth_pkce_unsupported"
	CodeInsufficientScope errs.Code = "oauth_insufficient_scope"
	CodeNotLoggedIn       errs.Code = "oauth_not_logged_in"
	CodeInvalidKey        errs.Code = "oauth_invalid_key"
	CodeNoRegistration    errs.Code = "oauth_no_registration"
	CodeNoAuthRequired    errs.Code = "oauth_not_required"
	// Cross-app access (idjag.go).
	CodeIDJAGFailed    errs.Code = "oauth_id_jag_failed"
	CodeNotIDJAG       errs.Code = "oauth_not_id_jag"
	CodeInvalidIDToken errs.Code = "oauth_invalid_id_token"
)
