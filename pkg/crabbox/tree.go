package crabbox

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/clawkit/clawkit/pkg/archive"
)

// indexList collects the index entries of an extraction as they complete
// (out of archive order, by entry position) in fixed-size chunks: no
// doubling copies of a large slice, and a digest stays 32 bytes until the
// index is written.
type indexList struct {
	chunks [][]indexRec
	n      int
}

type indexRec struct {
	path, link string
	typ        archive.Type
	size       int64
	sum        [32]byte
	set        bool
}

const indexChunk = 4096

func (l *indexList) put(i int, r indexRec) {
	c := i / indexChunk
	for len(l.chunks) <= c {
		l.chunks = append(l.chunks, make([]indexRec, indexChunk))
	}
	r.set = true
	l.chunks[c][i%indexChunk] = r
	l.n = max(l.n, i+1)
}

func (l *indexList) each(fn func(r *indexRec) error) error {
	for i := range l.n {
		r := &l.chunks[i/indexChunk][i%indexChunk]
		if !r.set {
			return fmt.Errorf("internal: index entry %d missing", i)
		}
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}

func (r *indexRec) entry() IndexEntry {
	ie := indexEntry(r.path, r.typ.String())
	switch r.typ {
	case archive.TypeFile:
		ie.Size, ie.SHA256 = r.size, hex.EncodeToString(r.sum[:])
	case archive.TypeSymlink, archive.TypeHardlink:
		ie.setLink(r.link)
	}
	return ie
}

// writeIndex streams the index to a new file at path (the bytes are those
// json.Marshal gives for the whole Index) and returns its SHA-256 and the
// number of entries. extra entries follow the extracted ones.
func writeIndex(path string, l *indexList, extra ...IndexEntry) (string, int, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o644)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	bw := bufio.NewWriterSize(io.MultiWriter(f, h), 256<<10)
	head, _ := json.Marshal(IndexSchema)
	fmt.Fprintf(bw, `{"schema":%s,"entries":[`, head)
	n := 0
	put := func(ie IndexEntry) error {
		b, err := json.Marshal(ie)
		if err != nil {
			return err
		}
		if n > 0 {
			bw.WriteByte(',')
		}
		n++
		_, err = bw.Write(b)
		return err
	}
	if err := l.each(func(r *indexRec) error { return put(r.entry()) }); err != nil {
		return "", 0, err
	}
	for _, ie := range extra {
		if err := put(ie); err != nil {
			return "", 0, err
		}
	}
	bw.WriteString("]}\n")
	if err := bw.Flush(); err != nil {
		return "", 0, err
	}
	if err := f.Close(); err != nil {
		return "", 0, err
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

// treeStamp fingerprints an installed tree by what the kernel says of every
// entry below root (the root itself and the install record excluded): path,
// type, permissions, inode, size, mtime and ctime, in lexical order. Any
// change to a file's content, mode or links changes its ctime, which user
// space cannot set back; replacing a file changes its inode; adding,
// removing or renaming an entry changes its folder's mtime and ctime. The
// install records the stamp of the tree it verified and wrote, so a later
// install of the same runtime can tell "untouched since then" from a stat
// of every entry instead of re-hashing every byte (verify --deep still
// re-hashes). See docs/crabbox.md.
func treeStamp(root string) (string, error) {
	h := sha256.New()
	bw := bufio.NewWriterSize(h, 64<<10)
	var buf []byte
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == root {
			return nil
		}
		rel := p[len(root)+1:]
		if rel == RecordName {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			return fmt.Errorf("no stat for %s", p)
		}
		buf = append(buf[:0], rel...)
		buf = append(buf, 0)
		buf = strconv.AppendUint(buf, uint64(st.Mode), 8)
		buf = append(buf, 0)
		buf = strconv.AppendUint(buf, st.Ino, 10)
		buf = append(buf, 0)
		buf = strconv.AppendInt(buf, st.Size, 10)
		buf = append(buf, 0)
		buf = strconv.AppendInt(buf, st.Mtim.Nano(), 10)
		buf = append(buf, 0)
		buf = strconv.AppendInt(buf, st.Ctim.Nano(), 10)
		buf = append(buf, '\n')
		_, err = bw.Write(buf)
		return err
	})
	if err != nil {
		return "", err
	}
	bw.Flush()
	return hex.EncodeToString(h.Sum(nil)), nil
}
