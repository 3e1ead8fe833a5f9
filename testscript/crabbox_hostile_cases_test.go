package testscript

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

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
		os.RemoveAll(filepath.Join(w, "x", "node-bootstrap"))
		os.RemoveAll(filepath.Join(w, "x", "worker-artifacts"))
	}
	cs = append(cs,
		hostileCase{name: "crabbox-verify/print-command-manifest-only", setup: onlyManifest, args: []string{"crabbox", "verify", "--print-command", "--manifest", "$W/x/manifest.json", "--target-home", "$W/t"}, exit: 0, has: `"command": "clawkit crabbox verify --manifest`},
		hostileCase{name: "crabbox-verify/manifest-only", setup: onlyManifest, args: []string{"crabbox", "verify", "--manifest", "$W/x/manifest.json", "--target-home", "$W/t"}, exit: 1, code: "runtime_cache_invalid"},
		hostileCase{name: "crabbox-verify/default-home", setup: onlyManifest, args: []string{"crabbox", "verify", "--manifest", "$W/x/manifest.json"}, exit: 1, code: "runtime_cache_invalid"},
		// verify --json: one report document on every path (issue 33).
		hostileCase{name: "crabbox-verify/json-report-not-installed", setup: onlyManifest, args: []string{"crabbox", "verify", "--manifest", "$W/x/manifest.json", "--target-home", "$W/t"}, exit: 1, code: "runtime_cache_invalid", has: `"status": "not-installed"`},
		hostileCase{name: "crabbox-verify/json-report-pin-mismatch", setup: onlyManifest, args: []string{"crabbox", "verify", "--manifest", "$W/x/manifest.json", "--target-home", "$W/t", "--expect-build-id", "other"}, exit: 1, code: "manifest_mismatch", has: `"status": "error"`},
		hostileCase{name: "crabbox-verify/json-report-no-manifest", args: []string{"crabbox", "verify", "--manifest", "$W/none.json", "--target-home", "$W/t"}, exit: 1, code: "manifest_unreadable", has: `"checked": []`},
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
	cs = append(cs, crabboxLockCases()...)
	cs = append(cs, crabboxTreeCases()...)

	// Names from the archive in human output: escaped (issue 31, item 4).
	controlName := func(t *testing.T, w string) {
		mp, err := crabboxtest.HandExport(filepath.Join(w, "x"), crabboxtest.LayoutArchive("control-name"))
		if err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("clawkit", "crabbox", "install", "--manifest", mp, "--target-home", filepath.Join(w, "t")).CombinedOutput(); err != nil {
			t.Fatalf("install: %v\n%s", err, out)
		}
		rts, _ := filepath.Glob(filepath.Join(w, "t", crabbox.RuntimesDir, "[0-9a-f]*"))
		if len(rts) != 1 {
			t.Fatalf("runtimes: %v", rts)
		}
		p := filepath.Join(rts[0], filepath.FromSlash(crabboxtest.ControlName))
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		b[0] ^= 0xff
		write(t, p, string(b))
	}
	cs = append(cs,
		hostileCase{name: "termsafe/crabbox-verify-deep-entry-name", setup: controlName, human: true, args: []string{"crabbox", "verify", "--deep", "--manifest", "$W/x/manifest.json", "--target-home", "$W/t"}, exit: 1},
		hostileCase{name: "termsafe/crabbox-verify-entry-name-mode", setup: func(t *testing.T, w string) {
			controlName(t, w)
			rts, _ := filepath.Glob(filepath.Join(w, "t", crabbox.RuntimesDir, "[0-9a-f]*"))
			os.Chmod(filepath.Join(rts[0], filepath.FromSlash(crabboxtest.ControlName)), 0o777)
		}, human: true, args: []string{"crabbox", "verify", "--manifest", "$W/x/manifest.json", "--target-home", "$W/t"}, exit: 1},
	)

	// A folder name from outside in runtime-artifacts' human lines.
	const evilDir = "ev\x1b[31mil\nclawkit: error: forged"
	cs = append(cs, hostileCase{name: "termsafe/artifacts-qualify-folder-name", setup: func(t *testing.T, w string) {
		if _, err := crabboxtest.Installation(filepath.Join(w, evilDir)); err != nil {
			t.Fatal(err)
		}
	}, human: true, args: []string{"runtime-artifacts", "qualify", "--package-root", "$W/" + evilDir + "/node_modules/openclaw"}, exit: 0})

	// setup names the files to transfer by absolute local path, and, as
	// install does, refuses an archive that is a symlink (issue 31, item
	// 13).
	hand := func(t *testing.T, w string) {
		if _, err := crabboxtest.HandExport(filepath.Join(w, "x"), crabboxtest.NodeBootstrap(crabboxtest.Version)); err != nil {
			t.Fatal(err)
		}
	}
	cs = append(cs,
		hostileCase{name: "crabbox-setup/transfer-absolute-paths", setup: hand, args: []string{"crabbox", "setup", "--manifest", "x/manifest.json"}, exit: 0, has: `"role": "node-bootstrap",` + "\n" + `      "path": "/`},
		hostileCase{name: "crabbox-setup/archive-symlink", setup: func(t *testing.T, w string) {
			hand(t, w)
			in, err := crabbox.LoadInputs(filepath.Join(w, "x", "manifest.json"), crabbox.Expect{})
			if err != nil {
				t.Fatal(err)
			}
			os.Rename(in.WorkerArchive, filepath.Join(w, "worker.tgz"))
			if err := os.Symlink(filepath.Join(w, "worker.tgz"), in.WorkerArchive); err != nil {
				t.Fatal(err)
			}
		}, args: []string{"crabbox", "setup", "--manifest", "$W/x/manifest.json"}, exit: 1, code: "archive_unreadable"},
	)

	// Out of file descriptors at several points of the install (issue
	// 31, item 10): exit 1 and nothing left, not even the target home.
	sample := func(t *testing.T, w string) {
		if _, err := crabboxtest.Export(filepath.Join(w, "x")); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []int{11, 12, 13, 14, 15, 16} {
		cs = append(cs, hostileCase{name: fmt.Sprintf("crabbox-emfile/install-ulimit-%d", n), setup: sample, nofile: n,
			args: []string{"crabbox", "install", "--manifest", "$W/x/export/manifest.json", "--target-home", "$W/t"}, exit: 1})
	}

	// A receipt line after a JSON log line is accepted (the marker line
	// wherever it is); JSON lines alone are not one decoded receipt.
	withOutput := func(before, after string) func(t *testing.T, w string) {
		return func(t *testing.T, w string) {
			mp, err := crabboxtest.HandExport(filepath.Join(w, "x"), crabboxtest.NodeBootstrap(crabboxtest.Version))
			if err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command("clawkit", "crabbox", "install", "--manifest", mp, "--target-home", filepath.Join(w, "t")).Output()
			if err != nil {
				t.Fatalf("install: %v", err)
			}
			write(t, filepath.Join(w, "out.txt"), before+string(out)+after)
		}
	}
	jsonLog := `{"level":"info","msg":"restoring the runtime cache"}` + "\n"
	receipt := []string{"crabbox", "receipt", "--manifest", "$W/x/manifest.json", "--from", "$W/out.txt", "--target-home", "$W/t"}
	cs = append(cs,
		hostileCase{name: "receipt-scan/json-log-then-line", setup: withOutput(jsonLog, ""), args: receipt, exit: 0, has: `"status": "installed"`},
		hostileCase{name: "receipt-scan/json-log-around-line", setup: withOutput(jsonLog, jsonLog), args: receipt, exit: 0, has: `"status": "installed"`},
		hostileCase{name: "receipt-scan/json-log-only", setup: func(t *testing.T, w string) {
			withOutput("", "")(t, w)
			write(t, filepath.Join(w, "out.txt"), jsonLog+jsonLog)
		}, args: receipt, exit: 1, code: "receipt_invalid"},
	)
	return cs
}

// crabboxTreeCases are the installed tree's rows (issue 31, items 5 and
// 12): an install is made during setup by the clawkit under test, then
// damaged; plain verify must see a folder or file whose mode changed and
// a file that grew (exit 1, runtime_cache_invalid), and so must --deep.
// An archive asking for world-writable, sticky and set-id modes installs
// nothing above 0755 (checked in setup) and then verifies deeply.
func crabboxTreeCases() []hostileCase {
	installed := func(node []byte, damage func(t *testing.T, rt string)) func(t *testing.T, w string) {
		return func(t *testing.T, w string) {
			mp, err := crabboxtest.HandExport(filepath.Join(w, "x"), node)
			if err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command("clawkit", "crabbox", "install", "--manifest", mp, "--target-home", filepath.Join(w, "t")).CombinedOutput(); err != nil {
				t.Fatalf("install: %v\n%s", err, out)
			}
			rts, _ := filepath.Glob(filepath.Join(w, "t", crabbox.RuntimesDir, "[0-9a-f]*"))
			if len(rts) != 1 {
				t.Fatalf("runtimes: %v", rts)
			}
			damage(t, rts[0])
		}
	}
	chmod := func(rel string, mode os.FileMode) func(t *testing.T, rt string) {
		return func(t *testing.T, rt string) {
			if err := os.Chmod(filepath.Join(rt, rel), mode); err != nil {
				t.Fatal(err)
			}
		}
	}
	grow := func(t *testing.T, rt string) {
		f, err := os.OpenFile(filepath.Join(rt, "node_modules/openclaw/dist/index.js"), os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString("// 11 bytes")
		f.Close()
	}
	atMost755 := func(t *testing.T, rt string) {
		filepath.WalkDir(rt, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				t.Fatal(err)
			}
			st, _ := os.Lstat(p)
			if m := st.Mode(); m&fs.ModeSymlink == 0 && (m&(fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky) != 0 || m.Perm()&^0o755 != 0) {
				t.Errorf("%s installed with mode %v", p, m)
			}
			return nil
		})
	}
	node := crabboxtest.NodeBootstrap(crabboxtest.Version)
	verify := []string{"crabbox", "verify", "--manifest", "$W/x/manifest.json", "--target-home", "$W/t"}
	deep := append(slices.Clone(verify), "--deep")
	return []hostileCase{
		{name: "crabbox-modes/verify-dir-777", setup: installed(node, chmod("node_modules/openclaw/dist", 0o777)), args: verify, exit: 1, code: "runtime_cache_invalid"},
		{name: "crabbox-modes/verify-deep-dir-777", setup: installed(node, chmod("node_modules/openclaw/dist", 0o777)), args: deep, exit: 1, code: "runtime_cache_invalid"},
		{name: "crabbox-modes/verify-deep-implied-dir-777", setup: installed(node, chmod("node_modules", 0o777)), args: deep, exit: 1, code: "runtime_cache_invalid"},
		{name: "crabbox-modes/verify-dir-sticky", setup: installed(node, chmod("node_modules/openclaw", 0o755|os.ModeSticky)), args: verify, exit: 1, code: "runtime_cache_invalid"},
		{name: "crabbox-modes/verify-file-777", setup: installed(node, chmod("node_modules/openclaw/dist/index.js", 0o777)), args: verify, exit: 1, code: "runtime_cache_invalid"},
		{name: "crabbox-modes/archive-modes-installed-at-most-0755", setup: installed(crabboxtest.ModesArchive(), atMost755), args: deep, exit: 0, has: `"status": "existing-verified"`},
		{name: "crabbox-verify/plain-file-grew-11-bytes", setup: installed(node, grow), args: verify, exit: 1, code: "runtime_cache_invalid"},
	}
}

// crabboxLockCases are the per-runtime lock's rows (issue 31, item 2): a
// lock path that is a symlink (to a missing file, which must not be
// created, or to an existing one, which must not change; neither may
// hang), a FIFO or a folder is refused with runtime_lock_unsafe; a lock
// another process holds makes an install with --lock-wait 1s give up with
// runtime_lock_busy; a wait below 1s is a usage error.
func crabboxLockCases() []hostileCase {
	// export writes the hand export and the runtime cache folder and
	// returns the lock path.
	export := func(t *testing.T, w string) string {
		mp, err := crabboxtest.HandExport(filepath.Join(w, "x"), crabboxtest.NodeBootstrap(crabboxtest.Version))
		if err != nil {
			t.Fatal(err)
		}
		in, err := crabbox.LoadInputs(mp, crabbox.Expect{})
		if err != nil {
			t.Fatal(err)
		}
		l, err := crabbox.LayoutFor(filepath.Join(w, "t"), in.Manifest)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(l.RuntimesDir, 0o755); err != nil {
			t.Fatal(err)
		}
		return crabbox.LockPath(l)
	}
	lockAs := func(kind string) func(t *testing.T, w string) {
		return func(t *testing.T, w string) {
			lp := export(t, w)
			os.MkdirAll(filepath.Join(w, "outside"), 0o755)
			var err error
			switch kind {
			case "symlink-missing":
				err = os.Symlink(filepath.Join(w, "outside", "made-by-install"), lp)
			case "symlink-existing":
				write(t, filepath.Join(w, "outside", "victim"), "not a lock\n")
				err = os.Symlink(filepath.Join(w, "outside", "victim"), lp)
			case "symlink-dir":
				err = os.Symlink(filepath.Join(w, "outside"), lp)
			case "fifo":
				fifo(t, lp)
			case "dir":
				err = os.Mkdir(lp, 0o755)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	install := []string{"crabbox", "install", "--manifest", "$W/x/manifest.json", "--target-home", "$W/t"}
	var cs []hostileCase
	for _, kind := range []string{"symlink-missing", "symlink-existing", "symlink-dir", "fifo", "dir"} {
		cs = append(cs, hostileCase{name: "crabbox-lock/" + kind, setup: lockAs(kind), args: install, exit: 1, code: "runtime_lock_unsafe"})
	}
	held := func(t *testing.T, w string) {
		lp := export(t, w)
		in, _ := crabbox.LoadInputs(filepath.Join(w, "x", "manifest.json"), crabbox.Expect{})
		l, _ := crabbox.LayoutFor(filepath.Join(w, "t"), in.Manifest)
		k, err := crabbox.LockRuntime(context.Background(), l, time.Minute)
		if err != nil || k.Path() != lp {
			t.Fatalf("lock %s: %v", lp, err)
		}
		t.Cleanup(func() { k.Unlock() })
	}
	cs = append(cs,
		hostileCase{name: "crabbox-lock/held-lock-wait-1s", setup: held, args: append(slices.Clone(install), "--lock-wait", "1s"), exit: 5, code: "runtime_lock_busy"},
		hostileCase{name: "crabbox-lock/lock-wait-0s", setup: func(t *testing.T, w string) { export(t, w) }, args: append(slices.Clone(install), "--lock-wait", "0s"), exit: 2, code: "invalid_lock_wait"},
		hostileCase{name: "crabbox-lock/lock-wait-negative", setup: func(t *testing.T, w string) { export(t, w) }, args: append(slices.Clone(install), "--lock-wait=-1s"), exit: 2, code: "invalid_lock_wait"},
	)
	return cs
}
