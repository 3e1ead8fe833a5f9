package archive

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/clawkit/clawkit/pkg/errs"
)

// ExtractOptions tune ExtractDir.
type ExtractOptions struct {
	Options
	// HashFiles computes each regular file's SHA-256 while writing it and
	// passes it to OnEntry (an install index for later deep verification).
	HashFiles bool
	// Check, when set, is called for every accepted entry on the reading
	// goroutine, in archive order, before anything is created for it; its
	// error stops the extraction (callers add their own layout rules).
	Check func(e *Entry) error
	// OnEntry, when set, is called once each entry is on disk; sum is the
	// content SHA-256 of regular files when HashFiles is set, else zero.
	// Calls come from several goroutines, one at a time, and not in archive
	// order: e.Index is the entry's position in the archive.
	OnEntry func(e *Entry, sum [32]byte) error
	// Workers is how many goroutines create and write files (default 3).
	Workers int
}

// Memory bound of an extraction: file content waits in at most slabCount
// slabs of slabSize bytes between the reading goroutine and the writers,
// whatever the archive's size. Files up to bigFile bytes are copied whole
// into a slab (several small files share one); larger files stream through
// whole slabs.
const (
	slabSize  = 1 << 20
	slabCount = 8
	bigFile   = 256 << 10
)

// ExtractDir extracts a tar.gz stream into dest, which must be an existing,
// empty folder that nobody else writes to (a private staging folder). It is
// Walk plus file creation: nothing is created for a refused entry, but a
// refusal midway leaves the entries before it, so callers extract into a
// staging folder and remove it on error.
//
// One goroutine inflates (Walk's read-ahead), one parses the tar, checks
// every entry, creates folders and copies file content into a bounded set
// of buffers; a small pool of writers creates the files, writes and hashes
// them. Hard links are made once every file is written (they name earlier
// files). Every file is created with O_EXCL|O_NOFOLLOW in a folder this
// extraction created, so nothing is written through a link.
//
// Modes: permission bits come from the headers, at most MaxMode (0755:
// nothing writable by group or others; setuid, setgid and sticky bits are
// dropped), and the process umask applies, to files and folders alike, as
// with `tar -x` run by an ordinary user; the owner always keeps read and
// write (and search on folders) so the tree can be verified and removed.
// Owners and times are not restored: files get the extraction time.
func ExtractDir(r io.Reader, dest string, opt ExtractOptions) (Stats, error) {
	ents, err := os.ReadDir(dest)
	if err != nil {
		return Stats{}, errs.Failed(CodeExtractDest, "cannot read extraction folder %s: %v", dest, err).
			WithHint("check that the folder exists and is readable by this user").Wrap(err)
	}
	if len(ents) > 0 {
		return Stats{}, errs.Failed(CodeExtractDest, "extraction folder %s is not empty", dest).
			WithHint("extract into a new, empty folder")
	}
	workers := opt.Workers
	if workers <= 0 {
		workers = 3
	}
	x := &extractor{
		dest: dest, opt: opt, made: map[string]bool{"": true}, umask: processUmask(),
		jobs: make(chan *job, 64),
		pool: make(chan *slab, slabCount),
	}
	for range slabCount {
		s := &slab{buf: make([]byte, slabSize)}
		s.pool = x.pool
		x.pool <- s
	}
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			x.work()
		}()
	}
	st, werr := Walk(r, opt.Options, x.entry)
	if werr != nil {
		x.fail(werr)
	}
	x.release()
	close(x.jobs)
	wg.Wait()
	if err := x.err(); err != nil {
		return st, err
	}
	// Hard links last: their targets are written by now.
	for _, e := range x.links {
		p := x.abs(e.Path)
		if err := os.Link(x.abs(e.Linkname), p); err != nil {
			return st, writeErr(p, err)
		}
		if err := x.done(e, [32]byte{}); err != nil {
			return st, err
		}
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

// MaxMode bounds every extracted file's and folder's permission bits:
// nothing from an archive is writable by group or others, nothing is
// setuid, setgid or sticky.
const MaxMode fs.FileMode = 0o755

// FileMode is the mode a file entry is created with (the umask then
// applies): the header's permission bits within MaxMode, owner read and
// write always.
func FileMode(header fs.FileMode) fs.FileMode { return header&MaxMode | 0o600 }

// DirMode is the mode a folder entry is given (by chmod, which ignores the
// umask, so it is applied here): the header's permission bits within
// MaxMode less umask, owner read, write and search always.
func DirMode(header, umask fs.FileMode) fs.FileMode { return header&MaxMode&^umask | 0o700 }

// processUmask reads the process umask without changing it (umask(2) can
// only be read by setting it, which would race with files being created
// on other goroutines). Linux reports it in /proc/self/status; elsewhere
// the common 022 is assumed, which MaxMode already implies.
func processUmask() fs.FileMode {
	b, err := os.ReadFile("/proc/self/status")
	if err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "Umask:"); ok {
				if n, err := strconv.ParseUint(strings.TrimSpace(v), 8, 32); err == nil {
					return fs.FileMode(n) & fs.ModePerm
				}
			}
		}
	}
	return 0o022
}

type dirMode struct {
	path string
	mode fs.FileMode
}

// slab is a buffer shared by the files copied into it; it returns to the
// pool when the last of them is written.
type slab struct {
	buf  []byte
	refs atomic.Int32
	pool chan *slab
}

func (s *slab) unref() {
	if s.refs.Add(-1) == 0 {
		s.pool <- s // the pool has room for every slab: never blocks
	}
}

// job is one file or symlink for the writers.
type job struct {
	e   *Entry
	abs string
	// A small file's whole content (in s), or a large file's pieces.
	data   []byte
	s      *slab
	pieces chan piece
}

type piece struct {
	b []byte
	s *slab
}

type extractor struct {
	dest string
	opt  ExtractOptions
	// Reading goroutine only.
	made     map[string]bool // folders known to exist (relative paths)
	umask    fs.FileMode     // applied to folder modes (chmod ignores it)
	dirModes []dirMode
	links    []*Entry
	cur      *slab // slab small files are being copied into
	off      int

	jobs chan *job
	pool chan *slab

	mu      sync.Mutex // guards first
	first   error
	failed  atomic.Bool
	onEntry sync.Mutex // serialises OnEntry
}

func (x *extractor) fail(err error) {
	x.mu.Lock()
	if x.first == nil {
		x.first = err
	}
	x.mu.Unlock()
	x.failed.Store(true)
}

func (x *extractor) err() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.first
}

func (x *extractor) done(e *Entry, sum [32]byte) error {
	if x.opt.OnEntry == nil {
		return nil
	}
	x.onEntry.Lock()
	defer x.onEntry.Unlock()
	return x.opt.OnEntry(e, sum)
}

func writeErr(p string, err error) error {
	return errs.Failed(CodeExtractWrite, "cannot write %s: %v", p, err).
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

// release drops the reading goroutine's hold on its current slab.
func (x *extractor) release() {
	if x.cur != nil {
		x.cur.unref()
		x.cur = nil
	}
}

// slabFor returns room for n bytes (n ≤ slabSize) in the current slab or a
// fresh one, with a reference taken for the caller.
func (x *extractor) slabFor(n int) ([]byte, *slab) {
	if x.cur == nil || x.off+n > len(x.cur.buf) {
		x.release()
		x.cur = <-x.pool
		x.cur.refs.Store(1) // the reading goroutine's own hold
		x.off = 0
	}
	x.cur.refs.Add(1)
	b := x.cur.buf[x.off : x.off+n : x.off+n]
	x.off += n
	return b, x.cur
}

// entry is Walk's callback, on the reading goroutine.
func (x *extractor) entry(e *Entry, body io.Reader) error {
	if x.failed.Load() {
		return x.err()
	}
	if x.opt.Check != nil {
		if err := x.opt.Check(e); err != nil {
			return err
		}
	}
	if err := x.mkdirs(e.Path); err != nil {
		return err
	}
	p := x.abs(e.Path)
	switch e.Type {
	case TypeDir:
		if !x.made[e.Path] {
			if err := os.Mkdir(p, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
				return writeErr(p, err)
			}
			x.made[e.Path] = true
		}
		x.dirModes = append(x.dirModes, dirMode{p, DirMode(e.Mode, x.umask)})
		return x.done(e, [32]byte{})
	case TypeSymlink:
		x.jobs <- &job{e: e, abs: p}
		return nil
	case TypeHardlink:
		x.links = append(x.links, e)
		return nil
	case TypeFile:
	default:
		return fmt.Errorf("internal: unexpected entry type %v", e.Type)
	}
	if e.Size <= bigFile {
		b, s := x.slabFor(int(e.Size))
		if _, err := io.ReadFull(body, b); err != nil {
			s.unref()
			return truncated(e, err)
		}
		x.jobs <- &job{e: e, abs: p, data: b, s: s}
		return nil
	}
	// A large file: its pieces stream through whole slabs to the writer
	// that takes the job.
	x.release()
	j := &job{e: e, abs: p, pieces: make(chan piece, 2)}
	x.jobs <- j
	defer close(j.pieces)
	for left := e.Size; left > 0; {
		if x.failed.Load() {
			return x.err()
		}
		s := <-x.pool
		s.refs.Store(1)
		n := int(min(left, int64(len(s.buf))))
		if _, err := io.ReadFull(body, s.buf[:n]); err != nil {
			s.unref()
			err = truncated(e, err)
			x.fail(err) // before the writer sees the short file
			return err
		}
		j.pieces <- piece{b: s.buf[:n], s: s}
		left -= int64(n)
	}
	return nil
}

func truncated(e *Entry, err error) error {
	if errs.As(err) != nil {
		return err
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return refuse(CodeCorrupt, "entry %q is truncated", e.Path)
	}
	return err
}

// work is one writer: it creates, writes and hashes the files it is given
// and, after a failure, only releases buffers.
func (x *extractor) work() {
	h := sha256.New()
	for j := range x.jobs {
		if x.failed.Load() {
			j.discard()
			continue
		}
		var sum [32]byte
		var err error
		if j.e.Type == TypeSymlink {
			if err = os.Symlink(j.e.Linkname, j.abs); err != nil {
				err = writeErr(j.abs, err)
			}
		} else {
			sum, err = x.writeFile(j, h)
		}
		if err == nil {
			err = x.done(j.e, sum)
		}
		if err != nil {
			x.fail(err)
		}
	}
}

func (j *job) discard() {
	if j.s != nil {
		j.s.unref()
	}
	if j.pieces != nil {
		for p := range j.pieces {
			p.s.unref()
		}
	}
}

// writeFile creates j's file (never through a link, never over anything)
// and writes its content, hashing it when asked.
func (x *extractor) writeFile(j *job, h interface {
	io.Writer
	Reset()
	Sum([]byte) []byte
}) (sum [32]byte, err error) {
	fd, err := unix.Open(j.abs, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(FileMode(j.e.Mode)))
	if err != nil {
		j.discard()
		return sum, writeErr(j.abs, err)
	}
	if x.opt.HashFiles {
		h.Reset()
	}
	var n int64
	write := func(b []byte) error {
		for len(b) > 0 {
			k, err := unix.Write(fd, b)
			if err == unix.EINTR {
				continue
			}
			if err != nil {
				return writeErr(j.abs, err)
			}
			if x.opt.HashFiles {
				h.Write(b[:k])
			}
			n += int64(k)
			b = b[k:]
		}
		return nil
	}
	if j.pieces == nil {
		err = write(j.data)
		j.s.unref()
	} else {
		for p := range j.pieces {
			if err == nil {
				err = write(p.b)
			}
			p.s.unref()
		}
	}
	if err == nil && n != j.e.Size {
		// The reading goroutine stopped midway and has recorded why.
		err = refuse(CodeCorrupt, "entry %q is truncated (%d of %d bytes)", j.e.Path, n, j.e.Size)
	}
	if cerr := unix.Close(fd); err == nil && cerr != nil {
		err = writeErr(j.abs, cerr)
	}
	if err == nil && x.opt.HashFiles {
		h.Sum(sum[:0])
	}
	return sum, err
}
