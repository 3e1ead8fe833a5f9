package skills

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/fsx"
	"github.com/clawkit/clawkit/pkg/skilllint"
)

// This file reads skill folders inside a skills root, refusing links at
// every level: a link is never followed, whatever it points at, so a skill
// folder or file cannot be moved outside the root behind our back.

// checkNoLinks verifies that every existing component of rel (a relative
// slash path) below base is not a symbolic link. Missing components are
// fine (they will be created). It returns path_escape naming the link.
func checkNoLinks(base, rel string) error {
	cur := base
	for _, seg := range strings.Split(rel, "/") {
		cur = filepath.Join(cur, seg)
		st, err := os.Lstat(cur)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if errors.Is(err, syscall.ENOTDIR) {
			// The component before cur (Lstat'ed just now: no link) is a file.
			file := filepath.Dir(cur)
			return errs.Failed(CodeNotAFolder, "%s is a file, where %s needs a folder", file, filepath.Join(base, filepath.FromSlash(rel))).
				WithHint("move or remove %s (a skill's files are reached through folders only), or use another path", file)
		}
		if err != nil {
			return errs.Failed(errs.CodeReadFailed, "cannot inspect %s: %v", cur, skilllint.UnwrapPathErr(err))
		}
		if st.Mode()&fs.ModeSymlink != 0 {
			return linkRefused(cur)
		}
	}
	return nil
}

func linkRefused(p string) *errs.Error {
	return errs.Refused(errs.CodePathEscape, "%s is a symbolic link; links in skills folders are refused (one could move the skill outside its root)", p).
		WithHint("replace the link with a real folder or file")
}

// rootWithin checks that the skills root, once its links are resolved,
// lies inside the home's agents folder (a root that a link sends elsewhere
// is path_escape).
func rootWithin(home, root string) error {
	agents := filepath.Join(home, "agents")
	ok, err := fsx.RealWithin(agents, root)
	if err != nil {
		return errs.Failed(errs.CodeReadFailed, "cannot resolve %s: %v", root, err)
	}
	if !ok {
		return errs.Refused(errs.CodePathEscape, "the skills root %s leads outside %s through a link", root, agents).
			WithHint("make %s a real folder", root)
	}
	return nil
}

// openSkillsRoot opens the skills root as an os.Root (nil when it does not
// exist yet). Every later access to skill files goes through it, so no read,
// write or removal can leave the root even if links appear meanwhile; the
// Lstat checks on top refuse links inside it as well.
func openSkillsRoot(root string) (*os.Root, error) {
	r, err := os.OpenRoot(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, errs.Failed(errs.CodeReadFailed, "cannot open the skills root %s: %v", root, skilllint.UnwrapPathErr(err))
	}
	return r, nil
}

// readTree lists the files of an existing skill folder (link-free, regular
// files only, within the file-count bound) with their digests, and returns
// SKILL.md's content when present. A skill folder that does not exist (or a
// nil root) gives exists=false. display is the root's path for messages.
func readTree(r *os.Root, display, skill string) (tree []skilllint.FileEntry, skillMD []byte, exists bool, err error) {
	if r == nil {
		return nil, nil, false, nil
	}
	dir := filepath.Join(display, skill)
	st, err := r.Lstat(skill)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, false, nil
	}
	if err != nil {
		return nil, nil, false, errs.Failed(errs.CodeReadFailed, "cannot read %s: %v", dir, skilllint.UnwrapPathErr(err))
	}
	if st.Mode()&fs.ModeSymlink != 0 {
		return nil, nil, false, linkRefused(dir)
	}
	if !st.IsDir() {
		return nil, nil, false, errs.Failed(CodeNotASkill, "%s is not a folder", dir).
			WithHint("move the file away; a skill is a folder holding SKILL.md")
	}
	count := 0
	err = fs.WalkDir(r.FS(), skill, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == skill {
			return nil
		}
		full := filepath.Join(display, filepath.FromSlash(p))
		if skilllint.IsStagingName(d.Name()) {
			// An interrupted publication's leftover: never skill content.
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return linkRefused(full)
		}
		if d.IsDir() {
			return nil
		}
		if !d.Type().IsRegular() {
			return errs.Failed(CodeNotASkill, "%s is not a regular file", full)
		}
		count++
		if count > skilllint.MaxWalkEntries {
			return errs.Failed(errs.CodeTooLarge, "%s holds more than %d files", dir, skilllint.MaxWalkEntries)
		}
		rel := strings.TrimPrefix(p, skill+"/")
		e, data, err := hashFile(r, p, rel)
		if err != nil {
			return err
		}
		e.Path = rel
		tree = append(tree, e)
		if rel == skilllint.SkillFile {
			skillMD = data
		}
		return nil
	})
	if err != nil {
		if e := errs.As(err); e != nil {
			return nil, nil, true, e
		}
		return nil, nil, true, errs.Failed(errs.CodeReadFailed, "cannot read skill folder %s: %v", dir, skilllint.UnwrapPathErr(err))
	}
	skilllint.SortTree(tree)
	return tree, skillMD, true, nil
}

// openRegular opens name inside r for reading, refusing a link or a
// non-regular file. The Lstat/Open pair can race only within the root.
func openRegular(r *os.Root, name, display string) (*os.File, fs.FileInfo, error) {
	lst, err := r.Lstat(name)
	if err != nil {
		return nil, nil, err
	}
	if lst.Mode()&fs.ModeSymlink != 0 {
		return nil, nil, linkRefused(display)
	}
	f, err := r.Open(name)
	if err != nil {
		return nil, nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !st.Mode().IsRegular() || !os.SameFile(st, lst) {
		f.Close()
		return nil, nil, errs.Failed(errs.CodeNotFound, "%s is not a regular file (or changed while being opened)", display)
	}
	return f, st, nil
}

// hashFile digests one file (name is root-relative, rel skill-relative),
// refusing one over its size limit (a file placed by hand is never read
// unboundedly); for SKILL.md it returns the content too.
func hashFile(r *os.Root, name, rel string) (skilllint.FileEntry, []byte, error) {
	keep := rel == skilllint.SkillFile
	f, st, err := openRegular(r, name, rel)
	if err != nil {
		return skilllint.FileEntry{}, nil, err
	}
	defer f.Close()
	limit := fileLimit(rel)
	if st.Size() > limit {
		return skilllint.FileEntry{}, nil, errs.Failed(errs.CodeTooLarge, "%s is %d bytes; the limit is %d bytes", rel, st.Size(), limit).
			WithHint("the file was put there by hand; shrink or delete it by hand (clawkit never wrote it)")
	}
	h := sha256.New()
	var buf strings.Builder
	var w io.Writer = h
	if keep {
		w = io.MultiWriter(h, &buf)
	}
	n, err := io.Copy(w, io.LimitReader(f, limit+1))
	if err != nil {
		return skilllint.FileEntry{}, nil, err
	}
	if n > limit {
		return skilllint.FileEntry{}, nil, errs.Failed(errs.CodeTooLarge, "%s grew past its limit while being read", rel)
	}
	var data []byte
	if keep {
		data = []byte(buf.String())
	}
	return skilllint.FileEntry{SHA256: hex.EncodeToString(h.Sum(nil)), SizeBytes: n}, data, nil
}

// readFileLimited reads one skill file (name root-relative, rel
// skill-relative) without following links, refusing it when larger than
// limit.
func readFileLimited(r *os.Root, name, rel string, limit int64) ([]byte, error) {
	f, st, err := openRegular(r, name, rel)
	if err != nil {
		if e := errs.As(err); e != nil {
			return nil, e
		}
		if errors.Is(err, fs.ErrNotExist) {
			return nil, errs.Failed(errs.CodeNotFound, "the skill has no file %s", rel).
				WithHint("list the skill's files with 'clawkit skill list'")
		}
		return nil, errs.Failed(errs.CodeReadFailed, "cannot read %s: %v", rel, skilllint.UnwrapPathErr(err))
	}
	defer f.Close()
	if st.Size() > limit {
		return nil, errs.Failed(errs.CodeTooLarge, "%s is %d bytes; the read limit is %d bytes", rel, st.Size(), limit).
			WithHint("raise --max-bytes (up to the file limit) or read the file from disk")
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, errs.Failed(errs.CodeReadFailed, "cannot read %s: %v", rel, err)
	}
	if int64(len(data)) > limit {
		return nil, errs.Failed(errs.CodeTooLarge, "%s grew past the read limit of %d bytes while being read", rel, limit)
	}
	return data, nil
}

func fileLimit(rel string) int64 {
	if rel == skilllint.SkillFile {
		return skilllint.MaxSkillMDBytes
	}
	return skilllint.MaxSupportBytes
}
