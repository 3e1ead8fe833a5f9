package artifacts

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/fsx"
)

const (
	// gzipBlock is pgzip's block size. It is fixed (not derived from the
	// machine) so that the compressed bytes are the same everywhere.
	gzipBlock = 1 << 20
	// gzipLevel is the deflate level of the node bootstrap (bootstrapLevel
	// lowers it by one for the kinds of file that gain least from it). No
	// pure-Go level compresses like zlib's 6, which pigz uses; level 7,
	// with copies stored as hard links and entries grouped by kind
	// (archiveOrder), brings the archives under pigz's size for about 1.7x
	// level 6's deflate CPU, within the export's time budget (see
	// docs/runtime-artifacts.md, Benchmarks).
	gzipLevel = 7
	// workerGzipLevel is the worker bundle's: level 6 saves 1.9 MB over 4
	// on 2026.9.6 (30.9 → 29.0 MB) for 25% more deflate CPU, the cheapest
	// megabytes of the export; level 7 would cost the worker-only export
	// its 0.2x bound against OpenClaw's own producer.
	workerGzipLevel = 6
)

// gzipBlocks is how many blocks compress at once: memory stays at about
// 2×gzipBlock per block whatever the installation's size, and at most 8
// blocks per archive so that many-core machines stay within the same bound.
func gzipBlocks() int { return min(8, max(2, runtime.GOMAXPROCS(0))) }

// ExportOptions are the inputs of Export.
type ExportOptions struct {
	PackageRoot string
	Output      string
	BuildID     string   // "" → dist/build-info.json's, else <version>-<bundle hash prefix>
	Plugins     []string // nil → every qualified bundled plugin the config leaves enabled
	// Config is an OpenClaw config (JSON5) read, never written, for plugin
	// enablement: disabled plugins are not exported; external plugin paths
	// in it are never loaded.
	Config   string
	Platform string // "" → this machine, in Node's names
	Arch     string
	Producer string // clawkit's version for the manifest
	Progress io.Writer

	// wrap, when set (tests), wraps each archive's file writer, e.g. to
	// inject a write failure mid-export.
	wrap func(name string, w io.Writer) io.Writer
	// afterArchives, when set (tests), runs after both archives settled and
	// before the output's identity is re-checked.
	afterArchives func()
}

// ExportResult describes a completed export.
type ExportResult struct {
	Output   string    `json:"output"`
	Manifest *Manifest `json:"manifest"`
	Files    int       `json:"files"`
}

// NodePlatform and NodeArch translate Go's names to Node's
// (process.platform / process.arch).
func NodePlatform(goos string) string {
	if goos == "windows" {
		return "win32"
	}
	return goos
}

// NodeArch translates GOARCH to Node's process.arch.
func NodeArch(goarch string) string {
	switch goarch {
	case "amd64":
		return "x64"
	case "386":
		return "ia32"
	}
	return goarch
}

// Export writes the node bootstrap, the worker bundle and, last, the
// manifest into a new folder opts.Output. On failure everything it created
// is removed and nothing else is touched.
func Export(ctx context.Context, opts ExportOptions) (*ExportResult, error) {
	in, err := OpenInstallation(opts.PackageRoot)
	if err != nil {
		return nil, err
	}
	if opts.Config != "" {
		if _, err := applyConfig(in.Plugins, opts.Config); err != nil {
			return nil, err
		}
	}
	plugins, err := selectPlugins(in, opts.Plugins)
	if err != nil {
		return nil, err
	}
	if opts.BuildID != "" && !ValidBuildID(opts.BuildID) {
		return nil, errs.Usage(CodeInvalidBuildId, "build id %q is not 1-128 characters of [A-Za-z0-9._:+-]", opts.BuildID).
			WithHint("pass a simple identifier, e.g. --build-id 2026.9.6-ci-42")
	}
	platform, arch := opts.Platform, opts.Arch
	if platform == "" {
		platform = NodePlatform(runtime.GOOS)
	}
	if arch == "" {
		arch = NodeArch(runtime.GOARCH)
	}
	if !nodeNameRe().MatchString(platform) || !nodeNameRe().MatchString(arch) {
		return nil, errs.Usage(CodeInvalidPlatform, "platform %q / arch %q are not Node names", platform, arch).
			WithHint("use Node's names, e.g. --platform linux --arch x64")
	}
	pkgs, err := resolveClosure(in, plugins)
	if err != nil {
		return nil, err
	}
	out, err := prepareOutput(opts.Output, pkgs)
	if err != nil {
		return nil, err
	}
	defer out.root.Close()

	var workerSize int64
	for _, a := range in.Inventory.Files {
		if st, err := os.Lstat(filepath.Join(in.Root, "dist", "worker", a)); err == nil {
			workerSize += st.Size()
		}
	}
	prog := newProgress(opts.Progress, len(in.Inventory.Files), workerSize)
	defer prog.stop()

	// Both producers run at once; the first failure cancels the other, and
	// cleanup waits until both have settled (returned and closed their
	// files), so nothing writes into a folder being removed. The worker
	// bundle needs no plan, so it starts first and compresses while the
	// bootstrap's files are listed (a third of a second on one core for
	// OpenClaw 2026.9.6's 40,000 files, when the other core would idle).
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg               sync.WaitGroup
		nodeArc          Archive
		worker           WorkerBundle
		nodeErr, workErr error
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		worker, workErr = writeWorkerBundle(ctx, out.root, in.Root, in.Inventory, prog, opts.wrap)
		if workErr != nil {
			cancel()
		}
	}()
	files, totalBytes, err := planFiles(installBase(in.Root), pkgs)
	if err != nil {
		cancel()
		wg.Wait()
		return nil, out.fail(err)
	}
	prog.grow(len(files), totalBytes)
	wg.Add(1)
	go func() {
		defer wg.Done()
		nodeArc, nodeErr = writeNodeBootstrap(ctx, out.root, files, prog, opts.wrap)
		if nodeErr != nil {
			cancel()
		}
	}()
	wg.Wait()
	if opts.afterArchives != nil {
		opts.afterArchives()
	}
	if err := firstReal(nodeErr, workErr); err != nil {
		return nil, out.fail(writeFailed("the export", err))
	}

	buildID := opts.BuildID
	if buildID == "" {
		buildID = in.BuildID
	}
	if buildID == "" {
		buildID = in.Package.Version + "-" + worker.BundleHash[:12]
	}
	ids := make([]string, 0, len(plugins))
	for _, p := range plugins {
		ids = append(ids, p.ID)
	}
	producer := opts.Producer
	if producer == "" {
		producer = "dev"
	}
	m := &Manifest{
		Schema: Schema, BuildID: buildID,
		Package:  PackageInfo{Name: in.Package.Name, Version: in.Package.Version},
		Plugins:  ids,
		Platform: platform, Arch: arch,
		Producer:      Producer{Name: ProducerName, Version: producer},
		NodeBootstrap: NodeBootstrap{Archive: nodeArc, PackagePath: PackagePath},
		WorkerBundle:  worker,
	}
	if err := m.Validate(); err != nil {
		return nil, out.fail(fmt.Errorf("internal error: the manifest does not validate: %w", err))
	}
	raw, err := m.Marshal()
	if err != nil {
		return nil, out.fail(err)
	}
	if err := out.checkIdentity(); err != nil {
		return nil, out.fail(err)
	}
	// The manifest is written last and atomically: an output folder without
	// it is not an export.
	if err := fsx.PublishStreamIn(out.root, ManifestName, 0o644, func(w io.Writer) error {
		_, err := w.Write(raw)
		return err
	}); err != nil {
		return nil, out.fail(writeFailed(ManifestName, err))
	}
	if err := fsx.SyncDir(out.staging); err != nil {
		return nil, out.fail(writeFailed(ManifestName, err))
	}
	if err := out.publish(); err != nil {
		return nil, out.fail(err)
	}
	// Make the rename durable too; the export is complete either way, so a
	// failure here is not reported.
	_ = fsx.SyncDir(filepath.Dir(out.path))
	prog.done()
	return &ExportResult{Output: out.path, Manifest: m, Files: len(files) + len(in.Inventory.Files)}, nil
}

// firstReal prefers a producer's own failure over the cancellation it
// caused in the other one.
func firstReal(a, b error) error {
	for _, e := range []error{a, b} {
		if e != nil && !errors.Is(e, context.Canceled) {
			return e
		}
	}
	if a != nil {
		return a
	}
	return b
}

func selectPlugins(in *Installation, ids []string) ([]Plugin, error) {
	if len(ids) == 0 {
		var out []Plugin
		for _, p := range in.Plugins {
			if p.Qualified && p.Enabled {
				out = append(out, p)
			}
		}
		return out, nil
	}
	byID := map[string]Plugin{}
	for _, p := range in.Plugins {
		byID[p.ID] = p
	}
	seen := map[string]bool{}
	var out []Plugin
	for _, id := range ids {
		p, ok := byID[id]
		if !ok {
			return nil, errs.Usage(CodePluginUnknown, "plugin %q is not bundled in this installation", id).
				WithHint("run 'clawkit runtime-artifacts qualify --package-root DIR' to list the bundled plugins")
		}
		if !p.Enabled {
			return nil, errs.Refused(CodePluginDisabled, "plugin %q is disabled in the config", id).
				WithHint("enable it in the config (plugins.entries.%s.enabled) or leave it out of --plugin", id)
		}
		if !p.Qualified {
			return nil, errs.Failed(CodePluginUnqualified, "plugin %q does not qualify: %s", id, p.Reason).
				WithHint("rebuild the plugin, or leave it out of --plugin")
		}
		if !seen[id] {
			seen[id] = true
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

func writeFailed(name string, err error) error {
	if e := errs.As(err); e != nil {
		return err
	}
	if errors.Is(err, context.Canceled) {
		return errs.Failed(errs.CodeInterrupted, "export interrupted; the partial output was removed").Wrap(err)
	}
	msg := unwrapPathErr(err)
	hint := "check free space and permissions of the output's file system; the partial output was removed"
	return errs.Failed(errs.CodeWriteFailed, "writing %s failed: %v", name, msg).WithHint("%s", hint).Wrap(err)
}

// archiveSink is a temporary archive file inside the output: it hashes and
// counts the compressed bytes as they are written, and is renamed to
// <dir>/<sha256>.tgz when complete.
type archiveSink struct {
	root  *os.Root
	dir   string
	f     *os.File
	tmp   string
	h     hash.Hash
	n     int64
	w     io.Writer
	limit int64
	// flushed is how far writeback was started (see Write).
	flushed int64
}

// writebackStep is how much archive is written before its writeback to
// disk is started: the final fsync then waits for the last step only,
// not for the whole archive (about 5% of a worker-bundle export's time).
const writebackStep = 8 << 20

func newArchiveSink(root *os.Root, dir string, wrap func(string, io.Writer) io.Writer) (*archiveSink, error) {
	if err := root.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, writeFailed(dir, err)
	}
	f, tmp, err := fsx.CreateTempInRoot(root, dir+"/archive.tgz", 0o644)
	if err != nil {
		return nil, writeFailed(dir, err)
	}
	s := &archiveSink{root: root, dir: dir, f: f, tmp: tmp, h: sha256.New(), limit: MaxArchiveBytes}
	var w io.Writer = f
	if wrap != nil {
		w = wrap(dir, w)
	}
	s.w = w
	return s, nil
}

func (s *archiveSink) Write(p []byte) (int, error) {
	if s.n+int64(len(p)) > s.limit {
		return 0, errs.Failed(errs.CodeTooLarge, "the %s archive would exceed %d bytes", s.dir, int64(MaxArchiveBytes)).
			WithHint("archive readers refuse larger archives; remove unneeded packages")
	}
	n, err := s.w.Write(p)
	s.h.Write(p[:n])
	s.n += int64(n)
	if s.n-s.flushed >= writebackStep {
		// Asynchronous (SYNC_FILE_RANGE_WRITE only starts it) and only an
		// optimisation: durability still comes from the fsync in publish,
		// so a file system without it is no error.
		_ = unix.SyncFileRange(int(s.f.Fd()), s.flushed, s.n-s.flushed, unix.SYNC_FILE_RANGE_WRITE)
		s.flushed = s.n
	}
	return n, err
}

// publish syncs the file and renames it to its content address.
func (s *archiveSink) publish() (Archive, error) {
	if err := s.f.Sync(); err != nil {
		return Archive{}, writeFailed(s.dir, err)
	}
	if err := s.f.Close(); err != nil {
		s.f = nil
		return Archive{}, writeFailed(s.dir, err)
	}
	s.f = nil
	sum := hex.EncodeToString(s.h.Sum(nil))
	name := s.dir + "/" + sum + ".tgz"
	if err := s.root.Rename(s.tmp, name); err != nil {
		return Archive{}, writeFailed(name, err)
	}
	s.tmp = ""
	if err := fsx.SyncDirInRoot(s.root, s.dir); err != nil {
		return Archive{}, writeFailed(s.dir, err)
	}
	return Archive{Path: name, Bytes: s.n, SHA256: sum}, nil
}

// abandon closes and removes an unpublished temporary file.
func (s *archiveSink) abandon() {
	if s.f != nil {
		s.f.Close()
		s.f = nil
	}
	if s.tmp != "" {
		s.root.Remove(s.tmp)
		s.tmp = ""
	}
}

// writeArchive runs body with a tar writer over gzip at level over sink and publishes
// the result.
func writeArchive(root *os.Root, dir string, level int, wrap func(string, io.Writer) io.Writer, body func(t *tarWriter) error) (Archive, error) {
	sink, err := newArchiveSink(root, dir, wrap)
	if err != nil {
		return Archive{}, err
	}
	defer sink.abandon()
	z, err := newGzip(sink, level)
	if err != nil {
		return Archive{}, err
	}
	t := newTarWriter(z)
	if err := body(t); err != nil {
		z.Close() // settle the compressor goroutines before the file goes
		return Archive{}, err
	}
	if err := t.Close(); err != nil {
		z.Close()
		return Archive{}, writeFailed(dir, err)
	}
	if err := z.Close(); err != nil {
		return Archive{}, writeFailed(dir, err)
	}
	// Never publish what every reader would refuse as a decompression bomb.
	if t.content > MaxRatio*sink.n {
		return Archive{}, errs.Failed(CodeExpansionRatio, "the %s archive would expand to %d bytes from %d, more than %d times its size, which archive readers refuse", dir, t.content, sink.n, MaxRatio).
			WithHint("the installation holds extremely repetitive files; remove them from the package")
	}
	return sink.publish()
}

// openSource opens a planned file without following links and checks it is
// a regular file.
func openSource(p string) (*os.File, os.FileInfo, error) {
	f, err := fsx.OpenNoFollow(p)
	if err != nil {
		if st, lerr := os.Lstat(p); lerr == nil && st.Mode()&fs.ModeSymlink != 0 {
			return nil, nil, errs.Failed(CodeSymlinkRefused, "%s became a symbolic link during the export", p).
				WithHint("make sure the installation does not change while it is exported")
		}
		return nil, nil, unreadable(p, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, unreadable(p, err)
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, nil, errs.Failed(CodeUnsupportedFile, "%s is not a regular file", p).
			WithHint("remove it from the installation; only regular files are exported")
	}
	return f, st, nil
}

func changedError(p string) error {
	return errs.Failed(CodeSourceChanged, "%s changed while it was being exported", p).
		WithHint("make sure nothing installs or builds into the package during the export, then export again")
}

// normMode normalises a file mode as npm does: 0755 when any execute bit is
// set, else 0644.
func normMode(m fs.FileMode) uint32 {
	if m&0o111 != 0 {
		return 0o755
	}
	return 0o644
}

// writeNodeBootstrap archives files in order. A file with the same
// content and mode as an earlier one (npm installs several copies of a
// package version under different parents, and packages vendor the same
// files) is written as a hard link to the earlier entry: extraction,
// `crabbox install` included, links it to that file, which holds the same
// bytes. Only files whose size another planned file shares can be copies;
// each is hashed while it is archived, and a later one of an already
// archived (size, mode) is hashed before its header is written (read
// twice when it turns out not to be a copy).
func writeNodeBootstrap(ctx context.Context, root *os.Root, files []plannedFile, prog *progress, wrap func(string, io.Writer) io.Writer) (Archive, error) {
	shared := make(map[int64]int)
	for _, pf := range files {
		if pf.Size > 0 {
			shared[pf.Size]++
		}
	}
	type sizeMode struct {
		size int64
		mode uint32
	}
	type content struct {
		sizeMode
		sum [32]byte
	}
	seen := make(map[sizeMode]bool)    // a recorded first file has this size and mode
	firsts := make(map[content]string) // content and mode → archive path of its first file
	h := sha256.New()
	var sum [32]byte
	return writeArchive(root, NodeBootstrapDir, gzipLevel, wrap, func(t *tarWriter) error {
		for _, pf := range files {
			if err := ctx.Err(); err != nil {
				return err
			}
			f, st, err := openSource(pf.Src)
			if err != nil {
				return err
			}
			size, mode := st.Size(), normMode(st.Mode())
			if z, ok := t.w.(*gzWriter); ok {
				z.SetLevel(bootstrapLevel(pf.Arch)) // a valid level
			}
			sm := sizeMode{size, mode}
			copyable := size > 0 && shared[size] > 1
			var pre *[32]byte
			if copyable && seen[sm] {
				var s [32]byte
				if err := hashExactly(f, size, h, s[:0]); err != nil {
					f.Close()
					if errors.Is(err, errFileChanged) {
						return changedError(pf.Src)
					}
					return unreadable(pf.Src, err)
				}
				if target, ok := firsts[content{sm, s}]; ok {
					f.Close()
					if err := t.WriteLink(pf.Arch, target, mode); err != nil {
						return writeFailed(NodeBootstrapDir, err)
					}
					prog.add(1, size)
					continue
				}
				if _, err := f.Seek(0, io.SeekStart); err != nil {
					f.Close()
					return unreadable(pf.Src, err)
				}
				pre = &s
			}
			var sink io.Writer
			if copyable {
				h.Reset()
				sink = h
			}
			err = t.WriteFile(pf.Arch, mode, size, f, sink)
			f.Close()
			if err == nil && copyable {
				h.Sum(sum[:0])
				if pre != nil && *pre != sum {
					err = errFileChanged
				}
			}
			if errors.Is(err, errFileChanged) {
				return changedError(pf.Src)
			}
			if err != nil {
				if errs.As(err) != nil {
					return err
				}
				return writeFailed(NodeBootstrapDir, err)
			}
			if copyable && len(pf.Arch) <= maxLinkName {
				seen[sm] = true
				firsts[content{sm, sum}] = pf.Arch
			}
			prog.add(1, st.Size())
		}
		return nil
	})
}

// bootstrapLevel is the deflate level of the blocks that a file of the
// node bootstrap completes. Files are in archiveOrder (by extension), so
// the level changes only where one kind of file gives way to the next.
// Level 7 costs about 1.7 times level 6's CPU; on source maps and
// TypeScript declarations it gains the least for it (on 2026.9.6: 0.03 MB
// for 0.26 s of CPU on .map, 0.14 MB for 0.44 s on .ts, against 0.54 MB
// for 0.78 s on .js), so they stay at 6. See docs/runtime-artifacts.md,
// Benchmarks.
func bootstrapLevel(arch string) int {
	switch path.Ext(arch) {
	case ".map", ".ts", ".mts", ".cts":
		return gzipLevel - 1
	}
	return gzipLevel
}

// hashExactly hashes the next size bytes of r into sum and checks that r
// ends there, reporting errFileChanged when it does not.
func hashExactly(r io.Reader, size int64, h hash.Hash, sum []byte) error {
	h.Reset()
	n, err := io.CopyN(h, r, size)
	if err == io.EOF || (err == nil && n < size) {
		return errFileChanged
	}
	if err != nil {
		return err
	}
	var one [1]byte
	if m, _ := r.Read(one[:]); m > 0 {
		return errFileChanged
	}
	h.Sum(sum)
	return nil
}

func writeWorkerBundle(ctx context.Context, root *os.Root, pkgRoot string, inv *Inventory, prog *progress, wrap func(string, io.Writer) io.Writer) (WorkerBundle, error) {
	var entries []WorkerEntry
	var hashEntries []BundleEntry
	arc, err := writeArchive(root, WorkerDir, workerGzipLevel, wrap, func(t *tarWriter) error {
		for _, name := range inv.Files {
			if err := ctx.Err(); err != nil {
				return err
			}
			src := filepath.Join(pkgRoot, "dist", "worker", name)
			f, st, err := openSource(src)
			if err != nil {
				return err
			}
			h := sha256.New()
			err = t.WriteFile(name, WorkerMode, st.Size(), f, h)
			f.Close()
			if errors.Is(err, errFileChanged) {
				return changedError(src)
			}
			if err != nil {
				if errs.As(err) != nil {
					return err
				}
				return writeFailed(WorkerDir, err)
			}
			sum := hex.EncodeToString(h.Sum(nil))
			entries = append(entries, WorkerEntry{Path: name, Mode: FormatMode(WorkerMode), Bytes: st.Size(), SHA256: sum})
			hashEntries = append(hashEntries, BundleEntry{Path: name, Mode: WorkerMode, Size: st.Size(), SHA256: sum})
			prog.add(1, st.Size())
		}
		return nil
	})
	if err != nil {
		return WorkerBundle{}, err
	}
	return WorkerBundle{Archive: arc, BundleHash: BundleHash(hashEntries), Entries: entries,
		Inventory: &InventoryRef{Source: inv.Source, Symbol: inv.Symbol}}, nil
}

// progress prints "files and bytes done" to a terminal, at most 5 times a
// second, from its own goroutine.
type progress struct {
	w          io.Writer
	files      atomic.Int64 // totals: grow adds the bootstrap's once planned
	bytes      atomic.Int64
	doneFiles  atomic.Int64
	doneBytes  atomic.Int64
	quit, gone chan struct{}
	once       sync.Once
}

func newProgress(w io.Writer, files int, bytes int64) *progress {
	p := &progress{w: w, quit: make(chan struct{}), gone: make(chan struct{})}
	p.grow(files, bytes)
	if w == nil {
		close(p.gone)
		return p
	}
	go func() {
		defer close(p.gone)
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-p.quit:
				return
			case <-t.C:
				p.print("\r")
			}
		}
	}()
	return p
}

// grow adds to the totals.
func (p *progress) grow(files int, bytes int64) {
	p.files.Add(int64(files))
	p.bytes.Add(bytes)
}

func (p *progress) add(files int, bytes int64) {
	p.doneFiles.Add(int64(files))
	p.doneBytes.Add(bytes)
}

func (p *progress) print(prefix string) {
	fmt.Fprintf(p.w, "%sclawkit: export: %d/%d files, %.1f/%.1f MiB", prefix, p.doneFiles.Load(), p.files.Load(),
		float64(p.doneBytes.Load())/(1<<20), float64(p.bytes.Load())/(1<<20))
}

func (p *progress) stop() {
	p.once.Do(func() { close(p.quit) })
	<-p.gone
}

// done prints the final line and a newline.
func (p *progress) done() {
	p.stop()
	if p.w != nil {
		p.print("\r")
		fmt.Fprintln(p.w)
	}
}
