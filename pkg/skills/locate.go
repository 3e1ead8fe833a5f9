package skills

import (
	"io/fs"
	"os"
	"path/filepath"

	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/skilllint"
)

// InstalledDir is the folder of an installed skill inside a skills root
// (RootResult.Root): the skill's folder, which must exist and must not be
// a link (links are refused everywhere in a skills root).
func InstalledDir(r RootResult, skill string) (string, error) {
	if err := skilllint.CheckSkillName(skill); err != nil {
		return "", err
	}
	dir := filepath.Join(r.Root, skill)
	st, err := os.Lstat(dir)
	if err != nil {
		return "", errs.Failed(errs.CodeNotFound, "agent %s has no skill %q in plugin %s's skills folder", r.AgentID, skill, r.PluginID).WithResource("skill", skill)
	}
	if st.Mode()&fs.ModeSymlink != 0 {
		return "", errs.Refused(errs.CodePathEscape, "skill folder %s is a symbolic link; links are refused", dir)
	}
	return dir, nil
}
