package config

import "github.com/clawkit/clawkit/pkg/errs"

// Error codes of this package: public and stable (docs/errors.md lists
// them all with their exit codes).

const (
	// CodeConfigNotObject: cannot set …: … is not an object
	CodeConfigNotObject errs.Code = "config_not_object"
	// CodeConfigWriteFailed: cannot write …: …
	CodeConfigWriteFailed errs.Code = "config_write_failed"
	// CodeInvalidConfigPath: empty config path
	CodeInvalidConfigPath errs.Code = "invalid_config_path"
)

const (
	// CodeDatabasePasswordInConfig: … must not carry a password: config.json is not a secret store
	CodeDatabasePasswordInConfig errs.Code = "database_password_in_config"
)
