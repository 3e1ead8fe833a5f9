package buildinfo

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"
)

func TestReadLdflagsWin(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: ModulePath, Version: "(devel)"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "ffff"}}}
	in := read(bi, stamped{"v1.2.3", "abc123", "2026-12-02T06:39:27Z", "false"})
	want := Info{Module: ModulePath, Version: "v1.2.3", Commit: "abc123", Date: "2026-12-02T06:39:27Z", GoVersion: "go1.26.8",
		Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if in != want {
		t.Fatalf("read = %+v, want %+v", in, want)
	}
	if got := in.ID(); got != "clawkit v1.2.3" {
		t.Fatalf("ID = %q", got)
	}
	if s := in.String(); !strings.HasPrefix(s, "clawkit v1.2.3 (commit abc123, 2026-12-02T06:39:27Z, go1.26.8, ") {
		t.Fatalf("String = %q", s)
	}
}

func TestReadVCS(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: ModulePath, Version: "v0.0.0-20261202063927-d44acd695bc7+dirty"},
		Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "d44acd695bc70701ae1c81f2dd37617e895d354c"},
			{Key: "vcs.time", Value: "2026-12-02T06:39:27Z"},
			{Key: "vcs.modified", Value: "true"},
		}}
	in := read(bi, stamped{})
	if in.Commit != "d44acd695bc70701ae1c81f2dd37617e895d354c" || !in.Dirty ||
		in.Version != "v0.0.0-20261202063927-d44acd695bc7+dirty" || in.Date != "2026-12-02T06:39:27Z" {
		t.Fatalf("read = %+v", in)
	}
}

// go install …@VERSION records no VCS facts: a pseudo-version still names
// its commit prefix and date; a tag names neither.
func TestReadModuleOnly(t *testing.T) {
	in := read(&debug.BuildInfo{Main: debug.Module{Path: ModulePath, Version: "v1.2.4-0.20261202063927-d44acd695bc7"}}, stamped{})
	if in.Commit != "d44acd695bc7" || in.Date != "2026-12-02T06:39:27Z" || in.Dirty {
		t.Fatalf("pseudo: %+v", in)
	}
	in = read(&debug.BuildInfo{Main: debug.Module{Path: ModulePath, Version: "v1.2.3"}}, stamped{})
	if in.Commit != "" || in.Date != "" || in.Version != "v1.2.3" {
		t.Fatalf("tag: %+v", in)
	}
	in = read(&debug.BuildInfo{Main: debug.Module{Path: ModulePath, Version: "(devel)"}}, stamped{})
	if in.Version != "(devel)" || in.ID() != "clawkit (devel)" {
		t.Fatalf("devel: %+v", in)
	}
	if in := read(nil, stamped{}); in.Version != "(devel)" || in.Module != ModulePath {
		t.Fatalf("nil: %+v", in)
	}
}

func TestParsePseudo(t *testing.T) {
	ts := time.Date(2026, 12, 2, 6, 39, 27, 0, time.UTC)
	for _, v := range []string{
		"v0.0.0-20261202063927-d44acd695bc7",
		"v1.2.4-0.20261202063927-d44acd695bc7",
		"v1.3.0-rc.1.0.20261202063927-d44acd695bc7",
		"v0.0.0-20261202063927-d44acd695bc7+dirty",
	} {
		rev, tm, ok := ParsePseudo(v)
		if !ok || rev != "d44acd695bc7" || !tm.Equal(ts) {
			t.Errorf("ParsePseudo(%q) = %q %v %v", v, rev, tm, ok)
		}
	}
	for _, v := range []string{"v1.2.3", "(devel)", "v0.0.0-2026120206392-d44acd695bc7", "v0.0.0-20261302063927-d44acd695bc7", "v0.0.0-20261202063927-D44ACD695BC7"} {
		if _, _, ok := ParsePseudo(v); ok {
			t.Errorf("ParsePseudo(%q) ok", v)
		}
	}
}

// TestVersionScriptMatchesGo builds a tiny module in throwaway git
// repositories with the go command's own VCS stamping and checks that
// scripts/version.sh (what make build and make release pass as ldflags)
// computes the same version, commit, date and dirty flag in each case: no
// tag, a tag on HEAD, a release tag below HEAD, a pre-release tag below
// HEAD, and a dirty tree. This is what makes `go install` in a clone and
// `make build` report one version.
func TestVersionScriptMatchesGo(t *testing.T) {
	if testing.Short() {
		t.Skip("builds throwaway modules (-short)")
	}
	for _, tool := range []string{"git", "go", "sh"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s: %v", tool, err)
		}
	}
	_, self, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(self), "..", "..", "scripts", "version.sh")
	dir := t.TempDir()
	run := func(env []string, name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	gitEnv := []string{"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com",
		"GIT_CONFIG_NOSYSTEM=1", "HOME=" + dir}
	run(gitEnv, "git", "init", "-q")
	must(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/stamp\n\ngo 1.26\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte(`package main

import (
	"fmt"
	"runtime/debug"
)

func main() {
	bi, _ := debug.ReadBuildInfo()
	s := map[string]string{}
	for _, x := range bi.Settings {
		s[x.Key] = x.Value
	}
	fmt.Printf("%s\n%s\n%s\n%s\n", bi.Main.Version, s["vcs.revision"], s["vcs.time"], s["vcs.modified"])
}
`), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, ".gitignore"), []byte("stamp\n"), 0o644))
	commit := func(msg, date string) {
		run(gitEnv, "git", "add", "-A")
		run(append(gitEnv, "GIT_COMMITTER_DATE="+date, "GIT_AUTHOR_DATE="+date), "git", "commit", "-q", "-m", msg)
	}
	check := func(name string) {
		t.Helper()
		run([]string{"GOFLAGS=-buildvcs=true", "CGO_ENABLED=0"}, "go", "build", "-o", "stamp", ".")
		goSays := run(nil, "./stamp")
		scriptSays := run([]string{"CLAWKIT_VERSION_REPO=" + dir}, "sh", script)
		lines := strings.Split(scriptSays, "\n")
		if len(lines) != 5 {
			t.Fatalf("%s: version.sh printed %q", name, scriptSays)
		}
		if got := strings.Join(lines[:4], "\n"); got != goSays {
			t.Errorf("%s: version.sh says\n%s\nthe go command stamps\n%s", name, got, goSays)
		}
	}
	commit("one", "2026-12-01T10:00:00+02:00")
	check("no tag")
	run(gitEnv, "git", "tag", "v1.2.3")
	check("tag on HEAD")
	must(t, os.WriteFile(filepath.Join(dir, "x.go"), []byte("package main\n"), 0o644))
	check("dirty tree")
	commit("two", "2026-12-02T06:39:27Z")
	check("release tag below")
	run(gitEnv, "git", "tag", "v1.3.0-rc.1")
	must(t, os.WriteFile(filepath.Join(dir, "y.go"), []byte("package main\n"), 0o644))
	commit("three", "2026-12-02T07:00:00Z")
	check("pre-release tag below")
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
