package crabbox_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/clawkit/clawkit/pkg/crabbox"
	"github.com/clawkit/clawkit/pkg/crabbox/crabboxtest"
)

// FuzzCacheFiles feeds arbitrary bytes as the install record and as the
// install index of a real install (a retained cache is untrusted input to
// verify) and runs verify --deep. Properties: never panic, never report
// success for bytes other than the genuine file unless they decode to the
// same record (the index is pinned by its digest, so any change fails).
func FuzzCacheFiles(f *testing.F) {
	dir := f.TempDir()
	mp, err := crabboxtest.HandExport(filepath.Join(dir, "export"), crabboxtest.NodeBootstrap(crabboxtest.Version))
	if err != nil {
		f.Fatal(err)
	}
	home := filepath.Join(dir, "home")
	rc, err := crabbox.Install(crabbox.InstallRequest{ManifestPath: mp, TargetHome: home, CLIVersion: testCLI})
	if err != nil {
		f.Fatal(err)
	}
	recPath := filepath.Join(rc.RuntimeDir, crabbox.RecordName)
	idxPath := filepath.Join(rc.RuntimeDir, crabbox.IndexName)
	rec, _ := os.ReadFile(recPath)
	idx, _ := os.ReadFile(idxPath)
	f.Add(false, rec)
	f.Add(true, idx)
	f.Add(false, []byte(`{"schema":"clawkit.crabbox.runtime.v1"}`))
	f.Add(true, []byte(`{"schema":"clawkit.crabbox.index.v2","entries":[{"path":"../x","type":"file"}]}`))
	f.Fuzz(func(t *testing.T, index bool, data []byte) {
		target, genuine := recPath, rec
		if index {
			target, genuine = idxPath, idx
		}
		if err := os.WriteFile(target, data, 0o644); err != nil {
			t.Fatal(err)
		}
		defer os.WriteFile(target, genuine, 0o644)
		res, err := crabbox.Verify(crabbox.VerifyRequest{ManifestPath: mp, TargetHome: home, CLIVersion: testCLI, Deep: true})
		if err != nil {
			t.Fatal(err)
		}
		if index && len(res.Problems) == 0 && string(data) != string(genuine) {
			t.Fatalf("a changed index verified")
		}
	})
}
