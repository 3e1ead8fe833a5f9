package crabbox

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/clawkit/clawkit/pkg/artifacts"
	"github.com/clawkit/clawkit/pkg/errs"
)

// Setup is the credential-free install command for a manifest.
type Setup struct {
	// Argv is the command, program name first.
	Argv []string `json:"argv"`
	// Command is Argv quoted for a POSIX shell.
	Command string `json:"command"`
	// Transfer names, by absolute local path, the files the target needs
	// (install only): the manifest and both archives, each with the path
	// it must have relative to the manifest's folder there.
	Transfer []Transfer `json:"transfer,omitempty"`
	// Request is the same install as a library call (what --run executes).
	Request InstallRequest `json:"-"`
}

// Transfer is one file to copy to the target for an install.
type Transfer struct {
	Role string `json:"role"` // manifest, node-bootstrap, worker-bundle
	// Path is the file's absolute local path (symlinks in the folders
	// above it resolved as given; the file itself is checked to be a
	// regular file, as install requires).
	Path string `json:"path"`
	// Rel is where it goes, relative to the export folder on the target.
	Rel    string `json:"rel"`
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
}

// SetupCommand reads the manifest (and checks that both archives are
// present beside it with the recorded sizes) and returns the install
// command that pins every expected size, digest, build and manifest
// identity and the worker archive's package-relative path. It checks
// nothing remotely, allocates and enrols nothing, and the command carries
// no credential: the install needs none. The manifest path is made
// absolute so the command works from any folder; targetHome is included
// only when given (the install defaults to the runtime user's home).
func SetupCommand(manifestPath, targetHome string) (*Setup, error) {
	return commandFor("install", manifestPath, targetHome, false)
}

// VerifyCommand is SetupCommand for `crabbox verify` (the seed's
// createCrabboxRuntimeCacheVerification): the credential-free command a CI
// job or a remote host runs to verify a retained runtime cache against this
// export, pinned the same way. With deep, the command re-hashes every
// installed file. Only the manifest is read: the archives need not be
// beside it.
func VerifyCommand(manifestPath, targetHome string, deep bool) (*Setup, error) {
	return commandFor("verify", manifestPath, targetHome, deep)
}

func commandFor(sub, manifestPath, targetHome string, deep bool) (*Setup, error) {
	in, err := LoadInputs(manifestPath, Expect{})
	if err != nil {
		return nil, err
	}
	m := in.Manifest
	// Verification takes the export's identity from the manifest alone
	// (it never reads the archives), so only an install command needs
	// them beside it.
	var transfer []Transfer
	for _, a := range []struct {
		which, role, path string
		archive           artifacts.Archive
	}{{"node bootstrap", "node-bootstrap", in.NodeArchive, m.NodeBootstrap.Archive}, {"worker bundle", "worker-bundle", in.WorkerArchive, m.WorkerBundle.Archive}} {
		if sub != "install" {
			break
		}
		// As install will: a regular file, not a link, of the recorded size.
		st, err := os.Lstat(a.path)
		if err != nil {
			return nil, missingArchive(a.which, a.path, err)
		}
		if !st.Mode().IsRegular() {
			return nil, missingArchive(a.which, a.path, fmt.Errorf("not a regular file"))
		}
		if st.Size() != a.archive.Bytes {
			return nil, integrityErr("%s archive %s is %d bytes, the manifest records %d", a.which, a.path, st.Size(), a.archive.Bytes)
		}
		transfer = append(transfer, Transfer{Role: a.role, Path: a.path, Rel: a.archive.Path, Bytes: a.archive.Bytes, SHA256: a.archive.SHA256})
	}
	if sub == "install" {
		mst, err := os.Stat(in.ManifestPath)
		if err != nil {
			return nil, errs.Failed(errs.CodeManifestUnreadable, "cannot stat %s: %v", in.ManifestPath, err)
		}
		transfer = append([]Transfer{{Role: "manifest", Path: in.ManifestPath, Rel: artifacts.ManifestName, Bytes: mst.Size(), SHA256: in.ManifestSHA256}}, transfer...)
	}
	wp, _ := artifacts.WorkerPath(m.WorkerBundle.SHA256)
	pins := Expect{
		ManifestSHA256: in.ManifestSHA256,
		BuildID:        m.BuildID,
		Package:        m.Package.Name + "@" + m.Package.Version,
		NodeSHA256:     m.NodeBootstrap.SHA256,
		NodeBytes:      m.NodeBootstrap.Bytes,
		WorkerSHA256:   m.WorkerBundle.SHA256,
		WorkerBytes:    m.WorkerBundle.Bytes,
		BundleHash:     m.WorkerBundle.BundleHash,
		WorkerPath:     wp,
	}
	argv := []string{"clawkit", "crabbox", sub, "--manifest", in.ManifestPath}
	if targetHome != "" {
		abs, err := filepath.Abs(targetHome)
		if err != nil {
			return nil, err
		}
		targetHome = abs
		argv = append(argv, "--target-home", targetHome)
	}
	if deep {
		argv = append(argv, "--deep")
	}
	argv = append(argv, PinFlags(pins)...)
	return &Setup{
		Argv:     argv,
		Command:  ShellQuote(argv),
		Transfer: transfer,
		Request:  InstallRequest{ManifestPath: in.ManifestPath, TargetHome: targetHome, Expect: pins},
	}, nil
}

// PinFlags renders pins as install flags (the names pkg/cli declares).
func PinFlags(p Expect) []string {
	var a []string
	add := func(flag, v string) {
		if v != "" {
			a = append(a, "--"+flag, v)
		}
	}
	add("expect-manifest-sha256", p.ManifestSHA256)
	add("expect-build-id", p.BuildID)
	add("expect-package", p.Package)
	add("expect-node-sha256", p.NodeSHA256)
	if p.NodeBytes != 0 {
		add("expect-node-bytes", strconv.FormatInt(p.NodeBytes, 10))
	}
	add("expect-worker-sha256", p.WorkerSHA256)
	if p.WorkerBytes != 0 {
		add("expect-worker-bytes", strconv.FormatInt(p.WorkerBytes, 10))
	}
	add("expect-bundle-hash", p.BundleHash)
	add("expect-worker-path", p.WorkerPath)
	return a
}

// ShellQuote quotes argv for a POSIX shell: words made only of safe
// characters stay bare, everything else is single-quoted.
func ShellQuote(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		if a != "" && strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=@:+,%") == "" {
			q[i] = a
			continue
		}
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}
