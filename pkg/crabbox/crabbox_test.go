package crabbox_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/clawkit/clawkit/pkg/archive/archivetest"
	"github.com/clawkit/clawkit/pkg/artifacts"
	"github.com/clawkit/clawkit/pkg/crabbox"
	"github.com/clawkit/clawkit/pkg/crabbox/crabboxtest"
	"github.com/clawkit/clawkit/pkg/errs"
)

const testCLI = "clawkit test"

func TestMain(m *testing.M) {
	// Child mode for TestKillDuringInstall: install, and stop dead (wait
	// to be killed) after some entries are on disk.
	if mp := os.Getenv("CRABBOX_KILL_CHILD_MANIFEST"); mp != "" {
		ready := os.Getenv("CRABBOX_KILL_CHILD_READY")
		crabbox.SetTestHookEntry(func(n int) {
			if n == 2 {
				os.WriteFile(ready, []byte("ready"), 0o644)
				select {} // killed here, mid-extraction
			}
		})
		_, err := crabbox.Install(crabbox.InstallRequest{ManifestPath: mp, TargetHome: os.Getenv("CRABBOX_KILL_CHILD_HOME"), CLIVersion: testCLI})
		fmt.Fprintln(os.Stderr, "child finished unexpectedly:", err)
		os.Exit(3)
	}
	os.Exit(m.Run())
}

func install(t *testing.T, mp, home string) *crabbox.Receipt {
	t.Helper()
	var log bytes.Buffer
	rc, err := crabbox.Install(crabbox.InstallRequest{ManifestPath: mp, TargetHome: home, CLIVersion: testCLI, Log: &log})
	if err != nil {
		t.Fatalf("install: %v (log: %s)", err, log.String())
	}
	return rc
}

func loadManifest(t *testing.T, mp string) (*artifacts.Manifest, string) {
	t.Helper()
	m, raw, err := artifacts.LoadManifest(mp)
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(raw)
	return m, hex.EncodeToString(s[:])
}

// snapshot records every path below root with its type, mode, mtime, size
// and content digest: equal snapshots mean nothing was created, removed or
// changed.
func snapshot(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	if _, err := os.Lstat(root); err != nil {
		return out
	}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		st, err := os.Lstat(p)
		if err != nil {
			return err
		}
		desc := fmt.Sprintf("%v %d %d", st.Mode(), st.ModTime().UnixNano(), st.Size())
		if st.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			desc += fmt.Sprintf(" %x", sha256.Sum256(b))
		}
		if st.Mode()&fs.ModeSymlink != 0 {
			l, _ := os.Readlink(p)
			desc += " -> " + l
		}
		out[p] = desc
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sameSnapshot(t *testing.T, before, after map[string]string) {
	t.Helper()
	for p, d := range before {
		if after[p] != d {
			t.Errorf("changed: %s: %q -> %q", p, d, after[p])
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			t.Errorf("created: %s", p)
		}
	}
}

func TestInstallVerifyReceipt(t *testing.T) {
	dir := t.TempDir()
	mp, err := crabboxtest.Export(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, msha := loadManifest(t, mp)
	home := filepath.Join(dir, "home")
	rc := install(t, mp, home)
	if rc.Status != crabbox.StatusInstalled {
		t.Fatalf("status %s", rc.Status)
	}
	l, _ := crabbox.LayoutFor(home, m)
	if rc.RuntimeDir != l.RuntimeDir || !strings.HasSuffix(rc.WorkerArchive, "node_modules/openclaw/worker-artifacts/"+m.WorkerBundle.SHA256+".tgz") {
		t.Fatalf("paths: %+v", rc)
	}
	// The package landed where the manifest says, with its dependency.
	for _, rel := range []string{"node_modules/openclaw/package.json", "node_modules/tiny-dep/index.js"} {
		if _, err := os.Stat(filepath.Join(l.RuntimeDir, rel)); err != nil {
			t.Errorf("missing %s: %v", rel, err)
		}
	}
	// The placed worker archive is byte-identical to the export's.
	a, _ := os.ReadFile(filepath.Join(filepath.Dir(mp), m.WorkerBundle.Path))
	b, _ := os.ReadFile(rc.WorkerArchive)
	if !bytes.Equal(a, b) {
		t.Fatal("placed worker archive differs")
	}
	// The receipt line round-trips and validates.
	line := rc.Line()
	if len(line) > crabbox.MaxReceiptLine || strings.Contains(line, "\n") {
		t.Fatalf("line: %d bytes", len(line))
	}
	got, err := crabbox.ReadReceipt(strings.NewReader("noise\n" + line + "\nmore noise\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := crabbox.ValidateReceipt(got, m, msha, home); err != nil {
		t.Fatal(err)
	}
	if err := crabbox.ValidateReceipt(got, m, msha, ""); err != nil {
		t.Fatal(err)
	}
	if err := crabbox.ValidateReceipt(got, m, msha, filepath.Join(dir, "elsewhere")); errs.CodeOf(err) != "receipt_mismatch" {
		t.Fatalf("other home accepted: %v", err)
	}
	// Verify, shallow and deep.
	for _, deep := range []bool{false, true} {
		res, err := crabbox.Verify(crabbox.VerifyRequest{ManifestPath: mp, TargetHome: home, CLIVersion: testCLI, Deep: deep})
		if err != nil || len(res.Problems) != 0 {
			t.Fatalf("verify deep=%v: %v %q", deep, err, res.Problems)
		}
		if res.Receipt.Status != crabbox.StatusExistingVerified {
			t.Fatal(res.Receipt.Status)
		}
	}
}

func TestIdempotentKeepsInodes(t *testing.T) {
	dir := t.TempDir()
	mp, err := crabboxtest.Export(dir)
	if err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(dir, "home")
	rc := install(t, mp, home)
	before := snapshot(t, rc.RuntimeDir)
	st1, _ := os.Stat(rc.WorkerArchive)
	pj1, _ := os.Stat(filepath.Join(rc.PackageDir, "package.json"))
	rc2 := install(t, mp, home)
	if rc2.Status != crabbox.StatusExistingVerified {
		t.Fatalf("second install: %s", rc2.Status)
	}
	st2, _ := os.Stat(rc.WorkerArchive)
	pj2, _ := os.Stat(filepath.Join(rc.PackageDir, "package.json"))
	if !os.SameFile(st1, st2) || !os.SameFile(pj1, pj2) {
		t.Fatal("existing install was replaced (inode changed)")
	}
	sameSnapshot(t, before, snapshot(t, rc.RuntimeDir))
}

func appendTo(t *testing.T, p, s string) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

func flipByte(t *testing.T, p string, off int64) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0xff
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

func TestWrongDigestTouchesNothing(t *testing.T) {
	dir := t.TempDir()
	mp, err := crabboxtest.Export(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := loadManifest(t, mp)
	home := filepath.Join(dir, "home")
	rc := install(t, mp, home)
	for _, which := range []string{m.NodeBootstrap.Path, m.WorkerBundle.Path} {
		t.Run(which, func(t *testing.T) {
			p := filepath.Join(filepath.Dir(mp), which)
			flipByte(t, p, 100)
			defer flipByte(t, p, 100)
			// A fresh target: nothing at all is created.
			fresh := filepath.Join(dir, "fresh")
			_, err := crabbox.Install(crabbox.InstallRequest{ManifestPath: mp, TargetHome: fresh, CLIVersion: testCLI})
			if errs.CodeOf(err) != "integrity_verification_failed" || !strings.Contains(err.Error(), "integrity verification failed") {
				t.Fatalf("err = %v", err)
			}
			if _, err := os.Lstat(fresh); err == nil {
				t.Fatal("target home was created despite the bad digest")
			}
			// An existing install (made older so a touch would show) is
			// left byte for byte and mtime for mtime.
			before := snapshot(t, home)
			_, err = crabbox.Install(crabbox.InstallRequest{ManifestPath: mp, TargetHome: home, CLIVersion: testCLI})
			if errs.CodeOf(err) != "integrity_verification_failed" {
				t.Fatalf("err = %v", err)
			}
			sameSnapshot(t, before, snapshot(t, home))
		})
	}
	_ = rc
}

func TestWrongSizeRefused(t *testing.T) {
	dir := t.TempDir()
	mp, err := crabboxtest.Export(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := loadManifest(t, mp)
	p := filepath.Join(filepath.Dir(mp), m.NodeBootstrap.Path)
	f, _ := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	f.Write([]byte{0})
	f.Close()
	_, err = crabbox.Install(crabbox.InstallRequest{ManifestPath: mp, TargetHome: filepath.Join(dir, "home"), CLIVersion: testCLI})
	if errs.CodeOf(err) != "integrity_verification_failed" || !strings.Contains(err.Error(), "bytes") {
		t.Fatalf("err = %v", err)
	}
}

func TestWorkerEntriesCheckedAgainstBundleHash(t *testing.T) {
	dir := t.TempDir()
	worker, wes := crabboxtest.WorkerBundle()
	// The manifest records the real archive digest, but entries (and so
	// the bundle hash) of different content: only the re-hash can tell.
	wes[3].SHA256 = strings.Repeat("ab", 32)
	mp, err := crabboxtest.HandExportWorker(filepath.Join(dir, "x"), crabboxtest.NodeBootstrap(crabboxtest.Version), worker, wes)
	if err != nil {
		t.Fatal(err)
	}
	_, err = crabbox.Install(crabbox.InstallRequest{ManifestPath: mp, TargetHome: filepath.Join(dir, "home"), CLIVersion: testCLI})
	if errs.CodeOf(err) != "integrity_verification_failed" || !strings.Contains(err.Error(), "worker bundle entry") {
		t.Fatalf("err = %v", err)
	}
	// A worker archive with the wrong mode is caught the same way.
	var ents []archivetest.Entry
	for _, we := range wes {
		ents = append(ents, archivetest.Entry{Name: we.Path, Mode: 0o755, Body: []byte("x")})
	}
	_, wes2 := crabboxtest.WorkerBundle()
	mp2, err := crabboxtest.HandExportWorker(filepath.Join(dir, "y"), crabboxtest.NodeBootstrap(crabboxtest.Version), archivetest.Build(ents), wes2)
	if err != nil {
		t.Fatal(err)
	}
	_, err = crabbox.Install(crabbox.InstallRequest{ManifestPath: mp2, TargetHome: filepath.Join(dir, "home"), CLIVersion: testCLI})
	if errs.CodeOf(err) != "integrity_verification_failed" {
		t.Fatalf("err = %v", err)
	}
}

func TestHostileNodeBootstrapRefused(t *testing.T) {
	for _, kind := range archivetest.Kinds() {
		t.Run(kind, func(t *testing.T) {
			dir := t.TempDir()
			mp, err := crabboxtest.HandExport(filepath.Join(dir, "export"), archivetest.Hostile(kind))
			if err != nil {
				t.Fatal(err)
			}
			home := filepath.Join(dir, "home")
			_, err = crabbox.Install(crabbox.InstallRequest{ManifestPath: mp, TargetHome: home, CLIVersion: testCLI})
			if got, want := errs.CodeOf(err), archivetest.HostileKinds[kind]; got != want {
				t.Fatalf("code %s, want %s (%v)", got, want, err)
			}
			rts := filepath.Join(home, crabbox.RuntimesDir)
			ents, _ := os.ReadDir(rts)
			for _, e := range ents {
				if !strings.HasSuffix(e.Name(), ".lock") {
					t.Errorf("left behind: %s", e.Name())
				}
			}
			if _, err := os.Lstat(filepath.Join(dir, "evil.txt")); err == nil {
				t.Error("slip wrote outside the target")
			}
		})
	}
}

func TestHandExportInstalls(t *testing.T) {
	dir := t.TempDir()
	mp, err := crabboxtest.HandExport(filepath.Join(dir, "export"), crabboxtest.NodeBootstrap(crabboxtest.Version))
	if err != nil {
		t.Fatal(err)
	}
	install(t, mp, filepath.Join(dir, "home"))
	// A bootstrap holding another version of the package is refused.
	mp2, err := crabboxtest.HandExport(filepath.Join(dir, "export2"), crabboxtest.NodeBootstrap("1.0.0"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = crabbox.Install(crabbox.InstallRequest{ManifestPath: mp2, TargetHome: filepath.Join(dir, "home2"), CLIVersion: testCLI})
	if errs.CodeOf(err) != "integrity_verification_failed" || !strings.Contains(err.Error(), "openclaw@1.0.0") {
		t.Fatalf("err = %v", err)
	}
}

func TestPinsMismatchRefused(t *testing.T) {
	dir := t.TempDir()
	mp, err := crabboxtest.Export(dir)
	if err != nil {
		t.Fatal(err)
	}
	s, err := crabbox.SetupCommand(mp, filepath.Join(dir, "home"))
	if err != nil {
		t.Fatal(err)
	}
	for _, mut := range []func(*crabbox.Expect){
		func(e *crabbox.Expect) { e.ManifestSHA256 = strings.Repeat("0", 64) },
		func(e *crabbox.Expect) { e.BuildID = "other" },
		func(e *crabbox.Expect) { e.Package = "openclaw@0.0.1" },
		func(e *crabbox.Expect) { e.NodeBytes++ },
		func(e *crabbox.Expect) { e.WorkerPath = "worker-artifacts/x.tgz" },
	} {
		req := s.Request
		req.CLIVersion = testCLI
		mut(&req.Expect)
		if _, err := crabbox.Install(req); errs.CodeOf(err) != "manifest_mismatch" {
			t.Fatalf("err = %v", err)
		}
	}
	if _, err := os.Lstat(filepath.Join(dir, "home")); err == nil {
		t.Fatal("a refused install created the target")
	}
	req := s.Request
	req.CLIVersion = testCLI
	if _, err := crabbox.Install(req); err != nil {
		t.Fatal(err)
	}
}

func TestSetupCommand(t *testing.T) {
	dir := t.TempDir()
	mp, err := crabboxtest.Export(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, msha := loadManifest(t, mp)
	s, err := crabbox.SetupCommand(mp, "rel home")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"clawkit crabbox install --manifest " + mp, "--expect-manifest-sha256 " + msha, "--expect-node-sha256 " + m.NodeBootstrap.SHA256,
		fmt.Sprintf("--expect-node-bytes %d", m.NodeBootstrap.Bytes), "--expect-bundle-hash " + m.WorkerBundle.BundleHash,
		"--expect-worker-path worker-artifacts/" + m.WorkerBundle.SHA256 + ".tgz", "--expect-build-id test-build-1", "--expect-package openclaw@" + crabboxtest.Version} {
		if !strings.Contains(s.Command, want) {
			t.Errorf("command lacks %q:\n%s", want, s.Command)
		}
	}
	if !strings.Contains(s.Command, "'") || !filepath.IsAbs(s.Request.TargetHome) {
		t.Errorf("target home with a space not quoted / not absolute: %s", s.Command)
	}
	// Missing archive: setup refuses.
	os.Remove(filepath.Join(filepath.Dir(mp), m.WorkerBundle.Path))
	if _, err := crabbox.SetupCommand(mp, ""); errs.CodeOf(err) != "archive_missing" {
		t.Fatalf("err = %v", err)
	}
}

func TestVerifyWritesNothing(t *testing.T) {
	dir := t.TempDir()
	mp, err := crabboxtest.Export(dir)
	if err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(dir, "home")
	// Nothing installed: problems, and the home is not created.
	res, err := crabbox.Verify(crabbox.VerifyRequest{ManifestPath: mp, TargetHome: home, CLIVersion: testCLI, Deep: true})
	if err != nil || len(res.Problems) != 1 || !strings.Contains(res.Problems[0], "not installed") {
		t.Fatalf("%v %q", err, res.Problems)
	}
	if _, err := os.Lstat(home); err == nil {
		t.Fatal("verify created the target home")
	}
	rc := install(t, mp, home)
	// Push every mtime into the past so any write would show.
	old := time.Now().Add(-time.Hour)
	filepath.WalkDir(home, func(p string, d fs.DirEntry, err error) error {
		os.Chtimes(p, old, old)
		return nil
	})
	before := snapshot(t, home)
	for _, deep := range []bool{false, true} {
		if res, err := crabbox.Verify(crabbox.VerifyRequest{ManifestPath: mp, TargetHome: home, CLIVersion: testCLI, Deep: deep}); err != nil || len(res.Problems) > 0 {
			t.Fatal(err, res.Problems)
		}
	}
	sameSnapshot(t, before, snapshot(t, home))
	// And when it finds problems, it still writes nothing.
	flipByte(t, rc.WorkerArchive, 10)
	os.Chtimes(rc.WorkerArchive, old, old)
	before = snapshot(t, home)
	res, _ = crabbox.Verify(crabbox.VerifyRequest{ManifestPath: mp, TargetHome: home, CLIVersion: testCLI, Deep: true})
	if len(res.Problems) == 0 {
		t.Fatal("corrupt worker archive not found")
	}
	sameSnapshot(t, before, snapshot(t, home))
}

func TestVerifyProblems(t *testing.T) {
	dir := t.TempDir()
	mp, err := crabboxtest.Export(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := loadManifest(t, mp)
	cases := []struct {
		name    string
		breakIt func(rc *crabbox.Receipt)
		deep    bool
		want    string
	}{
		{"worker-corrupt", func(rc *crabbox.Receipt) { flipByte(t, rc.WorkerArchive, 50) }, false, "retained worker archive has SHA-256"},
		{"worker-missing", func(rc *crabbox.Receipt) { os.Remove(rc.WorkerArchive) }, false, "retained worker archive is missing"},
		{"record-missing", func(rc *crabbox.Receipt) { os.Remove(filepath.Join(rc.RuntimeDir, crabbox.RecordName)) }, false, "install record is missing"},
		{"package-json", func(rc *crabbox.Receipt) {
			os.WriteFile(filepath.Join(rc.PackageDir, "package.json"), []byte(`{"name":"openclaw","version":"9.9.9"}`), 0o644)
		}, false, "openclaw@9.9.9"},
		{"file-corrupt-deep", func(rc *crabbox.Receipt) { flipByte(t, filepath.Join(rc.PackageDir, "dist/index.js"), 7) }, true, "dist/index.js: content has been modified"},
		{"file-missing-deep", func(rc *crabbox.Receipt) { os.Remove(filepath.Join(rc.RuntimeDir, "node_modules/tiny-dep/index.js")) }, true, "tiny-dep/index.js: missing"},
		{"file-added-deep", func(rc *crabbox.Receipt) { os.WriteFile(filepath.Join(rc.PackageDir, "extra.js"), []byte("x"), 0o644) }, true, "extra.js: unexpected file"},
		// Plain verify compares every entry's type, size and mode with the
		// index (issue 31, items 5 and 12), naming the first difference.
		{"file-grew", func(rc *crabbox.Receipt) { appendTo(t, filepath.Join(rc.PackageDir, "dist/index.js"), "// 11 bytes") }, false, "dist/index.js: size is "},
		{"file-grew-deep", func(rc *crabbox.Receipt) { appendTo(t, filepath.Join(rc.PackageDir, "dist/index.js"), "// 11 bytes") }, true, "dist/index.js: size is "},
		{"dir-777", func(rc *crabbox.Receipt) { os.Chmod(filepath.Join(rc.PackageDir, "dist"), 0o777) }, false, "dist: mode is 0777, installed 0755"},
		{"dir-777-deep", func(rc *crabbox.Receipt) { os.Chmod(filepath.Join(rc.PackageDir, "dist"), 0o777) }, true, "dist: mode is 0777, installed 0755"},
		{"implied-dir-777", func(rc *crabbox.Receipt) { os.Chmod(filepath.Join(rc.RuntimeDir, "node_modules"), 0o777) }, false, "node_modules: mode is 0777, installed 0755"},
		{"dir-sticky", func(rc *crabbox.Receipt) { os.Chmod(filepath.Join(rc.PackageDir, "dist"), 0o755|os.ModeSticky) }, false, "dist: mode is 1755, installed 0755"},
		{"file-exec", func(rc *crabbox.Receipt) { os.Chmod(filepath.Join(rc.PackageDir, "dist/index.js"), 0o755) }, false, "dist/index.js: mode is 0755, installed 0644"},
		{"file-added", func(rc *crabbox.Receipt) { os.WriteFile(filepath.Join(rc.PackageDir, "extra.js"), []byte("x"), 0o644) }, false, "extra.js: unexpected file"},
		{"dir-added", func(rc *crabbox.Receipt) { os.MkdirAll(filepath.Join(rc.PackageDir, "extra/x"), 0o755) }, false, "openclaw/extra: unexpected folder"},
		{"file-missing", func(rc *crabbox.Receipt) { os.Remove(filepath.Join(rc.RuntimeDir, "node_modules/tiny-dep/index.js")) }, false, "tiny-dep/index.js: missing"},
		{"file-to-link", func(rc *crabbox.Receipt) {
			p := filepath.Join(rc.PackageDir, "dist/index.js")
			os.Remove(p)
			os.Symlink("elsewhere", p)
		}, false, "dist/index.js: is a symlink, installed a file"},
		{"index-tampered-deep", func(rc *crabbox.Receipt) {
			os.WriteFile(filepath.Join(rc.RuntimeDir, crabbox.IndexName), []byte(`{"schema":"clawkit.crabbox.index.v2","entries":[]}`), 0o644)
		}, true, "install index has SHA-256"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			home := filepath.Join(t.TempDir(), "home")
			rc := install(t, mp, home)
			c.breakIt(rc)
			res, err := crabbox.Verify(crabbox.VerifyRequest{ManifestPath: mp, TargetHome: home, CLIVersion: testCLI, Deep: c.deep})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(strings.Join(res.Problems, "\n"), c.want) {
				t.Fatalf("problems %q lack %q", res.Problems, c.want)
			}
			// The first problem names the first difference.
			if !strings.Contains(res.Problems[0], c.want) {
				t.Fatalf("first problem %q, want %q", res.Problems[0], c.want)
			}
			if res.Receipt != nil {
				t.Fatal("receipt despite problems")
			}
			// The corrupt install is replaced by a fresh install.
			var log bytes.Buffer
			rc2, err := crabbox.Install(crabbox.InstallRequest{ManifestPath: mp, TargetHome: home, CLIVersion: testCLI, Log: &log})
			if err != nil || rc2.Status != crabbox.StatusInstalled || !strings.Contains(log.String(), "replacing") {
				t.Fatalf("reinstall: %v %+v %s", err, rc2, log.String())
			}
			res, _ = crabbox.Verify(crabbox.VerifyRequest{ManifestPath: mp, TargetHome: home, CLIVersion: testCLI, Deep: true})
			if len(res.Problems) > 0 {
				t.Fatalf("after reinstall: %q", res.Problems)
			}
			ents, _ := os.ReadDir(filepath.Join(home, crabbox.RuntimesDir))
			if len(ents) != 2 { // the runtime and its lock
				t.Fatalf("leftovers: %v", ents)
			}
		})
	}
	// Another CLI version: the cache is stale.
	home := filepath.Join(t.TempDir(), "home")
	install(t, mp, home)
	res, _ := crabbox.Verify(crabbox.VerifyRequest{ManifestPath: mp, TargetHome: home, CLIVersion: "clawkit other"})
	if len(res.Problems) != 1 || !strings.Contains(res.Problems[0], `installed by CLI version "clawkit test"`) {
		t.Fatalf("%q", res.Problems)
	}
	_ = m
}

func TestConcurrentInstallsSerialised(t *testing.T) {
	dir := t.TempDir()
	mp, err := crabboxtest.Export(dir)
	if err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(dir, "home")
	const n = 4
	var wg sync.WaitGroup
	status := make([]string, n)
	errsOut := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rc, err := crabbox.Install(crabbox.InstallRequest{ManifestPath: mp, TargetHome: home, CLIVersion: testCLI})
			errsOut[i] = err
			if rc != nil {
				status[i] = rc.Status
			}
		}()
	}
	wg.Wait()
	installed := 0
	for i := range n {
		if errsOut[i] != nil {
			t.Fatalf("install %d: %v", i, errsOut[i])
		}
		if status[i] == crabbox.StatusInstalled {
			installed++
		}
	}
	if installed != 1 {
		t.Fatalf("statuses %q: want exactly one installed", status)
	}
}

// TestKillDuringInstall really kills (SIGKILL) a child process in the middle
// of extraction, then checks there is no install at the final path, that
// verify says so, and that the next install cleans up and succeeds.
func TestKillDuringInstall(t *testing.T) {
	dir := t.TempDir()
	mp, err := crabboxtest.Export(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := loadManifest(t, mp)
	home := filepath.Join(dir, "home")
	ready := filepath.Join(dir, "ready")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "CRABBOX_KILL_CHILD_MANIFEST="+mp, "CRABBOX_KILL_CHILD_READY="+ready, "CRABBOX_KILL_CHILD_HOME="+home)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Minute) // a hang guard, not a timing assertion
	for {
		if _, err := os.Stat(ready); err == nil {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("child never reached the middle of extraction")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("child was not killed by SIGKILL: %v", err)
	}
	l, _ := crabbox.LayoutFor(home, m)
	if _, err := os.Lstat(l.RuntimeDir); err == nil {
		t.Fatal("a half-install is at the final path")
	}
	ents, _ := os.ReadDir(l.RuntimesDir)
	staged := 0
	for _, e := range ents {
		// The staging folder (the worker archive's private copy beside
		// it may be there too).
		if strings.Contains(e.Name(), ".staging-") && e.IsDir() {
			staged++
		}
	}
	if staged != 1 {
		t.Fatalf("expected the killed install's staging folder, found %v", ents)
	}
	res, _ := crabbox.Verify(crabbox.VerifyRequest{ManifestPath: mp, TargetHome: home, CLIVersion: testCLI})
	if len(res.Problems) != 1 || !strings.Contains(res.Problems[0], "not installed") {
		t.Fatalf("verify after kill: %q", res.Problems)
	}
	var log bytes.Buffer
	rc, err := crabbox.Install(crabbox.InstallRequest{ManifestPath: mp, TargetHome: home, CLIVersion: testCLI, Log: &log})
	if err != nil || rc.Status != crabbox.StatusInstalled || !strings.Contains(log.String(), "removed an interrupted install") {
		t.Fatalf("reinstall: %v %s", err, log.String())
	}
	ents, _ = os.ReadDir(l.RuntimesDir)
	if len(ents) != 2 {
		t.Fatalf("leftovers after reinstall: %v", ents)
	}
}

func TestNoTargetHome(t *testing.T) {
	dir := t.TempDir()
	mp, err := crabboxtest.HandExport(filepath.Join(dir, "export"), crabboxtest.NodeBootstrap(crabboxtest.Version))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := crabbox.Install(crabbox.InstallRequest{ManifestPath: mp, CLIVersion: testCLI}); errs.CodeOf(err) != "target_home_missing" || errs.KindOf(err) != errs.KindUsage {
		t.Fatalf("install: %v", err)
	}
	if _, err := crabbox.Verify(crabbox.VerifyRequest{ManifestPath: mp, CLIVersion: testCLI}); errs.CodeOf(err) != "target_home_missing" {
		t.Fatalf("verify: %v", err)
	}
}

func TestBootstrapContentRules(t *testing.T) {
	pkgJSON := archivetest.Entry{Name: "node_modules/openclaw/package.json", Body: []byte(`{"name":"openclaw","version":"` + crabboxtest.Version + `"}`)}
	worker, _ := crabboxtest.WorkerBundle()
	ws := sha256.Sum256(worker)
	wrel := "node_modules/openclaw/worker-artifacts/" + hex.EncodeToString(ws[:]) + ".tgz"
	cases := []struct {
		name    string
		entries []archivetest.Entry
		want    string // "" = installs
	}{
		{"reserved-record-name", []archivetest.Entry{pkgJSON, {Name: crabbox.RecordName, Body: []byte("{}")}}, "reserved for the install record"},
		{"no-package-json", []archivetest.Entry{{Name: "node_modules/openclaw/index.js", Body: []byte("x")}}, "has no readable node_modules/openclaw/package.json"},
		{"bad-package-json", []archivetest.Entry{{Name: "node_modules/openclaw/package.json", Body: []byte("{")}}, "is not valid JSON"},
		{"worker-path-other-bytes", []archivetest.Entry{pkgJSON, {Name: wrel, Body: []byte("not the worker archive")}}, "already contains " + wrel + " with different bytes"},
		{"worker-path-same-bytes", []archivetest.Entry{pkgJSON, {Name: wrel, Body: worker}}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			mp, err := crabboxtest.HandExport(filepath.Join(dir, "export"), archivetest.Build(c.entries))
			if err != nil {
				t.Fatal(err)
			}
			home := filepath.Join(dir, "home")
			_, err = crabbox.Install(crabbox.InstallRequest{ManifestPath: mp, TargetHome: home, CLIVersion: testCLI})
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				res, _ := crabbox.Verify(crabbox.VerifyRequest{ManifestPath: mp, TargetHome: home, CLIVersion: testCLI, Deep: true})
				if len(res.Problems) > 0 {
					t.Fatal(res.Problems)
				}
				return
			}
			if errs.CodeOf(err) != "integrity_verification_failed" || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
			// Refused after extraction began: the target is left as it
			// was (here: no home at all, so no cache folder or lock).
			if _, err := os.Lstat(home); err == nil {
				ents, _ := os.ReadDir(filepath.Join(home, crabbox.RuntimesDir))
				t.Fatalf("left behind: %s %v", home, ents)
			}
		})
	}
}

// TestLayoutRefusedTargetUntouched: node bootstraps that pass the archive
// rules but break the install layout are refused, and the target is left
// exactly as it was, whether the home did not exist or held other things.
// The non-UTF-8 names install and verify --deep agrees.
func TestLayoutRefusedTargetUntouched(t *testing.T) {
	for _, kind := range crabboxtest.SortedLayoutKinds() {
		want := crabboxtest.LayoutKinds[kind]
		t.Run(kind, func(t *testing.T) {
			dir := t.TempDir()
			mp, err := crabboxtest.HandExport(filepath.Join(dir, "export"), crabboxtest.LayoutArchive(kind))
			if err != nil {
				t.Fatal(err)
			}
			fresh := filepath.Join(dir, "fresh")
			_, err = crabbox.Install(crabbox.InstallRequest{ManifestPath: mp, TargetHome: fresh, CLIVersion: testCLI})
			if want == "" {
				if err != nil {
					t.Fatal(err)
				}
				res, _ := crabbox.Verify(crabbox.VerifyRequest{ManifestPath: mp, TargetHome: fresh, CLIVersion: testCLI, Deep: true})
				if len(res.Problems) > 0 {
					t.Fatal(res.Problems)
				}
				var log bytes.Buffer
				rc, err := crabbox.Install(crabbox.InstallRequest{ManifestPath: mp, TargetHome: fresh, CLIVersion: testCLI, Log: &log})
				if err != nil || rc.Status != crabbox.StatusExistingVerified {
					t.Fatalf("re-install: %v %s", err, log.String())
				}
				return
			}
			if errs.CodeOf(err) != "integrity_verification_failed" || !strings.Contains(err.Error(), want) {
				t.Fatalf("err = %v, want %q", err, want)
			}
			if _, err := os.Lstat(fresh); err == nil {
				t.Fatalf("the target home was created")
			}
			// A home with a cache folder and another runtime in it.
			used := filepath.Join(dir, "used")
			other := filepath.Join(used, crabbox.RuntimesDir, "other")
			if err := os.MkdirAll(other, 0o755); err != nil {
				t.Fatal(err)
			}
			before := treeList(t, used)
			if _, err := crabbox.Install(crabbox.InstallRequest{ManifestPath: mp, TargetHome: used, CLIVersion: testCLI}); err == nil {
				t.Fatal("accepted")
			}
			if after := treeList(t, used); after != before {
				t.Fatalf("target changed:\n%s\nwas:\n%s", after, before)
			}
		})
	}
}

func treeList(t *testing.T, root string) string {
	t.Helper()
	var b strings.Builder
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		fi, _ := d.Info()
		fmt.Fprintf(&b, "%s %v %v\n", p, fi.Mode(), fi.ModTime().UnixNano())
		return nil
	})
	return b.String()
}
