// Command crabboxgrow makes a larger copy of a runtime-artifacts export for
// scripts/bench-crabbox.sh: the same worker archive, and a node bootstrap
// holding every entry of the original plus EXTRA bytes in a few large files
// (JavaScript-like text that compresses about as well as the rest, so the
// archive stays within the limits). Installing both shows whether
// install's memory grows with the archive's size.
//
// Usage: crabboxgrow SRC/manifest.json DST EXTRA_BYTES
package main

import (
	"archive/tar"
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/klauspost/compress/gzip"

	"github.com/clawkit/clawkit/pkg/artifacts"
	"github.com/clawkit/clawkit/pkg/fsx"
)

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: crabboxgrow SRC/manifest.json DST EXTRA_BYTES")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2], os.Args[3]); err != nil {
		fmt.Fprintln(os.Stderr, "crabboxgrow:", err)
		os.Exit(1)
	}
}

func run(src, dst, extraArg string) error {
	extra, err := strconv.ParseInt(extraArg, 10, 64)
	if err != nil {
		return err
	}
	m, _, err := artifacts.LoadManifest(src)
	if err != nil {
		return err
	}
	dir := filepath.Dir(src)
	in, err := os.Open(filepath.Join(dir, m.NodeBootstrap.Path))
	if err != nil {
		return err
	}
	defer fsx.CloseRead(in)
	zr, err := gzip.NewReader(bufio.NewReaderSize(in, 1<<20))
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(dst, "node-bootstrap"), 0o755); err != nil {
		return err
	}
	tmp := filepath.Join(dst, "node-bootstrap", "grown.tgz.tmp")
	out, err := os.Create(tmp)
	if err != nil {
		return err
	}
	defer func() { _ = out.Close() }() // for the error paths: the success path closes it below
	h := sha256.New()
	bw := bufio.NewWriterSize(io.MultiWriter(out, h), 1<<20)
	zw, _ := gzip.NewWriterLevel(bw, gzip.BestSpeed)
	tw := tar.NewWriter(zw)
	tr := tar.NewReader(zr)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if _, err := io.Copy(tw, tr); err != nil {
			return err
		}
	}
	text := filler(8 << 20)
	const fileSize = 64 << 20
	for i := 0; extra > 0; i++ {
		n := min(extra, fileSize)
		hdr := &tar.Header{Name: fmt.Sprintf("node_modules/clawkit-bench-filler/blob-%03d.txt", i), Typeflag: tar.TypeReg, Mode: 0o644, Size: n, Format: tar.FormatUSTAR}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		for left := n; left > 0; {
			k := min(left, int64(len(text)))
			if _, err := tw.Write(text[:k]); err != nil {
				return err
			}
			left -= k
		}
		extra -= n
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	st, err := out.Stat()
	if err != nil {
		return err
	}
	sum := hex.EncodeToString(h.Sum(nil))
	m.NodeBootstrap.Path = "node-bootstrap/" + sum + ".tgz"
	m.NodeBootstrap.Bytes, m.NodeBootstrap.SHA256 = st.Size(), sum
	if err := out.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dst, filepath.FromSlash(m.NodeBootstrap.Path))); err != nil {
		return err
	}
	w, err := os.ReadFile(filepath.Join(dir, m.WorkerBundle.Path))
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(dst, "worker-artifacts"), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dst, filepath.FromSlash(m.WorkerBundle.Path)), w, 0o644); err != nil {
		return err
	}
	if err := m.Validate(); err != nil {
		return err
	}
	raw, err := m.Marshal()
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dst, artifacts.ManifestName), raw, 0o644)
}

// filler is n bytes of words drawn from a small JavaScript vocabulary.
func filler(n int) []byte {
	words := []string{"const ", "function ", "return ", "this.", "value", "= ", "(", ") ", "{\n", "}\n", "if ", "else ", "await ", "export ", "import ", "from ", "\"./lib/", "index", ".js\";\n", "options", "result", "error", "null", "undefined", ", ", "; ", "=> ", "new ", "Map()", "length", "push(", "0", "1", "2", "plugin", "worker", "runtime", "openclaw", "config", "module", "require(", "typeof ", "string", "object", "throw ", "Error(", "async ", "let ", "for ", "of ", "key", "[", "]", ".then(", "resolve", "reject", "true", "false", "\n  ", "\n    ", "// ", "node", "path", "fs."}
	b := make([]byte, 0, n+32)
	x := uint64(0x9e3779b97f4a7c15)
	for len(b) < n {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b = append(b, words[x%uint64(len(words))]...)
	}
	return b[:n]
}
