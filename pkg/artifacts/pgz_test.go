package artifacts

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"math/rand"
	"testing"
	"time"

	"github.com/klauspost/pgzip"
)

// pgzipReference compresses data as the exporter did with pgzip (same
// block size, level and header), the reference gzWriter must reproduce.
func pgzipReference(t *testing.T, data []byte, block, blocks int) []byte {
	t.Helper()
	var b bytes.Buffer
	z, err := pgzip.NewWriterLevel(&b, gzipLevel)
	if err != nil {
		t.Fatal(err)
	}
	z.ModTime = time.Unix(0, 0)
	z.OS = 255
	if err := z.SetConcurrency(block, blocks); err != nil {
		t.Fatal(err)
	}
	if _, err := z.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// sampleBytes is compressible text with some random runs, so that blocks
// carry real matches across their dictionaries.
func sampleBytes(n int) []byte {
	rnd := rand.New(rand.NewSource(int64(n)))
	words := []string{"export ", "function ", "worker", "bundle", "{", "}", "\n", "const x = ", "require('", "')"}
	var b bytes.Buffer
	for b.Len() < n {
		if rnd.Intn(50) == 0 {
			r := make([]byte, rnd.Intn(3000))
			rnd.Read(r)
			b.Write(r)
			continue
		}
		b.WriteString(words[rnd.Intn(len(words))])
	}
	return b.Bytes()[:n]
}

// The archive bytes are pgzip's, byte for byte, whatever the write pattern,
// the number of compressing goroutines and where the input ends relative to
// the blocks (empty, under the dictionary size, exactly one block, many).
func TestGzWriterMatchesPgzip(t *testing.T) {
	const block = 64 << 10
	for _, n := range []int{0, 1, gzipTail - 1, gzipTail + 1, block, block + 1, 3*block - 7, 5 * block, 9*block + 12345} {
		data := sampleBytes(n)
		want := pgzipReference(t, data, block, 2)
		for _, workers := range []int{1, 2, 5} {
			for _, mode := range []string{"write", "readN", "mixed"} {
				var b bytes.Buffer
				z, err := newGzWriter(&b, gzipLevel, block, workers)
				if err != nil {
					t.Fatal(err)
				}
				var tee bytes.Buffer
				switch mode {
				case "write":
					for p := data; len(p) > 0; {
						k := min(len(p), 1+len(p)%70000)
						if _, err := z.Write(p[:k]); err != nil {
							t.Fatal(err)
						}
						p = p[k:]
					}
				case "readN":
					if got, err := z.readN(bytes.NewReader(data), int64(n), &tee); err != nil || got != int64(n) {
						t.Fatalf("readN: %d %v", got, err)
					}
					if !bytes.Equal(tee.Bytes(), data) {
						t.Fatalf("n=%d: tee differs", n)
					}
				case "mixed":
					h := n / 3
					if _, err := z.Write(data[:h]); err != nil {
						t.Fatal(err)
					}
					if _, err := z.readN(bytes.NewReader(data[h:2*h]), int64(h), nil); err != nil {
						t.Fatal(err)
					}
					if _, err := z.Write(data[2*h:]); err != nil {
						t.Fatal(err)
					}
				}
				if err := z.Close(); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(b.Bytes(), want) {
					t.Fatalf("n=%d workers=%d %s: %d bytes differ from pgzip's %d", n, workers, mode, b.Len(), len(want))
				}
				zr, err := gzip.NewReader(&b)
				if err != nil {
					t.Fatal(err)
				}
				if got, err := io.ReadAll(zr); err != nil || !bytes.Equal(got, data) {
					t.Fatalf("n=%d: round trip failed: %v", n, err)
				}
			}
		}
	}
}

type gzFailAfter struct{ left int }

func (f *gzFailAfter) Write(p []byte) (int, error) {
	if f.left < len(p) {
		return 0, io.ErrShortWrite
	}
	f.left -= len(p)
	return len(p), nil
}

// A failing destination is reported by a later Write or by Close, and
// Close still settles every goroutine.
func TestGzWriterReportsWriteFailure(t *testing.T) {
	z, err := newGzWriter(&gzFailAfter{left: 100}, gzipLevel, 32<<10, 2)
	if err != nil {
		t.Fatal(err)
	}
	data := sampleBytes(1 << 20)
	var werr error
	for p := data; len(p) > 0 && werr == nil; p = p[min(len(p), 4096):] {
		_, werr = z.Write(p[:min(len(p), 4096)])
	}
	if cerr := z.Close(); !errors.Is(cerr, io.ErrShortWrite) {
		t.Fatalf("Close: %v (write: %v)", cerr, werr)
	}
}
