package cli

import (
	"io"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/clawkit/clawkit/pkg/clidoc"
)

// TestCLIReferenceIsFresh fails when the committed man page (docs/man) or
// Markdown reference (docs/cli) differs from what the command model renders
// today: a flag or command was added, removed or re-worded without
// regenerating them.
func TestCLIReferenceIsFresh(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	repo := filepath.Join(filepath.Dir(file), "..", "..")
	var c CLI
	parser, err := newParser(&c, nil, true, io.Discard, io.Discard, func(int) {})
	if err != nil {
		t.Fatal(err)
	}
	stale := clidoc.Stale(parser.Model.Node, filepath.Join(repo, "docs", "man"), filepath.Join(repo, "docs", "cli"))
	for i, p := range stale {
		stale[i], _ = filepath.Rel(repo, p)
	}
	if len(stale) > 0 {
		t.Fatalf("the CLI reference is stale: %s\nregenerate it with: %s", strings.Join(stale, ", "), clidoc.Regenerate)
	}
}
