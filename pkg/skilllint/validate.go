package skilllint

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/fsx"
)

// Limits (docs/skills.md). Exceeding any of them is too_large.
const (
	MaxSkillMDBytes   = 256_000
	MaxSupportBytes   = 1 << 20
	MaxFiles          = 256
	MaxSkillBytes     = 8 << 20
	MaxDescBytes      = 1024
	MaxWalkEntries    = 4 * MaxFiles // stop walking a hostile tree early
	SeverityError     = "error"
	SeverityWarning   = "warning"
	knownKeysForHints = "name, description, license, allowed-tools, metadata, compatibility, homepage, user-invocable, disable-model-invocation"
)

// Finding is one validation result. Errors fail validation; warnings do not
// unless strict.
type Finding struct {
	Severity string    `json:"severity"`
	Code     errs.Code `json:"code"`
	Rule     string    `json:"rule,omitempty"`
	File     string    `json:"file"`
	Line     int       `json:"line,omitempty"`
	// Column is the 1-based column (in characters) where the match
	// starts, when the rule knows it (the security scan does).
	Column  int    `json:"column,omitempty"`
	Message string `json:"message"`
	// Suppression is set on a finding a suppression accepted
	// (Report.Suppressed): how, and why.
	Suppression *Suppression `json:"suppression,omitempty"`
}

func (f Finding) String() string {
	loc := f.File
	if f.Line > 0 {
		loc = fmt.Sprintf("%s:%d", f.File, f.Line)
	}
	code := string(f.Code)
	if f.Rule != "" {
		code += "[" + f.Rule + "]"
	}
	return fmt.Sprintf("%s: %s %s: %s", loc, f.Severity, code, f.Message)
}

// knownKeys are the frontmatter keys the format defines, with a type check.
var knownKeys = map[string]func(v any) bool{
	"name":                     isString,
	"description":              isString,
	"license":                  isString,
	"compatibility":            isString,
	"homepage":                 isString,
	"user-invocable":           isBool,
	"disable-model-invocation": isBool,
	"metadata":                 func(v any) bool { _, ok := v.(map[string]any); return ok },
	"allowed-tools": func(v any) bool {
		switch t := v.(type) {
		case string:
			return true
		case []any:
			for _, e := range t {
				if !isString(e) {
					return false
				}
			}
			return true
		}
		return false
	},
}

var knownKeyTypes = map[string]string{
	"name": "a string", "description": "a string", "license": "a string", "compatibility": "a string",
	"homepage": "a string", "user-invocable": "true or false", "disable-model-invocation": "true or false",
	"metadata": "a mapping", "allowed-tools": "a string or a list of strings",
}

func isString(v any) bool { _, ok := v.(string); return ok }
func isBool(v any) bool   { _, ok := v.(bool); return ok }

// CheckSkillMD validates SKILL.md content under OpenClaw's authoring
// rules (what `skill write` enforces). strict turns warnings into errors.
func CheckSkillMD(skill string, content []byte, strict bool) []Finding {
	return applyStrict(CheckSkillMDAs(skill, content, Options{Profile: ProfileOpenClaw}), strict)
}

// CheckSkillMDAs validates SKILL.md content for the skill folder name under
// a profile: size, frontmatter (strict parse, name, description, known
// keys) and the security scan.
func CheckSkillMDAs(skill string, content []byte, opt Options) []Finding {
	var out []Finding
	if len(content) > MaxSkillMDBytes {
		f := Finding{Severity: SeverityError, Code: errs.CodeTooLarge, Rule: RuleFileSize, File: SkillFile,
			Message: fmt.Sprintf("SKILL.md is %d bytes; the limit is %d bytes", len(content), MaxSkillMDBytes)}
		if !opt.spec() {
			return append(out, f)
		}
		// The specification sets no size limit: clawkit's is advice there.
		f.Severity = SeverityWarning
		out = append(out, f)
	}
	split := SplitFrontmatter(content)
	fm, err := ParseFrontmatter(split)
	switch {
	case err != nil:
		var fe *FrontmatterError
		errors.As(err, &fe)
		rule := RuleYAML
		if !split.Terminated {
			rule = RuleFrontmatter
		}
		if fe != nil {
			out = append(out, Finding{Severity: SeverityError, Code: errs.CodeInvalidFrontmatter, Rule: rule, File: SkillFile, Line: fe.Line, Message: fe.Msg})
		} else {
			out = append(out, Finding{Severity: SeverityError, Code: errs.CodeInvalidFrontmatter, Rule: rule, File: SkillFile, Message: err.Error()})
		}
	case opt.spec():
		out = append(out, checkSpecFields(skill, split, fm)...)
	default:
		out = append(out, checkFields(skill, split, fm)...)
	}
	return append(out, scanAs(SkillFile, content, opt)...)
}

// scanAs runs the security scan; under the specification profile its
// errors are warnings (clawkit is stricter than the format on purpose).
func scanAs(file string, content []byte, opt Options) []Finding {
	fs := Scan(file, content)
	if opt.spec() {
		for i := range fs {
			fs[i].Severity = SeverityWarning
		}
	}
	return fs
}

// applyStrict turns warnings into errors when strict.
func applyStrict(fs []Finding, strict bool) []Finding {
	if strict {
		for i := range fs {
			fs[i].Severity = SeverityError
		}
	}
	return fs
}

func keyLines(fm *Frontmatter) map[string]int {
	line := map[string]int{}
	for _, k := range fm.Keys {
		line[k.Name] = k.Line
	}
	return line
}

// checkSpecFields applies the Agent Skills specification's frontmatter
// rules (see docs/skills.md for the table and where clawkit differs from
// the reference validator).
func checkSpecFields(skill string, split Split, fm *Frontmatter) []Finding {
	var out []Finding
	line := keyLines(fm)
	add := func(sev, rule string, line int, format string, args ...any) {
		out = append(out, Finding{Severity: sev, Code: errs.CodeInvalidFrontmatter, Rule: rule, File: SkillFile, Line: line, Message: fmt.Sprintf(format, args...)})
	}
	if !split.Present {
		add(SeverityError, RuleFrontmatter, 1, "SKILL.md must start with YAML frontmatter: a '---' line, name: and description:, then a closing '---' line")
		return out
	}
	if _, ok := fm.Fields["name"]; !ok {
		add(SeverityError, RuleNameRequired, split.YAMLLine, "frontmatter has no 'name'; add name: %s", skill)
	} else if s, ok := fm.scalarText("name"); !ok {
		add(SeverityError, RuleNameRequired, line["name"], "'name' must be a non-empty string")
	} else {
		out = append(out, specNameFindings(s, skill, line["name"])...)
	}
	if _, ok := fm.Fields["description"]; !ok {
		add(SeverityError, RuleDescRequired, split.YAMLLine, "frontmatter has no 'description'; add one sentence saying what the skill does and when to use it")
	} else if s, ok := fm.scalarText("description"); !ok || strings.TrimSpace(s) == "" {
		add(SeverityError, RuleDescRequired, line["description"], "'description' must be a non-empty string")
	} else if n := utf8.RuneCountInString(s); n > SpecMaxDescriptionChars {
		add(SeverityError, RuleDescLength, line["description"], "'description' is %d characters; the limit is %d", n, SpecMaxDescriptionChars)
	}
	if _, ok := fm.Fields["compatibility"]; ok {
		if s, ok := fm.scalarText("compatibility"); !ok {
			add(SeverityError, RuleFieldType, line["compatibility"], "'compatibility' must be a string")
		} else if n := utf8.RuneCountInString(s); n > SpecMaxCompatibilityChars {
			add(SeverityError, RuleCompatLength, line["compatibility"], "'compatibility' is %d characters; the limit is %d", n, SpecMaxCompatibilityChars)
		} else if n == 0 {
			add(SeverityWarning, RuleCompatLength, line["compatibility"], "'compatibility' is empty; omit the key instead")
		}
	}
	if v, ok := fm.Fields["allowed-tools"]; ok && !knownKeys["allowed-tools"](v) {
		if _, scalar := fm.scalarText("allowed-tools"); !scalar {
			add(SeverityError, RuleFieldType, line["allowed-tools"], "'allowed-tools' must be a string or a list of strings")
		}
	}
	if v, ok := fm.Fields["metadata"]; ok {
		m, isMap := v.(map[string]any)
		if !isMap {
			add(SeverityWarning, RuleFieldType, line["metadata"], "'metadata' should be a mapping of string keys to string values")
		} else {
			for k, mv := range m {
				if _, s := mv.(string); !s {
					add(SeverityWarning, RuleMetadataStrings, line["metadata"], "metadata value of %q is not a string; quote it (e.g. version: \"1.0\")", k)
					break
				}
			}
		}
	}
	if _, ok := fm.Fields["license"]; ok {
		if _, s := fm.scalarText("license"); !s {
			add(SeverityWarning, RuleFieldType, line["license"], "'license' should be a string (a license name or a bundled license file)")
		}
	}
	for _, k := range fm.Keys {
		if !specKeys[k.Name] {
			add(SeverityWarning, RuleUnknownKey, k.Line, "frontmatter key %q is not defined by the Agent Skills specification (defined: name, description, license, compatibility, metadata, allowed-tools)", k.Name)
			out[len(out)-1].Code = CodeUnknownKey
		}
	}
	return out
}

// checkFields applies OpenClaw's authoring rules to the frontmatter.
func checkFields(skill string, split Split, fm *Frontmatter) []Finding {
	var out []Finding
	line := keyLines(fm)
	errf := func(rule string, line int, format string, args ...any) {
		out = append(out, Finding{Severity: SeverityError, Code: errs.CodeInvalidFrontmatter, Rule: rule, File: SkillFile, Line: line, Message: fmt.Sprintf(format, args...)})
	}
	if !split.Present {
		errf(RuleFrontmatter, 1, "SKILL.md has no frontmatter; start it with a '---' line, then name: and description:, then a closing '---' line")
		return out
	}
	// name
	if v, ok := fm.Fields["name"]; !ok {
		errf(RuleNameRequired, split.YAMLLine, "frontmatter has no 'name'; add name: %s", skill)
	} else if s, ok := v.(string); !ok {
		errf(RuleFieldType, line["name"], "'name' must be a string")
	} else if err := CheckSkillName(s); err != nil {
		errf(RuleOpenClawName, line["name"], "name %q is not a safe folder name: %s", s, errs.As(err).Message)
	} else if skill != "" && s != skill {
		errf(RuleNameFolder, line["name"], "name %q differs from the skill folder %q; they must be equal", s, skill)
	}
	// description
	if v, ok := fm.Fields["description"]; !ok {
		errf(RuleDescRequired, split.YAMLLine, "frontmatter has no 'description'; add one sentence saying when to use the skill")
	} else if s, ok := v.(string); !ok {
		errf(RuleFieldType, line["description"], "'description' must be a string")
	} else if strings.TrimFunc(s, unicode.IsSpace) == "" {
		errf(RuleDescRequired, line["description"], "'description' is empty or only white space")
	} else if len(s) > MaxDescBytes {
		errf(RuleDescBytes, line["description"], "'description' is %d bytes; the limit is %d bytes (UTF-8)", len(s), MaxDescBytes)
	}
	for _, k := range fm.Keys {
		check, known := knownKeys[k.Name]
		if !known {
			out = append(out, Finding{Severity: SeverityWarning, Code: CodeUnknownKey, Rule: RuleUnknownKey, File: SkillFile, Line: k.Line,
				Message: fmt.Sprintf("unknown frontmatter key %q (known: %s)", k.Name, knownKeysForHints)})
			continue
		}
		if k.Name == "name" || k.Name == "description" {
			continue
		}
		if !check(fm.Fields[k.Name]) {
			errf(RuleFieldType, k.Line, "'%s' must be %s", k.Name, knownKeyTypes[k.Name])
		}
	}
	return out
}

// CheckSupportFile validates one support file under OpenClaw's authoring
// rules: size and, for text files, the security scan. p must already be
// normalized.
func CheckSupportFile(p string, content []byte) []Finding {
	return checkSupportFile(p, content, Options{Profile: ProfileOpenClaw})
}

func checkSupportFile(p string, content []byte, opt Options) []Finding {
	if len(content) > MaxSupportBytes {
		sev := SeverityError
		if opt.spec() {
			sev = SeverityWarning
		}
		return []Finding{{Severity: sev, Code: errs.CodeTooLarge, Rule: RuleFileSize, File: p,
			Message: fmt.Sprintf("%s is %d bytes; the limit for a support file is %d bytes", p, len(content), MaxSupportBytes)}}
	}
	if !IsTextFile(p) {
		return nil
	}
	return scanAs(p, content, opt)
}

// TreeLimits checks the whole-skill limits on a file list.
func TreeLimits(files []FileEntry) []Finding {
	var out []Finding
	var total int64
	for _, f := range files {
		total += f.SizeBytes
	}
	if len(files) > MaxFiles {
		out = append(out, Finding{Severity: SeverityError, Code: errs.CodeTooLarge, Rule: RuleSkillFiles, File: ".",
			Message: fmt.Sprintf("the skill has %d files; the limit is %d", len(files), MaxFiles)})
	}
	if total > MaxSkillBytes {
		out = append(out, Finding{Severity: SeverityError, Code: errs.CodeTooLarge, Rule: RuleSkillSize, File: ".",
			Message: fmt.Sprintf("the skill holds %d bytes; the limit is %d bytes", total, MaxSkillBytes)})
	}
	return out
}

// Report is the outcome of validating a whole skill folder.
type Report struct {
	Skill    string    `json:"skill"`
	Dir      string    `json:"dir,omitempty"`
	Profile  string    `json:"profile"`
	OK       bool      `json:"ok"`
	Strict   bool      `json:"strict"`
	Files    int       `json:"files"`
	Bytes    int64     `json:"bytes"`
	Errors   []Finding `json:"errors"`
	Warnings []Finding `json:"warnings"`
	// Suppressed are the findings --disable or an inline directive
	// accepted, each with its suppression; Directives are the inline
	// directives read, with how many findings each accepted (suppress.go).
	Suppressed []Finding   `json:"suppressed"`
	Directives []Directive `json:"directives"`
	Revision   *Revision   `json:"revision,omitempty"`
	// Hint says what to do when the folder was not what was meant (a
	// folder of skills passed as one skill).
	Hint string      `json:"hint,omitempty"`
	Tree []FileEntry `json:"-"`
}

// Add files findings as errors or warnings by severity.
func (r *Report) Add(fs ...Finding) {
	for _, f := range fs {
		if f.Severity == SeverityError {
			r.Errors = append(r.Errors, f)
		} else {
			r.Warnings = append(r.Warnings, f)
		}
	}
}

// Finish applies --strict (every warning becomes an error), sorts the
// findings and sets the verdict.
func (r *Report) Finish() {
	if r.Strict && len(r.Warnings) > 0 {
		r.Errors = append(r.Errors, applyStrict(r.Warnings, true)...)
		r.Warnings = nil
	}
	sortFindings(r.Errors)
	sortFindings(r.Warnings)
	sortFindings(r.Suppressed)
	if r.Suppressed == nil {
		r.Suppressed = []Finding{}
	}
	if r.Directives == nil {
		r.Directives = []Directive{}
	}
	if r.Errors == nil {
		r.Errors = []Finding{}
	}
	if r.Warnings == nil {
		r.Warnings = []Finding{}
	}
	r.OK = len(r.Errors) == 0
}

func sortFindings(fs []Finding) {
	sort.SliceStable(fs, func(i, j int) bool {
		if fs[i].File != fs[j].File {
			if fs[i].File == SkillFile || fs[j].File == SkillFile {
				return fs[i].File == SkillFile
			}
			return fs[i].File < fs[j].File
		}
		return fs[i].Line < fs[j].Line
	})
}

// Err turns a failed report into the coded error the CLI prints: the code of
// the first error (all findings are listed in the message, separated by
// "; ", so the single JSON error document still carries them). The message
// is one line: the error printer escapes a newline, as it would one that
// came from outside, so a list over several lines would print as "\n".
func (r *Report) Err() error {
	if r.OK {
		return nil
	}
	lines := make([]string, 0, len(r.Errors))
	for _, f := range r.Errors {
		lines = append(lines, f.String())
	}
	n := len(r.Errors)
	plural := "s"
	if n == 1 {
		plural = ""
	}
	return errs.Failed(r.Errors[0].Code, "skill %q is invalid (%d error%s): %s", r.Skill, n, plural, strings.Join(lines, "; ")).
		WithHint("fix the listed lines and run 'clawkit skill validate' again")
}

// ValidateDir validates a skill folder on disk (for CI, before the skill is
// written anywhere) under opt's profile. The skill name is the folder's
// base name. A folder that is a link is reported as a link refusal (never
// followed); links inside are refused too; non-regular files are never
// opened; clawkit's own staging leftovers are skipped. It reads each file
// at most once and never more than the applicable limit plus one byte.
// An error is returned only when dir cannot be validated at all (missing,
// not a folder).
func ValidateDir(dir string, opt Options) (*Report, error) {
	if opt.Profile == "" {
		opt.Profile = ProfileSpec
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, errs.Usage(errs.CodeInvalidPath, "cannot resolve %s: %v", dir, err)
	}
	name := filepath.Base(abs)
	rep := &Report{Skill: name, Dir: dir, Profile: opt.Profile, Strict: opt.Strict}
	lst, err := os.Lstat(abs)
	if err != nil {
		return nil, errs.Failed(errs.CodeNotFound, "cannot read skill folder %s: %v", dir, UnwrapPathErr(err)).
			WithHint("pass the folder that holds SKILL.md")
	}
	if lst.Mode()&fs.ModeSymlink != 0 {
		rep.Add(Finding{Severity: SeverityError, Code: errs.CodePathEscape, Rule: RuleFolderLink, File: ".",
			Message: "the skill folder is a symbolic link; links are refused (validate the folder it points to instead)"})
		rep.Finish()
		return rep, nil
	}
	if !lst.IsDir() {
		return nil, errs.Usage(errs.CodeInvalidPath, "%s is not a folder", dir).
			WithHint("pass the folder that holds SKILL.md, not the file")
	}
	spec := opt.spec()
	var dirs []Directive
	var tree []FileEntry
	var skillMD []byte
	mdName := ""
	sawSkillMD := false
	entries := 0
	walkErr := filepath.WalkDir(abs, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == abs {
			return nil
		}
		if IsStagingName(d.Name()) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		entries++
		if entries > MaxWalkEntries {
			return errTooMany
		}
		rel := filepath.ToSlash(strings.TrimPrefix(p, abs+string(filepath.Separator)))
		if d.Type()&fs.ModeSymlink != 0 {
			rep.Add(Finding{Severity: SeverityError, Code: errs.CodePathEscape, Rule: RuleLink, File: rel, Message: fmt.Sprintf("%s is a symbolic link; links are refused in skills", rel)})
			sawSkillMD = sawSkillMD || rel == SkillFile
			return nil
		}
		if d.IsDir() {
			if !spec && !IsSupportDir(strings.SplitN(rel, "/", 2)[0]) {
				rep.Add(Finding{Severity: SeverityError, Code: errs.CodeInvalidPath, Rule: RuleFileLocation, File: rel + "/",
					Message: fmt.Sprintf("folder %s/ is not allowed; support files live below %s/", rel, strings.Join(SupportDirs, "/, "))})
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			sev := SeverityError
			if spec {
				sev = SeverityWarning
			}
			rep.Add(Finding{Severity: sev, Code: errs.CodeInvalidPath, Rule: RuleNotRegular, File: rel, Message: fmt.Sprintf("%s is not a regular file (not read)", rel)})
			return nil
		}
		isMD := rel == SkillFile || (spec && rel == "skill.md" && mdName == "")
		if !spec {
			if _, err := NormalizeSkillFilePath(rel); err != nil {
				rep.Add(Finding{Severity: SeverityError, Code: errs.CodeOf(err), Rule: RuleFileLocation, File: rel, Message: err.Error()})
				return nil
			}
		}
		limit := int64(MaxSupportBytes)
		if isMD {
			limit = MaxSkillMDBytes
		}
		data, size, err := readLimited(p, limit)
		if err != nil {
			if e := errs.As(err); e != nil {
				rep.Add(Finding{Severity: SeverityError, Code: e.Code, Rule: RuleNotRegular, File: rel, Message: e.Message})
				return nil
			}
			return err
		}
		if isMD {
			sawSkillMD = true
		}
		tree = append(tree, FileEntry{Path: rel, SizeBytes: size, SHA256: sha256Hex(data, size, limit)})
		if size > limit {
			sev := SeverityError
			if spec {
				sev = SeverityWarning
			}
			rep.Add(Finding{Severity: sev, Code: errs.CodeTooLarge, Rule: RuleFileSize, File: rel,
				Message: fmt.Sprintf("%s is %d bytes; the limit is %d bytes", rel, size, limit)})
			if !isMD || !spec {
				return nil
			}
		}
		if isMD || IsTextFile(rel) {
			dirs = append(dirs, ParseDirectives(rel, data)...)
		}
		if isMD {
			skillMD, mdName = data, rel
			return nil
		}
		rep.Add(checkSupportFile(rel, data, opt)...)
		return nil
	})
	if errors.Is(walkErr, errTooMany) {
		f := Finding{Severity: SeverityError, Code: errs.CodeTooLarge, Rule: RuleSkillFiles, File: ".",
			Message: fmt.Sprintf("the folder has more than %d entries; a skill holds at most %d files", MaxWalkEntries, MaxFiles)}
		if spec {
			f.Severity = SeverityWarning
			f.Message += " (the rest was not checked)"
		}
		rep.Add(f)
	} else if walkErr != nil {
		return nil, errs.Failed(errs.CodeReadFailed, "cannot read skill folder %s: %v", dir, UnwrapPathErr(walkErr))
	}
	if mdName != "" {
		fs := CheckSkillMDAs(name, skillMD, opt)
		if mdName != SkillFile {
			for i := range fs {
				fs[i].File = mdName
			}
			fs = append(fs, Finding{Severity: SeverityWarning, Code: errs.CodeInvalidPath, Rule: RuleSkillMDCase, File: mdName, Line: 1,
				Message: "the file is named skill.md; SKILL.md is the name every client looks for first"})
		}
		rep.Add(fs...)
	} else if !sawSkillMD {
		msg := "the folder has no SKILL.md; every skill starts with one"
		if n, first := childSkills(abs); n > 0 {
			// A folder of skills passed as one skill: say what was meant.
			msg += fmt.Sprintf("; it holds %d skill %s (%s%s)", n, pluralWord(n, "folder", "folders"), first, map[bool]string{true: ", …"}[n > 1])
			rep.Hint = fmt.Sprintf("%s is a folder of skills, not a skill: validate them with --recursive %s", dir, dir)
		}
		rep.Add(Finding{Severity: SeverityError, Code: errs.CodeInvalidFrontmatter, Rule: RuleSkillMDMissing, File: SkillFile, Message: msg})
	}
	limits := TreeLimits(tree)
	if spec {
		for i := range limits {
			limits[i].Severity = SeverityWarning
		}
	}
	rep.Add(limits...)
	rep.applySuppressions(dirs, opt.Disable)
	SortTree(tree)
	rep.Files = len(tree)
	for _, f := range tree {
		rep.Bytes += f.SizeBytes
	}
	rep.Finish()
	if mdName != "" && rep.OK {
		rev := RevisionOf(skillMD, tree)
		rep.Revision = &rev
	}
	rep.Tree = tree
	return rep, nil
}

var errTooMany = fmt.Errorf("too many entries")

// childSkills counts the folders directly below dir that hold a SKILL.md
// (regular file, not followed through links), reading at most
// MaxWalkEntries entries, and returns the first one's name (sorted).
func childSkills(dir string) (int, string) {
	f, err := os.Open(dir)
	if err != nil {
		return 0, ""
	}
	defer fsx.CloseRead(f)
	ents, _ := f.ReadDir(MaxWalkEntries)
	var names []string
	for _, e := range ents {
		if !e.IsDir() || IsStagingName(e.Name()) {
			continue
		}
		if st, err := os.Lstat(filepath.Join(dir, e.Name(), SkillFile)); err == nil && st.Mode().IsRegular() {
			names = append(names, e.Name())
		}
	}
	if len(names) == 0 {
		return 0, ""
	}
	sort.Strings(names)
	return len(names), names[0]
}

// readLimited reads at most limit+1 bytes of a regular file without
// following a final symlink; size is the file's full size from fstat.
func readLimited(p string, limit int64) ([]byte, int64, error) {
	f, st, err := OpenInput(p)
	if err != nil {
		return nil, 0, err
	}
	defer fsx.CloseRead(f)
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, 0, err
	}
	size := st.Size()
	if int64(len(data)) > size {
		size = int64(len(data))
	}
	return data, size, nil
}

// UnwrapPathErr drops the *fs.PathError wrapping of err (messages name
// the path themselves).
func UnwrapPathErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func pluralWord(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
