package crabbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/clawkit/clawkit/pkg/archive"
	"github.com/clawkit/clawkit/pkg/artifacts"
	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/fsx"
	"github.com/clawkit/clawkit/pkg/termsafe"
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
	// folder is removed and nothing is renamed into place. It also ends a
	// wait for the runtime lock.
	Ctx context.Context
	// LockWait bounds the wait for another install of the same runtime
	// (0: DefaultLockWait; at least MinLockWait).
	LockWait time.Duration
	// NodeArchive and WorkerArchive, when set, name the archives by their
	// own paths instead of beside the manifest (--node-archive,
	// --worker-archive); they are checked exactly as those are: no final
	// link, a regular file, never blocking, the manifest's size and
	// SHA-256 (docs/crabbox.md).
	NodeArchive, WorkerArchive string
}

// testHookEntry, when set (tests only), runs after each extracted entry.
var testHookEntry func(n int)

// Install checks the archives, then installs (or keeps a verified identical
// install) and returns the receipt. See the package comment for the layout
// and docs/crabbox.md for the pipeline.
//
// Order of effects: nothing on the target is touched until the manifest,
// the pins and both archives' sizes and SHA-256 digests have been checked.
// Then the runtime cache folder is created, the per-runtime lock taken,
// stale staging folders removed, and the install staged in a temporary
// sibling and renamed into place. The node archive is extracted from the
// descriptor that was hashed, and its identity (inode, size, mtime, ctime)
// must be unchanged afterwards, so an archive rewritten between the check
// and the extraction is caught before the rename. The worker archive is
// copied into the staging area from its checked descriptor and re-hashed,
// and its entries are re-hashed against the bundle hash from that private
// copy while the node bootstrap extracts; it is placed only after both
// checks passed. Any refusal or failure after the target was touched
// removes what this run created (staging, and the cache folders and lock
// file when they did not exist before), so a refused install leaves the
// target as it was.
func Install(req InstallRequest) (*Receipt, error) {
	logw := req.Log
	if logw == nil {
		logw = io.Discard
	}
	progress := func(format string, args ...any) {
		if req.Progress != nil {
			// Progress is best effort: a failed write must not fail the install.
			_, _ = fmt.Fprintf(req.Progress, "clawkit: crabbox: %s\n", termsafe.Text(fmt.Sprintf(format, args...)))
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
	wait := req.LockWait
	if wait == 0 {
		wait = DefaultLockWait
	}
	if err := CheckLockWait(wait); err != nil {
		return nil, err
	}
	in, err := LoadInputs(req.ManifestPath, req.Expect)
	if err != nil {
		return nil, err
	}
	if err := in.UseArchives(req.NodeArchive, req.WorkerArchive); err != nil {
		return nil, err
	}
	m := in.Manifest
	if err := CheckPlatform(m, req.SkipPlatformCheck); err != nil {
		return nil, err
	}
	if req.TargetHome == "" {
		return nil, errs.Usage(CodeTargetHomeMissing, "no target home: HOME is not set").WithHint("pass --target-home DIR")
	}
	l, err := LayoutFor(req.TargetHome, m)
	if err != nil {
		return nil, err
	}

	// 1. Check both archives' sizes and digests before touching the
	// target, the two in parallel.
	progress("checking %s (%d bytes) and %s (%d bytes)", m.NodeBootstrap.Path, m.NodeBootstrap.Bytes, m.WorkerBundle.Path, m.WorkerBundle.Bytes)
	var (
		worker    *os.File
		workerID  fileID
		workerErr error
		wg        sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		worker, workerID, workerErr = openChecked(ctx, in.WorkerArchive, "worker bundle", m.WorkerBundle.Archive)
	}()
	node, nodeID, err := openChecked(ctx, in.NodeArchive, "node bootstrap", m.NodeBootstrap.Archive)
	wg.Wait()
	if node != nil {
		defer fsx.CloseRead(node)
	}
	if worker != nil {
		defer fsx.CloseRead(worker)
	}
	if ctx.Err() != nil {
		return nil, artifacts.Interrupted("install")
	}
	if err != nil {
		return nil, err
	}
	if workerErr != nil {
		return nil, workerErr
	}

	// 2. The target: cache folder, lock, stale staging. Everything this
	// run creates is undone on failure.
	t, err := holdTarget(ctx, l, wait, func() {
		progress("waiting for another install of this runtime (lock %s, at most %v)", LockPath(l), wait)
	})
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() { t.release(!ok) }()
	removeStaleStaging(l, logw)

	// 3. An install already present: keep it when it verifies.
	replace := false
	if _, err := os.Lstat(l.RuntimeDir); err == nil {
		// "Verified and kept" must mean every file is right, not only the
		// record and the worker archive: the tree must be untouched since
		// this very install verified and wrote it (its stamp), or else
		// every file is re-hashed.
		probs := verifyInstalled(in, l, req.CLIVersion, verifyStamp)
		if len(probs) == 0 {
			ok = true
			return NewReceipt(StatusExistingVerified, in, l, req.CLIVersion), nil
		}
		for _, p := range probs {
			// Paths below the runtime are names from the archive (or
			// whatever was put there): escaped for the terminal.
			_, _ = fmt.Fprintf(logw, "clawkit: crabbox: existing install: %s\n", termsafe.Text(p.String()))
		}
		_, _ = fmt.Fprintf(logw, "clawkit: crabbox: replacing the existing install at %s\n", termsafe.Text(l.RuntimeDir))
		replace = true
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, installErr("cannot inspect %s: %v", l.RuntimeDir, err)
	}

	// 4. Stage.
	staging, err := os.MkdirTemp(l.RuntimesDir, "."+m.NodeBootstrap.SHA256+".staging-")
	if err != nil {
		return nil, installErr("cannot create a staging folder in %s: %v", l.RuntimesDir, err)
	}
	// The worker archive's private copy sits beside the staging folder
	// (same prefix, so a killed install's copy is removed as stale) until
	// it is renamed into the staged package.
	workerCopy := staging + ".worker"
	committed := false
	var fl *flusher
	defer func() {
		// Best effort: a leftover copy or staging folder carries the
		// staging prefix and the next install removes it as stale.
		_ = os.Remove(workerCopy)
		if !committed {
			// Nothing of a failed install may stay, even when it failed
			// for want of file descriptors (EMFILE): the archives are
			// closed first, and the removal needs one descriptor at a time.
			fsx.CloseRead(node)
			fsx.CloseRead(worker)
			if fl != nil {
				fl.close()
			}
			if err := removeTree(staging); err != nil {
				_, _ = fmt.Fprintf(logw, "clawkit: crabbox: could not remove the staging folder %s\n", termsafe.Text(fmt.Sprintf("%s: %v", staging, err)))
			}
		}
	}()
	// Durability: the staged tree's data starts for the disk while it is
	// still being written, and is flushed before the rename.
	if !req.NoSync {
		if fl, err = startFlusher(staging); err != nil {
			return nil, installErr("cannot open the staging folder %s: %v", staging, err)
		}
		defer fl.close()
	}
	progress("extracting into %s", staging)
	if err := stage(ctx, staging, workerCopy, node, nodeID, worker, workerID, in, l, req.CLIVersion, now()); err != nil {
		if ctx.Err() != nil {
			return nil, artifacts.Interrupted("install")
		}
		return nil, err
	}

	// 5. Publish: durable, then renamed into place (unless interrupted).
	if fl != nil {
		if err := fl.finish(); err != nil {
			return nil, installErr("cannot flush the staged install to disk: %v", err)
		}
	}
	if ctx.Err() != nil {
		return nil, artifacts.Interrupted("install")
	}
	if replace {
		// Swap atomically so the final path always holds a whole install
		// (outside Linux, three renames: docs/release.md, "Platforms").
		if err := fsx.Exchange(staging, l.RuntimeDir); err != nil {
			return nil, installErr("cannot replace %s: %v", l.RuntimeDir, err)
		}
		committed, ok = true, true
		// staging now holds the old install.
		if err := os.RemoveAll(staging); err != nil {
			_, _ = fmt.Fprintf(logw, "clawkit: crabbox: could not remove the replaced install %s\n", termsafe.Text(fmt.Sprintf("%s: %v", staging, err)))
		}
	} else {
		if err := os.Rename(staging, l.RuntimeDir); err != nil {
			return nil, installErr("cannot rename the staged install into %s: %v", l.RuntimeDir, err)
		}
		committed, ok = true, true
	}
	if err := fsx.SyncDir(l.RuntimesDir); err != nil {
		return nil, errs.Unknown(CodeInstallUnsynced, "installed %s but could not sync its folder: %v", l.RuntimeDir, err).
			WithHint("run 'clawkit crabbox verify' before relying on it")
	}
	return NewReceipt(StatusInstalled, in, l, req.CLIVersion), nil
}

// emfileHint is the hint of any install failure for want of file
// descriptors.
const emfileHint = "the process ran out of file descriptors (EMFILE); nothing was installed and nothing was left: raise the limit (ulimit -n) and run the same command again"

func installErr(format string, args ...any) *errs.Error {
	for _, a := range args {
		if err, ok := a.(error); ok && errors.Is(err, syscall.EMFILE) {
			return errs.Failed(CodeInstallFailed, format, args...).WithHint(emfileHint)
		}
	}
	return errs.Failed(CodeInstallFailed, format, args...).
		WithHint("nothing was installed at the final path; fix the cause and run the same command again")
}

// target is the runtime cache held by one install: the folders it had to
// create and the per-runtime lock.
type target struct {
	created []string // folders this run created, outermost first
	lock    *RuntimeLock
	// touched is the deepest folder that existed before, whose times are
	// put back on undo (entries were added to it and removed again).
	touched      string
	atime, mtime time.Time
}

// holdTarget creates the runtime cache folder (recording which folders did
// not exist) and takes the per-runtime lock (LockRuntime: never through a
// link, bounded by wait, ended by ctx).
func holdTarget(ctx context.Context, l Layout, wait time.Duration, onWait func()) (*target, error) {
	t := &target{}
	if err := t.mkdirs(l.RuntimesDir); err != nil {
		t.release(true)
		return nil, err
	}
	// MkdirAll-like creation succeeds on an existing non-folder in a
	// race; check. (A symlink to a folder is accepted: users move
	// caches to other disks.)
	if st, err := os.Stat(l.RuntimesDir); err != nil || !st.IsDir() {
		t.release(true)
		return nil, errs.Failed(CodeTargetNotFolder, "%s is not a folder", l.RuntimesDir).
			WithHint("remove the file in the way or choose another --target-home")
	}
	k, err := lockRuntime(ctx, l, wait, onWait)
	if err != nil {
		t.release(true)
		return nil, err
	}
	t.lock = k
	return t, nil
}

// mkdirs creates dir and its missing parents, recording the ones created.
func (t *target) mkdirs(dir string) error {
	var missing []string
	for p := dir; ; {
		if _, err := os.Lstat(p); err == nil {
			break
		} else if !errors.Is(err, fs.ErrNotExist) {
			return installErr("cannot create %s: %v", dir, err)
		}
		missing = append(missing, p)
		parent := filepath.Dir(p)
		if parent == p {
			break
		}
		p = parent
	}
	if t.touched == "" {
		t.touched = dir
		if len(missing) > 0 {
			t.touched = filepath.Dir(missing[len(missing)-1])
		}
		var st unix.Stat_t
		if unix.Stat(t.touched, &st) == nil {
			t.atime, t.mtime = time.Unix(st.Atim.Unix()), time.Unix(st.Mtim.Unix())
		}
	}
	for i := len(missing) - 1; i >= 0; i-- {
		err := os.Mkdir(missing[i], 0o755)
		if err == nil {
			t.created = append(t.created, missing[i])
			continue
		}
		if !errors.Is(err, fs.ErrExist) {
			return installErr("cannot create %s: %v", dir, err)
		}
	}
	return nil
}

// release unlocks; with undo it first removes the lock file (while still
// holding it) and then the folders this run created, innermost first, as
// far as they are empty: a failed install leaves the target as it found
// it. An install waiting on the removed lock file notices and locks again.
func (t *target) release(undo bool) {
	// The undo is best effort: the install already failed with its own
	// error, and a lock file left behind is what a later install reuses.
	if undo && t.lock != nil && t.lock.Created {
		_ = t.lock.Discard()
	}
	if t.lock != nil {
		_ = t.lock.Unlock() // the lock file: nothing written through it
		t.lock = nil
	}
	if undo {
		for i := len(t.created) - 1; i >= 0; i-- {
			if os.Remove(t.created[i]) != nil {
				break
			}
		}
		if !t.mtime.IsZero() {
			_ = os.Chtimes(t.touched, t.atime, t.mtime)
		}
	}
	t.created = nil
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
// positioned at the start with its identity: the caller reads the same
// descriptor and compares the identity afterwards instead of hashing a
// second time. Hashing is fast next to inflating, so the digest is judged
// before anything else happens; the archive's content rules are enforced
// while it is extracted into the private staging folder.
func openChecked(ctx context.Context, path, which string, want artifacts.Archive) (*os.File, fileID, error) {
	if lim := archive.DefaultLimits().MaxArchiveBytes; want.Bytes > lim {
		return nil, fileID{}, errs.Failed(errs.CodeArchiveTooLarge, "%s %s refused: archive is recorded as %d bytes, over the limit of %d", which, path, want.Bytes, lim).
			WithHint("the archive is refused as a whole; rebuild it with 'clawkit runtime-artifacts export'")
	}
	f, err := fsx.OpenNoFollow(path)
	if err != nil {
		return nil, fileID{}, missingArchive(which, path, err)
	}
	fail := func(e error) (*os.File, fileID, error) {
		fsx.CloseRead(f)
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
	h := newSHA()
	if _, err := io.CopyBuffer(h, archive.ContextReader(ctx, f), make([]byte, 1<<20)); err != nil {
		return fail(missingArchive(which, path, err))
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != want.SHA256 {
		return fail(integrityErr("%s archive %s has SHA-256 %s, the manifest records %s", which, path, got, want.SHA256))
	}
	if id2, err := idOf(f); err != nil || id2 != id {
		return fail(integrityErr("%s archive %s changed while it was being checked", which, path))
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return fail(missingArchive(which, path, err))
	}
	return f, id, nil
}

// copyWorker copies the checked worker archive into a new private file,
// hashing the bytes written, and then re-hashes its entries against the
// bundle hash from that copy: the bytes checked are the bytes placed.
func copyWorker(dst string, src *os.File, srcID fileID, m *artifacts.Manifest) (err error) {
	f, err := os.OpenFile(dst, os.O_RDWR|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW, 0o644)
	if err != nil {
		return installErr("cannot write %s: %v", dst, err)
	}
	defer func() {
		if cerr := f.Close(); cerr != nil && err == nil {
			err = installErr("cannot write %s: %v", dst, cerr)
		}
	}()
	h := newSHA()
	n, err := io.CopyBuffer(io.MultiWriter(f, h), io.NewSectionReader(src, 0, m.WorkerBundle.Bytes+1), make([]byte, 256<<10))
	if err != nil {
		return installErr("cannot copy the worker archive to %s: %v", dst, err)
	}
	if n != m.WorkerBundle.Bytes || hex.EncodeToString(h.Sum(nil)) != m.WorkerBundle.SHA256 {
		return integrityErr("worker bundle archive changed while it was installed")
	}
	if id, err := idOf(src); err != nil || id != srcID {
		return integrityErr("worker bundle archive changed while it was installed")
	}
	return checkBundle(io.NewSectionReader(f, 0, n), m)
}

// checkBundle walks the worker archive, hashes every entry and compares the
// entries and the recomputed bundle hash with the manifest.
func checkBundle(r io.Reader, m *artifacts.Manifest) error {
	var got []artifacts.BundleEntry
	h := sha256.New()
	_, err := archive.Walk(r, archive.Options{Size: m.WorkerBundle.Bytes, SkipHash: true}, func(e *archive.Entry, body io.Reader) error {
		if e.Type != archive.TypeFile || strings.Contains(e.Path, "/") {
			return integrityErr("worker bundle entry %q is not a regular file at the archive root", e.Path)
		}
		h.Reset()
		n, err := io.Copy(h, body)
		if err != nil {
			return err
		}
		got = append(got, artifacts.BundleEntry{Path: e.Path, Mode: uint32(e.RawMode) & 0o7777, Size: n, SHA256: hex.EncodeToString(h.Sum(nil))})
		return nil
	})
	if err != nil {
		if errs.As(err) != nil && errs.CodeOf(err) == CodeIntegrityVerificationFailed {
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

// layoutCheck refuses, before anything is created for it, a node bootstrap
// entry that would make the install write where it must not: the install
// record's names, the worker archive's own path, a non-folder (a link,
// say) at any folder the worker archive is placed in, and a package.json
// that is not a regular file.
func layoutCheck(ctx context.Context, l Layout, m *artifacts.Manifest) func(e *archive.Entry) error {
	pkgJSON := m.NodeBootstrap.PackagePath + "/package.json"
	return func(e *archive.Entry) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		switch {
		case e.Path == RecordName || e.Path == IndexName:
			return integrityErr("node bootstrap contains %s, a name reserved for the install record", e.Path)
		case e.Path == l.WorkerRel && (e.Type != archive.TypeFile || e.Size != m.WorkerBundle.Bytes):
			// Only the worker archive's own bytes may be there (checked
			// once written).
			return integrityErr("node bootstrap already contains %s with different bytes", e.Path)
		case e.Type != archive.TypeDir && strings.HasPrefix(l.WorkerRel, e.Path+"/"):
			return integrityErr("node bootstrap entry %s is a %s, but the worker archive is installed below it (%s): it must be a folder", e.Path, e.Type, l.WorkerRel)
		case e.Path == pkgJSON && e.Type != archive.TypeFile:
			return integrityErr("node bootstrap %s is a %s, not a regular file", pkgJSON, e.Type)
		}
		return nil
	}
}

// stage extracts the node bootstrap into staging while the worker archive
// is copied and checked beside it, places the worker archive, and writes
// the index and the record (the record last).
func stage(ctx context.Context, staging, workerCopy string, node *os.File, nodeID fileID, worker *os.File, workerID fileID, in *Inputs, l Layout, cliVersion string, now time.Time) error {
	m := in.Manifest
	wc := make(chan error, 1)
	go func() { wc <- copyWorker(workerCopy, worker, workerID, m) }()
	var (
		ents    indexList
		content int64
		n       int
		present string // SHA-256 of a worker archive the bootstrap holds
	)
	st, err := archive.ExtractDir(node, staging, archive.ExtractOptions{
		Options:   archive.Options{Size: m.NodeBootstrap.Bytes, SkipHash: true},
		HashFiles: true,
		Check:     layoutCheck(ctx, l, m),
		OnEntry: func(e *archive.Entry, sum [32]byte) error {
			r := indexRec{path: e.Path, link: e.Linkname, typ: e.Type, size: e.Size, sum: sum}
			if e.Type == archive.TypeFile {
				content += e.Size
				if e.Path == l.WorkerRel {
					present = hex.EncodeToString(sum[:])
				}
			}
			ents.put(e.Index, r)
			n++
			if testHookEntry != nil {
				testHookEntry(n)
			}
			return ctx.Err()
		},
	})
	werr := <-wc
	if err != nil {
		if errors.Is(err, archive.ErrUnsafe) {
			e := errs.As(err)
			return errs.Failed(e.Code, "node bootstrap %s refused: %s", in.NodeArchive, e.Message).WithHint("%s", e.Hint).Wrap(err)
		}
		if e := errs.As(err); e != nil {
			if errors.Is(err, syscall.EMFILE) {
				return e.WithHint("%s", emfileHint)
			}
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
	// The worker archive, inside the installed package, once its bytes
	// and entries matched the manifest.
	if werr != nil {
		return werr
	}
	var extra []IndexEntry
	switch {
	case present == m.WorkerBundle.SHA256:
		// The bootstrap already holds these very bytes (and indexed them).
	case present != "":
		return integrityErr("node bootstrap already contains %s with different bytes", l.WorkerRel)
	default:
		if err := mkdirsReal(staging, path.Dir(l.WorkerRel)); err != nil {
			return err
		}
		wabs := filepath.Join(staging, filepath.FromSlash(l.WorkerRel))
		if err := fsx.RenameNoReplace(workerCopy, wabs); err != nil {
			return installErr("cannot place the worker archive at %s: %v", wabs, err)
		}
		extra = append(extra, IndexEntry{Path: l.WorkerRel, Type: "file", Size: m.WorkerBundle.Bytes, SHA256: m.WorkerBundle.SHA256})
		content += m.WorkerBundle.Bytes
	}
	// MkdirTemp made the folder 0700; the runtime is read by the runtime
	// user's processes like any installed package.
	if err := os.Chmod(staging, 0o755); err != nil {
		return installErr("cannot set the mode of %s: %v", staging, err)
	}
	// What the kernel says of the staged tree: the modes for the index,
	// and (with the index added) the stamp.
	tree, err := readTree(staging)
	if err != nil {
		return installErr("cannot stat the staged install: %v", err)
	}
	isum, count, err := writeIndex(filepath.Join(staging, IndexName), &ents, tree, extra...)
	if err != nil {
		return installErr("cannot write the install index: %v", err)
	}
	// The tree as verified and written, for a quick re-install check.
	if err := tree.add(staging, IndexName); err != nil {
		return installErr("cannot stat the staged install: %v", err)
	}
	stamp := tree.stamp()
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
		Index:       RecordIndex{SHA256: isum, Entries: count, Bytes: content},
		Tree:        stamp,
	}
	rb, err := marshalIndent(rec)
	if err != nil {
		return installErr("encoding the install record: %v", err)
	}
	if err := writeNew(filepath.Join(staging, RecordName), rb, 0o644); err != nil {
		return installErr("cannot write the install record: %v", err)
	}
	return nil
}

// mkdirsReal creates rel's folders below root one by one, refusing any
// existing component that is not a real folder (never following a link).
func mkdirsReal(root, rel string) error {
	p := root
	for seg := range strings.SplitSeq(rel, "/") {
		p = filepath.Join(p, seg)
		err := os.Mkdir(p, 0o755)
		if err == nil || !errors.Is(err, fs.ErrExist) {
			if err != nil {
				return installErr("cannot create %s: %v", p, err)
			}
			continue
		}
		if st, err := os.Lstat(p); err != nil || !st.IsDir() {
			return integrityErr("%s in the node bootstrap is not a folder", p)
		}
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

// removeTree removes root and everything below it. os.RemoveAll holds a
// descriptor for every level of the tree; when that fails (EMFILE, say),
// the tree is removed again holding at most one descriptor at a time.
func removeTree(root string) error {
	if err := os.RemoveAll(root); err == nil {
		return nil
	}
	return removeFewFDs(root)
}

func removeFewFDs(p string) error {
	st, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if st.IsDir() {
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		names, err := f.Readdirnames(-1)
		fsx.CloseRead(f) // a folder read
		if err != nil {
			return err
		}
		for _, n := range names {
			if err := removeFewFDs(filepath.Join(p, n)); err != nil {
				return err
			}
		}
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
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
				_, _ = fmt.Fprintf(logw, "clawkit: crabbox: removed an interrupted install %s\n", termsafe.Text(p))
			}
		}
	}
}

// flusher makes a staged tree durable before the rename publishes it. While
// the tree is being written it flushes the file system every flushEvery
// (syncfs(2), on its own goroutine), so the data leaves for the disk in
// large merged writes during the extraction instead of all at the end;
// finish then flushes what is left and the staging folder itself. One
// syncfs instead of an fsync per file (tens of thousands of files).
//
// Measured and dropped (docs/crabbox.md, *Where the time goes*): starting
// each file's write-out as it is closed (sync_file_range), which costs the
// extracting threads 1–3 s more system CPU on the real export, on a
// pipeline whose two cores are already full, and made the synced install
// slower than writing everything first and flushing once.
//
// Every flush uses the one descriptor opened before the extraction, and
// any error a background flush reports is kept: syncfs reports a write-back
// error once per descriptor, so a later flush through a new descriptor could
// miss it.
type flusher struct {
	f     *os.File
	flush func(fd int) error // syncfs(2); a test's stand-in
	quit  chan struct{}
	done  chan struct{}
	once  sync.Once
	mu    sync.Mutex
	err   error
}

const flushEvery = 250 * time.Millisecond

func startFlusherWith(dir string, every time.Duration, flush func(fd int) error) (*flusher, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	fl := &flusher{f: f, flush: flush, quit: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(fl.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-fl.quit:
				return
			case <-t.C:
				fl.keep(fl.flush(int(f.Fd())))
			}
		}
	}()
	return fl, nil
}

func (fl *flusher) keep(err error) {
	if err != nil {
		fl.mu.Lock()
		if fl.err == nil {
			fl.err = err
		}
		fl.mu.Unlock()
	}
}

// halt ends the background flushes, waiting for one in progress.
func (fl *flusher) halt() {
	fl.once.Do(func() {
		close(fl.quit)
		<-fl.done
	})
}

// finish flushes the file system and the staging folder once more and
// reports the first error of any flush.
func (fl *flusher) finish() error {
	fl.halt()
	fl.keep(fl.flush(int(fl.f.Fd())))
	fl.keep(fl.f.Sync())
	return fl.err
}

// close halts the flushes (an install that failed flushes nothing more)
// and closes the descriptor.
func (fl *flusher) close() {
	fl.halt()
	// Only a failed install closes it here: its files are being removed.
	_ = fl.f.Close()
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
		return errs.Refused(CodePlatformMismatch, "the export is for %s-%s, this machine is %s-%s", m.Platform, m.Arch, hp, ha).
			WithHint("install on a matching prepared machine, or export for this one (runtime-artifacts export --platform %s --arch %s)", hp, ha)
	}
	return nil
}
