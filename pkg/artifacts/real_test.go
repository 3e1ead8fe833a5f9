package artifacts

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// realRoot is the real OpenClaw installation the peers folder holds.
func realRoot(t testing.TB) string {
	root, _ := filepath.Abs("../../peers/node_modules/openclaw")
	if _, err := os.Stat(filepath.Join(root, "package.json")); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("the real OpenClaw installation is missing (%s): run make peers", root)
		}
		t.Skip("peers not installed: run make peers")
	}
	return root
}

func TestExportRealQuick(t *testing.T) {
	if os.Getenv("ARTIFACTS_QUICK") == "" {
		t.Skip()
	}
	out := filepath.Join(t.TempDir(), "out")
	res, err := Export(context.Background(), ExportOptions{PackageRoot: realRoot(t), Output: out, Progress: os.Stderr})
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := res.Manifest.Marshal()
	t.Logf("%s files=%d", raw, res.Files)
}
