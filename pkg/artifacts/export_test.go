package artifacts

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clawkit/clawkit/pkg/artifacts/artifactstest"
	"github.com/clawkit/clawkit/pkg/errs"
)

// sampleCopy copies the repository's sample installation into a temp dir
// and returns its package root.
func sampleCopy(t testing.TB) string {
	t.Helper()
	dst := t.TempDir()
	if out, err := exec.Command("cp", "-r", "../../artifacts/sample", dst).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	return filepath.Join(dst, "sample", "node_modules", "openclaw")
}

// failAfter fails every write once n bytes went through.
type failAfter struct {
	w    io.Writer
	left *atomic.Int64
}

var errInjected = errors.New("injected: no space left on device")

func (f failAfter) Write(p []byte) (int, error) {
	if f.left.Add(-int64(len(p))) < 0 {
		return 0, errInjected
	}
	return f.w.Write(p)
}

// releaseRoots are installations shaped like more than one release: the
// sample (2026.9.6's inventory shape), the sample rewritten to 2026.8's
// shape, and the real 2026.9.6 and 2026.8.2 peers when installed.
func releaseRoots(t *testing.T) map[string]string {
	roots := map[string]string{"sample-2026.9.6-shape": sampleCopy(t)}
	old := sampleCopy(t)
	for name, b := range artifactstest.Modules(artifactstest.Inventory8, artifactstest.Local) {
		if err := os.WriteFile(filepath.Join(old, "dist", name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	roots["sample-2026.8-shape"] = old
	for _, peer := range []string{"openclaw", "openclaw-2026-8"} {
		root, _ := filepath.Abs(filepath.Join("..", "..", "peers", "node_modules", peer))
		if _, err := os.Stat(filepath.Join(root, "package.json")); err == nil {
			roots["peer-"+peer] = root
		}
	}
	return roots
}

// noOutput fails when anything of the export is left: the output path or a
// staging folder beside it.
func noOutput(t *testing.T, out string) {
	t.Helper()
	if _, err := os.Lstat(out); !os.IsNotExist(err) {
		t.Fatalf("output left behind: %v", err)
	}
	if m, _ := filepath.Glob(filepath.Join(filepath.Dir(out), ".*.export-staging-*")); len(m) != 0 {
		t.Fatalf("staging left behind: %v", m)
	}
}

func TestExportInjectedWriteFailureRemovesOutput(t *testing.T) {
	for rel, pkg := range releaseRoots(t) {
		t.Run(rel, func(t *testing.T) { injectedWriteFailure(t, pkg) })
	}
}

func injectedWriteFailure(t *testing.T, pkg string) {
	for _, which := range []string{NodeBootstrapDir, WorkerDir} {
		t.Run(which, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			var left atomic.Int64
			left.Store(100)
			_, err := Export(context.Background(), ExportOptions{PackageRoot: pkg, Output: out,
				wrap: func(name string, w io.Writer) io.Writer {
					if name == which {
						return failAfter{w, &left}
					}
					return w
				}})
			if !errors.Is(err, errInjected) || errs.CodeOf(err) != "write_failed" {
				t.Fatalf("err = %v (code %s)", err, errs.CodeOf(err))
			}
			noOutput(t, out)
		})
	}
}

// The other producer must have settled (its files closed and removed)
// before cleanup: a slow worker writer still running when the node
// bootstrap fails must not leave files behind or write into a removed dir.
func TestExportBothProducersSettleBeforeCleanup(t *testing.T) {
	for rel, pkg := range releaseRoots(t) {
		t.Run(rel, func(t *testing.T) { bothSettle(t, pkg) })
	}
}

func bothSettle(t *testing.T, pkg string) {
	out := filepath.Join(t.TempDir(), "out")
	release := make(chan struct{})
	var workerWrites atomic.Int64
	_, err := Export(context.Background(), ExportOptions{PackageRoot: pkg, Output: out,
		wrap: func(name string, w io.Writer) io.Writer {
			if name == NodeBootstrapDir {
				var once sync.Once
				return writerFunc(func(p []byte) (int, error) { once.Do(func() { close(release) }); return 0, errInjected })
			}
			return writerFunc(func(p []byte) (int, error) {
				<-release // worker writes only after the node bootstrap failed
				workerWrites.Add(1)
				return w.Write(p)
			})
		}})
	if !errors.Is(err, errInjected) {
		t.Fatalf("err = %v", err)
	}
	if workerWrites.Load() == 0 {
		t.Fatal("the worker producer never ran concurrently")
	}
	noOutput(t, out)
}

var time0 = time.Unix(0, 0)

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

func TestExportDetectsReplacedOutput(t *testing.T) {
	pkg := sampleCopy(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	moved := filepath.Join(dir, "moved")
	var staging string
	_, err := Export(context.Background(), ExportOptions{PackageRoot: pkg, Output: out,
		afterArchives: func() {
			// Someone moves our staging folder away and puts their own in
			// its place.
			m, _ := filepath.Glob(filepath.Join(dir, ".out.export-staging-*"))
			if len(m) != 1 {
				t.Fatalf("staging folders: %v", m)
			}
			staging = m[0]
			if err := os.Rename(staging, moved); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(staging, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(staging, "theirs"), []byte("keep"), 0o644); err != nil {
				t.Fatal(err)
			}
		}})
	if errs.CodeOf(err) != "output_replaced" {
		t.Fatalf("err = %v", err)
	}
	// Their folder is untouched; nothing at the output path; our moved
	// folder was emptied through its descriptor.
	if b, err := os.ReadFile(filepath.Join(staging, "theirs")); err != nil || string(b) != "keep" {
		t.Fatalf("foreign folder touched: %v", err)
	}
	if _, err := os.Lstat(out); err == nil {
		t.Fatal("output published")
	}
	if ents, _ := os.ReadDir(moved); len(ents) != 0 {
		t.Fatalf("owned files left in the moved folder: %v", ents)
	}
}

// The output path created by someone else while the export runs: the
// publishing rename never replaces it; the export is refused and its
// staging folder removed.
func TestExportNeverPublishesOverAnOutputCreatedMeanwhile(t *testing.T) {
	pkg := sampleCopy(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	_, err := Export(context.Background(), ExportOptions{PackageRoot: pkg, Output: out,
		afterArchives: func() {
			if err := os.Mkdir(out, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(out, "theirs"), []byte("keep"), 0o644); err != nil {
				t.Fatal(err)
			}
		}})
	if errs.CodeOf(err) != "output_exists" || errs.KindOf(err) != errs.KindRefused {
		t.Fatalf("err = %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(out, "theirs")); err != nil || string(b) != "keep" {
		t.Fatalf("their folder touched: %v", err)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, ".out.export-staging-*")); len(m) != 0 {
		t.Fatalf("staging left behind: %v", m)
	}
}

// A staging folder whose run is gone (no lock held) is removed by the next
// export of the same output; one whose run is alive (lock held) is kept.
func TestExportRemovesOnlyStaleStaging(t *testing.T) {
	pkg := sampleCopy(t)
	dir := t.TempDir()
	stale := filepath.Join(dir, ".out.export-staging-dead")
	if err := os.MkdirAll(filepath.Join(stale, "node-bootstrap"), 0o700); err != nil {
		t.Fatal(err)
	}
	live, lock, err := createStaging(dir, "out")
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := lock.Close(); err != nil {
			t.Error(err)
		}
	}()
	if _, err := Export(context.Background(), ExportOptions{PackageRoot: pkg, Output: filepath.Join(dir, "out")}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(stale); err == nil {
		t.Fatal("stale staging kept")
	}
	if _, err := os.Lstat(live); err != nil {
		t.Fatalf("live staging removed: %v", err)
	}
}

func TestExportDetectsGrowingSource(t *testing.T) {
	pkg := sampleCopy(t)
	out := filepath.Join(t.TempDir(), "out")
	// The first file of the node bootstrap in archive order (extension,
	// base name, path: see archiveOrder).
	first := filepath.Join(pkg, "dist", "entry.js")
	var once atomic.Bool
	_, err := Export(context.Background(), ExportOptions{PackageRoot: pkg, Output: out,
		wrap: func(name string, w io.Writer) io.Writer {
			if name != NodeBootstrapDir {
				return w
			}
			return writerFunc(func(p []byte) (int, error) {
				// The first bytes reach the sink when the first header is
				// written: after the file's fstat, before its content is
				// read. Growing it now must be caught.
				if once.CompareAndSwap(false, true) {
					f, err := os.OpenFile(first, os.O_APPEND|os.O_WRONLY, 0)
					if err != nil {
						t.Error(err)
					} else {
						if _, err := f.WriteString("// grown\n"); err != nil {
							t.Fatal(err)
						}
						if err := f.Close(); err != nil {
							t.Fatal(err)
						}
					}
				}
				return w.Write(p)
			})
		}})
	if errs.CodeOf(err) != "source_changed" || !strings.Contains(err.Error(), "openclaw/dist/entry.js changed while it was being exported") {
		t.Fatalf("err = %v", err)
	}
	if _, err := os.Lstat(out); !os.IsNotExist(err) {
		t.Fatalf("output left behind")
	}
}

func TestTarWriterRejectsChangedReader(t *testing.T) {
	var b bytes.Buffer
	tw := newTarWriter(&b)
	if err := tw.WriteFile("a", 0o644, 10, strings.NewReader("short"), nil); !errors.Is(err, errFileChanged) {
		t.Fatalf("shrunk: %v", err)
	}
	b.Reset()
	if err := tw.WriteFile("a", 0o644, 3, strings.NewReader("longer"), nil); !errors.Is(err, errFileChanged) {
		t.Fatalf("grown: %v", err)
	}
}

func TestExportCancelled(t *testing.T) {
	pkg := sampleCopy(t)
	out := filepath.Join(t.TempDir(), "out")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Export(ctx, ExportOptions{PackageRoot: pkg, Output: out})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	if _, err := os.Lstat(out); !os.IsNotExist(err) {
		t.Fatalf("output left behind")
	}
}

// The tar writer's output is read back by the standard library exactly,
// including long names (ustar prefix split) and names no split can hold
// (PAX path record).
func TestTarWriterLongNames(t *testing.T) {
	names := []string{
		"short.txt",
		strings.Repeat("d", 60) + "/" + strings.Repeat("e", 60) + "/file.js",
		strings.Repeat("x", 150) + "/" + strings.Repeat("y", 99),
		strings.Repeat("z", 300),
		strings.Repeat("p/", 400) + "deep.js",
	}
	var b bytes.Buffer
	tw := newTarWriter(&b)
	for i, n := range names {
		data := strings.Repeat("c", i*300)
		if err := tw.WriteFile(n, 0o644, int64(len(data)), strings.NewReader(data), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(&b)
	for i, want := range names {
		h, err := tr.Next()
		if err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
		body, _ := io.ReadAll(tr)
		if h.Name != want || h.Size != int64(i*300) || len(body) != i*300 || h.Mode != 0o644 || h.Uid != 0 || !h.ModTime.Equal(time0) {
			t.Fatalf("entry %d: got %q size %d mode %o", i, h.Name, h.Size, h.Mode)
		}
	}
	if _, err := tr.Next(); err != io.EOF {
		t.Fatalf("trailing entries: %v", err)
	}
}

func TestOctalField(t *testing.T) {
	f := make([]byte, 12)
	octalField(f, 0o1162570)
	if string(f) != "0001162570 \x00" {
		t.Fatalf("%q", f)
	}
	octalField(f, 1<<31) // wider than 10 digits: classic 11 digits + NUL
	if string(f) != "20000000000\x00" {
		t.Fatalf("%q", f)
	}
}

func TestGzipHeaderIsExplicit(t *testing.T) {
	var b bytes.Buffer
	z, err := newGzip(&b, gzipLevel)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := z.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	if got := b.Bytes()[:10]; !bytes.Equal(got, []byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff}) {
		t.Fatalf("gzip header % x", got)
	}
	zr, err := gzip.NewReader(&b)
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := io.ReadAll(zr); string(s) != "hello" {
		t.Fatalf("%q", s)
	}
}

// FuzzTarWriterRoundTrip: any name the exporter could plan (relative, at
// most 1,024 bytes) is written so that the standard reader gets it back
// exactly, with its size, mode and content.
func FuzzTarWriterRoundTrip(f *testing.F) {
	f.Add("a/b.js", []byte("x"), uint16(0o644))
	f.Add(strings.Repeat("n", 101), []byte{}, uint16(0o755))
	f.Add(strings.Repeat("d/", 80)+"f", []byte("hello"), uint16(0o700))
	f.Fuzz(func(t *testing.T, name string, data []byte, mode uint16) {
		if name == "" || len(name) > MaxPathBytes || strings.ContainsAny(name, "\x00") || !utf8Valid(name) {
			return
		}
		var b bytes.Buffer
		tw := newTarWriter(&b)
		m := uint32(mode) & 0o777
		if err := tw.WriteFile(name, m, int64(len(data)), bytes.NewReader(data), nil); err != nil {
			t.Fatal(err)
		}
		if err := tw.Close(); err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(&b)
		h, err := tr.Next()
		if err != nil {
			t.Fatalf("%q: %v", name, err)
		}
		body, _ := io.ReadAll(tr)
		if h.Name != name || h.Size != int64(len(data)) || !bytes.Equal(body, data) || uint32(h.Mode) != m {
			t.Fatalf("round trip of %q: got %q size %d mode %o", name, h.Name, h.Size, h.Mode)
		}
	})
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }

// Root reads every file, so the permission path cannot be provoked in CI
// (artifacts_unreadable.txtar covers it for other users); check its
// classification directly.
func TestUnreadableClassification(t *testing.T) {
	err := unreadable("/x/dist/a.js", &os.PathError{Op: "open", Path: "/x/dist/a.js", Err: os.ErrPermission})
	if errs.CodeOf(err) != "unreadable" || errs.KindOf(err) != errs.KindFailed || !strings.Contains(err.Error(), "cannot read /x/dist/a.js: permission denied") {
		t.Fatalf("%v", err)
	}
	if e := errs.As(err); e == nil || !strings.Contains(e.Hint, "read access") {
		t.Fatalf("hint missing: %v", err)
	}
}

// A symlinked dependency folder (npm link, pnpm) is refused like any link.
func TestSymlinkedDependencyRefused(t *testing.T) {
	pkg := sampleCopy(t)
	dep := filepath.Join(pkg, "..", "tiny-json")
	moved := filepath.Join(t.TempDir(), "tiny-json")
	if out, err := exec.Command("mv", dep, moved).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	if err := os.Symlink(moved, dep); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out")
	_, err := Export(context.Background(), ExportOptions{PackageRoot: pkg, Output: out})
	if errs.CodeOf(err) != "symlink_refused" || !strings.Contains(err.Error(), "pointing outside the installation") {
		t.Fatalf("err = %v", err)
	}
	if _, err := os.Lstat(out); !os.IsNotExist(err) {
		t.Fatal("output created")
	}
}

// A package of extremely repetitive bytes would give an archive that every
// reader refuses (expansion ratio over 64): export refuses it first.
func TestExportRefusesBombLikeContent(t *testing.T) {
	pkg := sampleCopy(t)
	zeros := make([]byte, 8<<20)
	if err := os.WriteFile(filepath.Join(pkg, "dist", "zeros.bin"), zeros, 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out")
	_, err := Export(context.Background(), ExportOptions{PackageRoot: pkg, Output: out})
	if errs.CodeOf(err) != "expansion_ratio" {
		t.Fatalf("err = %v", err)
	}
	if _, err := os.Lstat(out); !os.IsNotExist(err) {
		t.Fatal("output left behind")
	}
}
