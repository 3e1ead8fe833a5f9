package archive

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"

	"github.com/clawkit/clawkit/pkg/errs"
)

// ExtractOptions tune ExtractDir.
type ExtractOptions struct {
	Options
	// HashFiles computes each regular file's SHA-256 while writing it and
	// passes it to OnEntry (an install index for later deep verification).
	HashFiles bool
	// OnEntry, when set, is called after each entry is on disk; sum is the
	// content SHA-256 of regular files when HashFiles is set, else zero.
	OnEntry func(e *Entry, sum [32]byte) error
}

// ExtractDir extracts a tar.gz stream into dest, which must be an existing,
// empty folder that nobody else writes to (a private staging folder). It is
// Walk plus file creation: nothing is created for a refused entry, but a
// refusal midway leaves the entries before it, so callers extract into a
// staging folder and remove it on error.
//
// Modes: permission bits come from the headers (setuid, setgid and sticky
// bits are dropped) and the process umask applies, as with `tar -x` run by
// an ordinary user; the owner always keeps read and write (and search on
// folders) so the tree can be verified and removed. Owners and times are
// not restored: files get the extraction time.
func ExtractDir(r io.Reader, dest string, opt ExtractOptions) (Stats, error) {
	ents, err := os.ReadDir(dest)
	if err != nil {
		return Stats{}, errs.Failed("extract_dest", "cannot read extraction folder %s: %v", dest, err).Wrap(err)
	}
	if len(ents) > 0 {
		return Stats{}, errs.Failed("extract_dest", "extraction folder %s is not empty", dest).
			WithHint("extract into a new, empty folder")
	}
	x := &extractor{dest: dest, opt: opt, made: map[string]bool{"": true}, buf: make([]byte, 256<<10)}
	if opt.HashFiles {
		x.h = sha256.New()
	}
	st, err := Walk(r, opt.Options, x.entry)
	if err != nil {
		return st, err
	}
	// Apply folder modes last (deepest first) so a read-only folder never
	// blocks writing its own content.
	slices.SortFunc(x.dirModes, func(a, b dirMode) int { return len(b.path) - len(a.path) })
	for _, d := range x.dirModes {
		if err := os.Chmod(d.path, d.mode); err != nil {
			return st, writeErr(d.path, err)
		}
	}
	return st, nil
}

type dirMode struct {
	path string
	mode fs.FileMode
}

type extractor struct {
	dest     string
	opt      ExtractOptions
	made     map[string]bool // folders known to exist (relative paths)
	dirModes []dirMode
	buf      []byte
	h        hash.Hash
}

func writeErr(p string, err error) error {
	return errs.Failed("extract_write", "cannot write %s: %v", p, err).
		WithHint("check free space and permissions of the target folder").Wrap(err)
}

func (x *extractor) abs(rel string) string {
	return filepath.Join(x.dest, filepath.FromSlash(rel))
}

// mkdirs creates the (validated) ancestor folders of rel.
func (x *extractor) mkdirs(rel string) error {
	dir := pathDir(rel)
	if x.made[dir] {
		return nil
	}
	if err := x.mkdirs(dir); err != nil {
		return err
	}
	p := x.abs(dir)
	if err := os.Mkdir(p, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return writeErr(p, err)
	}
	x.made[dir] = true
	return nil
}

func pathDir(rel string) string {
	for i := len(rel) - 1; i >= 0; i-- {
		if rel[i] == '/' {
			return rel[:i]
		}
	}
	return ""
}

func (x *extractor) entry(e *Entry, body io.Reader) error {
	if err := x.mkdirs(e.Path); err != nil {
		return err
	}
	p := x.abs(e.Path)
	var sum [32]byte
	switch e.Type {
	case TypeDir:
		if !x.made[e.Path] {
			if err := os.Mkdir(p, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
				return writeErr(p, err)
			}
			x.made[e.Path] = true
		}
		x.dirModes = append(x.dirModes, dirMode{p, e.Mode | 0o700})
	case TypeFile:
		// O_EXCL|O_NOFOLLOW: never through a link, never over anything.
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, e.Mode|0o600)
		if err != nil {
			return writeErr(p, err)
		}
		var w io.Writer = f
		if x.h != nil {
			x.h.Reset()
			w = io.MultiWriter(f, x.h)
		}
		n, err := io.CopyBuffer(onlyWriter{w}, body, x.buf)
		if cerr := f.Close(); err == nil && cerr != nil {
			err = writeErr(p, cerr)
		}
		if err != nil {
			if errs.As(err) == nil {
				err = writeErr(p, err)
			}
			return err
		}
		if n != e.Size {
			return refuse(CodeCorrupt, "entry %q is truncated (%d of %d bytes)", e.Path, n, e.Size)
		}
		if x.h != nil {
			x.h.Sum(sum[:0])
		}
	case TypeSymlink:
		if err := os.Symlink(e.Linkname, p); err != nil {
			return writeErr(p, err)
		}
	case TypeHardlink:
		if err := os.Link(x.abs(e.Linkname), p); err != nil {
			return writeErr(p, err)
		}
	default:
		return fmt.Errorf("internal: unexpected entry type %v", e.Type)
	}
	if x.opt.OnEntry != nil {
		return x.opt.OnEntry(e, sum)
	}
	return nil
}

// onlyWriter hides ReadFrom so io.CopyBuffer uses our buffer instead of
// *os.File's copy_file_range path (which would bypass the hash writer).
type onlyWriter struct{ io.Writer }
