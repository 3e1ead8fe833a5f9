package crabbox

import "github.com/clawkit/clawkit/pkg/errs"

// Error codes of this package: public and stable (docs/errors.md lists
// them all with their exit codes).

const (
	// CodeArchiveMissing: … archive … is missing
	CodeArchiveMissing errs.Code = "archive_missing"
	// CodeArchiveUnreadable: cannot read … archive …: …
	CodeArchiveUnreadable errs.Code = "archive_unreadable"
	// CodeInstallFailed: (see the message)
	CodeInstallFailed errs.Code = "install_failed"
	// CodeInstallUnsynced: installed … but could not sync its folder: …
	CodeInstallUnsynced errs.Code = "install_unsynced"
	// CodeIntegrityVerificationFailed: (see the message)
	CodeIntegrityVerificationFailed errs.Code = "integrity_verification_failed"
	// CodeManifestMismatch: manifest … does not match the expected install: …
	CodeManifestMismatch errs.Code = "manifest_mismatch"
	// CodePlatformMismatch: the export is for …-…, this machine is …-…
	CodePlatformMismatch errs.Code = "platform_mismatch"
	// CodeReceiptDuplicate: more than one … line (line … is another one)
	CodeReceiptDuplicate errs.Code = "receipt_duplicate"
	// CodeReceiptInvalid: line does not start with …
	CodeReceiptInvalid errs.Code = "receipt_invalid"
	// CodeReceiptMismatch: receipt does not match the expected install: …
	CodeReceiptMismatch errs.Code = "receipt_mismatch"
	// CodeReceiptMissing: no … line in the command output
	CodeReceiptMissing errs.Code = "receipt_missing"
	// CodeReceiptOversized: receipt line … is longer than … bytes
	CodeReceiptOversized errs.Code = "receipt_oversized"
	// CodeReceiptStatus: receipt status … is not … or …
	CodeReceiptStatus errs.Code = "receipt_status"
	// CodeRuntimeCacheInvalid: runtime cache … failed verification (… problem(s))
	CodeRuntimeCacheInvalid errs.Code = "runtime_cache_invalid"
	// CodeTargetHomeInvalid: cannot resolve target home …: …
	CodeTargetHomeInvalid errs.Code = "target_home_invalid"
	// CodeTargetHomeMissing: no target home: HOME is not set
	CodeTargetHomeMissing errs.Code = "target_home_missing"
	// CodeTargetNotFolder: … is not a folder
	CodeTargetNotFolder errs.Code = "target_not_folder"
)

const (
	// CodeInvalidLockWait: --lock-wait … is shorter than …
	CodeInvalidLockWait errs.Code = "invalid_lock_wait"
	// CodeRuntimeLockBusy: another install of this runtime has held its lock … for …; gave up waiting, nothing was installed
	CodeRuntimeLockBusy errs.Code = "runtime_lock_busy"
	// CodeRuntimeLockUnsafe: the runtime lock … is …, not a regular file; nothing was installed
	CodeRuntimeLockUnsafe errs.Code = "runtime_lock_unsafe"
)
