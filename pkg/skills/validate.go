package skills

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode"

	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/fsx"
)

// Limits (DESIGN §9). Exceeding any of them is too_large.
const (
	MaxSkillMDBytes   = 256_000
	MaxSupportBytes   = 1 << 20
	MaxFiles          = 256
	MaxSkillBytes     = 8 << 20
	MaxDescBytes      = 1024
	maxWalkEntries    = 4 * MaxFiles // stop walking a hostile tree early
	SeverityError     = "error"
	SeverityWarning   = "warning"
	CodeUnknownKey    = "unknown_key"
	CodeInvalidFM     = "invalid_frontmatter"
	CodeTooLarge      = "too_large"
	CodeUnsafe        = "unsafe_content"
	CodeInvalidPath   = "invalid_path"
	CodePathEscape    = "path_escape"
	CodeMissingSkill  = "missing_skill_md"
	knownKeysForHints = "name, description, license, allowed-tools, metadata, compatibility, homepage, user-invocable, disable-model-invocation"
)

// Finding is one validation result. Errors fail validation; warnings do not
// unless strict.
type Finding struct {
	Severity string `json:"severity"`
	Code     string `json:"code"`
	Rule     string `json:"rule,omitempty"`
	File     string `json:"file"`
	Line     int    `json:"line,omitempty"`
	Message  string `json:"message"`
}

func (f Finding) String() string {
	loc := f.File
	if f.Line > 0 {
		loc = fmt.Sprintf("%s:%d", f.File, f.Line)
	}
	code := f.Code
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

// CheckSkillMD validates SKILL.md content for the skill folder name:
// size, frontmatter (strict parse, name, description, known keys) and the
// security scan. Unknown keys are warnings, or errors when strict.
func CheckSkillMD(skill string, content []byte, strict bool) []Finding {
	var out []Finding
	errf := func(code string, line int, format string, args ...any) {
		out = append(out, Finding{Severity: SeverityError, Code: code, File: SkillFile, Line: line, Message: fmt.Sprintf(format, args...)})
	}
	if len(content) > MaxSkillMDBytes {
		errf(CodeTooLarge, 0, "SKILL.md is %d bytes; the limit is %d bytes", len(content), MaxSkillMDBytes)
		return out
	}
	split := SplitFrontmatter(content)
	fm, err := ParseFrontmatter(split)
	if err != nil {
		fe, _ := err.(*FrontmatterError)
		line := 0
		if fe != nil {
			line = fe.Line
			errf(CodeInvalidFM, line, "%s", fe.Msg)
		} else {
			errf(CodeInvalidFM, 0, "%v", err)
		}
	} else {
		out = append(out, checkFields(skill, split, fm, strict)...)
	}
	return append(out, Scan(SkillFile, content)...)
}

func checkFields(skill string, split Split, fm *Frontmatter, strict bool) []Finding {
	var out []Finding
	line := map[string]int{}
	for _, k := range fm.Keys {
		line[k.Name] = k.Line
	}
	errf := func(line int, format string, args ...any) {
		out = append(out, Finding{Severity: SeverityError, Code: CodeInvalidFM, File: SkillFile, Line: line, Message: fmt.Sprintf(format, args...)})
	}
	if !split.Present {
		errf(1, "SKILL.md has no frontmatter; start it with a '---' line, then name: and description:, then a closing '---' line")
		return out
	}
	// name
	if v, ok := fm.Fields["name"]; !ok {
		errf(split.YAMLLine, "frontmatter has no 'name'; add name: %s", skill)
	} else if s, ok := v.(string); !ok {
		errf(line["name"], "'name' must be a string")
	} else if !ValidName(s) {
		errf(line["name"], "name %q does not match the naming rule: 1-64 characters a-z, 0-9 and '-', starting and ending with a letter or digit, without '--'", s)
	} else if skill != "" && s != skill {
		errf(line["name"], "name %q differs from the skill folder %q; they must be equal", s, skill)
	}
	// description
	if v, ok := fm.Fields["description"]; !ok {
		errf(split.YAMLLine, "frontmatter has no 'description'; add one sentence saying when to use the skill")
	} else if s, ok := v.(string); !ok {
		errf(line["description"], "'description' must be a string")
	} else if strings.TrimFunc(s, unicode.IsSpace) == "" {
		errf(line["description"], "'description' is empty or only white space")
	} else if len(s) > MaxDescBytes {
		errf(line["description"], "'description' is %d bytes; the limit is %d bytes (UTF-8)", len(s), MaxDescBytes)
	}
	for _, k := range fm.Keys {
		check, known := knownKeys[k.Name]
		if !known {
			sev := SeverityWarning
			if strict {
				sev = SeverityError
			}
			out = append(out, Finding{Severity: sev, Code: CodeUnknownKey, File: SkillFile, Line: k.Line,
				Message: fmt.Sprintf("unknown frontmatter key %q (known: %s)", k.Name, knownKeysForHints)})
			continue
		}
		if k.Name == "name" || k.Name == "description" {
			continue
		}
		if !check(fm.Fields[k.Name]) {
			errf(k.Line, "'%s' must be %s", k.Name, knownKeyTypes[k.Name])
		}
	}
	return out
}

// CheckSupportFile validates one support file: size and, for text files,
// the security scan. p must already be normalized.
func CheckSupportFile(p string, content []byte) []Finding {
	if len(content) > MaxSupportBytes {
		return []Finding{{Severity: SeverityError, Code: CodeTooLarge, File: p,
			Message: fmt.Sprintf("%s is %d bytes; the limit for a support file is %d bytes", p, len(content), MaxSupportBytes)}}
	}
	if !IsTextFile(p) {
		return nil
	}
	return Scan(p, content)
}

// TreeLimits checks the whole-skill limits on a file list.
func TreeLimits(files []FileEntry) []Finding {
	var out []Finding
	var total int64
	for _, f := range files {
		total += f.SizeBytes
	}
	if len(files) > MaxFiles {
		out = append(out, Finding{Severity: SeverityError, Code: CodeTooLarge, File: ".",
			Message: fmt.Sprintf("the skill has %d files; the limit is %d", len(files), MaxFiles)})
	}
	if total > MaxSkillBytes {
		out = append(out, Finding{Severity: SeverityError, Code: CodeTooLarge, File: ".",
			Message: fmt.Sprintf("the skill holds %d bytes; the limit is %d bytes", total, MaxSkillBytes)})
	}
	return out
}

// Report is the outcome of validating a whole skill folder.
type Report struct {
	Skill    string      `json:"skill"`
	Dir      string      `json:"dir,omitempty"`
	OK       bool        `json:"ok"`
	Strict   bool        `json:"strict"`
	Files    int         `json:"files"`
	Bytes    int64       `json:"bytes"`
	Errors   []Finding   `json:"errors"`
	Warnings []Finding   `json:"warnings"`
	Revision *Revision   `json:"revision,omitempty"`
	Tree     []FileEntry `json:"-"`
}

func (r *Report) add(fs ...Finding) {
	for _, f := range fs {
		if f.Severity == SeverityError {
			r.Errors = append(r.Errors, f)
		} else {
			r.Warnings = append(r.Warnings, f)
		}
	}
}

func (r *Report) finish() {
	sortFindings(r.Errors)
	sortFindings(r.Warnings)
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
// the first error (all findings are listed in the message, one per line, so
// the single JSON error document still carries them).
func (r *Report) Err() error {
	if r.OK {
		return nil
	}
	lines := make([]string, 0, len(r.Errors))
	for _, f := range r.Errors {
		lines = append(lines, "  "+f.String())
	}
	n := len(r.Errors)
	plural := "s"
	if n == 1 {
		plural = ""
	}
	return errs.Failed(r.Errors[0].Code, "skill %q is invalid (%d error%s):\n%s", r.Skill, n, plural, strings.Join(lines, "\n")).
		WithHint("fix the listed lines and run 'clawkit skill validate' again")
}

// ValidateDir validates a skill folder on disk (for CI, before the skill is
// written anywhere). The skill name is the folder's base name. Links inside
// the folder are refused (path_escape findings); the folder itself may be
// reached through links. It reads each file at most once and never more
// than the applicable limit plus one byte.
func ValidateDir(dir string, strict bool) (*Report, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, errs.Usage("invalid_path", "cannot resolve %s: %v", dir, err)
	}
	st, err := os.Stat(abs)
	if err != nil {
		return nil, errs.Failed("not_found", "cannot read skill folder %s: %v", dir, unwrapPathErr(err)).
			WithHint("pass the folder that holds SKILL.md")
	}
	if !st.IsDir() {
		return nil, errs.Usage("invalid_path", "%s is not a folder", dir).
			WithHint("pass the folder that holds SKILL.md, not the file")
	}
	name := filepath.Base(abs)
	rep := &Report{Skill: name, Dir: dir, Strict: strict}
	var tree []FileEntry
	var skillMD []byte
	haveSkillMD, sawSkillMD := false, false
	entries := 0
	walkErr := filepath.WalkDir(abs, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == abs {
			return nil
		}
		entries++
		if entries > maxWalkEntries {
			return errTooMany
		}
		rel := filepath.ToSlash(strings.TrimPrefix(p, abs+string(filepath.Separator)))
		if d.Type()&fs.ModeSymlink != 0 {
			rep.add(Finding{Severity: SeverityError, Code: CodePathEscape, File: rel, Message: fmt.Sprintf("%s is a symbolic link; links are refused in skills", rel)})
			sawSkillMD = sawSkillMD || rel == SkillFile
			return nil
		}
		if d.IsDir() {
			if !isSupportDir(strings.SplitN(rel, "/", 2)[0]) {
				rep.add(Finding{Severity: SeverityError, Code: CodeInvalidPath, File: rel + "/",
					Message: fmt.Sprintf("folder %s/ is not allowed; support files live below %s/", rel, strings.Join(SupportDirs, "/, "))})
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			rep.add(Finding{Severity: SeverityError, Code: CodeInvalidPath, File: rel, Message: fmt.Sprintf("%s is not a regular file", rel)})
			return nil
		}
		if _, err := NormalizeSkillFilePath(rel); err != nil {
			rep.add(Finding{Severity: SeverityError, Code: errs.CodeOf(err), File: rel, Message: strings.TrimPrefix(err.Error(), "")})
			return nil
		}
		limit := int64(MaxSupportBytes)
		if rel == SkillFile {
			limit = MaxSkillMDBytes
		}
		data, size, err := readLimited(p, limit)
		if err != nil {
			return err
		}
		if rel == SkillFile {
			sawSkillMD = true
		}
		tree = append(tree, FileEntry{Path: rel, SizeBytes: size, SHA256: sha256Hex(data, size, limit)})
		if size > limit {
			rep.add(Finding{Severity: SeverityError, Code: CodeTooLarge, File: rel,
				Message: fmt.Sprintf("%s is %d bytes; the limit is %d bytes", rel, size, limit)})
			return nil
		}
		if rel == SkillFile {
			skillMD, haveSkillMD = data, true
			return nil
		}
		rep.add(CheckSupportFile(rel, data)...)
		return nil
	})
	if walkErr == errTooMany {
		rep.add(Finding{Severity: SeverityError, Code: CodeTooLarge, File: ".",
			Message: fmt.Sprintf("the folder has more than %d entries; a skill holds at most %d files", maxWalkEntries, MaxFiles)})
	} else if walkErr != nil {
		return nil, errs.Failed("read_failed", "cannot read skill folder %s: %v", dir, unwrapPathErr(walkErr))
	}
	if haveSkillMD {
		rep.add(CheckSkillMD(name, skillMD, strict)...)
	} else if !sawSkillMD {
		rep.add(Finding{Severity: SeverityError, Code: CodeInvalidFM, File: SkillFile,
			Message: "the folder has no SKILL.md; every skill starts with one"})
	}
	rep.add(TreeLimits(tree)...)
	sortTree(tree)
	rep.Files = len(tree)
	for _, f := range tree {
		rep.Bytes += f.SizeBytes
	}
	if haveSkillMD && rep.Errors == nil {
		rev := RevisionOf(skillMD, tree)
		rep.Revision = &rev
	}
	rep.Tree = tree
	rep.finish()
	return rep, nil
}

var errTooMany = fmt.Errorf("too many entries")

// readLimited reads at most limit+1 bytes of a regular file without
// following a final symlink; size is the file's full size from fstat.
func readLimited(p string, limit int64) ([]byte, int64, error) {
	f, err := fsx.OpenNoFollow(p)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, 0, err
	}
	if !st.Mode().IsRegular() {
		return nil, 0, fmt.Errorf("%s is not a regular file", p)
	}
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

func unwrapPathErr(err error) error {
	var pe *fs.PathError
	if e, ok := err.(*fs.PathError); ok {
		pe = e
		return pe.Err
	}
	return err
}
