package errs

// Error codes raised by more than one package: each is declared here, once
// (a code raised by one package alone is declared in that package's
// codes.go). docs/errors.md lists them all with their exit codes.
const (
	// CodeFailed: the code of an error that carries none of its own (CodeOf)
	CodeFailed Code = "failed"
	// CodeArchiveTooLarge: archive is … bytes, over the limit of …
	CodeArchiveTooLarge Code = "archive_too_large"
	// CodeBackupFailed: backup vanished: …
	CodeBackupFailed Code = "backup_failed"
	// CodeConfigUnreadable: cannot read config …: …
	CodeConfigUnreadable Code = "config_unreadable"
	// CodeDetachFailed: cannot find the clawkit binary: …
	CodeDetachFailed Code = "detach_failed"
	// CodeEmptySecret: the credential for … is empty
	CodeEmptySecret Code = "empty_secret"
	// CodeGatewayStopping: the gateway is stopping
	CodeGatewayStopping Code = "gateway_stopping"
	// CodeInterrupted: export interrupted; the partial output was removed
	CodeInterrupted Code = "interrupted"
	// CodeInvalidConfig: …: invalid UTF-8 at offset … (line …, column …)
	CodeInvalidConfig Code = "invalid_config"
	// CodeInvalidConfigValue: the value looks like JSON but does not parse at column …: …
	CodeInvalidConfigValue Code = "invalid_config_value"
	// CodeInvalidInput: cannot resolve --file …: …
	CodeInvalidInput Code = "invalid_input"
	// CodeInvalidLimit: the frame limit must be at least 2 bytes
	CodeInvalidLimit Code = "invalid_limit"
	// CodeInvalidManifest: nodeBootstrap.path: …
	CodeInvalidManifest Code = "invalid_manifest"
	// CodeInvalidOut: cannot resolve --out …: …
	CodeInvalidOut Code = "invalid_out"
	// CodeInvalidParams: --params is not valid JSON
	CodeInvalidParams Code = "invalid_params"
	// CodeInvalidPath: … is not a folder
	CodeInvalidPath Code = "invalid_path"
	// CodeLockFailed: cannot lock …: …
	CodeLockFailed Code = "lock_failed"
	// CodeManifestUnreadable: cannot read manifest …: …
	CodeManifestUnreadable Code = "manifest_unreadable"
	// CodeNotFound: --from …: no such file
	CodeNotFound Code = "not_found"
	// CodeNotRegularFile: …; only regular files (or - for stdin) are read
	CodeNotRegularFile Code = "not_regular_file"
	// CodePathEscape: … is a symbolic link; links are refused
	CodePathEscape Code = "path_escape"
	// CodeReadFailed: cannot read --from …: …
	CodeReadFailed Code = "read_failed"
	// CodeReceiptUnreadable: cannot open …: …
	CodeReceiptUnreadable Code = "receipt_unreadable"
	// CodeSessionGone: session … of agent … no longer exists
	CodeSessionGone Code = "session_gone"
	// CodeSessionNotFound: (see the message)
	CodeSessionNotFound Code = "session_not_found"
	// CodeStdinFailed: cannot read standard input: …
	CodeStdinFailed Code = "stdin_failed"
	// CodeStoreError: cannot …: …
	CodeStoreError Code = "store_error"
	// CodeStoreUnreadable: cannot read the database: …
	CodeStoreUnreadable Code = "store_unreadable"
	// CodeTooLarge: the node bootstrap would expand to … bytes, more than …
	CodeTooLarge Code = "too_large"
	// CodeUnknownMethod: unknown operation …
	CodeUnknownMethod Code = "unknown_method"
	// CodeWriteFailed: writing … failed: …
	CodeWriteFailed Code = "write_failed"
)

// More error codes raised by more than one package (docs/errors.md lists
// them all).
const (
	// CodeInvalidHeader: auth profile … is of kind …, not header or bearer
	CodeInvalidHeader Code = "invalid_header"
	// CodeListenFailed: cannot listen on …: …
	CodeListenFailed Code = "listen_failed"
	// CodeInvalidSecret: the credential for … is … bytes; the limit is …
	CodeInvalidSecret Code = "invalid_secret"
	// CodeInvalidTimeout: --timeout … is shorter than …, the finest a wait counts (or negative, or given without --wait)
	CodeInvalidTimeout Code = "invalid_timeout"
)

// Codes the MCP core and both transports raise (pkg/mcp, pkg/mcp/mcpstdio,
// pkg/mcp/mcphttp): public and stable (docs/errors.md lists them all with
// their exit codes).
const (
	// CodeCancelled: (see the message)
	CodeCancelled Code = "cancelled"
	// CodeCleanupUnconfirmed: (see the message)
	CodeCleanupUnconfirmed Code = "cleanup_unconfirmed"
	// CodeClientStopped: (see the message)
	CodeClientStopped Code = "client_stopped"
	// CodeConnectFailed: (see the message)
	CodeConnectFailed Code = "connect_failed"
	// CodeFrameTooLarge: (see the message)
	CodeFrameTooLarge Code = "frame_too_large"
	// CodeInitializeTimeout: (see the message)
	CodeInitializeTimeout Code = "initialize_timeout"
	// CodeInvalidResponseID: (see the message)
	CodeInvalidResponseID Code = "invalid_response_id"
	// CodeMalformedMessage: (see the message)
	CodeMalformedMessage Code = "malformed_message"
	// CodeRequestTimeout: (see the message)
	CodeRequestTimeout Code = "request_timeout"
	// CodeRPCError: … of … requests were answered with an error
	CodeRPCError Code = "rpc_error"
)
