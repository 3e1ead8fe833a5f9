// Package buildinfo is the one answer to "which clawkit is this": the
// semantic version, the commit, whether the tree was dirty, the date and
// the Go toolchain, however the binary was built (docs/release.md,
// "Version").
//
// Two sources, which agree by construction:
//   - `make build` and `make release` pass the four facts with -ldflags -X
//     (scripts/version.sh computes them from git with the go command's own
//     rules: the tag on HEAD, else a pseudo-version, "+dirty" when the tree
//     has changes). The go command does not stamp VCS facts in every
//     checkout (not in a `git worktree`, not with -buildvcs=false), so the
//     release does not depend on it.
//   - `go build` / `go install` without those flags: the module build info
//     the go command records (the version from the tag or pseudo-version,
//     vcs.revision, vcs.time, vcs.modified), and for `go install
//     …@VERSION` the module version alone (a pseudo-version still names
//     its commit prefix and date).
//
// The date is the commit's date, not the wall clock at build time: the
// release is byte-reproducible (docs/release.md), so a build date would be
// the one field that differs between two builds of one commit.
package buildinfo

import (
	"fmt"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"time"
)

// Set by the linker (-X github.com/clawkit/clawkit/pkg/buildinfo.version=…),
// never by code: see scripts/version.sh.
var (
	version string
	commit  string
	date    string
	dirty   string
)

// ModulePath is clawkit's module path.
const ModulePath = "github.com/clawkit/clawkit"

// Info is what `clawkit version` reports.
type Info struct {
	Module string `json:"module"`
	// Version is a semantic version: the release tag (v1.2.3), or a Go
	// pseudo-version (v0.0.0-20261202064119-d44acd6abcde) for a snapshot,
	// with "+dirty" when built from a modified tree; "(devel)" when nothing
	// recorded one (a test binary).
	Version string `json:"version"`
	// Commit is the full commit hash, or the 12-character prefix a
	// pseudo-version carries; empty when unknown (go install of a tag).
	Commit string `json:"commit,omitempty"`
	// Dirty: built from a tree with uncommitted changes.
	Dirty bool `json:"dirty"`
	// Date is the commit's date (RFC 3339, UTC).
	Date      string `json:"date,omitempty"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

// Read returns the running binary's Info.
func Read() Info {
	bi, _ := debug.ReadBuildInfo()
	return read(bi, stamped{version, commit, date, dirty})
}

// stamped is what the linker set.
type stamped struct{ version, commit, date, dirty string }

func read(bi *debug.BuildInfo, s stamped) Info {
	in := Info{Module: ModulePath, Version: "(devel)", GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi != nil {
		if bi.GoVersion != "" {
			in.GoVersion = bi.GoVersion
		}
		if bi.Main.Path != "" {
			in.Module = bi.Main.Path
		}
	}
	if s.version != "" {
		in.Version, in.Commit, in.Date, in.Dirty = s.version, s.commit, s.date, s.dirty == "true"
		return in
	}
	if bi == nil {
		return in
	}
	for _, st := range bi.Settings {
		switch st.Key {
		case "vcs.revision":
			in.Commit = st.Value
		case "vcs.time":
			in.Date = st.Value
		case "vcs.modified":
			in.Dirty = st.Value == "true"
		}
	}
	if v := bi.Main.Version; v != "" {
		in.Version = v
	}
	if in.Commit == "" {
		// go install …@VERSION: no VCS facts, only the module version.
		if rev, t, ok := ParsePseudo(in.Version); ok {
			in.Commit, in.Date = rev, t.Format(time.RFC3339)
		}
	}
	if in.Dirty && in.Version != "(devel)" && !strings.HasSuffix(in.Version, "+dirty") {
		in.Version += "+dirty"
	}
	return in
}

// pseudoRE matches the three pseudo-version forms of the go command
// (vX.0.0-TS-REV, vX.Y.Z-pre.0.TS-REV, vX.Y.(Z+1)-0.TS-REV), with an
// optional build suffix such as +dirty.
// Compiled on first use, so that process start does not pay for it.
var pseudoRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+-(?:[0-9A-Za-z.-]*\.)?(?:0\.)?([0-9]{14})-([0-9a-f]{12})(?:\+[0-9A-Za-z.-]+)?$`)
})

// ParsePseudo returns the commit prefix and the commit time a Go
// pseudo-version names.
func ParsePseudo(v string) (rev string, t time.Time, ok bool) {
	m := pseudoRE().FindStringSubmatch(v)
	if m == nil {
		return "", time.Time{}, false
	}
	t, err := time.Parse("20060102150405", m[1])
	if err != nil {
		return "", time.Time{}, false
	}
	return m[2], t.UTC(), true
}

// String is the one-line human form. It starts "clawkit VERSION", which
// is also what a crabbox install records as its CLI version (ID).
func (in Info) String() string {
	s := "clawkit " + in.Version
	var extra []string
	if in.Commit != "" {
		extra = append(extra, "commit "+in.Commit)
	}
	if in.Date != "" {
		extra = append(extra, in.Date)
	}
	extra = append(extra, in.GoVersion, in.Platform)
	return fmt.Sprintf("%s (%s)", s, strings.Join(extra, ", "))
}

// ID is the identity an install records and verify compares
// (docs/crabbox.md): "clawkit VERSION". The version alone, because it is
// the one fact every way of building carries (go install …@v1.2.3 knows
// no commit hash), and a tag or pseudo-version names its commit.
func (in Info) ID() string { return "clawkit " + in.Version }
