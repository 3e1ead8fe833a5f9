package skills

import (
	"os"
	"path/filepath"
	"testing"
)

// writeTree writes files (slash paths relative to root) for a test.
func writeTree(t testing.TB, root string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		mustWrite(t, filepath.Join(root, filepath.FromSlash(p)), c)
	}
}

func mustWrite(tb testing.TB, full, content string) {
	tb.Helper()
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
		tb.Fatal(err)
	}
}
