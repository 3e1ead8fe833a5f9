package artifacts

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/fsx"
)

// output is the export folder this run created and owns.
type output struct {
	path      string // the final output path (real parent + base)
	display   string // as the user gave it
	staging   string // where the export is built
	lock      *os.File
	published bool
	root      *os.Root
	dev, ino  uint64
}

func prepareOutput(p string, pkgs []pkgDir) (*output, error) {
	if p == "" {
		return nil, errs.Usage(CodeOutputRequired, "no output folder given").WithHint("pass --output DIR (a folder that does not exist yet)")
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return nil, errs.Usage(CodeOutputInvalid, "output %s: %v", p, err)
	}
	base := filepath.Base(abs)
	if base == "." || base == ".." || base == "/" {
		return nil, errs.Usage(CodeOutputInvalid, "output %s does not name a new folder", p).WithHint("pass --output DIR (a folder that does not exist yet)")
	}
	if _, err := os.Lstat(abs); err == nil {
		return nil, errs.Refused(CodeOutputExists, "output %s already exists", p).
			WithHint("choose a new folder, or remove the old export first; exports never overwrite")
	}
	parent := filepath.Dir(abs)
	st, err := os.Stat(parent)
	if err != nil || !st.IsDir() {
		return nil, errs.Usage(CodeOutputParentMissing, "the parent folder of output %s does not exist", p).
			WithHint("create %s first; export creates only the output folder itself", parent)
	}
	realParent, err := filepath.EvalSymlinks(parent)
	if err != nil {
		return nil, errs.Usage(CodeOutputParentMissing, "cannot resolve the parent folder of output %s: %v", p, err)
	}
	realOut := filepath.Join(realParent, base)
	for _, pk := range pkgs {
		if fsx.Within(pk.Dir, realOut) {
			return nil, errs.Refused(CodeOutputInsidePackage, "output %s is inside the exported package %s (real path %s)", p, pk.Dir, realOut).
				WithHint("write the export outside the installation, e.g. --output /tmp/openclaw-export")
		}
	}
	// The export is built in a staging sibling and published by one rename
	// at the end (absent or complete: a killed run never leaves a folder
	// without its manifest at the final path). Staging folders of dead runs
	// are removed first; a live run holds a lock on its own.
	removeStaleStaging(realParent, base)
	staging, lock, err := createStaging(realParent, base)
	if err != nil {
		return nil, errs.Failed(CodeOutputCreateFailed, "cannot create a staging folder beside output %s: %v", p, unwrapPathErr(err)).
			WithHint("check the permissions of %s", parent).Wrap(err)
	}
	o := &output{path: realOut, display: p, staging: staging, lock: lock}
	lst, err := os.Lstat(staging)
	if err != nil {
		lock.Close()
		return nil, errs.Failed(CodeOutputReplaced, "staging folder %s vanished right after it was created", staging)
	}
	o.dev, o.ino = devIno(lst)
	root, err := os.OpenRoot(staging)
	if err != nil {
		lock.Close()
		return nil, errs.Failed(CodeOutputReplaced, "cannot open staging folder %s right after creating it: %v", staging, err)
	}
	o.root = root
	if rst, err := root.Stat("."); err != nil {
		root.Close()
		lock.Close()
		return nil, errs.Failed(CodeOutputReplaced, "staging folder %s: %v", staging, err)
	} else if d, i := devIno(rst); d != o.dev || i != o.ino {
		root.Close()
		lock.Close()
		return nil, errs.Failed(CodeOutputReplaced, "staging folder %s was replaced while it was being created", staging).
			WithHint("make sure no other process writes to %s, then export again", parent)
	}
	return o, nil
}

// stagingPrefix names the staging folders of output base in its parent.
func stagingPrefix(base string) string { return "." + base + ".export-staging-" }

// createStaging makes a new 0700 staging folder (non-recursive mkdir) and
// returns it with an open descriptor holding an exclusive flock on it: the
// lock is how a later run tells a live staging folder from a dead one.
func createStaging(parent, base string) (string, *os.File, error) {
	var b [8]byte
	for range 100 {
		if _, err := rand.Read(b[:]); err != nil {
			return "", nil, err
		}
		// Created under a name the stale-staging sweep does not match, and
		// renamed to the staging name only once it is locked: between
		// mkdir and flock another run's sweep would otherwise see an
		// unlocked staging folder, take it for a dead run's and remove it
		// under us (seen as a failed export when two runs raced for one
		// output on a loaded machine). The flock stays with the inode.
		suffix := hex.EncodeToString(b[:])
		fresh := filepath.Join(parent, "."+base+".export-new-"+suffix)
		dir := filepath.Join(parent, stagingPrefix(base)+suffix)
		if err := os.Mkdir(fresh, 0o700); err != nil {
			if errors.Is(err, fs.ErrExist) {
				continue
			}
			return "", nil, err
		}
		_ = os.Chmod(fresh, 0o700) // whatever the umask
		f, err := os.Open(fresh)
		if err == nil {
			err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		}
		if err == nil {
			err = unix.Renameat2(unix.AT_FDCWD, fresh, unix.AT_FDCWD, dir, unix.RENAME_NOREPLACE)
		}
		if err != nil {
			if f != nil {
				f.Close()
			}
			os.Remove(fresh)
			return "", nil, err
		}
		return dir, f, nil
	}
	return "", nil, errors.New("no free staging folder name")
}

// removeStaleStaging removes staging folders of output base whose run is
// gone (their flock can be taken). Best effort: a folder that cannot be
// removed is left for the next run; a live run's folder is never touched.
func removeStaleStaging(parent, base string) {
	ents, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	prefix := stagingPrefix(base)
	for _, e := range ents {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), prefix) {
			continue // not ours, or a symlink (never followed)
		}
		dir := filepath.Join(parent, e.Name())
		f, err := fsx.OpenNoFollow(dir)
		if err != nil {
			continue
		}
		if unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) == nil {
			os.RemoveAll(dir)
		}
		f.Close()
	}
}

// publish renames the complete staging folder to the output path, never
// over an existing one.
func (o *output) publish() error {
	if err := o.checkIdentity(); err != nil {
		return err
	}
	if err := unix.Renameat2(unix.AT_FDCWD, o.staging, unix.AT_FDCWD, o.path, unix.RENAME_NOREPLACE); err != nil {
		if errors.Is(err, unix.EEXIST) || errors.Is(err, unix.ENOTEMPTY) {
			return errs.Refused(CodeOutputExists, "output %s already exists", o.display).
				WithHint("choose a new folder, or remove the old export first; exports never overwrite")
		}
		return errs.Failed(errs.CodeWriteFailed, "cannot rename the staged export to %s: %v", o.display, err).
			WithHint("check the permissions of the output's parent folder; the partial output was removed")
	}
	o.published = true
	o.lock.Close()
	return nil
}

func devIno(fi os.FileInfo) (uint64, uint64) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Dev), uint64(st.Ino)
	}
	return 0, 0
}

// checkIdentity fails when the staging path no longer names the folder this
// run created (device/inode changed).
func (o *output) checkIdentity() error {
	st, err := os.Lstat(o.staging)
	if err == nil {
		if d, i := devIno(st); d == o.dev && i == o.ino && st.IsDir() {
			return nil
		}
	}
	return errs.Failed(CodeOutputReplaced, "staging folder %s of output %s was moved or replaced during the export", o.staging, o.display).
		WithHint("make sure no other process touches the output folder, then export again")
}

// fail removes what this run owns and returns err. Files are removed
// through the root's descriptor (so a replaced path is never followed), and
// the folder itself only while the path still names it.
func (o *output) fail(err error) error {
	if ents, rerr := fs.ReadDir(o.root.FS(), "."); rerr == nil {
		for _, e := range ents {
			o.root.RemoveAll(e.Name())
		}
	}
	if o.checkIdentity() == nil {
		os.Remove(o.staging)
	}
	o.lock.Close()
	return err
}
