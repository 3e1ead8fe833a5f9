package crabbox

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/clawkit/clawkit/pkg/crabbox/crabboxtest"
)

// TestTreeStampIsTheWalk holds the parallel treeStamp to its definition:
// the same bytes a filepath.WalkDir walk with lstat gives (walkDirStamp,
// the implementation it replaced), on a tree with the orders a plain sort
// of whole paths would get wrong ("a-b" sorts before "a/x" byte-wise but
// comes after it in the walk), links, hard links, empty and deep folders,
// and enough folders that several goroutines take part.
func TestTreeStampIsTheWalk(t *testing.T) {
	root := t.TempDir()
	mk := func(rel string) {
		if err := os.MkdirAll(filepath.Join(root, rel), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	put := func(rel, body string) {
		mk(filepath.Dir(rel))
		if err := os.WriteFile(filepath.Join(root, rel), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	put("a/x", "1")
	put("a-b", "2")
	put("a.b/c", "3")
	put("a/b/c/d/e/f", "deep")
	mk("empty")
	put(RecordName, "excluded at the top")
	put("sub/"+RecordName, "kept below the top")
	if err := os.Symlink("a/x", filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("missing", filepath.Join(root, "a", "dangling")); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(root, "a", "x"), filepath.Join(root, "hard")); err != nil {
		t.Fatal(err)
	}
	for i := range 60 {
		put(fmt.Sprintf("node_modules/p%02d/lib/i%d.js", i, i), "x")
		put(fmt.Sprintf("node_modules/p%02d/package.json", i), "{}")
	}
	want, err := walkDirStamp(root)
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		got, err := treeStamp(root)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("treeStamp = %s, the walk gives %s", got, want)
		}
	}
	// And it still changes when the tree does.
	put("node_modules/p07/lib/new.js", "y")
	if got, _ := treeStamp(root); got == want {
		t.Fatal("treeStamp did not change when a file was added")
	}
	if err := os.Chmod(filepath.Join(root, "a", "x"), 0o600); err != nil {
		t.Fatal(err)
	}
	want, _ = walkDirStamp(root)
	if got, _ := treeStamp(root); got != want {
		t.Fatalf("after chmod: treeStamp = %s, the walk gives %s", got, want)
	}
	// A folder it cannot read is an error, not a stamp.
	if os.Geteuid() != 0 {
		if err := os.Chmod(filepath.Join(root, "empty"), 0); err != nil {
			t.Fatal(err)
		}
		defer os.Chmod(filepath.Join(root, "empty"), 0o755)
		if _, err := treeStamp(root); err == nil {
			t.Fatal("treeStamp of a tree with an unreadable folder succeeded")
		}
	}
	if _, err := treeStamp(filepath.Join(root, "missing")); err == nil {
		t.Fatal("treeStamp of a missing folder succeeded")
	}
}

// walkDirStamp is treeStamp's definition, written the plain way: the same
// lines (stampEnt.appendLine), from a filepath.WalkDir walk and lstat.
func walkDirStamp(root string) (string, error) {
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
		e := stampEnt{mode: st.Mode, ino: st.Ino, size: st.Size, mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano()}
		buf = e.appendLine(buf[:0], []byte(rel))
		_, err = bw.Write(buf)
		return err
	})
	if err != nil {
		return "", err
	}
	bw.Flush()
	return hex.EncodeToString(h.Sum(nil)), nil
}

// TestInstallRecordsItsTree: the stamp install records (computed from the
// tree read once, with the index added after it was written) is the stamp
// of the installed tree, and the index gives every entry's mode as it is
// on disk, folders the archive only implied included.
func TestInstallRecordsItsTree(t *testing.T) {
	dir := t.TempDir()
	mp, err := crabboxtest.Export(dir)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := Install(InstallRequest{ManifestPath: mp, TargetHome: filepath.Join(dir, "home"), CLIVersion: "test", NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := readRecord(rc.RuntimeDir)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := treeStamp(rc.RuntimeDir); err != nil || got != rec.Tree {
		t.Fatalf("recorded stamp %s, the tree's %s (%v)", rec.Tree, got, err)
	}
	b, err := os.ReadFile(filepath.Join(rc.RuntimeDir, IndexName))
	if err != nil {
		t.Fatal(err)
	}
	var idx Index
	if err := strictJSON(b, &idx); err != nil {
		t.Fatal(err)
	}
	indexed := map[string]bool{RecordName: true, IndexName: true}
	for _, e := range idx.Entries {
		indexed[e.Path] = true
		st, err := os.Lstat(filepath.Join(rc.RuntimeDir, e.Path))
		if err != nil {
			t.Fatal(err)
		}
		want := ""
		if e.Type != "symlink" {
			want = modeString(uint32(st.Sys().(*syscall.Stat_t).Mode))
		}
		if e.Mode != want {
			t.Errorf("%s: index mode %q, on disk %q", e.Path, e.Mode, want)
		}
	}
	filepath.WalkDir(rc.RuntimeDir, func(p string, d fs.DirEntry, err error) error {
		rel, _ := filepath.Rel(rc.RuntimeDir, p)
		if rel != "." && !indexed[filepath.ToSlash(rel)] {
			t.Errorf("%s is not in the index", rel)
		}
		return nil
	})
}
