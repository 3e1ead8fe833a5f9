package crabbox

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/rogpeppe/go-internal/lockedfile"
	"golang.org/x/sys/unix"

	"github.com/clawkit/clawkit/pkg/archive"
	"github.com/clawkit/clawkit/pkg/artifacts"
	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/fsx"
)

// InstallRequest is what `clawkit crabbox install` asks for.
type InstallRequest struct {
	ManifestPath string
	TargetHome   string
	Expect       Expect
	CLIVersion   string
	// NoSync skips flushing the staged tree to disk before the rename. A
	// killed process still never leaves a half-install at the final path
	// (the rename is atomic and the page cache survives the process); only
	// an operating-system crash or power loss right after the install
	// could then expose files whose data never reached the disk.
	NoSync bool
	// Log receives human diagnostics (stderr); Progress, when not nil,
	// receives progress lines.
	Log      io.Writer
	Progress io.Writer
	Now      func() time.Time
	// SkipPlatformCheck installs an export made for another platform or
	// architecture (tests only: such a runtime cannot run here).
	SkipPlatformCheck bool
	// Ctx, when done (SIGINT/SIGTERM), stops the install: the staging
	// folder is removed and nothing is renamed into place.
	Ctx context.Context
}

// testHookEntry, when set (tests only), runs after each extracted entry.
var testHookEntry func(n int)

// Install checks the archives, then installs (or keeps a verified identical
// install) and returns the receipt. See the package comment for the layout.
//
// Order of effects: nothing on the target is touched until the manifest,
// the pins, both archives' sizes and SHA-256 digests, and the worker
// bundle's entries and bundle hash have all been checked. Then the runtime
// cache folder is created, the per-runtime lock taken, stale staging
// folders removed, and the install staged in a temporary sibling and
// renamed into place. The node archive is extracted from the descriptor
// that was hashed, and its identity (inode, size, mtime, ctime) must be
// unchanged afterwards, so an archive rewritten between the check and the
// extraction is caught before the rename. The worker bundle's entries are
// re-hashed against the bundle hash during the extraction and before the
// worker archive is placed.
func Install(req InstallRequest) (*Receipt, error) {
	logw := req.Log
	if logw == nil {
		logw = io.Discard
	}
	progress := func(format string, args ...any) {
		if req.Progress != nil {
			fmt.Fprintf(req.Progress, "clawkit: crabbox: "+format+"\n", args...)
		}
	}
	now := req.Now
	if now == nil {
		now = time.Now
	}
	ctx := req.Ctx
	if ctx == nil {
		ctx = context.Background()
	}
	in, err := LoadInputs(req.ManifestPath, req.Expect)
	if err != nil {
		return nil, err
	}
	m := in.Manifest
	if err := CheckPlatform(m, req.SkipPlatformCheck); err != nil {
		return nil, err
	}
	if req.TargetHome == "" {
		return nil, errs.Usage("target_home_missing", "no target home: HOME is not set").WithHint("pass --target-home DIR")
	}
	l, err := LayoutFor(req.TargetHome, m)
	if err != nil {
		return nil, err
	}

	// 1. Check both archives' sizes and digests before touching the
	// target, the two in parallel.
	progress("checking %s (%d bytes) and %s (%d bytes)", m.NodeBootstrap.Path, m.NodeBootstrap.Bytes, m.WorkerBundle.Path, m.WorkerBundle.Bytes)
	var (
		worker    []byte
		workerErr error
		wg        sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		worker, workerErr = readWorker(in.WorkerArchive, m)
	}()
	node, nodeID, err := openChecked(ctx, in.NodeArchive, "node bootstrap", m.NodeBootstrap.Archive)
	wg.Wait()
	if ctx.Err() != nil {
		if node != nil {
			node.Close()
		}
		return nil, artifacts.Interrupted("install")
	}
	if err != nil {
		return nil, err
	}
	defer node.Close()
	if workerErr != nil {
		return nil, workerErr
	}
	// The worker bundle's entries are re-hashed against the bundle hash
	// while the node bootstrap extracts; the worker archive is placed only
	// after that check passed.
	bc := &bundleCheck{done: make(chan struct{})}
	go func() {
		bc.err = checkBundle(worker, m)
		close(bc.done)
	}()
	defer bc.wait() // never leave the goroutine behind

	// 2. The target: cache folder, lock, stale staging.
	if err := os.MkdirAll(l.RuntimesDir, 0o755); err != nil {
		return nil, installErr("cannot create %s: %v", l.RuntimesDir, err)
	}
	// MkdirAll succeeds on an existing non-folder in a race; check. (A
	// symlink to a folder is accepted: users move caches to other disks.)
	if st, err := os.Stat(l.RuntimesDir); err != nil || !st.IsDir() {
		return nil, errs.Failed("target_not_folder", "%s is not a folder", l.RuntimesDir).
			WithHint("remove the file in the way or choose another --target-home")
	}
	unlock, err := lockedfile.MutexAt(filepath.Join(l.RuntimesDir, "."+m.NodeBootstrap.SHA256+".lock")).Lock()
	if err != nil {
		return nil, installErr("cannot lock the runtime cache: %v", err)
	}
	defer unlock()
	removeStaleStaging(l, logw)

	// 3. An install already present: keep it when it verifies.
	replace := false
	if _, err := os.Lstat(l.RuntimeDir); err == nil {
		// Deep: "verified and kept" must mean every file is right, not
		// only the record and the worker archive.
		probs := verifyInstalled(in, l, req.CLIVersion, true)
		if len(probs) == 0 {
			if err := bc.wait(); err != nil {
				return nil, err
			}
			return NewReceipt(StatusExistingVerified, in, l, req.CLIVersion), nil
		}
		for _, p := range probs {
			fmt.Fprintf(logw, "clawkit: crabbox: existing install: %s\n", p)
		}
		fmt.Fprintf(logw, "clawkit: crabbox: replacing the existing install at %s\n", l.RuntimeDir)
		replace = true
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, installErr("cannot inspect %s: %v", l.RuntimeDir, err)
	}

	// 4. Stage.
	staging, err := os.MkdirTemp(l.RuntimesDir, "."+m.NodeBootstrap.SHA256+".staging-")
	if err != nil {
		return nil, installErr("cannot create a staging folder in %s: %v", l.RuntimesDir, err)
	}
	committed := false
	defer func() {
		if !committed {
			os.RemoveAll(staging)
		}
	}()
	progress("extracting into %s", staging)
	if err := stage(ctx, staging, node, nodeID, bc, in, l, worker, req.CLIVersion, now()); err != nil {
		if ctx.Err() != nil {
			return nil, artifacts.Interrupted("install")
		}
		return nil, err
	}

	// 5. Publish: durable, then renamed into place (unless interrupted).
	if !req.NoSync {
		if err := syncTree(staging); err != nil {
			return nil, installErr("cannot flush the staged install to disk: %v", err)
		}
	}
	if ctx.Err() != nil {
		return nil, artifacts.Interrupted("install")
	}
	if replace {
		// Swap atomically so the final path always holds a whole install.
		if err := unix.Renameat2(unix.AT_FDCWD, staging, unix.AT_FDCWD, l.RuntimeDir, unix.RENAME_EXCHANGE); err != nil {
			return nil, installErr("cannot replace %s: %v", l.RuntimeDir, err)
		}
		committed = true
		// staging now holds the old install.
		if err := os.RemoveAll(staging); err != nil {
			fmt.Fprintf(logw, "clawkit: crabbox: could not remove the replaced install %s: %v\n", staging, err)
		}
	} else {
		if err := os.Rename(staging, l.RuntimeDir); err != nil {
			return nil, installErr("cannot rename the staged install into %s: %v", l.RuntimeDir, err)
		}
		committed = true
	}
	if err := fsx.SyncDir(l.RuntimesDir); err != nil {
		return nil, errs.Unknown("install_unsynced", "installed %s but could not sync its folder: %v", l.RuntimeDir, err).
			WithHint("run 'clawkit crabbox verify' before relying on it")
	}
	return NewReceipt(StatusInstalled, in, l, req.CLIVersion), nil
}

func installErr(format string, args ...any) *errs.Error {
	return errs.Failed("install_failed", format, args...).
		WithHint("nothing was installed at the final path; fix the cause and run the same command again")
}

// bundleCheck is the result of checkBundle running in the background.
type bundleCheck struct {
	done chan struct{}
	err  error
}

func (b *bundleCheck) wait() error {
	<-b.done
	return b.err
}

// fileID pins an open file's content: any write to it changes its size,
// mtime or ctime (ctime cannot be set by user space).
type fileID struct {
	ino, size             int64
	mtimeNs, ctimeNs, dev int64
}

func idOf(f *os.File) (fileID, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return fileID{}, err
	}
	return fileID{ino: int64(st.Ino), size: st.Size, mtimeNs: st.Mtim.Nano(), ctimeNs: st.Ctim.Nano(), dev: int64(st.Dev)}, nil
}

// openChecked opens an archive, checks its size and SHA-256, and returns it
// positioned at the start with its identity: the caller extracts from the
// same descriptor and compares the identity afterwards instead of hashing
// a second time.
func openChecked(ctx context.Context, path, which string, want artifacts.Archive) (*os.File, fileID, error) {
	f, err := fsx.OpenNoFollow(path)
	if err != nil {
		return nil, fileID{}, missingArchive(which, path, err)
	}
	fail := func(e error) (*os.File, fileID, error) {
		f.Close()
		return nil, fileID{}, e
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return fail(missingArchive(which, path, fmt.Errorf("not a regular file")))
	}
	if st.Size() != want.Bytes {
		return fail(integrityErr("%s archive %s is %d bytes, the manifest records %d", which, path, st.Size(), want.Bytes))
	}
	id, err := idOf(f)
	if err != nil {
		return fail(missingArchive(which, path, err))
	}
	// While the bytes are hashed, the same stream is walked (headers only,
	// nothing extracted) on another goroutine: every limit and path rule is
	// enforced before the target is touched, so an archive over the entry
	// or size limits is refused in the time it takes to read it, never
	// after extracting most of it. The digest is still judged first.
	h := newSHA()
	pr, pw := io.Pipe()
	scanned := make(chan error, 1)
	go func() {
		_, err := archive.Walk(pr, archive.Options{Size: want.Bytes, SkipHash: true}, func(*archive.Entry, io.Reader) error { return nil })
		pr.CloseWithError(errScanDone)
		scanned <- err
	}()
	_, err = io.CopyBuffer(io.MultiWriter(h, &lenientWriter{w: pw}), archive.ContextReader(ctx, f), make([]byte, 1<<20))
	pw.Close()
	scanErr := <-scanned
	if err != nil {
		return fail(missingArchive(which, path, err))
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != want.SHA256 {
		return fail(integrityErr("%s archive %s has SHA-256 %s, the manifest records %s", which, path, got, want.SHA256))
	}
	if scanErr != nil {
		if e := errs.As(scanErr); e != nil && errors.Is(scanErr, archive.ErrUnsafe) {
			return fail(errs.Failed(e.Code, "%s %s refused: %s", which, path, e.Message).WithHint("%s", e.Hint).Wrap(scanErr))
		}
		return fail(missingArchive(which, path, scanErr))
	}
	if id2, err := idOf(f); err != nil || id2 != id {
		return fail(integrityErr("%s archive %s changed while it was being checked", which, path))
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return fail(missingArchive(which, path, err))
	}
	return f, id, nil
}

// readWorker reads the worker archive into memory (it is small and bounded
// by the manifest's size, itself bounded by the archive limit) and checks
// its size and digest; checkBundle then re-hashes its entries. The bytes
// checked are the bytes later written, so there is no window for a swap.
func readWorker(path string, m *artifacts.Manifest) ([]byte, error) {
	want := m.WorkerBundle
	if want.Bytes > archive.DefaultLimits().MaxArchiveBytes {
		return nil, integrityErr("worker bundle is recorded as %d bytes, over the archive limit", want.Bytes)
	}
	f, err := fsx.OpenNoFollow(path)
	if err != nil {
		return nil, missingArchive("worker bundle", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return nil, missingArchive("worker bundle", path, fmt.Errorf("not a regular file"))
	}
	if st.Size() != want.Bytes {
		return nil, integrityErr("worker bundle archive %s is %d bytes, the manifest records %d", path, st.Size(), want.Bytes)
	}
	data, err := io.ReadAll(io.LimitReader(f, want.Bytes+1))
	if err != nil {
		return nil, missingArchive("worker bundle", path, err)
	}
	if int64(len(data)) != want.Bytes {
		return nil, integrityErr("worker bundle archive %s changed size while being read", path)
	}
	if got := sha256Hex(data); got != want.SHA256 {
		return nil, integrityErr("worker bundle archive %s has SHA-256 %s, the manifest records %s", path, got, want.SHA256)
	}
	return data, nil
}

// checkBundle walks the worker archive, hashes every entry and compares the
// entries and the recomputed bundle hash with the manifest.
func checkBundle(data []byte, m *artifacts.Manifest) error {
	var got []artifacts.BundleEntry
	_, err := archive.Walk(bytes.NewReader(data), archive.Options{Size: int64(len(data))}, func(e *archive.Entry, body io.Reader) error {
		if e.Type != archive.TypeFile || strings.Contains(e.Path, "/") {
			return integrityErr("worker bundle entry %q is not a regular file at the archive root", e.Path)
		}
		h := newSHA()
		n, err := io.Copy(h, body)
		if err != nil {
			return err
		}
		got = append(got, artifacts.BundleEntry{Path: e.Path, Mode: uint32(e.RawMode) & 0o7777, Size: n, SHA256: hex.EncodeToString(h.Sum(nil))})
		return nil
	})
	if err != nil {
		if errs.As(err) != nil && errs.CodeOf(err) == "integrity_verification_failed" {
			return err
		}
		return integrityErr("worker bundle archive is unreadable: %v", err)
	}
	artifacts.SortBundleEntries(got)
	want := m.WorkerBundle.HashEntries()
	if len(got) != len(want) {
		return integrityErr("worker bundle has %d entries, the manifest records %d", len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			return integrityErr("worker bundle entry %s (mode %o, %d bytes, sha256 %s) differs from the manifest (%s, mode %o, %d bytes, sha256 %s)",
				got[i].Path, got[i].Mode, got[i].Size, got[i].SHA256, want[i].Path, want[i].Mode, want[i].Size, want[i].SHA256)
		}
	}
	if h := artifacts.BundleHash(got); h != m.WorkerBundle.BundleHash {
		return integrityErr("worker bundle hash is %s, the manifest records %s", h, m.WorkerBundle.BundleHash)
	}
	return nil
}

// stage extracts the node bootstrap into staging, places the worker
// archive, and writes the index and the record (the record last).
func stage(ctx context.Context, staging string, node *os.File, nodeID fileID, bc *bundleCheck, in *Inputs, l Layout, worker []byte, cliVersion string, now time.Time) error {
	m := in.Manifest
	idx := Index{Schema: IndexSchema}
	var content int64
	n := 0
	st, err := archive.ExtractDir(node, staging, archive.ExtractOptions{
		Options:   archive.Options{Size: m.NodeBootstrap.Bytes, SkipHash: true},
		HashFiles: true,
		OnEntry: func(e *archive.Entry, sum [32]byte) error {
			ie := IndexEntry{Path: e.Path, Type: e.Type.String()}
			switch e.Type {
			case archive.TypeFile:
				ie.Size, ie.SHA256 = e.Size, hex.EncodeToString(sum[:])
				content += e.Size
			case archive.TypeSymlink, archive.TypeHardlink:
				ie.Link = e.Linkname
			}
			idx.Entries = append(idx.Entries, ie)
			n++
			if testHookEntry != nil {
				testHookEntry(n)
			}
			return ctx.Err()
		},
	})
	if err != nil {
		if errors.Is(err, archive.ErrUnsafe) {
			e := errs.As(err)
			return errs.Failed(e.Code, "node bootstrap %s refused: %s", in.NodeArchive, e.Message).WithHint("%s", e.Hint).Wrap(err)
		}
		if e := errs.As(err); e != nil {
			return err
		}
		return installErr("extracting %s: %v", in.NodeArchive, err)
	}
	// Extracted from the descriptor that was checked: it must not have
	// been written to since (size, mtime and ctime unchanged).
	if id, err := idOf(node); err != nil || id != nodeID || st.CompressedBytes != m.NodeBootstrap.Bytes {
		return integrityErr("node bootstrap archive %s changed while it was installed", in.NodeArchive)
	}
	// The package must be where the manifest says, and be that package.
	if err := checkPackageJSON(filepath.Join(staging, filepath.FromSlash(m.NodeBootstrap.PackagePath)), m); err != nil {
		return err
	}
	for _, name := range []string{RecordName, IndexName} {
		if _, err := os.Lstat(filepath.Join(staging, name)); err == nil {
			return integrityErr("node bootstrap contains %s, a name reserved for the install record", name)
		}
	}
	// The worker archive, inside the installed package, once its entries
	// matched the bundle hash.
	if err := bc.wait(); err != nil {
		return err
	}
	wabs := filepath.Join(staging, filepath.FromSlash(l.WorkerRel))
	if err := os.MkdirAll(filepath.Dir(wabs), 0o755); err != nil {
		return installErr("cannot create %s: %v", filepath.Dir(wabs), err)
	}
	if old, err := os.ReadFile(wabs); err == nil {
		if !bytes.Equal(old, worker) {
			return integrityErr("node bootstrap already contains %s with different bytes", l.WorkerRel)
		}
	} else if err := writeNew(wabs, worker, 0o644); err != nil {
		return installErr("cannot write %s: %v", wabs, err)
	} else {
		idx.Entries = append(idx.Entries, IndexEntry{Path: l.WorkerRel, Type: "file", Size: int64(len(worker)), SHA256: m.WorkerBundle.SHA256})
		content += int64(len(worker))
	}
	ib, err := json.Marshal(idx)
	if err != nil {
		return installErr("encoding the index: %v", err)
	}
	ib = append(ib, '\n')
	if err := writeNew(filepath.Join(staging, IndexName), ib, 0o644); err != nil {
		return installErr("cannot write the install index: %v", err)
	}
	rec := Record{
		Schema:         RecordSchema,
		PackageName:    m.Package.Name,
		PackageVersion: m.Package.Version,
		BuildID:        m.BuildID,
		Platform:       m.Platform,
		Arch:           m.Arch,
		ManifestSHA256: in.ManifestSHA256,
		PackagePath:    m.NodeBootstrap.PackagePath,
		NodeBootstrap:  RecordArchive{SHA256: m.NodeBootstrap.SHA256, Bytes: m.NodeBootstrap.Bytes},
		WorkerBundle: RecordWorker{
			RecordArchive: RecordArchive{SHA256: m.WorkerBundle.SHA256, Bytes: m.WorkerBundle.Bytes},
			BundleHash:    m.WorkerBundle.BundleHash,
			Path:          l.WorkerRel,
		},
		CLIVersion:  cliVersion,
		InstalledAt: now.UTC().Format(time.RFC3339),
		Index:       RecordIndex{SHA256: sha256Hex(ib), Entries: len(idx.Entries), Bytes: content},
	}
	rb, err := marshalIndent(rec)
	if err != nil {
		return installErr("encoding the install record: %v", err)
	}
	if err := writeNew(filepath.Join(staging, RecordName), rb, 0o644); err != nil {
		return installErr("cannot write the install record: %v", err)
	}
	// MkdirTemp made the folder 0700; the runtime is read by the runtime
	// user's processes like any installed package.
	if err := os.Chmod(staging, 0o755); err != nil {
		return installErr("cannot set the mode of %s: %v", staging, err)
	}
	return nil
}

func checkPackageJSON(pkgDir string, m *artifacts.Manifest) error {
	b, err := fsx.ReadRegular(filepath.Join(pkgDir, "package.json"), 4<<20)
	if err != nil {
		return integrityErr("node bootstrap has no readable %s/package.json: %v", m.NodeBootstrap.PackagePath, err)
	}
	var p struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	}
	if err := json.Unmarshal(b, &p); err != nil {
		return integrityErr("node bootstrap %s/package.json is not valid JSON: %v", m.NodeBootstrap.PackagePath, err)
	}
	if p.Name != m.Package.Name || p.Version != m.Package.Version {
		return integrityErr("node bootstrap holds %s@%s, the manifest records %s@%s", p.Name, p.Version, m.Package.Name, m.Package.Version)
	}
	return nil
}

// removeStaleStaging removes staging folders left by a killed install of
// the same runtime. Only called with the runtime's lock held, so no live
// install owns them.
func removeStaleStaging(l Layout, logw io.Writer) {
	base := filepath.Base(l.RuntimeDir)
	ents, err := os.ReadDir(l.RuntimesDir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "."+base+".staging-") {
			p := filepath.Join(l.RuntimesDir, e.Name())
			if err := os.RemoveAll(p); err == nil {
				fmt.Fprintf(logw, "clawkit: crabbox: removed an interrupted install %s\n", p)
			}
		}
	}
}

// syncTree makes the staged tree durable before the rename publishes it:
// one syncfs(2) of the file system holding it instead of an fsync per file
// (thousands of files), then an fsync of the staging folder itself.
func syncTree(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := unix.Syncfs(int(f.Fd())); err != nil {
		return err
	}
	return f.Sync()
}

var errScanDone = errors.New("archive scan finished")

// lenientWriter feeds the pre-scan; once the scan has stopped reading (it
// finished or refused the archive) writes are dropped, so hashing goes on.
type lenientWriter struct {
	w    *io.PipeWriter
	dead bool
}

func (l *lenientWriter) Write(p []byte) (int, error) {
	if !l.dead {
		if _, err := l.w.Write(p); err != nil {
			l.dead = true
		}
	}
	return len(p), nil
}

// CheckPlatform refuses (exit 3, before anything is touched) an export whose
// manifest names another platform or architecture than this machine's, in
// Node's names. skip disables the check (tests only).
func CheckPlatform(m *artifacts.Manifest, skip bool) error {
	if skip {
		return nil
	}
	hp, ha := artifacts.NodePlatform(runtime.GOOS), artifacts.NodeArch(runtime.GOARCH)
	if m.Platform != hp || m.Arch != ha {
		return errs.Refused("platform_mismatch", "the export is for %s-%s, this machine is %s-%s", m.Platform, m.Arch, hp, ha).
			WithHint("install on a matching prepared machine, or export for this one (runtime-artifacts export --platform %s --arch %s)", hp, ha)
	}
	return nil
}
