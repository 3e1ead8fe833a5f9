package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestFloorLinksEveryDependency keeps the floor honest: every package
// outside the standard library and outside clawkit that the clawkit binary
// links must be linked here too, or the floor understates what clawkit's
// dependencies cost and the start-up ratio overstates clawkit's own share.
func TestFloorLinksEveryDependency(t *testing.T) {
	deps := func(pkg string) map[string]bool {
		out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", pkg).Output()
		if err != nil {
			t.Fatalf("go list %s: %v", pkg, err)
		}
		m := map[string]bool{}
		for _, p := range strings.Fields(string(out)) {
			if !strings.HasPrefix(p, "github.com/clawkit/clawkit/") {
				m[p] = true
			}
		}
		return m
	}
	floor := deps("github.com/clawkit/clawkit/scripts/depsfloor")
	for p := range deps("github.com/clawkit/clawkit/cmd/clawkit") {
		if !floor[p] {
			t.Errorf("clawkit links %s but scripts/depsfloor does not: add its importer to main.go's blank imports", p)
		}
	}
}
