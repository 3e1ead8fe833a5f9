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
