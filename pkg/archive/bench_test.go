package archive_test

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/clawkit/clawkit/pkg/archive"
	"github.com/clawkit/clawkit/pkg/archive/archivetest"
)

// benchArchive is 2,000 source-like files of 8 KiB (16 MB of content),
// compressing about as well as JavaScript does.
func benchArchive() []byte {
	var ents []archivetest.Entry
	for i := range 2000 {
		ents = append(ents, archivetest.Entry{Name: fmt.Sprintf("node_modules/pkg%02d/lib/file%04d.js", i%50, i), Body: archivetest.Text(uint64(i), 8<<10)})
	}
	return archivetest.Build(ents)
}

func BenchmarkWalk(b *testing.B) {
	data := benchArchive()
	b.SetBytes(2000 * 8 << 10)
	for b.Loop() {
		_, err := archive.Walk(bytes.NewReader(data), archive.Options{Size: int64(len(data))}, func(e *archive.Entry, body io.Reader) error {
			if body != nil {
				_, err := io.Copy(io.Discard, body)
				return err
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkExtractDir(b *testing.B) {
	data := benchArchive()
	b.SetBytes(2000 * 8 << 10)
	dir := b.TempDir()
	i := 0
	for b.Loop() {
		dest := filepath.Join(dir, fmt.Sprint(i))
		i++
		if err := os.Mkdir(dest, 0o755); err != nil {
			b.Fatal(err)
		}
		if _, err := archive.ExtractDir(bytes.NewReader(data), dest, archive.ExtractOptions{Options: archive.Options{Size: int64(len(data))}, HashFiles: true}); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if err := os.RemoveAll(dest); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}
