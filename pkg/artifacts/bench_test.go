package artifacts

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// realRoot is the real OpenClaw installation of the peers folder.
func realRoot(tb testing.TB) string {
	root, _ := filepath.Abs("../../peers/node_modules/openclaw")
	if _, err := os.Stat(filepath.Join(root, "package.json")); err != nil {
		tb.Skip("peers not installed: run make peers")
	}
	return root
}

func benchExport(b *testing.B, root string) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		out := filepath.Join(b.TempDir(), "out")
		res, err := Export(context.Background(), ExportOptions{PackageRoot: root, Output: out})
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(res.Manifest.NodeBootstrap.Bytes + res.Manifest.WorkerBundle.Bytes)
		os.RemoveAll(out)
	}
}

// BenchmarkExportSample: the whole export pipeline on the tiny sample
// (fixed costs: planning, two archives, fsyncs, manifest).
func BenchmarkExportSample(b *testing.B) { benchExport(b, sampleCopy(b)) }

// BenchmarkExportReal: the full export of openclaw@2026.9.6 (about 40,000
// files); SetBytes reports compressed output throughput.
func BenchmarkExportReal(b *testing.B) { benchExport(b, realRoot(b)) }

// BenchmarkWorkerBundle: only the worker bundle of the real installation
// (7 files, about 101 MiB).
func BenchmarkWorkerBundle(b *testing.B) {
	root := realRoot(b)
	inv, err := ReadInventory(root, "peer")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		dir := b.TempDir()
		r, err := os.OpenRoot(dir)
		if err != nil {
			b.Fatal(err)
		}
		wb, err := writeWorkerBundle(context.Background(), r, root, inv, newProgress(nil, 0, 0), nil)
		r.Close()
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(wb.Bytes)
	}
}
