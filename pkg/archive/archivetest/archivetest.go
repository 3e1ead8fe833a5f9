// Package archivetest builds tar.gz archives for tests, including the
// hostile ones pkg/archive must refuse. It writes raw headers exactly as
// given (no normalisation), so tests can produce what a malicious producer
// would.
package archivetest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"math/rand/v2"
	"sort"

	"github.com/clawkit/clawkit/pkg/errs"
)

// Entry is one raw archive member.
type Entry struct {
	Name     string
	Type     byte // tar.TypeReg when zero
	Mode     int64
	Body     []byte
	Linkname string
	// Size overrides len(Body) in the header when non-zero (for lying
	// headers); the body is still written as given.
	Size int64
}

// Build returns a gzip-compressed tar of entries in the given order.
func Build(entries []Entry) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		typ := e.Type
		if typ == 0 {
			typ = tar.TypeReg
		}
		mode := e.Mode
		if mode == 0 {
			mode = 0o644
			if typ == tar.TypeDir {
				mode = 0o755
			}
		}
		h := &tar.Header{Name: e.Name, Typeflag: typ, Mode: mode, Linkname: e.Linkname, Format: tar.FormatPAX}
		if typ == tar.TypeReg {
			h.Size = int64(len(e.Body))
			if e.Size != 0 {
				h.Size = e.Size
			}
		}
		if typ == tar.TypeChar || typ == tar.TypeBlock {
			h.Devmajor, h.Devminor = 1, 3
		}
		if err := tw.WriteHeader(h); err != nil {
			panic(fmt.Sprintf("archivetest: header %q: %v", e.Name, err))
		}
		if typ == tar.TypeReg && len(e.Body) > 0 {
			if _, err := tw.Write(e.Body); err != nil {
				panic(fmt.Sprintf("archivetest: body %q: %v", e.Name, err))
			}
		}
	}
	if err := tw.Close(); err != nil {
		panic(err)
	}
	if err := zw.Close(); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

// Text returns n bytes of deterministic, JS-like text that compresses about
// as well as real source code (well under the 64× expansion limit).
func Text(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	words := []string{"const", "function", "return", "export", "import", "await", "worker", "openclaw", "=>", "{", "}", ";", "\n", "(", ")", "if", "else", "let", "new", "this"}
	var b bytes.Buffer
	for b.Len() < n {
		if r.IntN(4) == 0 {
			fmt.Fprintf(&b, "v%x ", r.Uint32())
		} else {
			b.WriteString(words[r.IntN(len(words))])
			b.WriteByte(' ')
		}
	}
	return b.Bytes()[:n]
}

// Good is a small well-formed archive: folders, files, an internal
// symlink and an internal hard link.
func Good() []byte {
	return Build([]Entry{
		{Name: "node_modules/", Type: tar.TypeDir},
		{Name: "node_modules/openclaw/", Type: tar.TypeDir},
		{Name: "node_modules/openclaw/package.json", Body: []byte(`{"name":"openclaw","version":"0.0.0-test"}` + "\n")},
		{Name: "node_modules/openclaw/dist/index.js", Body: Text(1, 4000)},
		{Name: "node_modules/openclaw/bin.js", Mode: 0o755, Body: Text(2, 300)},
		{Name: "node_modules/.bin/openclaw", Type: tar.TypeSymlink, Linkname: "../openclaw/bin.js"},
		{Name: "node_modules/openclaw/copy.js", Type: tar.TypeLink, Linkname: "node_modules/openclaw/bin.js"},
	})
}

// HostileKinds names every hostile archive Hostile can build, with the
// refusal code pkg/archive must give it.
var HostileKinds = map[string]errs.Code{
	"slip":             "archive_invalid_path",
	"absolute":         "archive_invalid_path",
	"backslash":        "archive_invalid_path",
	"dotslash":         "archive_invalid_path",
	"longpath":         "archive_invalid_path",
	"deep":             "archive_invalid_path",
	"symlink-escape":   "archive_link_escape",
	"symlink-absolute": "archive_link_escape",
	"symlink-through":  "archive_path_conflict",
	"symlink-dotdot":   "archive_link_escape",
	"hardlink-escape":  "archive_link_escape",
	"hardlink-missing": "archive_link_escape",
	"device":           "archive_unsupported_entry",
	"fifo":             "archive_unsupported_entry",
	"duplicate":        "archive_duplicate_entry",
	"file-as-dir":      "archive_path_conflict",
	"bomb":             "archive_expansion_ratio",
	"trailing":         "archive_corrupt",
	"truncated":        "archive_corrupt",
	"notgzip":          "archive_corrupt",
}

// Kinds returns HostileKinds' names sorted.
func Kinds() []string {
	var k []string
	for n := range HostileKinds {
		k = append(k, n)
	}
	sort.Strings(k)
	return k
}

// Hostile builds the named hostile archive; it panics on an unknown kind.
func Hostile(kind string) []byte {
	pkg := Entry{Name: "node_modules/openclaw/package.json", Body: []byte(`{"name":"openclaw"}`)}
	switch kind {
	case "slip":
		return Build([]Entry{pkg, {Name: "node_modules/../../evil.txt", Body: []byte("pwned\n")}})
	case "absolute":
		return Build([]Entry{pkg, {Name: "/tmp/clawkit-evil.txt", Body: []byte("pwned\n")}})
	case "backslash":
		return Build([]Entry{pkg, {Name: `node_modules\..\evil.txt`, Body: []byte("pwned\n")}})
	case "dotslash":
		return Build([]Entry{{Name: "./node_modules/openclaw/package.json", Body: []byte("{}")}})
	case "longpath":
		long := "node_modules/"
		for len(long) <= 1100 {
			long += "abcdefghij/"
		}
		return Build([]Entry{{Name: long + "x.js", Body: []byte("x")}})
	case "deep":
		// 101 folders deep, well under the path length limit.
		deep := ""
		for range 101 {
			deep += "d/"
		}
		return Build([]Entry{pkg, {Name: deep + "x.js", Body: []byte("x")}})
	case "symlink-escape":
		return Build([]Entry{pkg, {Name: "node_modules/up", Type: tar.TypeSymlink, Linkname: "../../.."}})
	case "symlink-absolute":
		return Build([]Entry{pkg, {Name: "node_modules/etc", Type: tar.TypeSymlink, Linkname: "/etc"}})
	case "symlink-through":
		// A link to an inside folder, then a file written through it.
		return Build([]Entry{pkg,
			{Name: "node_modules/here", Type: tar.TypeSymlink, Linkname: "."},
			{Name: "node_modules/here/evil.txt", Body: []byte("pwned\n")}})
	case "symlink-dotdot":
		// Lexically inside ("a/.." is "."), but ".." after a link name
		// could climb out in real resolution.
		return Build([]Entry{pkg,
			{Name: "top", Type: tar.TypeSymlink, Linkname: "."},
			{Name: "node_modules/x", Type: tar.TypeSymlink, Linkname: "../top/.."}})
	case "hardlink-escape":
		return Build([]Entry{pkg, {Name: "node_modules/passwd", Type: tar.TypeLink, Linkname: "../../../../etc/passwd"}})
	case "hardlink-missing":
		return Build([]Entry{pkg, {Name: "node_modules/passwd", Type: tar.TypeLink, Linkname: "etc/passwd"}})
	case "device":
		return Build([]Entry{pkg, {Name: "node_modules/null", Type: tar.TypeChar}})
	case "fifo":
		return Build([]Entry{pkg, {Name: "node_modules/pipe", Type: tar.TypeFifo}})
	case "duplicate":
		return Build([]Entry{pkg, {Name: "node_modules/openclaw/package.json", Body: []byte(`{"name":"evil"}`)}})
	case "file-as-dir":
		return Build([]Entry{pkg, {Name: "node_modules/openclaw/package.json/x", Body: []byte("x")}})
	case "bomb":
		// 64 MiB of zeros gzip to about 64 KiB: a ratio near 1000.
		return Build([]Entry{pkg, {Name: "node_modules/openclaw/zeros.bin", Body: make([]byte, 64<<20)}})
	case "trailing":
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		inner := gunzip(Build([]Entry{pkg}))
		zw.Write(inner)
		zw.Write([]byte("hidden payload after the end-of-archive marker"))
		zw.Close()
		return b.Bytes()
	case "truncated":
		g := Build([]Entry{pkg, {Name: "node_modules/openclaw/a.js", Body: Text(3, 20000)}})
		return g[:len(g)/2]
	case "notgzip":
		return []byte("this is not a gzip stream\n")
	}
	panic("archivetest: unknown hostile kind " + kind)
}

func gunzip(b []byte) []byte {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		panic(err)
	}
	var out bytes.Buffer
	if _, err := out.ReadFrom(zr); err != nil {
		panic(err)
	}
	return out.Bytes()
}
