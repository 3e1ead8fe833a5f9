package skilllint

import (
	"fmt"
	"github.com/clawkit/clawkit/pkg/errs"
	"strings"
	"unicode"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
	"golang.org/x/text/unicode/norm"
)

// Two rule sets (docs/skills.md). A skill is both an ecosystem artifact, whose
// format the Agent Skills specification defines, and something a plugin
// writes into an agent's skills folder under OpenClaw's authoring contract.
const (
	// ProfileSpec is the Agent Skills specification: what `skill validate
	// --dir/--recursive` checks by default. clawkit's own stricter rules
	// (security scan, size limits) report warnings under it.
	ProfileSpec = "spec"
	// ProfileOpenClaw is OpenClaw's authoring contract: what `skill
	// write|remove` enforce and `validate --profile openclaw` checks.
	ProfileOpenClaw = "openclaw"
)

// Spec limits, counted in characters (Unicode code points), as the
// specification and its reference validator count them.
const (
	SpecMaxNameChars          = 64
	SpecMaxDescriptionChars   = 1024
	SpecMaxCompatibilityChars = 500
)

// Rule ids of the frontmatter and layout checks. Scan rules are in scan.go.
// Every finding names one, so a CI log can be filtered and the conformance
// table (docs/skills.md) can refer to them.
const (
	RuleSkillMDMissing  = "skill-md-missing"
	RuleSkillMDCase     = "skill-md-case"
	RuleFrontmatter     = "frontmatter"
	RuleYAML            = "yaml"
	RuleNameRequired    = "name-required"
	RuleNameLength      = "name-length"
	RuleNameCase        = "name-case"
	RuleNameCharset     = "name-charset"
	RuleNameHyphen      = "name-hyphen"
	RuleNameFolder      = "name-folder"
	RuleDescRequired    = "description-required"
	RuleDescLength      = "description-length"
	RuleCompatLength    = "compatibility-length"
	RuleFieldType       = "field-type"
	RuleUnknownKey      = "unknown-key"
	RuleFileLocation    = "file-location"
	RuleLink            = "link"
	RuleNotRegular      = "not-regular"
	RuleFileSize        = "file-size"
	RuleSkillSize       = "skill-size"
	RuleSkillFiles      = "skill-files"
	RuleFolderLink      = "folder-link"
	RuleNotFolder       = "not-folder"
	RuleUnreadable      = "unreadable"
	RuleOpenClawName    = "name-openclaw"
	RuleDescBytes       = "description-bytes"
	RuleMetadataStrings = "metadata-strings"
)

// Options select the rule set of a validation.
type Options struct {
	// Profile is ProfileSpec (the default when empty) or ProfileOpenClaw.
	Profile string `json:"profile"`
	// Strict turns every warning into an error.
	Strict bool `json:"strict"`
	// Disable lists rules whose findings are suppressed for the run
	// (--disable; suppress.go). Validation only: writes ignore it.
	Disable []string `json:"disable,omitempty"`
}

func (o Options) spec() bool { return o.Profile != ProfileOpenClaw }

// CheckProfile validates a --profile value.
func CheckProfile(p string) (string, error) {
	switch p {
	case "", ProfileSpec:
		return ProfileSpec, nil
	case ProfileOpenClaw:
		return ProfileOpenClaw, nil
	}
	return "", fmt.Errorf("unknown profile %q (want %s or %s)", p, ProfileSpec, ProfileOpenClaw)
}

// specKeys are the frontmatter keys the specification defines.
var specKeys = map[string]bool{"name": true, "description": true, "license": true,
	"compatibility": true, "metadata": true, "allowed-tools": true}

// scalarText is a key's value as the specification reads it: any scalar
// that is not null, as its source text (so `name: 123` is the string
// "123", as in the reference validator, which reads every scalar as a
// string). ok is false for null, mappings and lists.
func (fm *Frontmatter) scalarText(key string) (string, bool) {
	if fm.node == nil {
		return "", false
	}
	for i := 0; i+1 < len(fm.node.Content); i += 2 {
		if fm.node.Content[i].Value != key {
			continue
		}
		v := fm.node.Content[i+1]
		for v.Kind == yaml.AliasNode && v.Alias != nil {
			v = v.Alias
		}
		if v.Kind != yaml.ScalarNode || v.Tag == "!!null" {
			return "", false
		}
		return v.Value, true
	}
	return "", false
}

// specNameFindings applies the specification's name rules: 1-64
// characters after NFKC normalisation, lowercase, letters (any script),
// digits and hyphens only, no leading, trailing or doubled hyphen, equal to
// the (NFKC-normalised) folder name.
func specNameFindings(name, folder string, line int) []Finding {
	var out []Finding
	bad := func(rule, format string, args ...any) {
		out = append(out, Finding{Severity: SeverityError, Code: errs.CodeInvalidFrontmatter, Rule: rule, File: SkillFile, Line: line,
			Message: fmt.Sprintf(format, args...)})
	}
	n := norm.NFKC.String(strings.TrimSpace(name))
	if n == "" {
		bad(RuleNameRequired, "'name' is empty; give the skill folder's name")
		return out
	}
	if c := utf8.RuneCountInString(n); c > SpecMaxNameChars {
		bad(RuleNameLength, "name is %d characters; the limit is %d", c, SpecMaxNameChars)
	}
	if n != strings.ToLower(n) {
		bad(RuleNameCase, "name %q must be lowercase", n)
	}
	if strings.HasPrefix(n, "-") || strings.HasSuffix(n, "-") {
		bad(RuleNameHyphen, "name %q must not start or end with '-'", n)
	}
	if strings.Contains(n, "--") {
		bad(RuleNameHyphen, "name %q must not contain '--'", n)
	}
	for _, r := range n {
		if r != '-' && !unicode.IsLetter(r) && !unicode.IsNumber(r) {
			bad(RuleNameCharset, "name %q contains %q; only letters, digits and '-' are allowed", n, r)
			break
		}
	}
	if folder != "" && norm.NFKC.String(folder) != n {
		bad(RuleNameFolder, "name %q differs from the skill folder %q; they must be equal", n, folder)
	}
	return out
}

// IsStagingName reports names clawkit gives its own temporary files and
// folders: ".<base>.tmp-<16 hex>" (an atomic file publication) and
// ".clawkit-…" (staged skill trees, skills being removed). Validation,
// listing and hashing skip them (they are never skill content), and the
// next command holding the skill's lock deletes them.
func IsStagingName(name string) bool {
	if strings.HasPrefix(name, StagingPrefix) {
		return true
	}
	if !strings.HasPrefix(name, ".") {
		return false
	}
	i := strings.LastIndex(name, ".tmp-")
	if i < 1 || len(name)-(i+5) != 16 {
		return false
	}
	for _, c := range name[i+5:] {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// StagingPrefix starts every staging folder in a skills root.
const StagingPrefix = ".clawkit-"
