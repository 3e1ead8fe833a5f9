package skills

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"

	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/fsx"
	"github.com/clawkit/clawkit/pkg/owner"
	"github.com/clawkit/clawkit/pkg/skilllint"
)

// InstallParams is `skill write NAME --from-dir DIR`: a whole skill tree
// (only files the authoring contract allows) and the paths that were
// skipped as disallowed (for warnings about SKILL.md links to them).
type InstallParams struct {
	Target
	Skill   string       `json:"skill"`
	Files   []SourceFile `json:"files"`
	Skipped []string     `json:"skipped,omitempty"`
	Strict  bool         `json:"strict,omitempty"`
	// name is Skill as checkInstall accepted it (FileParams.name).
	name skillName
}

// SourceTree is a skill folder read from disk for installation.
type SourceTree struct {
	Files []SourceFile
	// Disallowed are the paths the authoring contract does not allow
	// ("bin/" for a whole folder), sorted.
	Disallowed []string
}

// ReadSourceDir reads a skill folder to install. Files the authoring
// contract does not allow are listed in Disallowed (not read); a link
// anywhere, a non-regular file, or a file or tree over the size limits
// refuses the whole folder. Nothing is read unboundedly: each file through
// OpenInput (never blocking) and at most its limit plus one byte. flag is
// the command-line flag that named dir ("--from-dir", "--dir"), for the
// messages.
func ReadSourceDir(flag, dir string) (*SourceTree, error) {
	// The walk below names each file by trimming the folder off its path;
	// "DIR/", "./DIR" and "a/../DIR" must name the same folder as "DIR"
	// (the walk's own paths are clean), so the folder is cleaned first.
	// Messages still show the folder as the user named it.
	shown := dir
	dir = filepath.Clean(dir)
	st, err := os.Lstat(dir)
	switch {
	case err != nil:
		return nil, errs.Usage(errs.CodeNotFound, "%s %s: %v", flag, shown, skilllint.UnwrapPathErr(err))
	case st.Mode()&fs.ModeSymlink != 0:
		return nil, errs.Refused(errs.CodePathEscape, "%s %s is a symbolic link; links are refused", flag, shown).
			WithHint("pass the folder the link points to")
	case !st.IsDir():
		return nil, errs.Usage(errs.CodeInvalidPath, "%s %s is not a folder", flag, shown).
			WithHint("pass the skill's folder (the one holding SKILL.md)")
	}
	out := &SourceTree{}
	var total int64
	entries := 0
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == dir {
			return nil
		}
		if skilllint.IsStagingName(d.Name()) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if entries++; entries > skilllint.MaxWalkEntries {
			return errs.Failed(errs.CodeTooLarge, "%s holds more than %d entries; a skill holds at most %d files", dir, skilllint.MaxWalkEntries, skilllint.MaxFiles)
		}
		rel := filepath.ToSlash(strings.TrimPrefix(p, dir+string(filepath.Separator)))
		if d.Type()&fs.ModeSymlink != 0 {
			return errs.Refused(errs.CodePathEscape, "%s is a symbolic link; links are refused in skills", filepath.Join(dir, rel)).
				WithHint("replace the link with the file or folder it points to")
		}
		if d.IsDir() {
			if !strings.Contains(rel, "/") && !skilllint.IsSupportDir(rel) {
				out.Disallowed = append(out.Disallowed, rel+"/")
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return errs.Usage(errs.CodeNotRegularFile, "%s is not a regular file; a skill holds regular files only", filepath.Join(dir, rel))
		}
		if _, err := skilllint.NormalizeSkillFilePath(rel); err != nil {
			out.Disallowed = append(out.Disallowed, rel)
			return nil
		}
		limit := fileLimit(rel)
		f, fst, err := skilllint.OpenInput(p)
		if err != nil {
			return err
		}
		defer fsx.CloseRead(f)
		if fst.Size() > limit {
			return errs.Failed(errs.CodeTooLarge, "%s is %d bytes; the limit is %d bytes", rel, fst.Size(), limit)
		}
		data, err := io.ReadAll(io.LimitReader(f, limit+1))
		if err != nil {
			return err
		}
		if int64(len(data)) > limit {
			return errs.Failed(errs.CodeTooLarge, "%s grew past its limit of %d bytes while being read", rel, limit)
		}
		if total += int64(len(data)); total > skilllint.MaxSkillBytes {
			return errs.Failed(errs.CodeTooLarge, "%s holds more than %d bytes; a skill holds at most %d bytes", dir, skilllint.MaxSkillBytes, skilllint.MaxSkillBytes)
		}
		out.Files = append(out.Files, SourceFile{Path: rel, Content: data, Executable: fst.Mode().Perm()&0o111 != 0})
		return nil
	})
	if err != nil {
		if e := errs.As(err); e != nil {
			return nil, e
		}
		return nil, errs.Failed(errs.CodeReadFailed, "cannot read %s: %v", dir, skilllint.UnwrapPathErr(err))
	}
	sort.Strings(out.Disallowed)
	return out, nil
}

// DisallowedError is the up-front refusal of an install that holds files
// the authoring contract does not allow.
func DisallowedError(dir string, paths []string) error {
	return errs.Usage(errs.CodeInvalidPath, "%s holds %d %s the skill authoring contract does not allow (nothing was written): %s",
		dir, len(paths), pluralWord(len(paths), "path", "paths"), strings.Join(paths, ", ")).
		WithHint("skills hold SKILL.md and files below %s/; pass --skip-disallowed to install without them", strings.Join(skilllint.SupportDirs, "/, "))
}

func pluralWord(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// skippedRefs warns about SKILL.md lines that mention a skipped path (a
// link the installed skill cannot follow).
func skippedRefs(md []byte, skipped []string) []skilllint.Finding {
	var out []skilllint.Finding
	for i, l := range strings.Split(string(md), "\n") {
		for _, sp := range skipped {
			ref := strings.TrimSuffix(sp, "/")
			if ref != "" && strings.Contains(l, ref) {
				out = append(out, skilllint.Finding{Severity: skilllint.SeverityWarning, Code: CodeSkippedReference, Rule: "skipped-file", File: skilllint.SkillFile, Line: i + 1,
					Message: fmt.Sprintf("SKILL.md refers to %s, which was not installed (not allowed by the authoring contract)", sp)})
			}
		}
	}
	return out
}

func opInstall(ctx context.Context, env *owner.OpEnv, p InstallParams) (*CommitResult, error) {
	// p is as checkInstall returned it: the name and target are checked.
	rep := &skilllint.Report{Skill: p.Skill, Strict: p.Strict}
	var md []byte
	seen := map[string]bool{}
	var next []skilllint.FileEntry
	for _, f := range p.Files {
		rel, err := skilllint.NormalizeSkillFilePath(f.Path)
		if err != nil {
			return nil, err
		}
		if seen[rel] {
			return nil, errs.Usage(errs.CodeInvalidParams, "file %s is given twice", rel)
		}
		seen[rel] = true
		if rel == skilllint.SkillFile {
			md = f.Content
			rep.Add(skilllint.CheckSkillMDAs(p.Skill, f.Content, skilllint.Options{Profile: skilllint.ProfileOpenClaw})...)
		} else {
			rep.Add(skilllint.CheckSupportFile(rel, f.Content)...)
		}
		sum := sha256.Sum256(f.Content)
		next = append(next, skilllint.FileEntry{Path: rel, SHA256: hex.EncodeToString(sum[:]), SizeBytes: int64(len(f.Content))})
	}
	if md == nil {
		return nil, errs.Failed(errs.CodeInvalidFrontmatter, "the folder has no SKILL.md; every skill starts with one").
			WithHint("add SKILL.md with name: %s and a description", p.Skill)
	}
	rep.Add(skilllint.TreeLimits(next)...)
	rep.Add(skippedRefs(md, p.Skipped)...)
	rep.Finish()
	if err := rep.Err(); err != nil {
		return nil, err
	}
	skilllint.SortTree(next)
	c, hooks, err := beginCommit(ctx, env, p.Target)
	if err != nil {
		return nil, err
	}
	return c.commit(ctx, p.name, "", "install", hooks, rep.Warnings, func(tree []skilllint.FileEntry, cur []byte, exists bool) (bool, error) {
		if exists && cur != nil && bytes.Equal(cur, md) && skilllint.TreeDigest(tree) == skilllint.TreeDigest(next) {
			return false, nil // the same tree: nothing to commit
		}
		return c.publish(p.Skill, exists, nil, p.Files)
	})
}
