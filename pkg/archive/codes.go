package archive

import "github.com/clawkit/clawkit/pkg/errs"

// Error codes of this package: public and stable (docs/errors.md lists
// them all with their exit codes).
const (
	// CodeExtractDest: cannot read extraction folder …: …
	CodeExtractDest errs.Code = "extract_dest"
	// CodeExtractWrite: cannot write …: …
	CodeExtractWrite errs.Code = "extract_write"
)

// Error codes of refusals (all kind failed, exit 1).
const (
	// CodeTooManyEntries: entry count over the limit
	CodeTooManyEntries errs.Code = "archive_too_many_entries"
	// CodeExpanded: expanded size over the limit
	CodeExpanded errs.Code = "archive_expanded_too_large"
	// CodeRatio: expansion ratio over the limit
	CodeRatio errs.Code = "archive_expansion_ratio"
	// CodeArchiveInvalidPath: absolute, "..", "\", NUL, not normalised, too long
	CodeArchiveInvalidPath errs.Code = "archive_invalid_path"
	// CodeDuplicate: the same path twice
	CodeDuplicate errs.Code = "archive_duplicate_entry"
	// CodeConflict: entry below a file or a link
	CodeConflict errs.Code = "archive_path_conflict"
	// CodeLinkEscape: symlink or hard link leaving the root
	CodeLinkEscape errs.Code = "archive_link_escape"
	// CodeUnsupported: an entry type other than file, folder or link
	CodeUnsupported errs.Code = "archive_unsupported_entry"
	// CodeCorrupt: not gzip, bad tar header, bad CRC, truncated, trailing data
	CodeCorrupt errs.Code = "archive_corrupt"
)
