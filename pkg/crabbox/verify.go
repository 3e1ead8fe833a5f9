package crabbox

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
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
	"github.com/clawkit/clawkit/pkg/termsafe"
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

// VerifyResult carries the problems found and, when there are none, the
// receipt.
type VerifyResult struct {
	// Problems are the problems' lines ("<path>: <problem>"), in the
	// order found: the record, package.json and the worker archive first,
	// then the tree in walk order (the first names the first difference).
	Problems []string
	// Found are the same problems, structured.
	Found   []Problem
	Receipt *Receipt
	Layout  Layout
	// NotInstalled: the runtime folder does not exist (a cache miss).
	NotInstalled bool
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
		return nil, errs.Usage(CodeTargetHomeMissing, "no target home: HOME is not set").WithHint("pass --target-home DIR")
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
		fmt.Fprintf(req.Progress, "clawkit: crabbox: verifying %s: %s\n", termsafe.Text(l.RuntimeDir), what)
	}
	depth := verifyShallow
	if req.Deep {
		depth = verifyDeepest
	}
	res := &VerifyResult{Layout: l, Found: verifyInstalled(in, l, req.CLIVersion, depth)}
	for _, p := range res.Found {
		res.Problems = append(res.Problems, p.String())
	}
	if _, err := os.Lstat(l.RuntimeDir); errors.Is(err, fs.ErrNotExist) {
		res.NotInstalled = true
	}
	if len(res.Problems) == 0 {
		res.Receipt = NewReceipt(StatusExistingVerified, in, l, req.CLIVersion)
	}
	return res, nil
}

// VerifyFailed is the error for a result with problems.
func VerifyFailed(res *VerifyResult) error {
	return errs.Failed(CodeRuntimeCacheInvalid, "runtime cache %s failed verification (%d problem(s))", res.Layout.RuntimeDir, len(res.Problems)).
		WithHint("run 'clawkit crabbox install' with the same manifest to replace it")
}

// VerifyReport is the one JSON document of `crabbox verify --json`, on
// success and on every failure, for a CI workflow to branch on
// (docs/crabbox.md, "verify --json"): ok; status (existing-verified,
// not-installed, invalid, or error when verification could not run: a bad
// manifest, a pin mismatch, an interrupt); the manifest and runtime
// folder; what was checked; every problem and the first; the receipt on
// success; the error code, message, hint and exit code on failure.
type VerifyReport struct {
	OK              bool      `json:"ok"`
	Status          string    `json:"status"`
	Manifest        string    `json:"manifest"`
	RuntimeDir      string    `json:"runtimeDir,omitempty"`
	Deep            bool      `json:"deep"`
	Checked         []string  `json:"checked"`
	Problems        []Problem `json:"problems"`
	FirstDifference *Problem  `json:"firstDifference,omitempty"`
	Receipt         *Receipt  `json:"receipt,omitempty"`
	Code            errs.Code `json:"code,omitempty"`
	Message         string    `json:"message,omitempty"`
	Hint            string    `json:"hint,omitempty"`
	ExitCode        int       `json:"exitCode"`
}

// Report statuses.
const (
	ReportNotInstalled = "not-installed"
	ReportInvalid      = "invalid"
	ReportError        = "error"
)

// NewVerifyReport is the report of a verification: res and err are what
// Verify returned (err, when not nil, wins: verification did not run to
// the end).
func NewVerifyReport(req VerifyRequest, res *VerifyResult, err error) *VerifyReport {
	r := &VerifyReport{Manifest: req.ManifestPath, Deep: req.Deep, Problems: []Problem{}}
	if abs, aerr := filepath.Abs(req.ManifestPath); aerr == nil {
		r.Manifest = abs
	}
	r.Checked = []string{}
	if res != nil {
		r.Checked = append(r.Checked, "record", "package", "workerArchive", "tree")
		if req.Deep {
			r.Checked = append(r.Checked, "content")
		}
		r.RuntimeDir = res.Layout.RuntimeDir
		r.Problems = append(r.Problems, res.Found...)
		if len(res.Found) > 0 {
			first := res.Found[0]
			r.FirstDifference = &first
		}
	}
	if err == nil && res != nil && len(res.Found) > 0 {
		err = VerifyFailed(res)
	}
	switch {
	case err != nil:
		r.Code, r.Message, r.ExitCode = errs.CodeOf(err), err.Error(), int(errs.KindOf(err))
		if e := errs.As(err); e != nil {
			r.Hint = e.Hint
		}
		r.Status = ReportError
		if res != nil && len(res.Found) > 0 {
			r.Status = ReportInvalid
			if res.NotInstalled {
				r.Status = ReportNotInstalled
			}
		}
	case res != nil:
		r.OK, r.Status, r.Receipt = true, StatusExistingVerified, res.Receipt
	}
	return r
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

func verifyInstalled(in *Inputs, l Layout, cliVersion string, depth int) []Problem {
	m := in.Manifest
	var probs []Problem
	add := func(path, format string, args ...any) {
		probs = append(probs, Problem{path, fmt.Sprintf(format, args...)})
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
func verifyTree(l Layout, rec *Record, depth int) []Problem {
	tree, err := readTree(l.RuntimeDir)
	if err != nil {
		return []Problem{{l.RuntimeDir, fmt.Sprintf("cannot read the installed tree: %v", err)}}
	}
	if depth != verifyDeepest && rec.Tree != "" && tree.stamp() == rec.Tree {
		return nil
	}
	idx, prob := readIndex(l, rec)
	if prob != nil {
		return []Problem{*prob}
	}
	probs, files := compareTree(l, tree, idx, depth != verifyShallow)
	if depth != verifyShallow {
		probs = append(probs, hashFiles(files)...)
	}
	sortWalk(probs)
	return probs
}

// readIndex reads the install index and checks it against the record's
// digest.
func readIndex(l Layout, rec *Record) (*Index, *Problem) {
	idxPath := filepath.Join(l.RuntimeDir, IndexName)
	b, err := fsx.ReadRegular(idxPath, maxIndexBytes)
	if err != nil {
		return nil, &Problem{idxPath, err.Error()}
	}
	if got := sha256Hex(b); got != rec.Index.SHA256 {
		return nil, &Problem{idxPath, fmt.Sprintf("install index has SHA-256 %s, the install record says %s", got, rec.Index.SHA256)}
	}
	// The digest pins these bytes to what install wrote (the record that
	// holds it is decoded strictly), so the index needs no second
	// strictness scan: half the cost of reading 43,000 entries.
	var idx Index
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	err = dec.Decode(&idx)
	if err == nil && idx.Schema != IndexSchema {
		err = fmt.Errorf("schema %q, want %q (installed by an older clawkit)", idx.Schema, IndexSchema)
	}
	if err != nil {
		return nil, &Problem{idxPath, fmt.Sprintf("install index is not valid: %v", err)}
	}
	return &idx, nil
}

// Problem is one thing verification found wrong, at an absolute path.
type Problem struct {
	Path    string `json:"path"`
	Problem string `json:"problem"`
}

// String is the problem's line: "<path>: <problem>", like go mod verify.
func (p Problem) String() string { return p.Path + ": " + p.Problem }

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
func compareTree(l Layout, tree *stampDir, idx *Index, wantJobs bool) ([]Problem, []hashJob) {
	var (
		probs  []Problem
		jobs   []hashJob
		byPath map[string]IndexEntry
	)
	idxPath := filepath.Join(l.RuntimeDir, IndexName)
	add := func(abs, format string, args ...any) {
		probs = append(probs, Problem{abs, fmt.Sprintf(format, args...)})
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
		// The absolute path only when it is reported or hashed: most
		// entries are neither.
		abs := func() string { return l.RuntimeDir + string(filepath.Separator) + filepath.FromSlash(name) }
		got := tree.lookup(name)
		if got == nil {
			add(abs(), "missing")
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
				add(abs(), "hard link target %q is not in the install index", e.Link)
				continue
			}
			want.Mode = e.Mode
		default:
			add(idxPath, "unknown entry type %q for %q", e.Type, e.Path)
			continue
		}
		if gt, wt := typeName(got.mode), typeName(wantMode(want.Type)); gt != wt {
			add(abs(), "is a %s, installed a %s", gt, wt)
			continue
		}
		if want.Type != "symlink" && want.Mode != modeString(got.mode) {
			add(abs(), "mode is %s, installed %s", modeString(got.mode), want.Mode)
			continue
		}
		switch want.Type {
		case "file":
			if got.size != want.Size {
				add(abs(), "size is %d bytes, installed %d", got.size, want.Size)
				continue
			}
			if wantJobs {
				jobs = append(jobs, hashJob{abs: abs(), size: want.Size, sum: want.SHA256})
			}
		case "symlink":
			target, err := e.link()
			if err != nil || got.size != int64(len(target)) {
				add(abs(), "symlink points elsewhere (want %q)", e.Link)
				continue
			}
			if wantJobs {
				jobs = append(jobs, hashJob{abs: abs(), link: target})
			}
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
func hashFiles(jobs []hashJob) []Problem {
	var (
		mu    sync.Mutex
		probs []Problem
		wg    sync.WaitGroup
	)
	report := func(p, format string, args ...any) {
		mu.Lock()
		probs = append(probs, Problem{p, fmt.Sprintf(format, args...)})
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
func sortWalk(probs []Problem) {
	slices.SortStableFunc(probs, func(a, b Problem) int { return cmpWalk(a.Path, b.Path) })
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
