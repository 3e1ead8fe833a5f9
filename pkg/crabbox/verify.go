package crabbox

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/clawkit/clawkit/pkg/artifacts"
	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/fsx"
)

func newSHA() interface {
	io.Writer
	Sum([]byte) []byte
} {
	return sha256.New()
}

// VerifyRequest is what `clawkit crabbox verify` asks for.
type VerifyRequest struct {
	// Ctx, when not nil, ends the verification early (SIGINT/SIGTERM).
	Ctx          context.Context
	ManifestPath string
	TargetHome   string
	Expect       Expect
	CLIVersion   string
	Deep         bool
	// Progress, when not nil, receives progress lines (stderr on a terminal).
	Progress io.Writer
}

// VerifyResult carries the problems found (one line each) and, when there
// are none, the receipt.
type VerifyResult struct {
	Problems []string
	Receipt  *Receipt
	Layout   Layout
}

// Verify checks a retained runtime cache against a manifest without
// creating, changing or removing anything: it opens files read-only, takes
// no lock and does not create the cache folder. Checked: the install record
// (package, build, manifest digest, archive digests, bundle hash, CLI
// version), the package's package.json identity, and the retained worker
// archive's size and SHA-256; with Deep also every installed file against
// the install index (and no unexpected files). The manifest's archives need
// not be present.
func Verify(req VerifyRequest) (*VerifyResult, error) {
	if req.Ctx == nil {
		return verify(req)
	}
	// Verification writes nothing, so an interrupt can end it at once: the
	// hashing goroutines are abandoned with the process. (--deep re-hashes
	// hundreds of megabytes; it must not make a user wait out SIGTERM.)
	type result struct {
		res *VerifyResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := verify(req)
		done <- result{res, err}
	}()
	select {
	case r := <-done:
		return r.res, r.err
	case <-req.Ctx.Done():
		return nil, artifacts.Interrupted("verification")
	}
}

func verify(req VerifyRequest) (*VerifyResult, error) {
	in, err := LoadInputs(req.ManifestPath, req.Expect)
	if err != nil {
		return nil, err
	}
	if req.TargetHome == "" {
		return nil, errs.Usage("target_home_missing", "no target home: HOME is not set").WithHint("pass --target-home DIR")
	}
	l, err := LayoutFor(req.TargetHome, in.Manifest)
	if err != nil {
		return nil, err
	}
	if req.Progress != nil {
		what := "record, package and worker archive"
		if req.Deep {
			what += ", and every installed file"
		}
		fmt.Fprintf(req.Progress, "clawkit: crabbox: verifying %s: %s\n", l.RuntimeDir, what)
	}
	depth := verifyShallow
	if req.Deep {
		depth = verifyDeepest
	}
	res := &VerifyResult{Layout: l, Problems: verifyInstalled(in, l, req.CLIVersion, depth)}
	if len(res.Problems) == 0 {
		res.Receipt = NewReceipt(StatusExistingVerified, in, l, req.CLIVersion)
	}
	return res, nil
}

// VerifyFailed is the error for a result with problems.
func VerifyFailed(res *VerifyResult) error {
	return errs.Failed("runtime_cache_invalid", "runtime cache %s failed verification (%d problem(s))", res.Layout.RuntimeDir, len(res.Problems)).
		WithHint("run 'clawkit crabbox install' with the same manifest to replace it")
}

// How far verifyInstalled looks beyond the record, the package identity and
// the worker archive.
const (
	verifyShallow = iota
	// verifyStamp: the tree stamp, and every file re-hashed only when the
	// stamp differs (install's check of an existing install).
	verifyStamp
	verifyDeepest // every file re-hashed
)

func verifyInstalled(in *Inputs, l Layout, cliVersion string, depth int) []string {
	m := in.Manifest
	var probs []string
	add := func(path, format string, args ...any) {
		probs = append(probs, path+": "+fmt.Sprintf(format, args...))
	}
	st, err := os.Lstat(l.RuntimeDir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			add(l.RuntimeDir, "runtime is not installed")
		} else {
			add(l.RuntimeDir, "cannot inspect: %v", err)
		}
		return probs
	}
	if !st.IsDir() {
		add(l.RuntimeDir, "is not a folder")
		return probs
	}
	rec, err := readRecord(l.RuntimeDir)
	recPath := filepath.Join(l.RuntimeDir, RecordName)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			add(recPath, "install record is missing (interrupted or foreign install)")
		} else {
			add(recPath, "%v", err)
		}
	} else {
		for _, b := range rec.matches(m, in.ManifestSHA256) {
			add(recPath, "%s", b)
		}
		if rec.CLIVersion != cliVersion {
			add(recPath, "installed by CLI version %q, this is %q", rec.CLIVersion, cliVersion)
		}
		if rec.WorkerBundle.Path != l.WorkerRel {
			add(recPath, "worker archive path is %q, expected %q", rec.WorkerBundle.Path, l.WorkerRel)
		}
	}
	if err := checkPackageJSON(l.PackageDir, m); err != nil {
		add(filepath.Join(l.PackageDir, "package.json"), "%s", strings.TrimPrefix(err.Error(), "integrity verification failed: "))
	}
	n, sum, err := hashFile(l.WorkerArchive, nil)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		add(l.WorkerArchive, "retained worker archive is missing")
	case err != nil:
		add(l.WorkerArchive, "cannot read the retained worker archive: %v", err)
	case n != m.WorkerBundle.Bytes:
		add(l.WorkerArchive, "retained worker archive is %d bytes, the manifest records %d", n, m.WorkerBundle.Bytes)
	case sum != m.WorkerBundle.SHA256:
		add(l.WorkerArchive, "retained worker archive has SHA-256 %s, the manifest records %s", sum, m.WorkerBundle.SHA256)
	}
	if rec == nil || (depth == verifyStamp && len(probs) > 0) {
		return probs
	}
	return append(probs, verifyTree(l, rec, depth)...)
}

// verifyTree compares the installed tree with the install: plain verify
// (verifyShallow) compares the type, size and mode of every entry, and
// the entries themselves, with the install index (a stat of each, no
// content read); a tree whose stamp is still the one install recorded is
// unchanged and needs no comparison. verifyStamp (an install finding an
// existing install) keeps a tree with the recorded stamp and otherwise
// does what verifyDeepest does: the comparison, then every file's content
// hashed. Problems come in walk order, so the first names the first
// difference.
func verifyTree(l Layout, rec *Record, depth int) []string {
	tree, err := readTree(l.RuntimeDir)
	if err != nil {
		return []string{fmt.Sprintf("%s: cannot read the installed tree: %v", l.RuntimeDir, err)}
	}
	if depth != verifyDeepest && rec.Tree != "" && tree.stamp() == rec.Tree {
		return nil
	}
	idx, prob := readIndex(l, rec)
	if prob != "" {
		return []string{prob}
	}
	probs, files := compareTree(l, tree, idx)
	if depth != verifyShallow {
		probs = append(probs, hashFiles(files)...)
	}
	sortWalk(probs)
	out := make([]string, len(probs))
	for i, p := range probs {
		out[i] = p.path + ": " + p.msg
	}
	return out
}

// readIndex reads the install index and checks it against the record's
// digest.
func readIndex(l Layout, rec *Record) (*Index, string) {
	idxPath := filepath.Join(l.RuntimeDir, IndexName)
	b, err := fsx.ReadRegular(idxPath, maxIndexBytes)
	if err != nil {
		return nil, idxPath + ": " + err.Error()
	}
	if got := sha256Hex(b); got != rec.Index.SHA256 {
		return nil, fmt.Sprintf("%s: install index has SHA-256 %s, the install record says %s", idxPath, got, rec.Index.SHA256)
	}
	var idx Index
	if err := strictJSON(b, &idx); err != nil || idx.Schema != IndexSchema {
		if err == nil {
			err = fmt.Errorf("schema %q, want %q (installed by an older clawkit)", idx.Schema, IndexSchema)
		}
		return nil, fmt.Sprintf("%s: install index is not valid: %v", idxPath, err)
	}
	return &idx, ""
}

// problem is one difference at an absolute path.
type problem struct{ path, msg string }

// hashJob is a file whose type, size and mode matched: deep verification
// re-hashes its content.
type hashJob struct {
	abs  string
	size int64
	sum  string
	link string // symlink target to read back instead
}

// compareTree compares every index entry with what the tree says of its
// path (type, size, mode; a symlink's target length), then reports every
// entry of the tree that no index entry names (a folder once, not its
// content). It returns the problems and the files and links that matched,
// for a deep check of their content.
func compareTree(l Layout, tree *stampDir, idx *Index) ([]problem, []hashJob) {
	var (
		probs  []problem
		jobs   []hashJob
		byPath map[string]IndexEntry
	)
	idxPath := filepath.Join(l.RuntimeDir, IndexName)
	add := func(abs, format string, args ...any) {
		probs = append(probs, problem{abs, fmt.Sprintf(format, args...)})
	}
	for _, e := range idx.Entries {
		name, err := e.name()
		if err == nil {
			err = fsx.CheckRel(name)
		}
		if err != nil {
			add(idxPath, "invalid path %q in the install index", e.Path)
			continue
		}
		abs := filepath.Join(l.RuntimeDir, filepath.FromSlash(name))
		got := tree.lookup(name)
		if got == nil {
			add(abs, "missing")
			continue
		}
		got.seen = true
		want := e
		switch e.Type {
		case "file", "dir", "symlink":
		case "hardlink":
			// Same content and mode as its target: a regular file.
			if byPath == nil {
				byPath = make(map[string]IndexEntry, len(idx.Entries))
				for _, x := range idx.Entries {
					if xn, err := x.name(); err == nil {
						byPath[xn] = x
					}
				}
			}
			target, err := e.link()
			var ok bool
			if want, ok = byPath[target]; err != nil || !ok || want.Type != "file" {
				add(abs, "hard link target %q is not in the install index", e.Link)
				continue
			}
			want.Mode = e.Mode
		default:
			add(idxPath, "unknown entry type %q for %q", e.Type, e.Path)
			continue
		}
		if gt, wt := typeName(got.mode), typeName(wantMode(want.Type)); gt != wt {
			add(abs, "is a %s, installed a %s", gt, wt)
			continue
		}
		if want.Type != "symlink" && want.Mode != modeString(got.mode) {
			add(abs, "mode is %s, installed %s", modeString(got.mode), want.Mode)
			continue
		}
		switch want.Type {
		case "file":
			if got.size != want.Size {
				add(abs, "size is %d bytes, installed %d", got.size, want.Size)
				continue
			}
			jobs = append(jobs, hashJob{abs: abs, size: want.Size, sum: want.SHA256})
		case "symlink":
			target, err := e.link()
			if err != nil || got.size != int64(len(target)) {
				add(abs, "symlink points elsewhere (want %q)", e.Link)
				continue
			}
			jobs = append(jobs, hashJob{abs: abs, link: target})
		}
	}
	tree.walk(func(rel []byte, e *stampEnt) bool {
		if e.seen {
			return true
		}
		if r := string(rel); r == RecordName || r == IndexName {
			return true
		}
		abs := filepath.Join(l.RuntimeDir, filepath.FromSlash(string(rel)))
		if e.mode&unix.S_IFMT == unix.S_IFDIR {
			add(abs, "unexpected folder (not part of the install)")
			return false
		}
		add(abs, "unexpected file (not part of the install)")
		return true
	})
	return probs, jobs
}

// hashFiles re-hashes the files (in parallel) and reads the links back.
func hashFiles(jobs []hashJob) []problem {
	var (
		mu    sync.Mutex
		probs []problem
		wg    sync.WaitGroup
	)
	report := func(p, format string, args ...any) {
		mu.Lock()
		probs = append(probs, problem{p, fmt.Sprintf(format, args...)})
		mu.Unlock()
	}
	ch := make(chan hashJob, 256)
	for range max(runtime.GOMAXPROCS(0), 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 256<<10)
			for j := range ch {
				if j.link != "" {
					if t, err := os.Readlink(j.abs); err != nil || t != j.link {
						report(j.abs, "symlink is missing or points elsewhere (want %q)", j.link)
					}
					continue
				}
				n, sum, err := hashFile(j.abs, buf)
				switch {
				case errors.Is(err, fs.ErrNotExist):
					report(j.abs, "missing")
				case err != nil:
					report(j.abs, "%v", err)
				case n != j.size || sum != j.sum:
					report(j.abs, "content has been modified (%d bytes, SHA-256 %s; installed %d bytes, %s)", n, sum, j.size, j.sum)
				}
			}
		}()
	}
	for _, j := range jobs {
		ch <- j
	}
	close(ch)
	wg.Wait()
	return probs
}

func wantMode(typ string) uint32 {
	switch typ {
	case "dir":
		return unix.S_IFDIR
	case "symlink":
		return unix.S_IFLNK
	}
	return unix.S_IFREG
}

func typeName(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFREG:
		return "file"
	case unix.S_IFDIR:
		return "folder"
	case unix.S_IFLNK:
		return "symlink"
	case unix.S_IFIFO:
		return "named pipe"
	case unix.S_IFSOCK:
		return "socket"
	}
	return "device"
}

// sortWalk orders problems as a walk meets their paths (a folder before
// its entries, names byte-wise within a folder), stably.
func sortWalk(probs []problem) {
	slices.SortStableFunc(probs, func(a, b problem) int { return cmpWalk(a.path, b.path) })
}

func cmpWalk(a, b string) int {
	for {
		as, arest, amore := strings.Cut(a, "/")
		bs, brest, bmore := strings.Cut(b, "/")
		if c := strings.Compare(as, bs); c != 0 {
			return c
		}
		switch {
		case !amore && !bmore:
			return 0
		case !amore:
			return -1
		case !bmore:
			return 1
		}
		a, b = arest, brest
	}
}
