package artifacts

import (
	"errors"
	"fmt"
	"io"
	"path"
	"strconv"
)

// The archive writer. Archives are deterministic: headers carry only the
// name, mode, size and type; uid, gid and mtime are left empty (read as 0),
// owner names are empty, and the gzip header has no mtime, no name and OS
// 255. The header layout (octal fields padded and closed with " \0", empty
// uid/gid/mtime, checksum "%06o \0") is the one node-tar writes with
// {portable:true, noMtime:true}, so for the same files the uncompressed
// stream is byte-identical to OpenClaw's own worker bundle; the compressed
// bytes differ because the deflate encoder differs.

const blockSize = 512

// zeroBlocks pads entries and ends the archive.
var zeroBlocks [2 * blockSize]byte

var errFileChanged = errors.New("file changed while it was being archived")

// tarWriter writes ustar regular-file entries to w.
type tarWriter struct {
	w       io.Writer
	hdr     [blockSize]byte
	buf     []byte
	content int64 // regular-file bytes written, for the expansion-ratio check
}

func newTarWriter(w io.Writer) *tarWriter {
	return &tarWriter{w: w}
}

// octalField writes v into f as node-tar does: zero-padded octal of
// len(f)-2 digits followed by " \0". Values too wide for that use all but
// one byte and a trailing NUL, the classic ustar form every reader accepts.
func octalField(f []byte, v int64) {
	s := strconv.FormatInt(v, 8)
	if len(s) <= len(f)-2 {
		pad := len(f) - 2 - len(s)
		for i := 0; i < pad; i++ {
			f[i] = '0'
		}
		copy(f[pad:], s)
		f[len(f)-2], f[len(f)-1] = ' ', 0
		return
	}
	pad := len(f) - 1 - len(s)
	for i := 0; i < pad; i++ {
		f[i] = '0'
	}
	copy(f[pad:], s)
	f[len(f)-1] = 0
}

// maxTarSize is the largest size the 12-byte field holds in octal.
const maxTarSize = 1<<33 - 1

// splitUstarName splits p into ustar prefix (≤155) and name (≤100) at a
// slash, or reports that it cannot.
func splitUstarName(p string) (prefix, name string, ok bool) {
	if len(p) <= 100 {
		return "", p, true
	}
	for i := len(p) - 1; i > 0; i-- {
		if p[i] != '/' {
			continue
		}
		if len(p)-i-1 > 100 {
			break
		}
		if i <= 155 && len(p)-i-1 > 0 {
			return p[:i], p[i+1:], true
		}
	}
	return "", "", false
}

func (t *tarWriter) header(name string, prefix string, mode uint32, size int64, typ byte) error {
	return t.headerLink(name, prefix, mode, size, typ, "")
}

func (t *tarWriter) headerLink(name string, prefix string, mode uint32, size int64, typ byte, link string) error {
	h := t.hdr[:]
	clear(h)
	copy(h[0:100], name)
	copy(h[157:257], link)
	octalField(h[100:108], int64(mode))
	// uid 108:116 and gid 116:124 stay empty, as does mtime 136:148.
	octalField(h[124:136], size)
	h[156] = typ
	copy(h[257:263], "ustar\x00")
	copy(h[263:265], "00")
	octalField(h[329:337], 0)
	octalField(h[337:345], 0)
	copy(h[345:500], prefix)
	for i := 148; i < 156; i++ {
		h[i] = ' '
	}
	var sum int64
	for _, c := range h {
		sum += int64(c)
	}
	octalField(h[148:156], sum)
	_, err := t.w.Write(h)
	return err
}

// paxPath writes a PAX extended header carrying a path too long for ustar.
func (t *tarWriter) paxPath(p string) error {
	body := " path=" + p + "\n"
	// A record is "<length> path=<p>\n" where <length> counts itself.
	total := len(body) + len(strconv.Itoa(len(body)))
	for t := len(body) + len(strconv.Itoa(total)); t != total; t = len(body) + len(strconv.Itoa(total)) {
		total = t
	}
	rec := strconv.Itoa(total) + body
	name := "PaxHeader/" + path.Base(p)
	if len(name) > 100 {
		name = name[:100]
	}
	if err := t.header(name, "", 0o644, int64(len(rec)), 'x'); err != nil {
		return err
	}
	return t.writePadded([]byte(rec))
}

func (t *tarWriter) writePadded(b []byte) error {
	if _, err := t.w.Write(b); err != nil {
		return err
	}
	if r := len(b) % blockSize; r != 0 {
		_, err := t.w.Write(zeroBlocks[:blockSize-r])
		return err
	}
	return nil
}

// WriteFile writes one regular file whose content is the next size bytes
// of r, teeing the content into sink (a hash) when not nil. A reader that
// ends early or has more than size bytes is reported as errFileChanged:
// the header was already written with the size seen by fstat.
func (t *tarWriter) WriteFile(p string, mode uint32, size int64, r io.Reader, sink io.Writer) error {
	if size < 0 || size > maxTarSize {
		return fmt.Errorf("%s: size %d is outside the archive format's range", p, size)
	}
	name, prefix, err := t.entryName(p)
	if err != nil {
		return err
	}
	if err := t.header(name, prefix, mode, size, '0'); err != nil {
		return err
	}
	t.content += size
	if z, ok := t.w.(*gzWriter); ok {
		// Straight into the compressor's block, without t.buf.
		got, err := z.readN(r, size, sink)
		if errors.Is(err, io.EOF) || (err == nil && got < size) {
			return errFileChanged
		}
		if err != nil {
			return err
		}
		return t.finishFile(r, size)
	}
	if t.buf == nil {
		t.buf = make([]byte, 256<<10)
	}
	left := size
	for left > 0 {
		n := int64(len(t.buf))
		if n > left {
			n = left
		}
		m, err := io.ReadFull(r, t.buf[:n])
		if m > 0 {
			if sink != nil {
				_, _ = sink.Write(t.buf[:m]) // sink is a hash: its Write never fails
			}
			if _, werr := t.w.Write(t.buf[:m]); werr != nil {
				return werr
			}
			left -= int64(m)
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return errFileChanged
		}
		if err != nil {
			return err
		}
	}
	return t.finishFile(r, size)
}

// entryName splits p into the ustar name and prefix fields; a path that
// does not fit gets a PAX path record first, and the name field keeps its
// last 100 bytes for readers without PAX.
func (t *tarWriter) entryName(p string) (name, prefix string, err error) {
	prefix, name, ok := splitUstarName(p)
	if ok {
		return name, prefix, nil
	}
	if err := t.paxPath(p); err != nil {
		return "", "", err
	}
	name = p
	if len(name) > 100 {
		name = name[len(name)-100:]
	}
	return name, "", nil
}

// maxLinkName is the longest hard-link target the ustar linkname field
// holds; WriteLink is only called for shorter ones (a longer target would
// need a PAX linkpath record, which is not worth it for the few such files:
// they are archived in full instead).
const maxLinkName = 100

// WriteLink writes a hard-link entry p naming target, an earlier regular
// file of the same archive with identical content and mode: extraction
// links p to it, so the content is stored once.
func (t *tarWriter) WriteLink(p, target string, mode uint32) error {
	if len(target) > maxLinkName {
		return fmt.Errorf("%s: hard-link target %q is too long for the ustar header", p, target)
	}
	name, prefix, err := t.entryName(p)
	if err != nil {
		return err
	}
	return t.headerLink(name, prefix, mode, 0, '1', target)
}

// finishFile checks that r ends where fstat said it would and pads the
// entry to a whole block.
func (t *tarWriter) finishFile(r io.Reader, size int64) error {
	var one [1]byte
	if n, _ := r.Read(one[:]); n > 0 {
		return errFileChanged
	}
	if r := size % blockSize; r != 0 {
		_, err := t.w.Write(zeroBlocks[:blockSize-r])
		return err
	}
	return nil
}

// Close writes the two zero blocks that end the archive. Like node-tar, it
// does not pad to a 10 KiB record.
func (t *tarWriter) Close() error {
	_, err := t.w.Write(zeroBlocks[:])
	return err
}

// newGzip returns the archives' parallel gzip writer (see gzWriter): the
// block size is fixed, so the output does not depend on the number of CPUs.
func newGzip(w io.Writer, level int) (*gzWriter, error) {
	return newGzWriter(w, level, gzipBlock, gzipBlocks())
}
