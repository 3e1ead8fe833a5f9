package conformance

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/clawkit/clawkit/pkg/artifacts"
	"github.com/clawkit/clawkit/pkg/fsx"
)

// TestWorkerBundleProducer runs every release's own worker bundle producer
// (createWorkerBundleProducer) on its own installation and clawkit's code
// for the same thing: the inventory clawkit reads from the release's
// compiled code (artifacts.ReadInventory) and the bundle hash
// (artifacts.BundleHash) must give the producer's bundle hash, and the
// producer's tarball must hold exactly those files, in that order, with
// clawkit's mode, sizes and digests. The byte-identical tar stream of a
// full export is checked by testscript/artifacts_real*.txtar, which need
// the export (a minute per release on a loaded machine) anyway.
func TestWorkerBundleProducer(t *testing.T) {
	// The four references run side by side: most of their time is spent
	// waiting (Node start-up, stop graces, the producer\'s I/O).
	t.Parallel()
	node24(t)
	for _, r := range releases {
		t.Run(r.version, func(t *testing.T) {
			dir := releaseDir(t, r)
			// The producer refuses a package root reached through a link.
			root, err := filepath.EvalSymlinks(dir)
			if err != nil {
				t.Fatal(err)
			}
			out, ok := runDriver(t, r, refProducer, "produce.mjs", nil, root, filepath.Join(t.TempDir(), "cache"))
			if !ok {
				return
			}
			var oc struct {
				BundleHash  string `json:"bundleHash"`
				TarballPath string `json:"tarballPath"`
			}
			if err := json.Unmarshal(out.raw, &oc); err != nil {
				t.Fatal(err)
			}
			inv, err := artifacts.ReadInventory(root, r.version)
			if err != nil {
				t.Fatalf("clawkit cannot read the inventory of openclaw %s: %v", r.version, err)
			}
			var entries []artifacts.BundleEntry
			for _, name := range inv.Files {
				b, err := os.ReadFile(filepath.Join(root, "dist", "worker", name))
				if err != nil {
					t.Fatal(err)
				}
				s := sha256.Sum256(b)
				entries = append(entries, artifacts.BundleEntry{Path: name, Mode: artifacts.WorkerMode, Size: int64(len(b)), SHA256: hex.EncodeToString(s[:])})
			}
			sorted := append([]artifacts.BundleEntry(nil), entries...)
			artifacts.SortBundleEntries(sorted)
			if got := artifacts.BundleHash(sorted); got != oc.BundleHash {
				t.Errorf("openclaw %s: clawkit's bundle hash %s, the release's producer %s (inventory %v)", r.version, got, oc.BundleHash, inv.Files)
			}
			got := tarEntries(t, oc.TarballPath)
			if len(got) != len(entries) {
				t.Fatalf("openclaw %s: producer tarball holds %d files %v, clawkit's inventory %d %v", r.version, len(got), got, len(entries), inv.Files)
			}
			for i, e := range entries {
				if got[i] != e {
					t.Errorf("openclaw %s: tar entry %d is %+v, clawkit %+v", r.version, i, got[i], e)
				}
			}
			t.Logf("openclaw %s (%s): bundle hash %s, %d worker files (%s), equal", r.version, out.Chunk, oc.BundleHash, len(entries), inv)
		})
	}
}

// tarEntries lists the regular files of a worker tarball as bundle entries.
func tarEntries(t *testing.T, p string) []artifacts.BundleEntry {
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer fsx.CloseRead(f)
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	var out []artifacts.BundleEntry
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		s := sha256.New()
		if _, err := io.Copy(s, tr); err != nil {
			t.Fatal(err)
		}
		out = append(out, artifacts.BundleEntry{Path: h.Name, Mode: uint32(h.Mode), Size: h.Size, SHA256: hex.EncodeToString(s.Sum(nil))})
	}
}
