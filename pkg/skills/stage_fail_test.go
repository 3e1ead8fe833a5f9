package skills

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/clawkit/clawkit/pkg/skilllint"
)

// leftovers lists the staging and trash folders left in a skills root.
func leftovers(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), skilllint.StagingPrefix) {
			out = append(out, e.Name())
		}
	}
	return out
}

// A staging build that fails after its folder was made removes the folder:
// every failure returns "" as the stage name, and the cleanup must still
// know what it created (a full disk used to keep its staging folder, which
// kept the disk full).
func TestBuildStageFailureRemovesStaging(t *testing.T) {
	dir := t.TempDir()
	r, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	// The second file needs "references" to be a folder, but the first
	// made it a file: the mkdir fails after the stage exists.
	add := []SourceFile{
		{Path: skilllint.SkillFile, Content: []byte("---\nname: pdf\ndescription: d\n---\n")},
		{Path: "references", Content: []byte("x")},
		{Path: "references/a.md", Content: []byte("y")},
	}
	stage, err := buildStage(r, "pdf", nil, add)
	if err == nil {
		t.Fatalf("buildStage succeeded (%s); want a failure", stage)
	}
	if left := leftovers(t, dir); len(left) != 0 {
		t.Fatalf("staging left behind after %v: %v", err, left)
	}
	// A copy from a live file that is missing fails the same way.
	if _, err := buildStage(r, "pdf", []skilllint.FileEntry{{Path: "references/gone.md"}}, nil); err == nil {
		t.Fatal("copying a missing file succeeded")
	}
	if left := leftovers(t, dir); len(left) != 0 {
		t.Fatalf("staging left behind after a failed copy: %v", left)
	}
}

// The same on a real full disk: a 1 MiB tmpfs and a 2 MiB support file
// (needs root to mount; skipped otherwise).
func TestBuildStageDiskFullRemovesStaging(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	dir := filepath.Join(t.TempDir(), "small")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=1m"); err != nil {
		t.Skipf("cannot mount a tmpfs: %v", err)
	}
	defer syscall.Unmount(dir, 0)
	r, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	add := []SourceFile{
		{Path: skilllint.SkillFile, Content: []byte("---\nname: pdf\ndescription: d\n---\n")},
		{Path: "assets/big.bin", Content: bytes.Repeat([]byte{1}, 2<<20)},
	}
	_, err = buildStage(r, "pdf", nil, add)
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("buildStage on a full disk: %v; want ENOSPC", err)
	}
	if left := leftovers(t, dir); len(left) != 0 {
		t.Fatalf("staging left behind on a full disk: %v", left)
	}
}

// A staging failure names the skill's own path, not the staging folder's
// (which means nothing to the user); an error without a path (mk's own
// "rel: cause") is kept as it is.
func TestStagePathErr(t *testing.T) {
	root := filepath.Join("home", "skills")
	stage := skilllint.StagingPrefix + "stage-pdf-0123456789abcdef"
	for _, c := range []struct {
		err  error
		want string
	}{
		{&os.PathError{Op: "open", Path: stage + "/scripts/a", Err: syscall.EEXIST}, filepath.Join(root, "pdf", "scripts", "a") + ": file exists"},
		{&os.PathError{Op: "mkdir", Path: stage, Err: syscall.ENOSPC}, filepath.Join(root, "pdf") + ": no space left on device"},
		{&os.PathError{Op: "open", Path: "pdf/SKILL.md", Err: syscall.ENOENT}, filepath.Join(root, "pdf", "SKILL.md") + ": no such file or directory"},
		{errors.New("scripts/a: file exists"), "scripts/a: file exists"},
	} {
		if got := stagePathErr(root, "pdf", c.err).Error(); got != c.want {
			t.Errorf("stagePathErr(%v) = %q, want %q", c.err, got, c.want)
		}
	}
}
