// Package archive reads untrusted tar.gz archives safely: a streaming walk
// that validates every header against fixed limits before the caller sees
// it, and an extract-to-directory built on that walk.
//
// It is shared by `clawkit crabbox install` (which extracts the node
// bootstrap) and `clawkit runtime-artifacts inspect` (which re-reads an
// export). The rules are docs/runtime-artifacts.md's:
//
//   - the compressed archive is at most 512 MiB;
//   - at most 250,000 entries;
//   - at most 2 GiB of regular-file content, and content at most 64 times
//     the compressed size (the expansion ratio);
//   - every entry name is at most 1,024 bytes, relative, normalised (no "",
//     "." or ".." segments, no leading "./", no doubled "/"), with no "\" and
//     no NUL; directory names may end in one "/", which is dropped;
//   - no two entries share a name, and no entry lives below a file, a symlink
//     or a hard link (so nothing is ever written through a link);
//   - symlink targets are relative, use ".." only as leading segments, and
//     resolve (lexically, from the link's folder) inside the root; hard links
//     name an earlier regular-file entry of the same archive;
//   - devices, FIFOs, sparse files and any other type are refused;
//   - after the end-of-archive marker only zero padding may follow, and the
//     gzip stream must end cleanly (its CRC and length are checked).
//
// Every refusal is an *errs.Error of kind failed with a stable code
// (Code* constants) naming the entry, so a CLI can print it as is.
//
// Why lexical link checks are enough: entries may not live below a link,
// targets may contain ".." only as a prefix, and every target resolves inside
// the root from a real (non-link) folder. Resolving such a target walks up
// through real folders and then down through names that are either real or
// links obeying the same rule, so by induction no resolution leaves the root.
// ExtractDir additionally creates files with O_EXCL|O_NOFOLLOW into a folder
// that must start empty.
package archive

import (
	"archive/tar"
	"bufio"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"path"
	"strings"
	"sync/atomic"

	"github.com/klauspost/compress/gzip"

	"github.com/clawkit/clawkit/pkg/errs"
	"github.com/clawkit/clawkit/pkg/fsx"
)

// Limits bound what a walk accepts. The zero value of a field means "use the
// default" (DefaultLimits), so callers can override a single limit.
type Limits struct {
	MaxArchiveBytes  int64 // compressed size
	MaxEntries       int   // headers returned to the caller (PAX/GNU meta headers excluded)
	MaxExpandedBytes int64 // sum of regular-file sizes
	MaxRatio         int64 // expanded content / compressed size
	MaxPathBytes     int   // bytes of an entry name (and of a link target)
}

// DefaultLimits are docs/runtime-artifacts.md's limits.
func DefaultLimits() Limits {
	return Limits{
		MaxArchiveBytes:  512 << 20,
		MaxEntries:       250_000,
		MaxExpandedBytes: 2 << 30,
		MaxRatio:         64,
		MaxPathBytes:     1024,
	}
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.MaxArchiveBytes > 0 {
		d.MaxArchiveBytes = l.MaxArchiveBytes
	}
	if l.MaxEntries > 0 {
		d.MaxEntries = l.MaxEntries
	}
	if l.MaxExpandedBytes > 0 {
		d.MaxExpandedBytes = l.MaxExpandedBytes
	}
	if l.MaxRatio > 0 {
		d.MaxRatio = l.MaxRatio
	}
	if l.MaxPathBytes > 0 {
		d.MaxPathBytes = l.MaxPathBytes
	}
	return d
}

// ErrUnsafe is wrapped by every refusal of this package, so callers can tell
// "the archive is bad" from their own callback's errors with errors.Is.
var ErrUnsafe = errors.New("unsafe or malformed archive")

const unsafeHint = "the archive is refused as a whole; rebuild it with 'clawkit runtime-artifacts export' or obtain it again from its producer"

func refuse(code errs.Code, format string, args ...any) *errs.Error {
	return errs.Failed(code, format, args...).WithHint("%s", unsafeHint).Wrap(ErrUnsafe)
}

// Type is the kind of an accepted entry.
type Type int

// The entry types.
const (
	TypeFile Type = iota + 1
	TypeDir
	TypeSymlink
	TypeHardlink
)

func (t Type) String() string {
	switch t {
	case TypeFile:
		return "file"
	case TypeDir:
		return "dir"
	case TypeSymlink:
		return "symlink"
	case TypeHardlink:
		return "hardlink"
	}
	return "unknown"
}

// Entry is one validated archive member.
type Entry struct {
	Path     string      // normalised, slash-separated, relative; no trailing "/"
	Type     Type        //
	Mode     fs.FileMode // permission bits from the header (mode & 0o777)
	RawMode  int64       // the header's mode field as stored (for bundle hashes)
	Size     int64       // content bytes (regular files only)
	Linkname string      // symlink target, or the earlier entry a hard link names
	Index    int         // position among the entries handed out (0 first)
}

// Stats describe a completed walk.
type Stats struct {
	Entries         int   // entries handed to the callback
	Files           int   // regular files among them
	ExpandedBytes   int64 // sum of regular-file sizes
	CompressedBytes int64 // gzip bytes consumed
	SHA256          [32]byte
}

// Options tune a walk.
type Options struct {
	Limits Limits
	// Size is the compressed archive's total size when known (a file), else
	// 0. When known, the size limit is checked before reading and the
	// expansion ratio is enforced exactly as content streams by; when
	// unknown, the ratio is checked against the bytes consumed so far plus a
	// final check at the end.
	Size int64
	// SkipHash leaves Stats.SHA256 zero instead of hashing the compressed
	// bytes (for callers that already checked the digest and pin the file
	// another way): the hash runs on the decompression goroutine, which is
	// the critical path of an extraction.
	SkipHash bool
}

// Walk reads a gzip-compressed tar stream from r and calls fn for every
// accepted entry in archive order. For regular files body streams the
// content (fn may read all, some or none of it; the rest is skipped); for
// other types body is nil. fn's error stops the walk and is returned as is.
// Every refusal happens before fn sees the offending entry. Stats.SHA256 is
// the SHA-256 of the compressed bytes consumed, which is the whole archive
// when Walk returns nil.
func Walk(r io.Reader, opt Options, fn func(e *Entry, body io.Reader) error) (Stats, error) {
	lim := opt.Limits.withDefaults()
	var st Stats
	if opt.Size > lim.MaxArchiveBytes {
		return st, refuse(errs.CodeArchiveTooLarge, "archive is %d bytes, over the limit of %d", opt.Size, lim.MaxArchiveBytes)
	}
	cr := &countingReader{r: r, max: lim.MaxArchiveBytes}
	if !opt.SkipHash {
		cr.h = sha256.New()
	}
	// A large buffer keeps the gzip reader from issuing small reads.
	br := bufio.NewReaderSize(cr, 256<<10)
	zr, err := gzip.NewReader(br)
	if err != nil {
		if cr.over.Load() {
			return st, refuse(errs.CodeArchiveTooLarge, "archive is over the limit of %d bytes", lim.MaxArchiveBytes)
		}
		return st, refuse(CodeCorrupt, "not a gzip stream: %v", err)
	}
	// One gzip member only: bytes after it (another member or junk) could
	// carry content that other readers would see and we would not.
	zr.Multistream(false)
	// Decompress ahead in another goroutine: tar parsing and the caller's
	// writes overlap with inflation (as `tar -xzf` overlaps with gzip).
	ra := newReadAhead(zr)
	defer fsx.CloseRead(ra)
	w := &walker{lim: lim, opt: opt, cr: cr, st: &st, seen: make(map[string]Type)}
	tr := tar.NewReader(ra)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return st, w.streamErr(err, "reading tar header")
		}
		e, err := w.accept(h)
		if err != nil {
			return st, err
		}
		if e == nil { // global PAX header: metadata only
			continue
		}
		var body io.Reader
		var lr *limitedBody
		if e.Type == TypeFile {
			lr = &limitedBody{r: tr, w: w, left: e.Size}
			body = lr
		}
		if err := fn(e, body); err != nil {
			return st, err
		}
		if lr != nil {
			// Skip what the callback left unread, still counted and checked.
			if _, err := io.Copy(io.Discard, lr); err != nil {
				return st, err
			}
		}
	}
	// Only zero padding may follow the end-of-archive marker; read it to the
	// end so that gzip verifies its CRC and length.
	if err := w.drainPadding(ra); err != nil {
		return st, err
	}
	if _, err := br.Peek(1); err != io.EOF {
		if cr.over.Load() {
			return st, refuse(errs.CodeArchiveTooLarge, "archive is over the limit of %d bytes", lim.MaxArchiveBytes)
		}
		return st, refuse(CodeCorrupt, "archive has bytes after the end of its gzip stream")
	}
	if w.content > 0 {
		if err := w.checkRatio(cr.n.Load()); err != nil {
			return st, err
		}
	}
	st.CompressedBytes = cr.n.Load()
	st.ExpandedBytes = w.content
	if opt.Size > 0 && cr.n.Load() != opt.Size {
		return st, refuse(CodeCorrupt, "archive has %d bytes of gzip data but %d were expected (trailing bytes after the gzip stream?)", cr.n.Load(), opt.Size)
	}
	if cr.h != nil {
		copy(st.SHA256[:], cr.h.Sum(nil))
	}
	return st, nil
}

type walker struct {
	lim     Limits
	opt     Options
	cr      *countingReader
	st      *Stats
	content int64
	// seen maps every path the archive defines, explicitly or as an
	// ancestor folder, to its type (implicit folders are TypeDir with
	// implicitDir set in implicit).
	seen     map[string]Type
	implicit map[string]bool
}

func (w *walker) streamErr(err error, what string) error {
	if e := errs.As(err); e != nil {
		return err
	}
	if w.cr.over.Load() {
		return refuse(errs.CodeArchiveTooLarge, "archive is over the limit of %d bytes", w.lim.MaxArchiveBytes)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return refuse(CodeCorrupt, "archive is truncated (%s)", what)
	}
	return refuse(CodeCorrupt, "archive is corrupt (%s): %v", what, err)
}

// checkRatio enforces content ≤ MaxRatio × compressed.
func (w *walker) checkRatio(compressed int64) error {
	if compressed <= 0 {
		compressed = 1
	}
	if w.content/w.lim.MaxRatio > compressed || (w.content/w.lim.MaxRatio == compressed && w.content%w.lim.MaxRatio != 0) {
		return refuse(CodeRatio, "archive expands to more than %d times its compressed size (%d content bytes from %d compressed bytes): refusing a possible decompression bomb", w.lim.MaxRatio, w.content, compressed)
	}
	return nil
}

// addContent accounts n more content bytes before they are handed out.
func (w *walker) addContent(n int64) error {
	w.content += n
	if w.content > w.lim.MaxExpandedBytes {
		return refuse(CodeExpanded, "archive expands to more than %d bytes of content", w.lim.MaxExpandedBytes)
	}
	if w.opt.Size > 0 {
		return w.checkRatio(w.opt.Size)
	}
	return nil
}

func (w *walker) accept(h *tar.Header) (*Entry, error) {
	if h.Typeflag == tar.TypeXGlobalHeader {
		return nil, nil
	}
	w.st.Entries++
	if w.st.Entries > w.lim.MaxEntries {
		return nil, refuse(CodeTooManyEntries, "archive has more than %d entries", w.lim.MaxEntries)
	}
	name := h.Name
	if len(name) > w.lim.MaxPathBytes {
		return nil, refuse(CodeArchiveInvalidPath, "entry name of %d bytes is over the limit of %d (%.64q…)", len(name), w.lim.MaxPathBytes, name)
	}
	e := &Entry{RawMode: h.Mode, Mode: fs.FileMode(h.Mode) & fs.ModePerm, Index: w.st.Entries - 1}
	for k := range h.PAXRecords {
		if strings.HasPrefix(k, "GNU.sparse.") {
			return nil, refuse(CodeUnsupported, "entry %q is a sparse file; archives may hold only plain files, folders and links", name)
		}
	}
	switch h.Typeflag {
	case tar.TypeReg, '\x00': // tar.TypeRegA (deprecated): old writers still emit '\x00' for a regular file; reading it is the point
		e.Type = TypeFile
	case tar.TypeDir:
		e.Type = TypeDir
		name = strings.TrimSuffix(name, "/")
	case tar.TypeSymlink:
		e.Type = TypeSymlink
	case tar.TypeLink:
		e.Type = TypeHardlink
	case tar.TypeChar, tar.TypeBlock:
		return nil, refuse(CodeUnsupported, "entry %q is a device node; archives may hold only files, folders and links", name)
	case tar.TypeFifo:
		return nil, refuse(CodeUnsupported, "entry %q is a FIFO; archives may hold only files, folders and links", name)
	default:
		return nil, refuse(CodeUnsupported, "entry %q has unsupported type %q", name, h.Typeflag)
	}
	if err := checkName(name); err != nil {
		return nil, refuse(CodeArchiveInvalidPath, "entry %q: %v", h.Name, err)
	}
	e.Path = name
	if e.Type == TypeFile {
		if h.Size < 0 {
			return nil, refuse(CodeCorrupt, "entry %q has a negative size", name)
		}
		e.Size = h.Size
	}
	if err := w.place(e); err != nil {
		return nil, err
	}
	switch e.Type {
	case TypeSymlink:
		if err := w.checkSymlink(e.Path, h.Linkname); err != nil {
			return nil, err
		}
		e.Linkname = h.Linkname
	case TypeHardlink:
		if err := checkName(h.Linkname); err != nil || len(h.Linkname) > w.lim.MaxPathBytes {
			return nil, refuse(CodeLinkEscape, "hard link %q names %q, which is not a normalised path inside the archive", name, h.Linkname)
		}
		if t, ok := w.seen[h.Linkname]; !ok || t != TypeFile || w.implicit[h.Linkname] {
			return nil, refuse(CodeLinkEscape, "hard link %q names %q, which is not an earlier regular file of this archive", name, h.Linkname)
		}
		e.Linkname = h.Linkname
	}
	if e.Type == TypeFile {
		w.st.Files++
	}
	return e, nil
}

// place records e's path and refuses duplicates and entries below anything
// that is not a folder.
func (w *walker) place(e *Entry) error {
	// Ancestors first: each must be a folder (explicit or implicit).
	for i := 0; i < len(e.Path); i++ {
		if e.Path[i] != '/' {
			continue
		}
		anc := e.Path[:i]
		t, ok := w.seen[anc]
		if !ok {
			w.seen[anc] = TypeDir
			if w.implicit == nil {
				w.implicit = make(map[string]bool)
			}
			w.implicit[anc] = true
			continue
		}
		if t != TypeDir {
			return refuse(CodeConflict, "entry %q lies below %q, which is a %s", e.Path, anc, t)
		}
	}
	if t, ok := w.seen[e.Path]; ok {
		// A folder named implicitly by earlier entries may be declared once
		// explicitly (archivers sometimes emit the folder after its files).
		if t == TypeDir && e.Type == TypeDir && w.implicit[e.Path] {
			delete(w.implicit, e.Path)
			return nil
		}
		if t == TypeDir && w.implicit[e.Path] {
			return refuse(CodeConflict, "entry %q is a %s but earlier entries use it as a folder", e.Path, e.Type)
		}
		return refuse(CodeDuplicate, "entry %q appears more than once", e.Path)
	}
	w.seen[e.Path] = e.Type
	return nil
}

func (w *walker) checkSymlink(name, target string) error {
	switch {
	case target == "":
		return refuse(CodeLinkEscape, "symlink %q has an empty target", name)
	case len(target) > w.lim.MaxPathBytes:
		return refuse(CodeLinkEscape, "symlink %q has a target of %d bytes, over the limit of %d", name, len(target), w.lim.MaxPathBytes)
	case strings.ContainsRune(target, 0) || strings.Contains(target, `\`):
		return refuse(CodeLinkEscape, "symlink %q has a target with NUL or backslash", name)
	case strings.HasPrefix(target, "/"):
		return refuse(CodeLinkEscape, "symlink %q points to the absolute path %q", name, target)
	}
	leading := true
	for seg := range strings.SplitSeq(target, "/") {
		if seg == ".." {
			if !leading {
				return refuse(CodeLinkEscape, "symlink %q target %q uses \"..\" after a name", name, target)
			}
			continue
		}
		leading = false
	}
	resolved := path.Join(path.Dir(name), target)
	if resolved == ".." || strings.HasPrefix(resolved, "../") {
		return refuse(CodeLinkEscape, "symlink %q points to %q, outside the archive root", name, target)
	}
	return nil
}

// checkName is the entry-name rule: fsx.CheckRel (relative, no "\", NUL, "",
// "." or ".." segments) and at most MaxDepth segments.
func checkName(name string) error {
	if err := fsx.CheckRel(name); err != nil {
		return err
	}
	if d := strings.Count(strings.TrimSuffix(name, "/"), "/") + 1; d > MaxDepth {
		return fmt.Errorf("path is %d folders deep, over the limit of %d", d, MaxDepth)
	}
	return nil
}

// MaxDepth bounds how many segments an entry path has (OpenClaw's own
// archive reader uses the same limit).
const MaxDepth = 64

func (w *walker) drainPadding(r io.Reader) error {
	buf := make([]byte, 32<<10)
	var total int64
	for {
		n, err := r.Read(buf)
		for _, b := range buf[:n] {
			if b != 0 {
				return refuse(CodeCorrupt, "archive has data after its end-of-archive marker")
			}
		}
		total += int64(n)
		// Legitimate padding is at most one tar record (10 KiB) past the
		// marker; allow generous slack but never an unbounded zero stream.
		if total > 1<<20 {
			return refuse(CodeCorrupt, "archive has more than 1 MiB of padding after its end-of-archive marker")
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return w.streamErr(err, "reading the end of the gzip stream")
		}
	}
}

// limitedBody hands out a regular file's content, accounting each byte
// against the expansion limits before the caller receives it.
type limitedBody struct {
	r    io.Reader
	w    *walker
	left int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	if n > 0 {
		if cerr := b.w.addContent(int64(n)); cerr != nil {
			return 0, cerr
		}
		if b.w.opt.Size <= 0 && b.w.content > b.w.lim.MaxRatio*max(b.w.cr.n.Load(), 1)+(1<<20) {
			// Unknown total size: refuse once content outruns the
			// compressed bytes read so far by the ratio (with 1 MiB of
			// slack for read-ahead); the exact check runs at the end.
			return 0, b.w.checkRatio(b.w.cr.n.Load())
		}
	}
	if err == io.EOF && b.left > 0 {
		return n, b.w.streamErr(io.ErrUnexpectedEOF, "reading entry content")
	}
	if err != nil && err != io.EOF {
		return n, b.w.streamErr(err, "reading entry content")
	}
	return n, nil
}

// countingReader counts and hashes the compressed bytes and stops past max.
type countingReader struct {
	r   io.Reader
	h   hash.Hash
	max int64
	// n and over are written by the read-ahead goroutine and read by the
	// walker, hence atomic.
	n    atomic.Int64
	over atomic.Bool
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if c.h != nil {
		c.h.Write(p[:n])
	}
	if c.n.Add(int64(n)) > c.max {
		c.over.Store(true)
		return n, fmt.Errorf("archive over %d bytes", c.max)
	}
	return n, err
}
