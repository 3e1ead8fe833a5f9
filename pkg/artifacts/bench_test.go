package artifacts

import (
	"compress/gzip"
	"context"
	"fmt"
	"io"
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
		if err := os.RemoveAll(out); err != nil {
			b.Fatal(err)
		}
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
		if err := r.Close(); err != nil {
			b.Fatal(err)
		}
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(wb.Bytes)
	}
}

// BenchmarkDeflateLevels: the size and the one-core time of the real
// node bootstrap's tar stream (openclaw@2026.9.6, as the export orders it)
// through the archives' gzip writer at each level, one compressing
// goroutine so ns/op is deflate CPU. It is the frontier the export's
// levels are chosen on (docs/runtime-artifacts.md, Benchmarks): compare
// the "out-MB" of a level with pigz's for the same files.
func BenchmarkDeflateLevels(b *testing.B) {
	root := realRoot(b)
	out := filepath.Join(b.TempDir(), "out")
	res, err := Export(context.Background(), ExportOptions{PackageRoot: root, Output: out})
	if err != nil {
		b.Fatal(err)
	}
	f, err := os.Open(filepath.Join(out, res.Manifest.NodeBootstrap.Path))
	if err != nil {
		b.Fatal(err)
	}
	zr, err := gzip.NewReader(f)
	if err != nil {
		b.Fatal(err)
	}
	raw, err := io.ReadAll(zr)
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	if err != nil {
		b.Fatal(err)
	}
	if err := os.RemoveAll(out); err != nil {
		b.Fatal(err)
	}
	for _, level := range []int{5, 6, 7, 8, 9} {
		b.Run(fmt.Sprintf("level=%d", level), func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			var n countingWriter
			for i := 0; i < b.N; i++ {
				n = 0
				z, err := newGzWriter(&n, level, gzipBlock, 1)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := z.Write(raw); err != nil {
					b.Fatal(err)
				}
				if err := z.Close(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n)/1e6, "out-MB")
		})
	}
}

type countingWriter int64

func (c *countingWriter) Write(p []byte) (int, error) {
	*c += countingWriter(len(p))
	return len(p), nil
}
