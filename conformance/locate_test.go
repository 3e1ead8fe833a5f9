package conformance

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Every driver says so when a release does not ship its reference: exit 3
// and {found:false} naming the version, never an empty result that would
// compare equal to anything. A chunk that mentions the name without
// defining the function does not count.
func TestDriversSayWhenMissing(t *testing.T) {
	node := node24(t)
	rel := t.TempDir()
	if err := os.MkdirAll(filepath.Join(rel, "dist"), 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"package.json":       `{"name":"openclaw","version":"2099.1.1"}`,
		"dist/other-a1.mjs":  "// calls scanSkillContent and createMcpStdioClient, defines neither\nexport const scanSkillContent = 1;\n",
		"dist/framer-b2.mjs": "function createBoundedLineFramerX() {}\nexport { createBoundedLineFramerX as t };\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(rel, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []struct{ driver, input string }{
		{"scanner.mjs", "[]"},
		{"framer.mjs", "[]"},
		{"mcpclient.mjs", `{"command":"/bin/true","cases":[]}`},
		{"produce.mjs", ""},
	} {
		args := []string{filepath.Join(repoRoot(), "conformance", "drivers", d.driver), rel}
		if d.driver == "produce.mjs" {
			args = append(args, rel, t.TempDir())
		}
		cmd := exec.Command(node, args...)
		cmd.Stdin = strings.NewReader(d.input)
		out, err := cmd.Output()
		if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 3 {
			t.Errorf("%s on a release without its reference: %v, want exit 3\n%s", d.driver, err, out)
			continue
		}
		var doc struct {
			Version string `json:"version"`
			Found   *bool  `json:"found"`
		}
		if err := json.Unmarshal(out, &doc); err != nil || doc.Found == nil || *doc.Found || doc.Version != "2099.1.1" {
			t.Errorf("%s: %s (want found:false for 2099.1.1)", d.driver, out)
		}
	}
}
