package testscript

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// `gateway run --detach` on a full disk: the child cannot write its log
// either, so its reason travels on the start report pipe and the parent
// prints it, instead of "exited during start" with nothing after it.
// Needs root to mount a small tmpfs; skipped otherwise.
func TestDetachOnFullDiskSaysWhy(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	dir := filepath.Join(t.TempDir(), "small")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := mountTmpfs(dir, "size=256k"); err != nil {
		t.Skipf("cannot mount a tmpfs: %v", err)
	}
	defer func() {
		if err := unmountTmpfs(dir); err != nil {
			t.Error(err)
		}
	}()
	home := filepath.Join(dir, "home")
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	// Fill the disk.
	f, err := os.Create(filepath.Join(dir, "fill"))
	if err != nil {
		t.Fatal(err)
	}
	chunk := bytes.Repeat([]byte{0}, 4096)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			break
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}

	cmd := exec.Command("clawkit", "--home", home, "gateway", "run", "--detach", "--start-timeout", "20s")
	cmd.Env = append(os.Environ(), "TMPDIR="+t.TempDir())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	if code := exitCode(err); code != 1 {
		t.Fatalf("exit %d, want 1\n%s", code, stderr.String())
	}
	msg := stderr.String()
	if !strings.Contains(msg, "the gateway exited during start") || !(strings.Contains(msg, "no space left on device") || strings.Contains(msg, "disk is full")) {
		t.Fatalf("the error does not say why the gateway could not start:\n%s", msg)
	}
	if b, _ := os.ReadFile(filepath.Join(home, "gateway.log")); len(b) != 0 {
		t.Fatalf("the log holds %d bytes on a full disk; the test no longer shows the pipe's worth: %q", len(b), b)
	}
}
