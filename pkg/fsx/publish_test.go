package fsx

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A writer killed with SIGKILL in the middle of a publication leaves its
// bytes only beside the destination (never in $TMPDIR), and the next edit
// under the file's lock removes them.
func TestKilledPublishLeavesNothingOutsideItsFolder(t *testing.T) {
	if os.Getenv("FSX_KILLED_WRITER") != "" {
		path := os.Getenv("FSX_KILLED_WRITER")
		_ = EditLocked(path, func() error {
			return Publish(path, 0o600, func(w io.Writer) error {
				if _, err := w.Write([]byte("secret-key-material")); err != nil {
					return err
				}
				if _, err := os.Stdout.WriteString("writing\n"); err != nil {
					return err
				}
				select {} // killed here
			})
		})
		return
	}
	home := filepath.Join(t.TempDir(), "home")
	tmp := filepath.Join(t.TempDir(), "tmp")
	for _, d := range []string{home, tmp} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(home, "credentials.json")
	for range 3 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestKilledPublishLeavesNothingOutsideItsFolder$")
		cmd.Env = append(os.Environ(), "FSX_KILLED_WRITER="+path, "TMPDIR="+tmp)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 8)
		if _, err := io.ReadFull(out, buf); err != nil || string(buf) != "writing\n" {
			t.Fatalf("writer did not reach the write: %q %v", buf, err)
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Fatalf("$TMPDIR holds %d files after killed writes, want none: %v", len(ents), ents)
	}
	left := stale(t, path)
	// Each writer took the lock and so removed its predecessor's leftover:
	// only the last one's is there.
	if len(left) != 1 {
		t.Fatalf("want the last killed writer's temp file beside the destination, found %v", left)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("destination exists after only killed writes: %v", err)
	}
	if err := EditLocked(path, func() error { return WriteFile(path, []byte("ok"), 0o600) }); err != nil {
		t.Fatal(err)
	}
	if left := stale(t, path); len(left) != 0 {
		t.Fatalf("the next locked write left %v", left)
	}
	if b, _ := os.ReadFile(path); string(b) != "ok" {
		t.Fatalf("content %q", b)
	}
}

func stale(t *testing.T, path string) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "."+filepath.Base(path)+".tmp-") {
			out = append(out, e.Name())
		}
	}
	return out
}

// Publish keeps an existing file's permission bits and never touches a
// sibling that is not one of its own temp files.
func TestPublishKeepsModeAndForeignSiblings(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.json")
	if err := os.WriteFile(path, []byte("{}"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o640); err != nil {
		t.Fatal(err)
	}
	foreign := filepath.Join(dir, ".config.json.tmp-notmine")
	if err := os.WriteFile(foreign, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := EditLocked(path, func() error { return WriteFile(path, []byte(`{"a":1}`), 0o600) }); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o640 {
		t.Fatalf("mode %v %v, want 0640 kept", fi.Mode(), err)
	}
	if _, err := os.Stat(foreign); err != nil {
		t.Fatalf("a sibling that is not an fsx temp file was removed: %v", err)
	}
}
