// Package crabbox installs the offline worker runtime that `clawkit
// runtime-artifacts export` produced, verifies a retained runtime cache, and
// reads the one-line install receipt (docs/crabbox.md).
//
// Layout on the target (the runtime user's home, or --target-home):
//
//	<home>/.openclaw-worker/node-runtimes/
//	  .<node sha256>.lock                      per-runtime lock (LockRuntime; lock.go)
//	  .<node sha256>.staging-<random>/         an install in progress (removed on failure)
//	  <node sha256>/                           the installed runtime (renamed into place)
//	    .clawkit-runtime.json                  install record: identity, CLI version, index digest
//	    .clawkit-runtime-index.json            every entry: type, mode, size, SHA-256 (verify)
//	    node_modules/openclaw/...              the package (manifest nodeBootstrap.packagePath)
//	    node_modules/openclaw/worker-artifacts/<worker sha256>.tgz
//	    node_modules/<hoisted deps>/...
//
// The package is stateless: it never takes the clawkit state-owner lock and
// never touches the clawkit home.
package crabbox

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/clawkit/clawkit/pkg/artifacts"
	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/fsx"
)

const (
	// RuntimesDir is the runtime cache below the target home.
	RuntimesDir = ".openclaw-worker/node-runtimes"
	// RecordName is the install record at the top of an installed runtime.
	RecordName = ".clawkit-runtime.json"
	// IndexName is the install index at the top of an installed runtime.
	IndexName = ".clawkit-runtime-index.json"
	// RecordSchema identifies the install record format.
	RecordSchema = "clawkit.crabbox.runtime.v1"
	// IndexSchema identifies the install index format (v2: entries carry
	// their mode as installed; an index without modes is replaced).
	IndexSchema = "clawkit.crabbox.index.v2"
)

// Expect pins what the caller expects the manifest to say (from `crabbox
// setup`). Empty / zero fields are not checked.
type Expect struct {
	ManifestSHA256 string
	BuildID        string
	Package        string // name@version
	NodeSHA256     string
	NodeBytes      int64
	WorkerSHA256   string
	WorkerBytes    int64
	BundleHash     string
	WorkerPath     string // package-relative, worker-artifacts/<sha256>.tgz
}

// Layout is where an install lives on the target.
type Layout struct {
	TargetHome    string
	RuntimesDir   string
	RuntimeDir    string
	PackageDir    string
	WorkerArchive string
	// WorkerRel is WorkerArchive relative to RuntimeDir (slash-separated).
	WorkerRel string
}

// LayoutFor computes the install paths of m below targetHome.
func LayoutFor(targetHome string, m *artifacts.Manifest) (Layout, error) {
	home, err := filepath.Abs(targetHome)
	if err != nil {
		return Layout{}, errs.Usage(CodeTargetHomeInvalid, "cannot resolve target home %q: %v", targetHome, err)
	}
	wp, err := artifacts.WorkerPath(m.WorkerBundle.SHA256)
	if err != nil {
		return Layout{}, err
	}
	l := Layout{TargetHome: home}
	l.RuntimesDir = filepath.Join(home, filepath.FromSlash(RuntimesDir))
	l.RuntimeDir = filepath.Join(l.RuntimesDir, m.NodeBootstrap.SHA256)
	l.PackageDir = filepath.Join(l.RuntimeDir, filepath.FromSlash(m.NodeBootstrap.PackagePath))
	l.WorkerRel = m.NodeBootstrap.PackagePath + "/" + wp
	l.WorkerArchive = filepath.Join(l.RuntimeDir, filepath.FromSlash(l.WorkerRel))
	return l, nil
}

// Inputs is a loaded, pinned manifest and where its archives are.
type Inputs struct {
	ManifestPath   string
	Manifest       *artifacts.Manifest
	ManifestSHA256 string
	ExportDir      string
	NodeArchive    string // absolute path of the node bootstrap archive
	WorkerArchive  string // absolute path of the worker bundle archive
}

// LoadInputs reads and validates the manifest and checks it against the
// pins. It does not read the archives.
func LoadInputs(manifestPath string, pins Expect) (*Inputs, error) {
	abs, err := filepath.Abs(manifestPath)
	if err != nil {
		return nil, errs.Usage(errs.CodeManifestUnreadable, "cannot resolve %q: %v", manifestPath, err)
	}
	m, raw, err := artifacts.LoadManifest(abs)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(raw)
	in := &Inputs{ManifestPath: abs, Manifest: m, ManifestSHA256: hex.EncodeToString(sum[:]), ExportDir: filepath.Dir(abs)}
	if in.NodeArchive, err = fsx.Join(in.ExportDir, m.NodeBootstrap.Path); err != nil {
		return nil, errs.Failed(errs.CodeInvalidManifest, "nodeBootstrap.path: %v", err)
	}
	if in.WorkerArchive, err = fsx.Join(in.ExportDir, m.WorkerBundle.Path); err != nil {
		return nil, errs.Failed(errs.CodeInvalidManifest, "workerBundle.path: %v", err)
	}
	if err := checkPins(in, pins); err != nil {
		return nil, err
	}
	return in, nil
}

// UseArchives points the inputs at archives named by their own paths
// (either may be ""; then the one beside the manifest stays). Only the
// place changes: openChecked checks them as it checks those.
func (in *Inputs) UseArchives(node, worker string) error {
	for _, a := range []struct {
		flag, path string
		dst        *string
	}{{"--node-archive", node, &in.NodeArchive}, {"--worker-archive", worker, &in.WorkerArchive}} {
		if a.path == "" {
			continue
		}
		abs, err := filepath.Abs(a.path)
		if err != nil {
			return errs.Failed(CodeArchiveUnreadable, "cannot resolve %s %q: %v", a.flag, a.path, err).WithPath(a.path)
		}
		*a.dst = abs
	}
	return nil
}

func checkPins(in *Inputs, p Expect) error {
	m := in.Manifest
	var bad []string
	pin := func(name, want, got string) {
		if want != "" && want != got {
			bad = append(bad, fmt.Sprintf("%s is %s, expected %s", name, got, want))
		}
	}
	pinN := func(name string, want, got int64) {
		if want != 0 && want != got {
			bad = append(bad, fmt.Sprintf("%s is %d, expected %d", name, got, want))
		}
	}
	pin("manifest sha256", p.ManifestSHA256, in.ManifestSHA256)
	pin("build id", p.BuildID, m.BuildID)
	pin("package", p.Package, m.Package.Name+"@"+m.Package.Version)
	pin("node bootstrap sha256", p.NodeSHA256, m.NodeBootstrap.SHA256)
	pinN("node bootstrap bytes", p.NodeBytes, m.NodeBootstrap.Bytes)
	pin("worker bundle sha256", p.WorkerSHA256, m.WorkerBundle.SHA256)
	pinN("worker bundle bytes", p.WorkerBytes, m.WorkerBundle.Bytes)
	pin("bundle hash", p.BundleHash, m.WorkerBundle.BundleHash)
	wp, _ := artifacts.WorkerPath(m.WorkerBundle.SHA256)
	pin("worker archive path", p.WorkerPath, wp)
	if len(bad) > 0 {
		return errs.Failed(CodeManifestMismatch, "manifest %s does not match the expected install: %s", in.ManifestPath, strings.Join(bad, "; ")).
			WithHint("the manifest differs from the one 'clawkit crabbox setup' printed the command for; re-run setup against the export you mean to install")
	}
	return nil
}

func integrityErr(format string, args ...any) *errs.Error {
	return errs.Failed(CodeIntegrityVerificationFailed, "integrity verification failed: "+format, args...).
		WithHint("the archive differs from what the manifest records; copy the export again (or re-export) and retry; nothing was installed")
}

// hashFile returns the size and SHA-256 of a regular file opened without
// following a final symlink. buf, if not nil, is the copy buffer (verify
// --deep reuses one per worker).
func hashFile(path string, buf []byte) (int64, string, error) {
	f, err := fsx.OpenNoFollow(path)
	if err != nil {
		return 0, "", err
	}
	defer fsx.CloseRead(f)
	st, err := f.Stat()
	if err != nil {
		return 0, "", err
	}
	if !st.Mode().IsRegular() {
		return 0, "", fmt.Errorf("not a regular file")
	}
	h := sha256.New()
	n, err := io.CopyBuffer(h, f, buf)
	if err != nil {
		return 0, "", err
	}
	return n, hex.EncodeToString(h.Sum(nil)), nil
}

func missingArchive(which, path string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return errs.Failed(CodeArchiveMissing, "%s archive %s is missing", which, path).WithPath(path).
			WithHint("copy the whole export folder (manifest.json with node-bootstrap/ and worker-artifacts/) to this machine, or name the archive with --node-archive/--worker-archive")
	}
	return errs.Failed(CodeArchiveUnreadable, "cannot read %s archive %s: %v", which, path, err).WithPath(path).
		WithHint("check that the export folder is readable by this user and holds regular files, then retry").Wrap(err)
}
