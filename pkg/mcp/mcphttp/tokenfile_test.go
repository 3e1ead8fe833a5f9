package mcphttp

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clawkit/clawkit/pkg/errs"
)

// The token file is always a new file of mode 0600: whatever held its name
// (a 0644 file, a symbolic link, a hard link to someone else's file, a
// killed proxy's token) is replaced, never written through (issue 39,
// item 2).
func TestWriteTokenFileIsAlwaysNew(t *testing.T) {
	const listen = "http://127.0.0.1:5123/mcp"
	cases := map[string]func(t *testing.T, home, dest, other string){
		"a wider file": func(t *testing.T, home, dest, other string) {
			if err := os.WriteFile(dest, []byte("old\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(dest, 0o644); err != nil {
				t.Fatal(err)
			}
		},
		"a symbolic link": func(t *testing.T, home, dest, other string) {
			if err := os.Symlink(other, dest); err != nil {
				t.Fatal(err)
			}
		},
		"a hard link": func(t *testing.T, home, dest, other string) {
			if err := os.Link(other, dest); err != nil {
				t.Fatal(err)
			}
		},
		"nothing": func(t *testing.T, home, dest, other string) {},
	}
	for name, plant := range cases {
		t.Run(name, func(t *testing.T) {
			home := t.TempDir()
			other := filepath.Join(t.TempDir(), "someone-elses")
			if err := os.WriteFile(other, []byte("theirs\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(other, 0o644); err != nil {
				t.Fatal(err)
			}
			dest := filepath.Join(home, "mcp-proxy-5123.token")
			plant(t, home, dest, other)
			path, err := WriteTokenFile(home, listen, "tok-value-123456")
			if err != nil || path != dest {
				t.Fatalf("WriteTokenFile: %q %v", path, err)
			}
			fi, err := os.Lstat(dest)
			if err != nil {
				t.Fatal(err)
			}
			if !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
				t.Fatalf("token file mode %v, want a regular file of mode 0600", fi.Mode())
			}
			if b, _ := os.ReadFile(dest); string(b) != "tok-value-123456\n" {
				t.Fatalf("token file holds %q", b)
			}
			ofi, _ := os.Stat(other)
			if b, _ := os.ReadFile(other); string(b) != "theirs\n" || ofi.Mode().Perm() != 0o644 {
				t.Fatalf("the file the name pointed at changed: %q %v", b, ofi.Mode())
			}
			ents, _ := os.ReadDir(home)
			if len(ents) != 1 {
				t.Fatalf("home holds %d entries, want the token file alone", len(ents))
			}
		})
	}
}

// A token file that cannot be written is a clear error naming the file
// (the CLI then serves nothing: testscript/mcp_proxy_token_file.txtar).
func TestWriteTokenFileFailure(t *testing.T) {
	home := t.TempDir()
	dest := filepath.Join(home, "mcp-proxy-5124.token")
	if err := os.Mkdir(dest, 0o700); err != nil { // a folder holds the name
		t.Fatal(err)
	}
	_, err := WriteTokenFile(home, "http://127.0.0.1:5124/mcp", "tok-value-123456")
	if errs.CodeOf(err) != CodeTokenWriteFailed || !strings.Contains(err.Error(), dest) {
		t.Fatalf("err %v (%s)", err, errs.CodeOf(err))
	}
	ents, _ := os.ReadDir(home)
	if len(ents) != 1 {
		t.Fatalf("a temporary file was left: %d entries", len(ents))
	}
}
