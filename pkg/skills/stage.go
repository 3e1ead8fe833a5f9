package skills

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"

	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/fsx"
	"github.com/clawkit/clawkit/pkg/skilllint"
)

// Every change to a skill is published as a whole tree: the new skill
// folder is built in a staging folder next to it in the skills root
// (".clawkit-stage-<skill>-<hex>"), fsynced, and swapped with the live
// folder in one atomic rename (RENAME_EXCHANGE on Linux). The old tree then
// sits under the staging name and is deleted as ".clawkit-trash-<skill>-<hex>".
// A kill at any point leaves the skill folder old or new, whole; the
// leftovers have names no rule counts (IsStagingName: dot-prefixed,
// ".clawkit-") and the next command that takes the skill's lock removes
// them (cleanLeftovers).

const (
	stageKind = "stage"
	trashKind = "trash"
)

// SourceFile is one file of a new skill tree: its skill-relative path,
// content and whether it is executable.
type SourceFile struct {
	Path       string `json:"path"`
	Content    []byte `json:"content"`
	Executable bool   `json:"executable,omitempty"`
}

func leftoverName(kind, skill string) string {
	return skilllint.StagingPrefix + kind + "-" + skill + "-" + randHex(8)
}

// isLeftoverOf reports whether a skills-root entry is a staging or trash
// folder of this skill (exact shape, so skill "pdf" never claims "pdf-x"'s).
func isLeftoverOf(name, skill string) bool {
	for _, kind := range []string{stageKind, trashKind} {
		p := skilllint.StagingPrefix + kind + "-" + skill + "-"
		if strings.HasPrefix(name, p) && len(name) == len(p)+16 && isHex(name[len(p):]) {
			return true
		}
	}
	// Removal folders of earlier releases: ".<skill>.removing-<12 hex>".
	p := "." + skill + ".removing-"
	return strings.HasPrefix(name, p) && len(name) == len(p)+12 && isHex(name[len(p):])
}

func isHex(s string) bool {
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// cleanLeftovers removes what an interrupted command left for this skill:
// staging and trash folders in the root and temporary files inside the
// skill folder. It runs under the skill's lock, so nothing it removes can
// belong to a live command. It returns the names removed.
func cleanLeftovers(r *os.Root, skill string) []string {
	if r == nil {
		return nil
	}
	var removed []string
	if ents, err := fs.ReadDir(r.FS(), "."); err == nil {
		for _, e := range ents {
			if isLeftoverOf(e.Name(), skill) && r.RemoveAll(e.Name()) == nil {
				removed = append(removed, e.Name())
			}
		}
	}
	if st, err := r.Lstat(skill); err == nil && st.IsDir() {
		_ = fs.WalkDir(r.FS(), skill, func(p string, d fs.DirEntry, err error) error {
			if err != nil || p == skill {
				return nil
			}
			if d.Type()&fs.ModeSymlink != 0 {
				return nil
			}
			if skilllint.IsStagingName(d.Name()) {
				if r.RemoveAll(p) == nil {
					removed = append(removed, p)
				}
				if d.IsDir() {
					return fs.SkipDir
				}
			}
			return nil
		})
	}
	if len(removed) > 0 {
		_ = syncRootDir(r, ".")
	}
	return removed
}

// buildStage writes a new skill tree into a fresh staging folder: the
// files of keep copied from the live skill folder, then add. Every file
// and folder is fsynced, so the swap publishes durable content. On error
// the staging folder is removed.
func buildStage(r *os.Root, skill string, keep []skilllint.FileEntry, add []SourceFile) (stage string, err error) {
	stage = leftoverName(stageKind, skill)
	if err := r.Mkdir(stage, 0o755); err != nil {
		return "", err
	}
	// The name is kept apart from the result: every failure below returns
	// "" as the stage, and the cleanup must still know what to remove.
	made := stage
	defer func() {
		if err != nil {
			_ = r.RemoveAll(made)
		}
	}()
	dirs := map[string]bool{stage: true}
	mk := func(rel string) error {
		d := path.Dir(stage + "/" + rel)
		if dirs[d] {
			return nil
		}
		if err := r.MkdirAll(d, 0o755); err != nil {
			// Name the folder: the bare cause ("file exists") says nothing.
			return fmt.Errorf("%s: %w", strings.TrimPrefix(d, stage+"/"), skilllint.UnwrapPathErr(err))
		}
		for x := d; x != stage && !dirs[x]; x = path.Dir(x) {
			dirs[x] = true
		}
		return nil
	}
	for _, e := range keep {
		if err := mk(e.Path); err != nil {
			return "", err
		}
		if err := copyInRoot(r, skill+"/"+e.Path, stage+"/"+e.Path); err != nil {
			return "", err
		}
	}
	for _, f := range add {
		if err := mk(f.Path); err != nil {
			return "", err
		}
		perm := os.FileMode(0o644)
		if f.Executable {
			perm = 0o755
		}
		if err := writeNewInRoot(r, stage+"/"+f.Path, f.Content, perm); err != nil {
			return "", err
		}
	}
	for d := range dirs {
		if err := syncRootDir(r, d); err != nil {
			return "", err
		}
	}
	return stage, nil
}

func writeNewInRoot(r *os.Root, name string, data []byte, perm os.FileMode) error {
	f, err := r.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	return fsx.WriteSyncClose(f, data)
}

// copyInRoot copies one live file (link-refusing, regular only) into the
// staging tree, keeping its permission bits.
func copyInRoot(r *os.Root, from, to string) error {
	src, st, err := openRegular(r, from, from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := r.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, st.Mode().Perm()|0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, io.LimitReader(src, skilllint.MaxSupportBytes+1)); err != nil {
		dst.Close()
		return err
	}
	if err := dst.Sync(); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
}

func syncRootDir(r *os.Root, dir string) error {
	d, err := r.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// swapIn publishes a staged tree as the skill folder in one step and
// deletes the old tree. exists says whether the skill folder exists now.
func swapIn(r *os.Root, stage, skill string, exists bool) error {
	if !exists {
		if err := r.Rename(stage, skill); err != nil {
			return err
		}
		return syncRootDir(r, ".")
	}
	if err := exchangeInRoot(r, stage, skill); err != nil {
		return err
	}
	_ = syncRootDir(r, ".")
	// stage now holds the old tree: move it to a trash name and delete it.
	trash := leftoverName(trashKind, skill)
	if r.Rename(stage, trash) == nil {
		stage = trash
	}
	_ = r.RemoveAll(stage)
	return nil
}

// removeSkillTree removes a whole skill folder: one rename out of the way
// (discovery never sees a half-deleted skill), then the deletion.
func removeSkillTree(r *os.Root, skill string) error {
	trash := leftoverName(trashKind, skill)
	if err := r.Rename(skill, trash); err != nil {
		return err
	}
	_ = syncRootDir(r, ".")
	if err := r.RemoveAll(trash); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return errs.Failed(CodeRemoveFailed, "skill %s was removed but its old files remain in %s (the next change to the skill removes them): %v", skill, trash, err)
	}
	return nil
}

// exchangeByRenames swaps a and b with three renames where an atomic
// exchange is not available: b is briefly absent (a reader may see no
// skill, never a mixed one), and a kill in between leaves the old tree
// under a leftover name that the next command cleans up.
func exchangeByRenames(r *os.Root, a, b string) error {
	tmp := leftoverName(trashKind, b)
	if err := r.Rename(b, tmp); err != nil {
		return err
	}
	if err := r.Rename(a, b); err != nil {
		_ = r.Rename(tmp, b)
		return err
	}
	return r.Rename(tmp, a)
}
