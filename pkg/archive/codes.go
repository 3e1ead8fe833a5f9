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
