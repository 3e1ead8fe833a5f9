package testscript

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clawkit/clawkit/pkg/crabbox"
	"github.com/clawkit/clawkit/pkg/crabbox/crabboxtest"
)

// crabboxHostileCases are TestHostileInputs' crabbox rows beyond the
// manifest and receipt-line ones: node bootstraps that pass the archive
// rules but break the install layout (a link where the worker archive
// goes, reserved names, identity), installed into a home that does not
// exist and into one that holds a cache (neither may change); decoded
// receipts that must be refused; verify with only the manifest, with the
// default home, and over a runtime whose file names are not UTF-8.
func crabboxHostileCases() []hostileCase {
	var cs []hostileCase
	layout := func(kind string, prepared bool) func(t *testing.T, w string) {
		return func(t *testing.T, w string) {
			if _, err := crabboxtest.HandExport(filepath.Join(w, "x"), crabboxtest.LayoutArchive(kind)); err != nil {
				t.Fatal(err)
			}
			if prepared {
				if err := os.MkdirAll(filepath.Join(w, "t", crabbox.RuntimesDir, "other"), 0o755); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	for _, kind := range crabboxtest.SortedLayoutKinds() {
		if crabboxtest.LayoutKinds[kind] == "" {
			continue
		}
		for _, prepared := range []bool{false, true} {
			name := "crabbox-layout/" + kind
			if prepared {
				name += "-existing-cache"
			}
			cs = append(cs, hostileCase{name: name, setup: layout(kind, prepared),
				args: []string{"crabbox", "install", "--manifest", "$W/x/manifest.json", "--target-home", "$W/t"},
				exit: 1, code: "integrity_verification_failed"})
		}
	}

	// A non-UTF-8 name, installed during setup: verify --deep agrees
	// (exit 0) and writes nothing.
	cs = append(cs, hostileCase{name: "crabbox-layout/non-utf8-verify-deep", setup: func(t *testing.T, w string) {
		mp, err := crabboxtest.HandExport(filepath.Join(w, "x"), crabboxtest.LayoutArchive("non-utf8"))
		if err != nil {
			t.Fatal(err)
		}
		// The clawkit under test installs (its version is in the record).
		if out, err := exec.Command("clawkit", "crabbox", "install", "--manifest", mp, "--target-home", filepath.Join(w, "t")).CombinedOutput(); err != nil {
			t.Fatalf("install: %v\n%s", err, out)
		}
	}, args: []string{"crabbox", "verify", "--deep", "--manifest", "$W/x/manifest.json", "--target-home", "$W/t"}, exit: 0, has: `"status": "existing-verified"`})

	// Only manifest.json: --print-command works (exit 0) and reads no
	// archive; verify reports "not installed" (exit 1) without creating the
	// target; with the default home, it creates nothing in $HOME.
	onlyManifest := func(t *testing.T, w string) {
		if _, err := crabboxtest.HandExport(filepath.Join(w, "x"), crabboxtest.NodeBootstrap(crabboxtest.Version)); err != nil {
			t.Fatal(err)
		}
		if err := os.RemoveAll(filepath.Join(w, "x", "node-bootstrap")); err != nil {
			t.Fatal(err)
		}
		if err := os.RemoveAll(filepath.Join(w, "x", "worker-artifacts")); err != nil {
			t.Fatal(err)
		}
	}
	cs = append(cs,
		hostileCase{name: "crabbox-verify/print-command-manifest-only", setup: onlyManifest, args: []string{"crabbox", "verify", "--print-command", "--manifest", "$W/x/manifest.json", "--target-home", "$W/t"}, exit: 0, has: `"command": "clawkit crabbox verify --manifest`},
		hostileCase{name: "crabbox-verify/manifest-only", setup: onlyManifest, args: []string{"crabbox", "verify", "--manifest", "$W/x/manifest.json", "--target-home", "$W/t"}, exit: 1, code: "runtime_cache_invalid"},
		hostileCase{name: "crabbox-verify/default-home", setup: onlyManifest, args: []string{"crabbox", "verify", "--manifest", "$W/x/manifest.json"}, exit: 1, code: "runtime_cache_invalid"},
		hostileCase{name: "crabbox-install/manifest-only", setup: onlyManifest, args: []string{"crabbox", "install", "--manifest", "$W/x/manifest.json", "--target-home", "$W/t"}, exit: 1, code: "archive_missing"},
	)

	// Decoded receipts (the JSON object alone on stdin) that are refused.
	good := `{"status":"installed","packageName":"openclaw","packageVersion":"1","buildId":"b","platform":"linux","arch":"x64","manifestSha256":"","nodeBootstrapSha256":"","workerBundleSha256":"","bundleHash":"","cliVersion":"c","runtimeDir":"/r","packageDir":"/p","workerArchive":"/w"}`
	decoded := func(name, in string) hostileCase {
		return hostileCase{name: "receipt-decoded/" + name, setup: files("e/manifest.json", `{}`), args: []string{"crabbox", "receipt", "--manifest", "$W/e/manifest.json"}, stdin: in, exit: 1}
	}
	cs = append(cs,
		decoded("unknown-field", strings.Replace(good, `{"status"`, `{"skipVerify":true,"status"`, 1)),
		decoded("dup-keys", strings.Replace(good, `{"status":"installed"`, `{"status":"installed","status":"installed"`, 1)),
		decoded("trailing", good+"\n{}"),
		decoded("then-line", good+"\nopenclaw.runtime-installed: "+good+"\n"),
		decoded("oversized", "{"+strings.Repeat(" ", 17<<10)+"}"),
		decoded("utf8", "{\"status\":\"\xff\"}"),
		decoded("wrong-type", strings.Replace(good, `"status":"installed"`, `"status":1`, 1)),
		decoded("truncated", good[:len(good)/2]),
	)
	return cs
}
