package artifacts

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/clawkit/clawkit/pkg/artifacts/artifactstest"
	"github.com/clawkit/clawkit/pkg/errs"
)

// invFixture writes a package root whose dist/ holds the given modules and
// dist/worker/ the given files, and returns it.
func invFixture(t *testing.T, mods map[string][]byte, workers []string) string {
	t.Helper()
	root := t.TempDir()
	for name, b := range mods {
		p := filepath.Join(root, "dist", name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(root, "dist", "worker"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, w := range workers {
		if err := os.WriteFile(filepath.Join(root, "dist", "worker", w), []byte("// "+w+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestReadInventoryShapes(t *testing.T) {
	for _, tc := range []struct {
		name   string
		files  []string
		shape  artifactstest.Shape
		symbol string
	}{
		{"exported-list", artifactstest.Inventory96, artifactstest.Exported, "WORKER_BUNDLE_ARTIFACT_PATHS"},
		{"local-list", artifactstest.Inventory8, artifactstest.Local, "WORKER_DEPLOY_ARTIFACT_PATHS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// dist/worker/ holds one file that is not in the bundle.
			root := invFixture(t, artifactstest.Modules(tc.files, tc.shape), append(slices.Clone(tc.files), "skills-worker-entry.js"))
			inv, err := ReadInventory(root, "2026.1.1")
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(inv.Files, tc.files) {
				t.Fatalf("files %v, want %v", inv.Files, tc.files)
			}
			if inv.Source != "dist/"+artifactstest.ProducerModule || inv.Symbol != tc.symbol {
				t.Fatalf("source %s symbol %s", inv.Source, inv.Symbol)
			}
			if len(inv.DefinedIn) == 0 {
				t.Fatal("no trace of where the constants were read")
			}
		})
	}
}

func TestReadInventoryRefusals(t *testing.T) {
	files := []string{"a.mjs", "b.mjs"}
	base := func() map[string][]byte { return artifactstest.Modules(files, artifactstest.Local) }
	edit := func(mod, old, new string) func(map[string][]byte) {
		return func(m map[string][]byte) {
			s := string(m[mod])
			if !strings.Contains(s, old) {
				t.Fatalf("fixture has no %q", old)
			}
			m[mod] = []byte(strings.Replace(s, old, new, 1))
		}
	}
	hash, prod := artifactstest.HashModule, artifactstest.ProducerModule
	for _, tc := range []struct {
		name    string
		change  func(map[string][]byte)
		workers []string
		code    errs.Code
		want    string
	}{
		{"named-file-absent", nil, []string{"a.mjs"}, "worker_artifact_missing", "dist/worker/b.mjs is missing (named by WORKER_DEPLOY_ARTIFACT_PATHS"},
		{"no-producer", func(m map[string][]byte) { delete(m, prod) }, files, "worker_inventory_unknown", "no module in dist/ defines collectWorkerBundleManifest"},
		{"two-producers", func(m map[string][]byte) { m["bootstrap-Other.mjs"] = m[prod] }, files, "worker_inventory_unknown", "2 modules define"},
		{"computed-element", edit(prod, "WORKER_BUNDLE_A_PATH, WORKER_BUNDLE_B_PATH]", "WORKER_BUNDLE_A_PATH, ...more]"), files, "worker_inventory_unknown", "not a constant string or list"},
		{"let-list", edit(prod, "const WORKER_DEPLOY", "let WORKER_DEPLOY"), files, "worker_inventory_unknown", "not a constant"},
		{"constant-declared-twice", edit(hash, "const WORKER_BUNDLE_A_PATH = \"a.mjs\";", "const WORKER_BUNDLE_A_PATH = \"a.mjs\";\nconst WORKER_BUNDLE_A_PATH = \"c.mjs\";"), files, "worker_inventory_unknown", "declared more than once"},
		{"constant-missing", edit(hash, "const WORKER_BUNDLE_A_PATH = \"a.mjs\";", ""), files, "worker_inventory_unknown", "WORKER_BUNDLE_A_PATH is not defined"},
		{"constant-computed", edit(hash, "const WORKER_BUNDLE_A_PATH = \"a.mjs\";", "const WORKER_BUNDLE_A_PATH = \"a\" + \".mjs\";"), files, "worker_inventory_unknown", "not a constant"},
		{"import-outside-dist", edit(prod, "from \"./"+hash+"\"", "from \"../"+hash+"\""), files, "worker_inventory_unknown", "not a module beside it"},
		{"export-missing", edit(hash, "WORKER_BUNDLE_A_PATH as e0, ", ""), files, "worker_inventory_unknown", "exports \"e0\" 0 times"},
		{"unsorted", edit(prod, "[WORKER_BUNDLE_A_PATH, WORKER_BUNDLE_B_PATH]", "[WORKER_BUNDLE_B_PATH, WORKER_BUNDLE_A_PATH]"), files, "worker_inventory_unknown", "not in byte order"},
		{"duplicate-entry", edit(prod, "[WORKER_BUNDLE_A_PATH, WORKER_BUNDLE_B_PATH]", "[WORKER_BUNDLE_A_PATH, WORKER_BUNDLE_A_PATH]"), files, "worker_inventory_unknown", "names a.mjs twice"},
		{"path-not-a-name", edit(hash, "\"a.mjs\"", "\"../a.mjs\""), files, "worker_inventory_unknown", "not a plain file name"},
		{"two-loops", edit(prod, "\treturn manifest;", "\tfor (const x of WORKER_DEPLOY_ARTIFACT_PATHS) await stageWorkerDeployArtifact({ x });\n\treturn manifest;"), files, "worker_inventory_unknown", "2 loops"},
		{"no-loop", edit(prod, "for (const artifactPath of WORKER_DEPLOY_ARTIFACT_PATHS)", "WORKER_DEPLOY_ARTIFACT_PATHS.forEach((artifactPath) =>"), files, "", ""},
		{"other-mode", edit(prod, "mode: 448", "mode: 420"), files, "worker_inventory_unknown", "mode 420"},
		{"not-from-dist-worker", edit(prod, "`dist/worker/${", "`dist/other/${"), files, "worker_inventory_unknown", "does not read from dist/worker/"},
		{"other-hash-formula", edit(hash, "${entry.size}\\0", "${entry.size}\\0${entry.mtime}\\0"), files, "worker_inventory_unknown", "not the openclaw-worker-bundle-v1 formula"},
		{"other-hash-version", edit(hash, "\"openclaw-worker-bundle-v1\"", "\"openclaw-worker-bundle-v2\""), files, "worker_inventory_unknown", "openclaw-worker-bundle-v2"},
		{"unterminated-module", edit(prod, "async function stage", "`async function stage"), files, "worker_inventory_unknown", "cannot be parsed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := base()
			if tc.change != nil {
				tc.change(m)
			}
			root := invFixture(t, m, tc.workers)
			_, err := ReadInventory(root, "2026.1.1")
			if err == nil {
				t.Fatal("accepted")
			}
			code, want := tc.code, tc.want
			if code == "" {
				code, want = "worker_inventory_unknown", "0 loops"
			}
			if errs.CodeOf(err) != code || errs.KindOf(err) != errs.KindFailed {
				t.Fatalf("code %s kind %v: %v", errs.CodeOf(err), errs.KindOf(err), err)
			}
			if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "2026.1.1") {
				t.Fatalf("error %q does not say %q and name the release", err, want)
			}
		})
	}
}

func TestReadInventoryNoProducerRelease(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "dist"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(root, "dist", "entry.js"), []byte("export {};\n"), 0o644)
	_, err := ReadInventory(root, "2026.7.35")
	if errs.CodeOf(err) != "worker_bundle_unsupported" || !strings.Contains(err.Error(), "openclaw 2026.7.35 ships no worker bundle producer") {
		t.Fatalf("%v", err)
	}
}

// The peers' real releases (make peers): each release's own list.
func TestReadInventoryRealReleases(t *testing.T) {
	for _, tc := range []struct {
		dir   string
		files []string
	}{
		{"openclaw", artifactstest.Inventory96},
		{"openclaw-2026-9-5", []string{"github-exec-launcher.mjs", "worker.mjs", "workspace-rsync-receiver.mjs"}},
		{"openclaw-2026-8", artifactstest.Inventory8},
	} {
		root, _ := filepath.Abs(filepath.Join("../../peers/node_modules", tc.dir))
		if _, err := os.Stat(filepath.Join(root, "package.json")); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("peer %s missing (make peers)", tc.dir)
			}
			t.Skipf("peer %s not installed (make peers)", tc.dir)
		}
		inv, err := ReadInventory(root, tc.dir)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(inv.Files, tc.files) {
			t.Fatalf("%s: %v, want %v", tc.dir, inv.Files, tc.files)
		}
	}
}
