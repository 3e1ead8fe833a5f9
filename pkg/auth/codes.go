package auth

import "github.com/clawkit/clawkit/pkg/errs"

// Error codes of this package: public and stable (docs/errors.md lists
// them all with their exit codes).

const (
	// CodeCredentialsUnreadable: cannot read …: …
	CodeCredentialsUnreadable errs.Code = "credentials_unreadable"
	// CodeCredentialsWriteFailed: cannot write …: …
	CodeCredentialsWriteFailed errs.Code = "credentials_write_failed"
	// CodeInvalidCredentials: … is not a valid credentials file
	CodeInvalidCredentials errs.Code = "invalid_credentials"
	// CodeInvalidProfileId: invalid profile id …
	CodeInvalidProfileId errs.Code = "invalid_profile_id"
	// CodeProfileExists: auth profile … already exists
	CodeProfileExists errs.Code = "profile_exists"
	// CodeProfileNotFound: no auth profile …
	CodeProfileNotFound errs.Code = "profile_not_found"
)
