package skilllint

import "github.com/clawkit/clawkit/pkg/errs"

// Error codes of this package: public and stable (docs/errors.md lists
// them all with their exit codes).
const (
	// CodeNoSkills: no SKILL.md found below …
	CodeNoSkills errs.Code = "no_skills"
	// CodeUnknownRule: --disable …: not a rule that can be disabled
	CodeUnknownRule errs.Code = "unknown_rule"
)

// Finding codes: the code of each Finding, and the error code `skill
// validate` fails with when the first error finding carries it
// (docs/errors.md lists them with the rest; TestCatalog reads Finding
// literals as it reads errs constructors).
const (
	// CodeUnknownKey: a frontmatter key the format does not define
	CodeUnknownKey errs.Code = "unknown_key"
	// CodeUnsafe: the security scan's finding
	CodeUnsafe errs.Code = "unsafe_content"
	// CodeInvalidSuppression: a suppression comment that does not parse
	CodeInvalidSuppression errs.Code = "invalid_suppression"
	// CodeUnusedSuppression: a suppression nothing matched
	CodeUnusedSuppression errs.Code = "unused_suppression"
)
