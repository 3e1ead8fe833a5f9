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
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

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
// number of entries. extra entries follow the extracted ones. Each entry's
// mode is what tree (the staged tree as read before) says of its path.
func writeIndex(path string, l *indexList, tree *stampDir, extra ...IndexEntry) (string, int, error) {
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
		if ie.Type != "symlink" {
			name, err := ie.name()
			if err != nil {
				return err
			}
			e := tree.lookup(name)
			if e == nil {
				return fmt.Errorf("internal: %q was extracted but is not in the staged tree", name)
			}
			ie.Mode = modeString(e.mode)
			e.seen = true
		}
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
	// Folders the archive implied but did not list (and the worker
	// archive's): indexed too, so verify knows every folder's mode.
	var implied []IndexEntry
	tree.walk(func(rel []byte, e *stampEnt) bool {
		if !e.seen && e.mode&unix.S_IFMT == unix.S_IFDIR {
			ie := indexEntry(string(rel), "dir")
			implied = append(implied, ie)
		}
		e.seen = false
		return true
	})
	for _, ie := range implied {
		if err := put(ie); err != nil {
			return "", 0, err
		}
	}
	tree.walk(func(_ []byte, e *stampEnt) bool { e.seen = false; return true })
	bw.WriteString("]}\n")
	if err := bw.Flush(); err != nil {
		return "", 0, err
	}
	if err := f.Close(); err != nil {
		return "", 0, err
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

// modeString is an index entry's mode: permission and set-id/sticky bits
// in octal.
func modeString(m uint32) string { return fmt.Sprintf("%04o", m&0o7777) }

// treeStamp fingerprints an installed tree by what the kernel says of every
// entry below root (the root itself and the install record excluded): path,
// type, permissions, inode, size, mtime and ctime, in the order of a
// depth-first walk with each folder's names sorted (filepath.WalkDir's
// order). Any change to a file's content, mode or links changes its ctime,
// which user space cannot set back; replacing a file changes its inode;
// adding, removing or renaming an entry changes its folder's mtime and
// ctime. The install records the stamp of the tree it verified and wrote,
// so a later install of the same runtime can tell "untouched since then"
// from a stat of every entry instead of re-hashing every byte (verify
// --deep still re-hashes). See docs/crabbox.md.
//
// It runs at the end of every install and at the start of every
// re-install, so it is built for speed: folders are read by a few
// goroutines at once, and every entry is stat'ed relative to its open
// folder (one path component to resolve, not the whole path); the lines
// are then hashed in walk order. Nothing is followed through a link.
func treeStamp(root string) (string, error) {
	top, err := readTree(root)
	if err != nil {
		return "", err
	}
	return top.stamp(), nil
}

// readTree reads what the kernel says of every entry below root, for a
// stamp and for verify's comparison with the install index (see
// treeStamp for how).
func readTree(root string) (*stampDir, error) {
	w := &stampWalk{tokens: make(chan struct{}, stampWorkers-1)}
	var top *stampDir
	w.read(unix.AT_FDCWD, root, &top)
	if w.first != nil {
		return nil, w.first
	}
	return top, nil
}

// stamp hashes the tree's lines in walk order (the install record left out).
func (top *stampDir) stamp() string {
	h := sha256.New()
	bw := bufio.NewWriterSize(h, 64<<10)
	var line []byte
	top.walk(func(rel []byte, e *stampEnt) bool {
		if string(rel) == RecordName {
			return true
		}
		line = e.appendLine(line[:0], rel)
		bw.Write(line)
		return true
	})
	bw.Flush()
	return hex.EncodeToString(h.Sum(nil))
}

// walk calls fn for every entry in the order of filepath.WalkDir (each
// folder's names sorted, a folder before its entries), with its path
// relative to the top; fn returning false skips a folder's entries. rel is
// only valid during the call.
func (top *stampDir) walk(fn func(rel []byte, e *stampEnt) bool) {
	var rec func(d *stampDir, prefix []byte)
	rec = func(d *stampDir, prefix []byte) {
		for i := range d.ents {
			e := &d.ents[i]
			rel := append(prefix, e.name...)
			if fn(rel, e) && e.sub != nil {
				rec(e.sub, append(rel, '/'))
			}
		}
	}
	rec(top, make([]byte, 0, 512))
}

// lookup finds the entry at the slash-separated rel (nil when there is
// none), by a binary search of each folder's sorted names.
func (top *stampDir) lookup(rel string) *stampEnt {
	d := top
	for {
		seg, rest, more := strings.Cut(rel, "/")
		if d == nil {
			return nil
		}
		i, ok := slices.BinarySearchFunc(d.ents, seg, func(e stampEnt, name string) int { return strings.Compare(e.name, name) })
		if !ok {
			return nil
		}
		if !more {
			return &d.ents[i]
		}
		d, rel = d.ents[i].sub, rest
	}
}

// add puts a top-level entry the tree did not have when it was read (the
// install index, written after the read) in its sorted place.
func (top *stampDir) add(dir, name string) error {
	var st unix.Stat_t
	if err := unix.Lstat(dir+"/"+name, &st); err != nil {
		return err
	}
	e := stampEnt{name: name, mode: st.Mode, ino: st.Ino, size: st.Size, mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano()}
	i, found := slices.BinarySearchFunc(top.ents, name, func(e stampEnt, name string) int { return strings.Compare(e.name, name) })
	if found {
		top.ents[i] = e
		return nil
	}
	top.ents = slices.Insert(top.ents, i, e)
	return nil
}

// stampDir is one folder of a tree stamp: its entries in name order, each
// with what lstat says and, for a folder, its own entries.
type stampDir struct {
	ents []stampEnt
}

type stampEnt struct {
	name               string
	mode               uint32
	ino                uint64
	size, mtime, ctime int64
	sub                *stampDir
	seen               bool // matched by an index entry (verify)
}

// appendLine appends e's line of the stamp, for the entry at rel: path,
// mode (octal), inode, size, mtime and ctime, NUL-separated.
func (e *stampEnt) appendLine(line, rel []byte) []byte {
	line = append(line, rel...)
	line = append(line, 0)
	line = strconv.AppendUint(line, uint64(e.mode), 8)
	line = append(line, 0)
	line = strconv.AppendUint(line, e.ino, 10)
	line = append(line, 0)
	line = strconv.AppendInt(line, e.size, 10)
	line = append(line, 0)
	line = strconv.AppendInt(line, e.mtime, 10)
	line = append(line, 0)
	line = strconv.AppendInt(line, e.ctime, 10)
	return append(line, '\n')
}

// stampWorkers bounds the goroutines reading folders at once.
const stampWorkers = 4

// stampWalk reads a tree for treeStamp: extra goroutines (at most
// stampWorkers-1, from tokens) take sub-folders while they are free; when
// none is, the folder is read on the goroutine that found it.
type stampWalk struct {
	tokens chan struct{}
	mu     sync.Mutex
	first  error
}

func (w *stampWalk) fail(err error) {
	w.mu.Lock()
	if w.first == nil {
		w.first = err
	}
	w.mu.Unlock()
}

// read opens name (relative to the folder dirfd, never through a link),
// stats its entries relative to it, and reads its sub-folders the same
// way, each into its entry's sub.
func (w *stampWalk) read(dirfd int, name string, into **stampDir) {
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		w.fail(&fs.PathError{Op: "open", Path: name, Err: err})
		return
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		w.fail(err)
		return
	}
	slices.Sort(names)
	d := &stampDir{ents: make([]stampEnt, len(names))}
	for i, n := range names {
		var st unix.Stat_t
		if err := unix.Fstatat(fd, n, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			w.fail(&fs.PathError{Op: "lstat", Path: n, Err: err})
			return
		}
		d.ents[i] = stampEnt{name: n, mode: st.Mode, ino: st.Ino, size: st.Size,
			mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano()}
	}
	*into = d
	var local sync.WaitGroup
	for i := range d.ents {
		e := &d.ents[i]
		if e.mode&unix.S_IFMT != unix.S_IFDIR {
			continue
		}
		select {
		case w.tokens <- struct{}{}:
			local.Add(1)
			go func() {
				defer func() { <-w.tokens; local.Done() }()
				w.read(fd, e.name, &e.sub)
			}()
		default:
			w.read(fd, e.name, &e.sub)
		}
	}
	local.Wait() // f (and fd) stay open until every sub-folder is opened
}
