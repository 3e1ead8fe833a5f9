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
	"sort"
	"strings"
	"sync"

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
	return errs.Failed(CodeRuntimeCacheInvalid, "runtime cache %s failed verification (%d problem(s))", res.Layout.RuntimeDir, len(res.Problems)).
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
	if rec == nil || depth == verifyShallow || (depth == verifyStamp && len(probs) > 0) {
		return probs
	}
	if depth == verifyStamp && rec.Tree != "" {
		if stamp, err := treeStamp(l.RuntimeDir); err == nil && stamp == rec.Tree {
			return nil
		}
	}
	probs = append(probs, verifyDeep(l, rec)...)
	return probs
}

// verifyDeep re-hashes every file of the install index (in parallel) and
// reports missing, changed and unexpected entries.
func verifyDeep(l Layout, rec *Record) []string {
	idxPath := filepath.Join(l.RuntimeDir, IndexName)
	var probs []string
	b, err := fsx.ReadRegular(idxPath, maxIndexBytes)
	if err != nil {
		return []string{idxPath + ": " + err.Error()}
	}
	if got := sha256Hex(b); got != rec.Index.SHA256 {
		return []string{fmt.Sprintf("%s: install index has SHA-256 %s, the install record says %s", idxPath, got, rec.Index.SHA256)}
	}
	var idx Index
	if err := strictJSON(b, &idx); err != nil || idx.Schema != IndexSchema {
		return []string{fmt.Sprintf("%s: install index is not valid: %v", idxPath, err)}
	}
	known := make(map[string]bool, len(idx.Entries)+2)
	known[RecordName], known[IndexName] = true, true
	type job struct {
		abs string
		e   IndexEntry
	}
	jobs := make(chan job, 256)
	var mu sync.Mutex
	report := func(p, format string, args ...any) {
		mu.Lock()
		probs = append(probs, p+": "+fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	var wg sync.WaitGroup
	for range max(runtime.GOMAXPROCS(0), 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 256<<10)
			for j := range jobs {
				n, sum, err := hashFile(j.abs, buf)
				switch {
				case errors.Is(err, fs.ErrNotExist):
					report(j.abs, "missing")
				case err != nil:
					report(j.abs, "%v", err)
				case n != j.e.Size || sum != j.e.SHA256:
					report(j.abs, "content has been modified (%d bytes, SHA-256 %s; installed %d bytes, %s)", n, sum, j.e.Size, j.e.SHA256)
				}
			}
		}()
	}
	var byPath map[string]IndexEntry
	for _, e := range idx.Entries {
		name, err := e.name()
		if err == nil {
			err = fsx.CheckRel(name)
		}
		if err != nil {
			report(idxPath, "invalid path %q in the install index", e.Path)
			continue
		}
		known[name] = true
		abs := filepath.Join(l.RuntimeDir, filepath.FromSlash(name))
		switch e.Type {
		case "file", "hardlink":
			fe := e
			if e.Type == "hardlink" {
				// Same content as its target; check it is still a
				// regular file holding that content.
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
				if fe, ok = byPath[target]; err != nil || !ok || fe.Type != "file" {
					report(abs, "hard link target %q is not in the install index", e.Link)
					continue
				}
			}
			jobs <- job{abs, fe}
		case "dir":
			if st, err := os.Lstat(abs); err != nil || !st.IsDir() {
				report(abs, "folder is missing or replaced")
			}
		case "symlink":
			want, err := e.link()
			if t, rerr := os.Readlink(abs); err != nil || rerr != nil || t != want {
				report(abs, "symlink is missing or points elsewhere (want %q)", want)
			}
		default:
			report(idxPath, "unknown entry type %q for %q", e.Type, e.Path)
		}
	}
	close(jobs)
	wg.Wait()
	// Unexpected additions: any non-folder not in the index.
	filepath.WalkDir(l.RuntimeDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			report(p, "%v", err)
			return nil
		}
		if d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(l.RuntimeDir, p)
		if !known[filepath.ToSlash(rel)] {
			report(p, "unexpected file (not part of the install)")
		}
		return nil
	})
	sort.Strings(probs)
	return probs
}
