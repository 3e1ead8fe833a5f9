package testscript

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestContainerImage builds the Dockerfile's image around a static linux
// binary of this tree and runs `version` and `crabbox verify --help` in it
// (no shell, no libc, an unprivileged user). Skipped, saying so, where
// Docker is absent or its daemon does not answer; CI installs nothing for
// it. make image builds the same Dockerfile from the release archive.
func TestContainerImage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a container image (-short)")
	}
	docker, err := exec.LookPath("docker")
	if err != nil {
		t.Skip("Docker is absent (no docker command): the container image is not tested here")
	}
	if out, err := exec.Command(docker, "info").CombinedOutput(); err != nil {
		// One line: the reason, then docker's own last word (its error
		// comes last; its first line is a heading such as "Client:").
		t.Skipf("Docker's daemon does not answer (docker info: %v: %s): the container image is not tested here", err, lastLine(out))
	}
	ctx := t.TempDir()
	build := exec.Command("go", "build", "-trimpath", "-o", filepath.Join(ctx, "clawkit"), "./cmd/clawkit")
	build.Dir = repoRoot()
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	tag := "clawkit-image-test:" + filepath.Base(ctx)
	run := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(docker, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("docker %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	run("build", "--quiet", "--file", filepath.Join(repoRoot(), "Dockerfile"), "--tag", tag, ctx)
	t.Cleanup(func() {
		if out, err := exec.Command(docker, "rmi", "--force", tag).CombinedOutput(); err != nil {
			t.Errorf("docker rmi: %v: %s", err, out)
		}
	})
	if out := run("run", "--rm", tag, "version"); !strings.HasPrefix(out, "clawkit ") {
		t.Errorf("version in the image printed %q", out)
	}
	if out := run("run", "--rm", tag, "crabbox", "verify", "--help"); !strings.Contains(out, "Usage: clawkit crabbox verify") {
		t.Errorf("crabbox verify --help in the image printed %q", out)
	}
	// The CA bundle Google's API needs is where Go looks for it.
	id := strings.TrimSpace(run("create", tag))
	t.Cleanup(func() {
		if out, err := exec.Command(docker, "rm", "--force", id).CombinedOutput(); err != nil {
			t.Errorf("docker rm: %v: %s", err, out)
		}
	})
	ca := filepath.Join(t.TempDir(), "ca.crt")
	run("cp", id+":/etc/ssl/certs/ca-certificates.crt", ca)
	if b, err := os.ReadFile(ca); err != nil || !strings.Contains(string(b), "BEGIN CERTIFICATE") {
		t.Errorf("no CA certificates in the image: %v", err)
	}
	if out := run("image", "inspect", "--format", "{{.Config.User}}", tag); strings.TrimSpace(out) != "65532:65532" {
		t.Errorf("the image runs as %q, want 65532:65532", out)
	}
}

// lastLine is b's last non-blank line, trimmed.
func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
