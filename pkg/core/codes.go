package core

import "github.com/clawkit/clawkit/pkg/errs"

// Error codes of this package: public and stable (docs/errors.md lists
// them all with their exit codes).
const (
	// CodeBackupDirMissing: the folder of … does not exist
	CodeBackupDirMissing errs.Code = "backup_dir_missing"
	// CodeBadDatabaseProfile: a postgres profile is the database password: its id is … and its kind api-key
	CodeBadDatabaseProfile errs.Code = "bad_database_profile"
	// CodeUnknownKind: unknown credential kind …
	CodeUnknownKind errs.Code = "unknown_kind"
	// CodeUnknownProvider: unknown provider …
	CodeUnknownProvider errs.Code = "unknown_provider"
)
