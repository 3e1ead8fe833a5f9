package store

import "github.com/clawkit/clawkit/pkg/errs"

// Error codes of this package: public and stable (docs/errors.md lists
// them all with their exit codes).

const (
	// CodeBackupExists: … already exists
	CodeBackupExists errs.Code = "backup_exists"
	// CodeBackupUnsupported: state backup writes SQLite copies; this home uses PostgreSQL
	CodeBackupUnsupported errs.Code = "backup_unsupported"
	// CodeDatabaseAuthFailed: PostgreSQL refused the connection: …
	CodeDatabaseAuthFailed errs.Code = "database_auth_failed"
	// CodeDatabaseLeased: gateway … (pid … on host …, home …) holds an owner lease on this database…
	CodeDatabaseLeased errs.Code = "database_leased"
	// CodeDatabaseMissing: PostgreSQL: …
	CodeDatabaseMissing errs.Code = "database_missing"
	// CodeDatabaseUnavailable: cannot connect to PostgreSQL: …
	CodeDatabaseUnavailable errs.Code = "database_unavailable"
	// CodeDatabaseUrlMissing: database.engine is postgres but no database.url is configured
	CodeDatabaseUrlMissing errs.Code = "database_url_missing"
	// CodeEngineUnsupported: unknown database.engine …
	CodeEngineUnsupported errs.Code = "engine_unsupported"
	// CodeInvalidAction: unknown session action …
	CodeInvalidAction errs.Code = "invalid_action"
	// CodeInvalidAgentId: invalid agent id …
	CodeInvalidAgentId errs.Code = "invalid_agent_id"
	// CodeInvalidDatabaseUrl: database.url is not a valid PostgreSQL URL: …
	CodeInvalidDatabaseUrl errs.Code = "invalid_database_url"
	// CodeInvalidSessionKey: invalid session key …
	CodeInvalidSessionKey errs.Code = "invalid_session_key"
	// CodeLeaseFailed: cannot take an owner lease: …
	CodeLeaseFailed errs.Code = "lease_failed"
	// CodeLeaseUnsupported: owner leases need PostgreSQL
	CodeLeaseUnsupported errs.Code = "lease_unsupported"
	// CodeMigrationFailed: create schema …: …
	CodeMigrationFailed errs.Code = "migration_failed"
	// CodeMigrationLockFailed: cannot take the migration lock: …
	CodeMigrationLockFailed errs.Code = "migration_lock_failed"
	// CodeSchemaDowngrade: the database is at schema …; refusing to go down to …
	CodeSchemaDowngrade errs.Code = "schema_downgrade"
	// CodeSchemaOutdated: the database schema is version …; this clawkit needs …
	CodeSchemaOutdated errs.Code = "schema_outdated"
	// CodeSchemaTooNew: the database schema is version … but this clawkit knows only up to …
	CodeSchemaTooNew errs.Code = "schema_too_new"
	// CodeSessionExists: session … of agent … already exists
	CodeSessionExists errs.Code = "session_exists"
	// CodeSessionRefreshing: session … of agent … is refreshing its authority
	CodeSessionRefreshing errs.Code = "session_refreshing"
	// CodeSessionRevoked: session … of agent … is revoked
	CodeSessionRevoked errs.Code = "session_revoked"
	// CodeStoreOpenFailed: cannot open …: …
	CodeStoreOpenFailed errs.Code = "store_open_failed"
	// CodeUnknownSchemaVersion: there is no schema version …
	CodeUnknownSchemaVersion errs.Code = "unknown_schema_version"
)
