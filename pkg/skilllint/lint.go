package skilllint

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/clawkit/clawkit/pkg/errs"
)

// LintSummary counts the outcome of validating several skill folders.
type LintSummary struct {
	Profile  string `json:"profile"`
	Strict   bool   `json:"strict"`
	Skills   int    `json:"skills"`
	Passed   int    `json:"passed"`
	Failed   int    `json:"failed"`
	Errors   int    `json:"errors"`
	Warnings int    `json:"warnings"`
	// Suppressed counts the findings suppressions accepted.
	Suppressed int `json:"suppressed"`
	Files      int `json:"files"`
	// Disabled are the --disable rules with how many findings each
	// accepted over the run (0: it matched nothing, which is reported).
	Disabled map[string]int `json:"disabled,omitempty"`
	// Hint is the first failed report's hint (e.g. --recursive for a
	// folder of skills).
	Hint string `json:"hint,omitempty"`
}

func (s *LintSummary) count(r *Report) {
	if !r.OK && s.Hint == "" {
		s.Hint = r.Hint
	}
	s.Skills++
	s.Files += r.Files
	s.Errors += len(r.Errors)
	s.Warnings += len(r.Warnings)
	s.Suppressed += len(r.Suppressed)
	for _, f := range r.Suppressed {
		if f.Suppression != nil && f.Suppression.Kind == SuppressExternal {
			s.Disabled[f.Rule]++
		}
	}
	if r.OK {
		s.Passed++
	} else {
		s.Failed++
	}
}

// Lint validates every folder in dirs and every skill folder found below
// each of roots (see FindSkills), calling fn with each report as soon as
// it is ready: nothing is kept per skill, so memory does not grow with the
// number of skills. fn's error stops the run.
func Lint(dirs, roots []string, opt Options, fn func(*Report) error) (LintSummary, error) {
	if opt.Profile == "" {
		opt.Profile = ProfileSpec
	}
	sum := LintSummary{Profile: opt.Profile, Strict: opt.Strict}
	if len(opt.Disable) > 0 {
		sum.Disabled = map[string]int{}
		for _, d := range opt.Disable {
			sum.Disabled[d] = 0
		}
	}
	one := func(dir string) error {
		rep, err := ValidateDir(dir, opt)
		if err != nil {
			return err
		}
		rep.Tree = nil
		sum.count(rep)
		return fn(rep)
	}
	for _, d := range dirs {
		if err := one(d); err != nil {
			return sum, err
		}
	}
	for _, root := range roots {
		found := 0
		err := FindSkills(root, func(dir string) error {
			found++
			return one(dir)
		})
		if err != nil {
			return sum, err
		}
		if found == 0 {
			return sum, errs.Failed(CodeNoSkills, "no SKILL.md found below %s", root).
				WithHint("pass the folder that holds the skill folders")
		}
	}
	return sum, nil
}

// skipDirs are folders --recursive never searches: version control,
// dependency trees and clawkit's own staging folders (dot-folders).
var skipDirs = map[string]bool{"node_modules": true, "vendor": true, "__pycache__": true}

// FindSkills walks root in lexical order and calls fn for every folder that
// holds a SKILL.md (or skill.md), without descending into it: files below
// a skill belong to it. Dot-folders and dependency trees are skipped. A
// link to a folder is never followed; when it leads to a skill folder it is
// reported (fn is called with it, and ValidateDir refuses the link).
func FindSkills(root string, fn func(dir string) error) error {
	st, err := os.Stat(root)
	if err != nil {
		return errs.Failed(errs.CodeNotFound, "cannot read %s: %v", root, UnwrapPathErr(err))
	}
	if !st.IsDir() {
		return errs.Usage(errs.CodeInvalidPath, "%s is not a folder", root)
	}
	var walk func(dir string, top bool) error
	walk = func(dir string, top bool) error {
		if !top && isSkillFolder(dir) {
			return fn(dir)
		}
		ents, err := os.ReadDir(dir)
		if err != nil {
			if top {
				return errs.Failed(errs.CodeReadFailed, "cannot read %s: %v", dir, UnwrapPathErr(err))
			}
			return nil // an unreadable folder below the root holds nothing we can check
		}
		sort.Slice(ents, func(i, j int) bool { return ents[i].Name() < ents[j].Name() })
		for _, e := range ents {
			name := e.Name()
			p := filepath.Join(dir, name)
			switch {
			case name[0] == '.' || skipDirs[name]:
			case e.Type()&fs.ModeSymlink != 0:
				if t, err := os.Stat(p); err == nil && t.IsDir() && isSkillFolder(p) {
					if err := fn(p); err != nil {
						return err
					}
				}
			case e.IsDir():
				if err := walk(p, false); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if isSkillFolder(root) {
		return fn(root)
	}
	return walk(root, true)
}

func isSkillFolder(dir string) bool {
	for _, n := range []string{SkillFile, "skill.md"} {
		if _, err := os.Lstat(filepath.Join(dir, n)); err == nil || !errors.Is(err, fs.ErrNotExist) {
			return true
		}
	}
	return false
}

// FileReport is `skill validate --file`: one SKILL.md checked on its own
// (the seed's validateSkillFile), with the name and description it
// declares.
type FileReport struct {
	Report
	Name        string `json:"name,omitempty"`
	Description string `json:"description,omitempty"`
}

// ValidateFile validates one SKILL.md file read from p (at most maxBytes,
// which defaults to and may not exceed the SKILL.md limit). The skill name
// it must declare is its folder's name. It returns the declared name and
// description when the frontmatter parses.
func ValidateFile(p string, opt Options, maxBytes int64) (*FileReport, error) {
	if opt.Profile == "" {
		opt.Profile = ProfileSpec
	}
	if maxBytes <= 0 || maxBytes > MaxSkillMDBytes {
		maxBytes = MaxSkillMDBytes
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return nil, errs.Usage(errs.CodeInvalidPath, "cannot resolve %s: %v", p, err)
	}
	f, st, err := OpenInput(abs)
	if err != nil {
		if e := errs.As(err); e != nil {
			return nil, e
		}
		return nil, errs.Failed(errs.CodeNotFound, "cannot read %s: %v", p, UnwrapPathErr(err))
	}
	defer f.Close()
	if st.Size() > maxBytes {
		return nil, errs.Failed(errs.CodeTooLarge, "%s is %d bytes; the limit is %d bytes", p, st.Size(), maxBytes).
			WithHint("raise --max-bytes (up to %d)", MaxSkillMDBytes)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxBytes+1))
	if err != nil {
		return nil, errs.Failed(errs.CodeReadFailed, "cannot read %s: %v", p, err)
	}
	if int64(len(data)) > maxBytes {
		return nil, errs.Failed(errs.CodeTooLarge, "%s grew past %d bytes while being read", p, maxBytes)
	}
	name := filepath.Base(filepath.Dir(abs))
	r := &FileReport{Report: Report{Skill: name, Dir: p, Profile: opt.Profile, Strict: opt.Strict, Files: 1, Bytes: int64(len(data))}}
	fs := CheckSkillMDAs(name, data, opt)
	for i := range fs {
		fs[i].File = ""
	}
	r.Add(fs...)
	r.applySuppressions(ParseDirectives("", data), opt.Disable)
	r.Finish()
	if fm, err := ParseFrontmatter(SplitFrontmatter(data)); err == nil {
		r.Name, _ = fm.scalarText("name")
		r.Description, _ = fm.scalarText("description")
	}
	return r, nil
}
