package artifacts

import "github.com/clawkit/clawkit/pkg/errs"

// Error codes of this package: public and stable (docs/errors.md lists
// them all with their exit codes).

const (
	// CodeConfigInvalid: config … is not valid: …
	CodeConfigInvalid errs.Code = "config_invalid"
	// CodeDependencyMissing: … needs …, which is not installed under …
	CodeDependencyMissing errs.Code = "dependency_missing"
	// CodeExpansionRatio: the … archive would expand to … bytes from …, more than … times its size, which archive readers refuse
	CodeExpansionRatio errs.Code = "expansion_ratio"
	// CodeExportMissing: … is not a folder
	CodeExportMissing errs.Code = "export_missing"
	// CodeInvalidBuildId: build id … is not 1-128 characters of [A-Za-z0-9._:+-]
	CodeInvalidBuildId errs.Code = "invalid_build_id"
	// CodeInvalidPlatform: platform … / arch … are not Node names
	CodeInvalidPlatform errs.Code = "invalid_platform"
	// CodeInvalidSha256: … is not a SHA-256 digest
	CodeInvalidSha256 errs.Code = "invalid_sha256"
	// CodeLayoutConflict: … and … would both be archived at …
	CodeLayoutConflict errs.Code = "layout_conflict"
	// CodeManifestMissing: … has no …: not a completed export
	CodeManifestMissing errs.Code = "manifest_missing"
	// CodeNotBuilt: … has no dist/ folder: not a built installation
	CodeNotBuilt errs.Code = "not_built"
	// CodeNotOpenclaw: … is package …, not openclaw
	CodeNotOpenclaw errs.Code = "not_openclaw"
	// CodeOutputCreateFailed: cannot create a staging folder beside output …: …
	CodeOutputCreateFailed errs.Code = "output_create_failed"
	// CodeOutputExists: output … already exists
	CodeOutputExists errs.Code = "output_exists"
	// CodeOutputInsidePackage: output … is inside the exported package … (real path …)
	CodeOutputInsidePackage errs.Code = "output_inside_package"
	// CodeOutputInvalid: output …: …
	CodeOutputInvalid errs.Code = "output_invalid"
	// CodeOutputParentMissing: the parent folder of output … does not exist
	CodeOutputParentMissing errs.Code = "output_parent_missing"
	// CodeOutputReplaced: staging folder … vanished right after it was created
	CodeOutputReplaced errs.Code = "output_replaced"
	// CodeOutputRequired: no output folder given
	CodeOutputRequired errs.Code = "output_required"
	// CodePackageJsonInvalid: … depends on …, which is not a valid package name
	CodePackageJsonInvalid errs.Code = "package_json_invalid"
	// CodePackageJsonMissing: … has no package.json
	CodePackageJsonMissing errs.Code = "package_json_missing"
	// CodePackageRootMissing: package root … does not exist
	CodePackageRootMissing errs.Code = "package_root_missing"
	// CodePackageRootNotDir: package root … is not a folder
	CodePackageRootNotDir errs.Code = "package_root_not_dir"
	// CodePackageRootRequired: no package root given
	CodePackageRootRequired errs.Code = "package_root_required"
	// CodePluginDisabled: plugin … is disabled in the config
	CodePluginDisabled errs.Code = "plugin_disabled"
	// CodePluginManifestInvalid: …/openclaw.plugin.json: …
	CodePluginManifestInvalid errs.Code = "plugin_manifest_invalid"
	// CodePluginUnknown: plugin … is not bundled in this installation
	CodePluginUnknown errs.Code = "plugin_unknown"
	// CodePluginUnqualified: plugin … does not qualify: …
	CodePluginUnqualified errs.Code = "plugin_unqualified"
	// CodeSourceChanged: … changed while it was being exported
	CodeSourceChanged errs.Code = "source_changed"
	// CodeSymlinkRefused: … is a symbolic link (-> …) pointing …; links are not exported
	CodeSymlinkRefused errs.Code = "symlink_refused"
	// CodeTooDeep: … is nested deeper than … folders
	CodeTooDeep errs.Code = "too_deep"
	// CodeTooManyFiles: the node bootstrap would hold more than … files
	CodeTooManyFiles errs.Code = "too_many_files"
	// CodeUnreadable: cannot read …: permission denied
	CodeUnreadable errs.Code = "unreadable"
	// CodeUnsafePath: … cannot be archived: its path … is longer than … bytes or not a plain relative path
	CodeUnsafePath errs.Code = "unsafe_path"
	// CodeUnsupportedFile: … is not a regular file or folder (…)
	CodeUnsupportedFile errs.Code = "unsupported_file"
	// CodeWorkerArtifactMissing: openclaw …: worker artifact dist/worker/… is missing (named by … in …)
	CodeWorkerArtifactMissing errs.Code = "worker_artifact_missing"
	// CodeWorkerBundleUnsupported: openclaw … ships no worker bundle producer (no dist/worker/ and no … in dist/)
	CodeWorkerBundleUnsupported errs.Code = "worker_bundle_unsupported"
	// CodeWorkerInventoryUnknown: openclaw …: cannot determine the worker bundle inventory: …
	CodeWorkerInventoryUnknown errs.Code = "worker_inventory_unknown"
)
