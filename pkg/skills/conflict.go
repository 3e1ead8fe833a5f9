package skills

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/fsx"
	"github.com/clawkit/clawkit/pkg/skilllint"
)

// A file where a folder is needed (or a folder where a file is) makes the
// system call fail with "file exists" or "not a directory", which names
// neither the path in the way nor what to do. These helpers find the entry
// in the way and say so (issue 31 item 11; docs/skills.md, "Exit codes and
// error codes": not_a_folder, not_a_file).

// fileInTheWay returns the first existing component of p, from the top,
// that is not a folder (links followed, as creating p would follow them),
// or "" when every existing component is a folder. p itself counts.
func fileInTheWay(p string) string {
	p = filepath.Clean(p)
	var comps []string
	for d := p; ; d = filepath.Dir(d) {
		comps = append(comps, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	for i := len(comps) - 1; i >= 0; i-- {
		st, err := os.Stat(comps[i])
		if err != nil {
			return "" // missing from here down: it will be created
		}
		if !st.IsDir() {
			return comps[i]
		}
	}
	return ""
}

// notAFolder names the file that stands where folder p (or one of its
// parents) must be.
func notAFolder(p, file string) *errs.Error {
	msg := file + " is a file where a folder is needed"
	if file != p {
		msg += " (for " + p + ")"
	}
	return errs.Failed(CodeNotAFolder, "%s", msg).
		WithHint("move or remove %s, then run the command again", file)
}

// mkdirFailed explains a failed creation of folder p: the file in the way
// when there is one, else err as it is (code, path and cause).
func mkdirFailed(code errs.Code, p string, err error) *errs.Error {
	if file := fileInTheWay(p); file != "" {
		return notAFolder(p, file)
	}
	return errs.Failed(code, "cannot create the folder %s: %v", p, skilllint.UnwrapPathErr(err))
}

// folderInTheWay checks a file about to be written at rel in a skill
// whose current files are tree: no folder holding files may stand where
// rel is to be a file. (A file where rel needs a folder is found earlier,
// by checkNoLinks, as not_a_folder.)
func folderInTheWay(skill, rel string, tree []skilllint.FileEntry) error {
	var below []string
	for _, e := range tree {
		if strings.HasPrefix(e.Path, rel+"/") {
			below = append(below, e.Path)
		}
	}
	if len(below) == 0 {
		return nil
	}
	return errs.Failed(CodeNotAFile, "cannot write %s: it is a folder of skill %s holding %d %s (%s); a file cannot replace it", rel, skill, len(below), pluralWord(len(below), "file", "files"), strings.Join(below[:min(len(below), 3)], ", ")).
		WithHint("remove the files below %s/ first ('clawkit skill remove %s %s'), or write another path", rel, skill, below[0])
}

// PublishBundle publishes a bundle at out atomically (a temporary sibling
// renamed into place: whole or absent). A folder at out, or a file where
// one of its parent folders should be, is named with what to do.
func PublishBundle(out, skill string, data []byte) error {
	if st, err := os.Stat(out); err == nil && st.IsDir() {
		return errs.Failed(errs.CodeWriteFailed, "cannot publish --out %s: it is a folder; the bundle is one file", out).
			WithHint("name a file, e.g. --out %s", filepath.Join(out, skill+".tar"))
	}
	if file := fileInTheWay(filepath.Dir(out)); file != "" {
		return errs.Failed(errs.CodeWriteFailed, "cannot publish --out %s: %s is a file where a folder is needed", out, file).
			WithHint("name an --out inside an existing folder, or move %s away", file)
	}
	err := fsx.Publish(out, 0o644, func(w io.Writer) error { _, err := w.Write(data); return err })
	if errors.Is(err, fs.ErrNotExist) {
		return errs.Failed(errs.CodeWriteFailed, "cannot publish --out %s: the folder %s does not exist", out, filepath.Dir(out)).
			WithHint("create the folder first, or name an --out in an existing folder")
	}
	if err != nil {
		return errs.Failed(errs.CodeWriteFailed, "cannot publish --out %s: %v", out, err)
	}
	return nil
}
