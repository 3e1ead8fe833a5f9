package owner

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clawkit/clawkit/pkg/errs"
)

// longHome is a home whose gateway.sock cannot fit in a socket address.
func longHome(t *testing.T) Home {
	return Home{Dir: filepath.Join(t.TempDir(), strings.Repeat("h", 120))}
}

// shortTemp is a short private temp folder (t.TempDir may itself be long).
func shortTemp(t *testing.T) string {
	d, err := os.MkdirTemp("/tmp", "ck")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := os.RemoveAll(d); err != nil {
			t.Error(err)
		}
	})
	return d
}

func TestSocketPathInHome(t *testing.T) {
	h := Home{Dir: "/tmp/x"}
	if p, err := h.SocketPath(); err != nil || p != "/tmp/x/gateway.sock" {
		t.Fatalf("SocketPath = %q, %v; want the home's own", p, err)
	}
}

func TestSocketPathRuntimeDirFirst(t *testing.T) {
	rt := shortTemp(t)
	t.Setenv("XDG_RUNTIME_DIR", rt)
	t.Setenv("TMPDIR", shortTemp(t))
	p, err := longHome(t).SocketPath()
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(p) != filepath.Join(rt, "clawkit") {
		t.Fatalf("socket %s; want it under $XDG_RUNTIME_DIR/clawkit", p)
	}
	fi, err := os.Stat(filepath.Dir(p))
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("socket folder: %v, %v; want 0700", fi, err)
	}
}

func TestSocketPathTempDir(t *testing.T) {
	tmp := shortTemp(t)
	t.Setenv("XDG_RUNTIME_DIR", "")
	t.Setenv("TMPDIR", tmp)
	p, err := longHome(t).SocketPath()
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(tmp, fmt.Sprintf("clawkit-%d", os.Getuid())); filepath.Dir(p) != want {
		t.Fatalf("socket %s; want it in %s", p, want)
	}
}

// A TMPDIR too long for any socket under it (issue 31 item 12): the
// gateway falls back to /tmp/clawkit-<uid>, so it starts for any home.
func TestSocketPathLongTempDir(t *testing.T) {
	long := filepath.Join(shortTemp(t), strings.Repeat("t", 100))
	if err := os.Mkdir(long, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_RUNTIME_DIR", "")
	t.Setenv("TMPDIR", long)
	p, err := longHome(t).SocketPath()
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("/tmp/clawkit-%d", os.Getuid()); filepath.Dir(p) != want {
		t.Fatalf("socket %s; want it in %s", p, want)
	}
	if len(p) > maxSocketPath {
		t.Fatalf("socket %s is %d bytes", p, len(p))
	}
}

// A folder that is not private (another mode, or a link) is refused, never
// used: another user's folder could receive every call.
func TestSocketPathRefusesSharedFolder(t *testing.T) {
	for _, tc := range []struct {
		name string
		make func(dir string) error
	}{
		{"mode 0755", func(dir string) error { return os.Mkdir(dir, 0o755) }},
		{"link", func(dir string) error {
			target := dir + "-target"
			if err := os.Mkdir(target, 0o700); err != nil {
				return err
			}
			return os.Symlink(target, dir)
		}},
		{"file", func(dir string) error { return os.WriteFile(dir, nil, 0o600) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmp := shortTemp(t)
			t.Setenv("XDG_RUNTIME_DIR", "")
			t.Setenv("TMPDIR", tmp)
			dir := filepath.Join(tmp, fmt.Sprintf("clawkit-%d", os.Getuid()))
			if err := tc.make(dir); err != nil {
				t.Fatal(err)
			}
			p, err := longHome(t).SocketPath()
			if errs.CodeOf(err) != "socket_path" {
				t.Fatalf("SocketPath = %q, %v; want socket_path", p, err)
			}
		})
	}
}

// An XDG_RUNTIME_DIR that does not exist (or is not a folder) is skipped.
func TestSocketPathSkipsMissingRuntimeDir(t *testing.T) {
	tmp := shortTemp(t)
	t.Setenv("XDG_RUNTIME_DIR", filepath.Join(tmp, "missing"))
	t.Setenv("TMPDIR", tmp)
	p, err := longHome(t).SocketPath()
	if err != nil || !strings.HasPrefix(p, filepath.Join(tmp, "clawkit-")) {
		t.Fatalf("SocketPath = %q, %v", p, err)
	}
}
