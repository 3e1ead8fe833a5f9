package skilllint

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
)

// Output formats for CI (docs/skills.md, "skill validate in CI"):
// GitHub workflow annotations and SARIF 2.1.0 for code scanning. Both take
// a finding's path as the caller shows it (the skill folder as given,
// joined with the skill-relative file).

// Formats of `skill validate --format`.
const (
	FormatText   = "text"
	FormatGitHub = "github"
	FormatSARIF  = "sarif"
)

// GitHubAnnotation is one workflow command for a finding:
// ::error file=P,line=L,col=C,title=CODE[RULE]::MESSAGE (::warning for a
// warning). Properties escape %, CR, LF, ':' and ','; the message escapes
// %, CR and LF, as the workflow command syntax requires, so a message or a
// path cannot end the command early or start another.
func GitHubAnnotation(path string, f Finding) string {
	level := "warning"
	if f.Severity == SeverityError {
		level = "error"
	}
	props := []string{"file=" + ghProperty(path)}
	if f.Line > 0 {
		props = append(props, fmt.Sprintf("line=%d", f.Line))
		if f.Column > 0 {
			props = append(props, fmt.Sprintf("col=%d", f.Column))
		}
	}
	title := string(f.Code)
	if f.Rule != "" {
		title += "[" + f.Rule + "]"
	}
	props = append(props, "title="+ghProperty(title))
	return "::" + level + " " + strings.Join(props, ",") + "::" + ghData(f.Message)
}

var ghDataEscaper = strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A")
var ghPropertyEscaper = strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C")

func ghData(s string) string     { return ghDataEscaper.Replace(s) }
func ghProperty(s string) string { return ghPropertyEscaper.Replace(s) }

// SARIF is a SARIF 2.1.0 log of one run of the linter, built report by
// report (Add) and written once (JSON). Suppressed findings are results
// too, each with its suppressions (kind inSource for a directive in the
// skill, external for --disable, and the justification).
type SARIF struct {
	version string
	rules   []string
	ruleIx  map[string]int
	results []sarifResult
	notes   []sarifNotification
}

type sarifNotification struct {
	Level   string       `json:"level"`
	Message sarifMessage `json:"message"`
}

// Notify adds a note about the run itself (a --disable that matched
// nothing), as a tool execution notification.
func (s *SARIF) Notify(level, text string) {
	s.notes = append(s.notes, sarifNotification{Level: level, Message: sarifMessage{Text: text}})
}

// NewSARIF starts a log for the tool version given.
func NewSARIF(version string) *SARIF {
	return &SARIF{version: version, ruleIx: map[string]int{}, results: []sarifResult{}}
}

type sarifMessage struct {
	Text string `json:"text"`
}

type sarifRegion struct {
	StartLine   int `json:"startLine"`
	StartColumn int `json:"startColumn,omitempty"`
}

type sarifArtifact struct {
	URI string `json:"uri"`
}

type sarifPhysical struct {
	ArtifactLocation sarifArtifact `json:"artifactLocation"`
	Region           *sarifRegion  `json:"region,omitempty"`
}

type sarifLocation struct {
	PhysicalLocation sarifPhysical `json:"physicalLocation"`
}

type sarifSuppression struct {
	Kind          string         `json:"kind"`
	Status        string         `json:"status"`
	Justification string         `json:"justification"`
	Location      *sarifLocation `json:"location,omitempty"`
}

type sarifResult struct {
	RuleID       string             `json:"ruleId"`
	RuleIndex    int                `json:"ruleIndex"`
	Level        string             `json:"level"`
	Message      sarifMessage       `json:"message"`
	Locations    []sarifLocation    `json:"locations"`
	Suppressions []sarifSuppression `json:"suppressions,omitempty"`
}

func sarifLoc(path string, line, col int) sarifLocation {
	l := sarifLocation{PhysicalLocation: sarifPhysical{ArtifactLocation: sarifArtifact{URI: (&url.URL{Path: path}).String()}}}
	if line > 0 {
		l.PhysicalLocation.Region = &sarifRegion{StartLine: line, StartColumn: col}
	}
	return l
}

// Add records a report's findings: errors, warnings and the suppressed.
// pathOf turns a skill-relative file into the path the log shows.
func (s *SARIF) Add(r *Report, pathOf func(file string) string) {
	add := func(f Finding) {
		rule := f.Rule
		if rule == "" {
			rule = string(f.Code)
		}
		ix, ok := s.ruleIx[rule]
		if !ok {
			ix = len(s.rules)
			s.ruleIx[rule] = ix
			s.rules = append(s.rules, rule)
		}
		level := "warning"
		if f.Severity == SeverityError {
			level = "error"
		}
		res := sarifResult{RuleID: rule, RuleIndex: ix, Level: level, Message: sarifMessage{Text: f.Message},
			Locations: []sarifLocation{sarifLoc(pathOf(f.File), f.Line, f.Column)}}
		if sp := f.Suppression; sp != nil {
			ss := sarifSuppression{Kind: sp.Kind, Status: "accepted", Justification: sp.Justification}
			if sp.Line > 0 {
				l := sarifLoc(pathOf(sp.File), sp.Line, 0)
				ss.Location = &l
			}
			res.Suppressions = []sarifSuppression{ss}
		}
		s.results = append(s.results, res)
	}
	for _, list := range [][]Finding{r.Errors, r.Warnings, r.Suppressed} {
		for _, f := range list {
			add(f)
		}
	}
}

// JSON is the log: one run of the "clawkit" driver, its rules (those the
// results use, with a description) and the results.
func (s *SARIF) JSON() ([]byte, error) {
	type text = sarifMessage
	type rule struct {
		ID               string `json:"id"`
		ShortDescription text   `json:"shortDescription"`
	}
	rules := make([]rule, len(s.rules))
	for i, id := range s.rules {
		rules[i] = rule{ID: id, ShortDescription: text{Text: RuleDescription(id)}}
	}
	run := map[string]any{
		"tool": map[string]any{"driver": map[string]any{
			"name": "clawkit", "version": s.version, "rules": rules,
		}},
		"columnKind": "unicodeCodePoints",
		"results":    s.results,
	}
	if len(s.notes) > 0 {
		run["invocations"] = []any{map[string]any{"executionSuccessful": true, "toolExecutionNotifications": s.notes}}
	}
	doc := map[string]any{"version": "2.1.0", "runs": []any{run}}
	return json.MarshalIndent(doc, "", "  ")
}

// ruleDescriptions say in one line what each rule checks.
var ruleDescriptions = map[string]string{
	RuleSecretLiteral:      "A literal credential (a provider key shape) in a skill file.",
	RulePrivateKey:         "A private key block in a skill file.",
	RulePipeToShell:        "Downloaded code piped into a shell.",
	RuleExfiltration:       "The environment or key files sent over the network.",
	RuleDestructive:        "A recursive delete of /, a home or a system folder.",
	RuleWorldWritable:      "chmod granting write to every user.",
	RuleHiddenUnicode:      "Bidi controls or zero-width characters that make text read differently than it runs.",
	RuleBinary:             "NUL bytes or invalid UTF-8 in a text file.",
	RulePromptInjection:    "Wording that tells the agent to ignore its instructions, names hidden prompt layers, or asks to run tools without approval.",
	RuleSkillMDMissing:     "The skill folder has no SKILL.md.",
	RuleSkillMDCase:        "SKILL.md is spelled skill.md.",
	RuleFrontmatter:        "SKILL.md does not start with a closed YAML frontmatter block.",
	RuleYAML:               "The frontmatter is not valid YAML of the accepted shape.",
	RuleNameRequired:       "The frontmatter has no usable name.",
	RuleNameLength:         "The name is longer than the specification allows.",
	RuleNameCase:           "The name is not lowercase.",
	RuleNameCharset:        "The name holds characters the specification does not allow.",
	RuleNameHyphen:         "The name starts or ends with a hyphen, or holds two in a row.",
	RuleNameFolder:         "The name differs from the skill folder's name.",
	RuleDescRequired:       "The frontmatter has no usable description.",
	RuleDescLength:         "The description is longer than the specification allows.",
	RuleCompatLength:       "The compatibility field is too long or empty.",
	RuleFieldType:          "A frontmatter field has the wrong type.",
	RuleUnknownKey:         "A frontmatter key the profile does not define.",
	RuleFileLocation:       "A file or folder where the authoring contract allows none.",
	RuleLink:               "A symbolic link inside a skill.",
	RuleNotRegular:         "A FIFO, device or socket inside a skill.",
	RuleFileSize:           "A file over its size limit.",
	RuleSkillSize:          "A skill over its total size limit.",
	RuleSkillFiles:         "A skill with more files than allowed.",
	RuleFolderLink:         "The skill folder is a symbolic link.",
	RuleNotFolder:          "The skill path is not a folder.",
	RuleUnreadable:         "A file that cannot be read.",
	RuleOpenClawName:       "The name is not a safe folder name.",
	RuleDescBytes:          "The description is longer than 1,024 bytes.",
	RuleMetadataStrings:    "A metadata value that is not a string.",
	RuleSuppressionInvalid: "A clawkit:ignore directive without a rule or a reason, or naming an unknown rule.",
	RuleSuppressionUnused:  "A clawkit:ignore directive that matches no finding.",
}

// RuleDescription is a rule's one-line description (its id when unknown).
func RuleDescription(id string) string {
	if d, ok := ruleDescriptions[id]; ok {
		return d
	}
	return id
}
