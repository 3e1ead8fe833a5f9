package artifacts

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
	"path/filepath"
	"strings"

	"github.com/clawkit/clawkit/pkg/archive"
	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/fsx"
)

// InspectReport is the outcome of Inspect.
type InspectReport struct {
	Dir      string    `json:"dir"`
	OK       bool      `json:"ok"`
	Manifest *Manifest `json:"manifest,omitempty"`
	Problems []string  `json:"problems"`
}

// walkArchive is the one place inspect reads an archive: pkg/archive's
// streaming walk under the §7 limits.
func walkArchive(r io.Reader, size int64, fn func(path string, typ archive.Type, mode int64, size int64, body io.Reader) error) ([32]byte, error) {
	st, err := archive.Walk(r, archive.Options{Size: size}, func(e *archive.Entry, body io.Reader) error {
		return fn(e.Path, e.Type, e.RawMode, e.Size, body)
	})
	return st.SHA256, err
}

// InspectContext re-reads an export: the manifest (strictly), then every
// archive's size and SHA-256, the worker bundle's entries and bundle hash,
// and the node bootstrap's package identity. Problems are collected, one
// line each; a missing or invalid manifest is an error by itself. It stops
// (with an "interrupted" error) once ctx is done.
func InspectContext(ctx context.Context, dir string) (*InspectReport, error) {
	st, err := os.Stat(dir)
	if err != nil || !st.IsDir() {
		return nil, errs.Usage(CodeExportMissing, "%s is not a folder", dir).
			WithHint("pass the output folder of 'clawkit runtime-artifacts export'")
	}
	mp := filepath.Join(dir, ManifestName)
	if _, err := os.Lstat(mp); errors.Is(err, fs.ErrNotExist) {
		return nil, errs.Failed(CodeManifestMissing, "%s has no %s: not a completed export", dir, ManifestName).
			WithHint("an export without its manifest was interrupted; export again")
	}
	m, _, err := LoadManifest(mp)
	if err != nil {
		return nil, err
	}
	rep := &InspectReport{Dir: dir, Manifest: m, Problems: []string{}}
	problem := func(format string, args ...any) { rep.Problems = append(rep.Problems, fmt.Sprintf(format, args...)) }

	// Worker bundle: every entry re-hashed against the manifest and the
	// bundle hash.
	var got []BundleEntry
	extra := 0
	checkArchiveFile(ctx, dir, m.WorkerBundle.Archive, problem, func(path string, typ archive.Type, mode, size int64, body io.Reader) error {
		if typ != archive.TypeFile || strings.Contains(path, "/") {
			extra++
			return nil
		}
		h := sha256.New()
		n, err := io.Copy(h, body)
		if err != nil {
			return err
		}
		got = append(got, BundleEntry{Path: path, Mode: uint32(mode & 0o7777), Size: n, SHA256: hex.EncodeToString(h.Sum(nil))})
		return nil
	})
	if got != nil || extra > 0 {
		if extra > 0 {
			problem("%s: %d entries that are not files at the archive root", m.WorkerBundle.Path, extra)
		}
		SortBundleEntries(got)
		want := m.WorkerBundle.HashEntries()
		wi := map[string]BundleEntry{}
		for _, e := range want {
			wi[e.Path] = e
		}
		gi := map[string]bool{}
		for _, e := range got {
			gi[e.Path] = true
			w, ok := wi[e.Path]
			switch {
			case !ok:
				problem("%s: unexpected entry %s", m.WorkerBundle.Path, e.Path)
			case w.Size != e.Size:
				problem("%s: %s is %d bytes, manifest says %d", m.WorkerBundle.Path, e.Path, e.Size, w.Size)
			case w.SHA256 != e.SHA256:
				problem("%s: %s has SHA-256 %s, manifest says %s", m.WorkerBundle.Path, e.Path, e.SHA256, w.SHA256)
			case w.Mode != e.Mode:
				problem("%s: %s has mode %s, manifest says %s", m.WorkerBundle.Path, e.Path, FormatMode(e.Mode), FormatMode(w.Mode))
			}
		}
		for _, w := range want {
			if !gi[w.Path] {
				problem("%s: entry %s is missing", m.WorkerBundle.Path, w.Path)
			}
		}
		if h := BundleHash(got); h != m.WorkerBundle.BundleHash {
			problem("%s: bundle hash of the archive's entries is %s, manifest says %s", m.WorkerBundle.Path, h, m.WorkerBundle.BundleHash)
		}
	}

	// Node bootstrap: limits, digest, and the package it claims to carry.
	pkgJSON := PackagePath + "/package.json"
	var pj *PackageJSON
	checkArchiveFile(ctx, dir, m.NodeBootstrap.Archive, problem, func(path string, typ archive.Type, mode, size int64, body io.Reader) error {
		if path == pkgJSON && typ == archive.TypeFile {
			b, err := io.ReadAll(io.LimitReader(body, maxPackageJSONBytes+1))
			if err != nil {
				return err
			}
			var p PackageJSON
			if json.Unmarshal(b, &p) == nil {
				pj = &p
			}
		}
		return nil
	})
	if pj == nil {
		problem("%s: has no readable %s", m.NodeBootstrap.Path, pkgJSON)
	} else if pj.Name != m.Package.Name || pj.Version != m.Package.Version {
		problem("%s: carries %s@%s, manifest says %s@%s", m.NodeBootstrap.Path, pj.Name, pj.Version, m.Package.Name, m.Package.Version)
	}
	if ctx.Err() != nil {
		return nil, Interrupted("inspect")
	}
	rep.OK = len(rep.Problems) == 0
	return rep, nil
}

// checkArchiveFile opens one archive of the export (no links), compares its
// size, then walks it (verifying the limits and computing its SHA-256 in
// the same pass) and compares the digest.
func checkArchiveFile(ctx context.Context, dir string, a Archive, problem func(string, ...any), fn func(string, archive.Type, int64, int64, io.Reader) error) {
	p, err := fsx.Join(dir, a.Path)
	if err != nil {
		problem("%s: unsafe path: %v", a.Path, err)
		return
	}
	f, err := fsx.OpenNoFollow(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			problem("%s: missing", a.Path)
		} else {
			problem("%s: cannot open: %v", a.Path, unwrapPathErr(err))
		}
		return
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		problem("%s: not a regular file", a.Path)
		return
	}
	if st.Size() != a.Bytes {
		problem("%s: size %d bytes, manifest says %d", a.Path, st.Size(), a.Bytes)
	}
	sum, err := walkArchive(archive.ContextReader(ctx, f), st.Size(), fn)
	if ctx.Err() != nil {
		return
	}
	if err != nil {
		problem("%s: %v", a.Path, err)
		// The digest still tells whether the bytes are the exported ones.
		if _, serr := f.Seek(0, io.SeekStart); serr == nil {
			h := sha256.New()
			if _, cerr := io.Copy(h, f); cerr == nil {
				copy(sum[:], h.Sum(nil))
			}
		}
	}
	if got := hex.EncodeToString(sum[:]); got != a.SHA256 {
		problem("%s: SHA-256 %s, manifest says %s", a.Path, got, a.SHA256)
	}
}

// Interrupted is the error of a command stopped by SIGINT/SIGTERM after it
// removed what it had staged: nothing is half-done (exit 1).
func Interrupted(what string) *errs.Error {
	return errs.Failed(errs.CodeInterrupted, "%s interrupted by a signal; nothing was left behind", what).
		WithHint("run the same command again")
}
