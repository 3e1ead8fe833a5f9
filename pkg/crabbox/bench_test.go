package crabbox_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/clawkit/clawkit/pkg/crabbox"
	"github.com/clawkit/clawkit/pkg/crabbox/crabboxtest"
)

// benchManifest is the export to benchmark: $CRABBOX_BENCH_MANIFEST (e.g.
// the real openclaw export made by scripts/bench-crabbox.sh), else a small
// synthetic export.
func benchManifest(b *testing.B) string {
	if mp := os.Getenv("CRABBOX_BENCH_MANIFEST"); mp != "" {
		return mp
	}
	mp, err := crabboxtest.Export(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	return mp
}

func BenchmarkInstall(b *testing.B) {
	mp := benchManifest(b)
	in, err := crabbox.LoadInputs(mp, crabbox.Expect{})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(in.Manifest.NodeBootstrap.Bytes + in.Manifest.WorkerBundle.Bytes)
	dir := b.TempDir()
	for i := 0; b.Loop(); i++ {
		home := filepath.Join(dir, "h", string(rune('a'+i%26)), filepath.Base(b.TempDir()))
		if _, err := crabbox.Install(crabbox.InstallRequest{ManifestPath: mp, TargetHome: home, CLIVersion: testCLI}); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if err := os.RemoveAll(home); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}

func benchVerify(b *testing.B, deep bool) {
	mp := benchManifest(b)
	home := filepath.Join(b.TempDir(), "home")
	if _, err := crabbox.Install(crabbox.InstallRequest{ManifestPath: mp, TargetHome: home, CLIVersion: testCLI}); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		res, err := crabbox.Verify(crabbox.VerifyRequest{ManifestPath: mp, TargetHome: home, CLIVersion: testCLI, Deep: deep})
		if err != nil || len(res.Problems) > 0 {
			b.Fatal(err, res.Problems)
		}
	}
}

func BenchmarkVerify(b *testing.B)     { benchVerify(b, false) }
func BenchmarkVerifyDeep(b *testing.B) { benchVerify(b, true) }
