package artifacts

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clawkit/clawkit/pkg/artifacts/artifactstest"
	"github.com/clawkit/clawkit/pkg/errs"
)

func sum(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// sampleManifest builds a valid manifest whose bundle hash is computed here
// from the documented formula written out by hand, not by BundleHash.
func sampleManifest() *Manifest {
	var entries []WorkerEntry
	for _, p := range artifactstest.Inventory96 {
		entries = append(entries, WorkerEntry{Path: p, Mode: "0700", Bytes: int64(len(p)), SHA256: sum(p)})
	}
	var pre strings.Builder
	pre.WriteString("openclaw-worker-bundle-v1\x00")
	for _, e := range entries {
		pre.WriteString(e.Path + "\x00700\x00")
		fmt.Fprint(&pre, len(e.Path))
		pre.WriteString("\x00" + e.SHA256 + "\x00")
	}
	nb, wb := sum("node"), sum("worker")
	return &Manifest{
		Schema: Schema, BuildID: "b1", Package: PackageInfo{"openclaw", "2026.9.6"},
		Plugins: []string{"alpha", "beta"}, Platform: "linux", Arch: "x64",
		Producer:      Producer{"clawkit", "dev"},
		NodeBootstrap: NodeBootstrap{Archive{"node-bootstrap/" + nb + ".tgz", 10, nb}, PackagePath},
		WorkerBundle:  WorkerBundle{Archive{"worker-artifacts/" + wb + ".tgz", 20, wb}, sum(pre.String()), entries, nil},
	}
}

func TestBundleHashMatchesFormula(t *testing.T) {
	m := sampleManifest()
	if err := m.Validate(); err != nil {
		t.Fatalf("valid manifest rejected: %v", err)
	}
	if got := BundleHash(m.WorkerBundle.HashEntries()); got != m.WorkerBundle.BundleHash {
		t.Fatalf("BundleHash = %s, hand-built formula gives %s", got, m.WorkerBundle.BundleHash)
	}
}

func TestManifestRoundTrip(t *testing.T) {
	m := sampleManifest()
	raw, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "manifest.json")
	if err := os.WriteFile(p, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	got, gotRaw, err := LoadManifest(p)
	if err != nil {
		t.Fatal(err)
	}
	if string(gotRaw) != string(raw) || got.WorkerBundle.BundleHash != m.WorkerBundle.BundleHash || got.Plugins[1] != "beta" {
		t.Fatalf("round trip changed the manifest")
	}
}

func TestManifestRejects(t *testing.T) {
	cases := map[string]func(m *Manifest){
		"schema":        func(m *Manifest) { m.Schema = "openclaw.worker-runtime-artifacts.v2" },
		"buildId":       func(m *Manifest) { m.BuildID = "" },
		"buildIdSlash":  func(m *Manifest) { m.BuildID = "a/b" },
		"version":       func(m *Manifest) { m.Package.Version = "" },
		"pluginsNil":    func(m *Manifest) { m.Plugins = nil },
		"pluginsOrder":  func(m *Manifest) { m.Plugins = []string{"b", "a"} },
		"pluginsDup":    func(m *Manifest) { m.Plugins = []string{"a", "a"} },
		"platform":      func(m *Manifest) { m.Platform = "Linux" },
		"nodePath":      func(m *Manifest) { m.NodeBootstrap.Path = "node-bootstrap/x.tgz" },
		"nodeSha":       func(m *Manifest) { m.NodeBootstrap.SHA256 = strings.ToUpper(m.NodeBootstrap.SHA256) },
		"nodeBytes":     func(m *Manifest) { m.NodeBootstrap.Bytes = 0 },
		"packagePath":   func(m *Manifest) { m.NodeBootstrap.PackagePath = "node_modules/../x" },
		"workerPath":    func(m *Manifest) { m.WorkerBundle.Path = "../" + m.WorkerBundle.Path },
		"bundleHash":    func(m *Manifest) { m.WorkerBundle.BundleHash = sum("other") },
		"entryMode":     func(m *Manifest) { m.WorkerBundle.Entries[0].Mode = "700" },
		"entrySlash":    func(m *Manifest) { m.WorkerBundle.Entries[0].Path = "a/b" },
		"entryOrder":    func(m *Manifest) { e := m.WorkerBundle.Entries; e[0], e[1] = e[1], e[0] },
		"entryDup":      func(m *Manifest) { m.WorkerBundle.Entries[1] = m.WorkerBundle.Entries[0] },
		"entriesEmpty":  func(m *Manifest) { m.WorkerBundle.Entries = nil },
		"entryNegative": func(m *Manifest) { m.WorkerBundle.Entries[0].Bytes = -1 },
	}
	for name, mut := range cases {
		t.Run(name, func(t *testing.T) {
			m := sampleManifest()
			mut(m)
			raw, _ := m.Marshal()
			_, err := ParseManifest(raw)
			if err == nil {
				t.Fatal("accepted")
			}
			if errs.CodeOf(err) != "invalid_manifest" || errs.KindOf(err) != errs.KindFailed {
				t.Fatalf("code %s kind %v", errs.CodeOf(err), errs.KindOf(err))
			}
		})
	}
	raw, _ := sampleManifest().Marshal()
	for name, b := range map[string]string{
		"unknownField": strings.Replace(string(raw), `"arch"`, `"extra":1,"arch"`, 1),
		"trailing":     string(raw) + "{}",
		"notJSON":      "nope",
		"huge":         string(raw) + strings.Repeat(" ", MaxManifestBytes),
	} {
		if _, err := ParseManifest([]byte(b)); err == nil {
			t.Errorf("%s accepted", name)
		}
	}
}

func TestLoadManifestMissingAndLink(t *testing.T) {
	dir := t.TempDir()
	if _, _, err := LoadManifest(filepath.Join(dir, "none.json")); errs.CodeOf(err) != "manifest_unreadable" {
		t.Fatalf("missing: %v", err)
	}
	raw, _ := sampleManifest().Marshal()
	if err := os.WriteFile(filepath.Join(dir, "m.json"), raw, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("m.json", filepath.Join(dir, "link.json")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadManifest(filepath.Join(dir, "link.json")); errs.CodeOf(err) != "manifest_unreadable" {
		t.Fatalf("symlink accepted: %v", err)
	}
}

func TestWorkerPath(t *testing.T) {
	s := sum("x")
	if p, err := WorkerPath(s); err != nil || p != "worker-artifacts/"+s+".tgz" {
		t.Fatalf("%s %v", p, err)
	}
	for _, bad := range []string{"", strings.ToUpper(s), s + "0", s[:63] + "g"} {
		if _, err := WorkerPath(bad); errs.KindOf(err) != errs.KindUsage {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func FuzzParseManifest(f *testing.F) {
	raw, _ := sampleManifest().Marshal()
	f.Add(raw)
	f.Add([]byte(`{"schema":"openclaw.worker-runtime-artifacts.v1"}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseManifest(b)
		if err != nil {
			return
		}
		// Whatever is accepted must re-validate and survive a round trip.
		out, err := m.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ParseManifest(out); err != nil {
			t.Fatalf("accepted manifest does not round-trip: %v", err)
		}
	})
}

func TestCheckStrictJSON(t *testing.T) {
	for _, tc := range []struct {
		doc string
		ok  bool
	}{
		{`{"a":1,"b":{"a":2},"c":[{"a":1},{"a":1}]}`, true},
		{`{"a":"x","b":"a"}`, true},
		{`{"a":["a","a"],"b":"b"}`, true},
		{`{"a":1,"a":2}`, false},
		{`{"x":{"k":1,"k":1}}`, false},
		{`[{"k":[],"k":{}}]`, false},
		{`{"a":{"b":1},"a":3}`, false},
		{"{\"a\":\"\xff\"}", false},
		{`{"a":1}{"a":1}`, false}, // two documents
	} {
		err := CheckStrictJSON([]byte(tc.doc))
		if (err == nil) != tc.ok {
			t.Errorf("%q: err = %v, want ok=%v", tc.doc, err, tc.ok)
		}
	}
}

func TestParseManifestRefusesDuplicateKeysAndBadUTF8(t *testing.T) {
	raw, err := sampleManifest().Marshal()
	if err != nil {
		t.Fatal(err)
	}
	dup := strings.Replace(string(raw), `"buildId": "b1",`, `"buildId": "b1", "buildId": "b2",`, 1)
	if _, err := ParseManifest([]byte(dup)); err == nil || !strings.Contains(err.Error(), `duplicate key "buildId"`) {
		t.Fatalf("duplicate key: %v", err)
	}
	bad := strings.Replace(string(raw), `"b1"`, "\"b\xff\"", 1)
	if _, err := ParseManifest([]byte(bad)); err == nil || !strings.Contains(err.Error(), "UTF-8") {
		t.Fatalf("invalid UTF-8: %v", err)
	}
}
