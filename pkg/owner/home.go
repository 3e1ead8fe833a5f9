// Package owner decides who owns the state in a clawkit home and runs
// stateful operations under that ownership, in the manner of OpenClaw's
// runWithLocalStateOwner.
//
// One process at a time owns a home: it holds <home>/owner.lock (an
// exclusive lockedfile/flock lock). A gateway holds it for its whole life
// and advertises itself in <home>/gateway.json; an offline command holds it
// for one whole operation. The Router sends each stateful call to a live
// gateway when there is one, and otherwise takes the lock and runs the same
// operation in-process: one Registry of operations, two executors.
package owner

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/clawkit/clawkit/pkg/errs"
)

// Home names the files of a clawkit home.
type Home struct {
	Dir string
	// Default is true when Dir is the XDG default rather than a folder the
	// user named; only then may Ensure create missing parents.
	Default bool
}

func (h Home) path(name string) string { return filepath.Join(h.Dir, name) }

// Lock is the owner lock file.
func (h Home) Lock() string { return h.path("owner.lock") }

// Record is the gateway's owner record.
func (h Home) Record() string { return h.path("gateway.json") }

// Socket is the preferred gateway socket path.
func (h Home) Socket() string { return h.path("gateway.sock") }

// Log is where a detached gateway writes its diagnostics.
func (h Home) Log() string { return h.path("gateway.log") }

// DB is the SQLite database.
func (h Home) DB() string { return h.path("state.db") }

// ResolveHome picks the home: the flag (or CLAWKIT_HOME, which kong already
// folded into it), else $XDG_STATE_HOME/clawkit, else ~/.local/state/clawkit.
func ResolveHome(flag string, getenv func(string) string) (Home, error) {
	dir := flag
	def := dir == ""
	if def {
		if x := getenv("XDG_STATE_HOME"); x != "" {
			dir = filepath.Join(x, "clawkit")
		} else {
			hd := getenv("HOME")
			if hd == "" {
				var err error
				if hd, err = os.UserHomeDir(); err != nil {
					return Home{}, errs.Usage(CodeNoHome, "cannot find a home folder for clawkit").
						WithHint("pass --home DIR or set CLAWKIT_HOME")
				}
			}
			dir = filepath.Join(hd, ".local", "state", "clawkit")
		}
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Home{}, errs.Usage(CodeBadHome, "invalid home %q: %v", dir, err)
	}
	return Home{Dir: abs, Default: def}, nil
}

// Exists reports whether the home folder exists (and is a folder).
func (h Home) Exists() (bool, error) {
	fi, err := os.Stat(h.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, errs.Failed(CodeHomeUnusable, "cannot use home %s: %v", h.Dir, err)
	}
	if !fi.IsDir() {
		return false, errs.Failed(CodeHomeNotDir, "home %s is not a folder", h.Dir).
			WithHint("point --home (or CLAWKIT_HOME) at a folder, or remove that file")
	}
	return true, nil
}

// Ensure creates the home with mode 0700 on first mutating use and checks
// that it is a writable folder. A home the user named (--home,
// CLAWKIT_HOME) is created as one folder: a typo in a parent path must not
// silently build a tree somewhere unexpected. Only the XDG default may
// create its missing parents (~/.local/state on a fresh account).
func (h Home) Ensure() error {
	ok, err := h.Exists()
	if err != nil || ok {
		return err
	}
	parent := filepath.Dir(h.Dir)
	if h.Default {
		if err := os.MkdirAll(parent, 0o700); err != nil {
			return errs.Failed(CodeHomeUnusable, "cannot create home %s: %v", h.Dir, err).
				WithHint("pass --home DIR pointing at a writable place")
		}
	} else if fi, err := os.Stat(parent); errors.Is(err, fs.ErrNotExist) {
		return errs.Usage(CodeHomeParentMissing, "cannot create home %s: its parent folder %s does not exist", h.Dir, parent).
			WithHint("create the parent first (mkdir -p %s), or pass --home a folder inside an existing one", parent)
	} else if err != nil || !fi.IsDir() {
		return errs.Failed(CodeHomeUnusable, "cannot create home %s: %s is not a usable folder", h.Dir, parent).
			WithHint("pass --home DIR pointing at a writable place")
	}
	if err := os.Mkdir(h.Dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return errs.Failed(CodeHomeUnusable, "cannot create home %s: %v", h.Dir, err).
			WithHint("pass --home DIR pointing at a writable place")
	}
	return nil
}

// maxSocketPath is the longest path a unix socket address holds on Linux
// (sun_path is 108 bytes including the terminating NUL).
const maxSocketPath = 107

// SocketPath returns where the gateway listens: <home>/gateway.sock when it
// fits in a unix socket address, else a private folder under the temp dir
// named by a hash of the home (the owner record says which, so clients never
// guess).
func (h Home) SocketPath() (string, error) {
	if p := h.Socket(); len(p) <= maxSocketPath {
		return p, nil
	}
	sum := sha256.Sum256([]byte(h.Dir))
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("clawkit-%d", os.Getuid()))
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", errs.Failed(CodeSocketPath, "cannot create %s for the gateway socket: %v", dir, err)
	}
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		return "", errs.Failed(CodeSocketPath, "%s must be a private (0700) folder for the gateway socket", dir).
			WithHint("use a shorter --home path so the socket fits inside it")
	}
	p := filepath.Join(dir, hex.EncodeToString(sum[:8])+".sock")
	if len(p) > maxSocketPath {
		return "", errs.Failed(CodeSocketPath, "no socket path short enough for home %s", h.Dir).WithHint("use a shorter --home path")
	}
	return p, nil
}
