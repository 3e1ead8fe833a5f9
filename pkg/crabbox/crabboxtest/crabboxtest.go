// Package crabboxtest builds exports for crabbox tests: a real export of a
// small synthetic OpenClaw installation (through pkg/artifacts.Export), and
// hand-made exports whose node bootstrap is any archive, hostile ones
// included, with a manifest that correctly records it (so only the archive
// checks can refuse it).
package crabboxtest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"

	"github.com/clawkit/clawkit/pkg/archive/archivetest"
	"github.com/clawkit/clawkit/pkg/artifacts"
	"github.com/clawkit/clawkit/pkg/artifacts/artifactstest"
)

// Version is the synthetic installation's version.
const Version = "2026.9.6-test.1"

// Installation writes a small built OpenClaw installation (the package,
// its 7 worker artifacts, one bundled plugin and one dependency) below dir
// and returns the package root (dir/node_modules/openclaw).
func Installation(dir string) (string, error) {
	nm := filepath.Join(dir, "node_modules")
	root := filepath.Join(nm, "openclaw")
	files := map[string][]byte{
		"package.json":  []byte(fmt.Sprintf(`{"name":"openclaw","version":%q,"dependencies":{"tiny-dep":"^1.0.0"}}`+"\n", Version)),
		"dist/index.js": archivetest.Text(10, 30000),
		"dist/extensions/demo/openclaw.plugin.json": []byte(`{"id":"demo","name":"Demo"}` + "\n"),
		"dist/extensions/demo/index.js":             archivetest.Text(11, 2000),
		"../tiny-dep/package.json":                  []byte(`{"name":"tiny-dep","version":"1.0.0","main":"index.js"}` + "\n"),
		"../tiny-dep/index.js":                      archivetest.Text(12, 5000),
	}
	for i, a := range artifactstest.Inventory96 {
		files["dist/worker/"+a] = archivetest.Text(uint64(100+i), 3000+i*100)
	}
	for name, b := range artifactstest.Modules(artifactstest.Inventory96, artifactstest.Exported) {
		files["dist/"+name] = b
	}
	for rel, b := range files {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return "", err
		}
	}
	return root, nil
}

// Export runs the real export of Installation(dir/src) into dir/export and
// returns the manifest path.
func Export(dir string) (string, error) {
	root, err := Installation(filepath.Join(dir, "src"))
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, "export")
	if _, err := artifacts.Export(context.Background(), artifacts.ExportOptions{PackageRoot: root, Output: out, BuildID: "test-build-1", Producer: "crabboxtest"}); err != nil {
		return "", err
	}
	return filepath.Join(out, artifacts.ManifestName), nil
}

// WorkerBundle builds a worker bundle archive (the 7 artifacts at the root,
// mode 0700) and its manifest entries.
func WorkerBundle() ([]byte, []artifacts.WorkerEntry) {
	var ents []archivetest.Entry
	var wes []artifacts.WorkerEntry
	for i, a := range artifactstest.Inventory96 {
		b := archivetest.Text(uint64(200+i), 2500)
		ents = append(ents, archivetest.Entry{Name: a, Mode: 0o700, Body: b})
		s := sha256.Sum256(b)
		wes = append(wes, artifacts.WorkerEntry{Path: a, Mode: "0700", Bytes: int64(len(b)), SHA256: hex.EncodeToString(s[:])})
	}
	return archivetest.Build(ents), wes
}

// NodeBootstrap is a well-formed node bootstrap for version.
func NodeBootstrap(version string) []byte {
	return archivetest.Build([]archivetest.Entry{
		{Name: "node_modules/openclaw/package.json", Body: []byte(fmt.Sprintf(`{"name":"openclaw","version":%q}`, version))},
		{Name: "node_modules/openclaw/dist/index.js", Body: archivetest.Text(20, 8000)},
		{Name: "node_modules/tiny-dep/index.js", Body: archivetest.Text(21, 3000)},
	})
}

// HandExport writes an export folder dir (which must not exist) whose node
// bootstrap is node, with a correct manifest, and returns the manifest path.
func HandExport(dir string, node []byte) (string, error) {
	worker, wes := WorkerBundle()
	return HandExportWorker(dir, node, worker, wes)
}

// HandExportWorker is HandExport with a given worker archive and the
// entries the manifest records for it (which may disagree with it).
func HandExportWorker(dir string, node, worker []byte, wes []artifacts.WorkerEntry) (string, error) {
	ns, ws := sha256.Sum256(node), sha256.Sum256(worker)
	nh, wh := hex.EncodeToString(ns[:]), hex.EncodeToString(ws[:])
	m := &artifacts.Manifest{
		Schema:   artifacts.Schema,
		BuildID:  "hand-build-1",
		Package:  artifacts.PackageInfo{Name: "openclaw", Version: Version},
		Plugins:  []string{},
		Platform: "linux", Arch: "x64",
		Producer: artifacts.Producer{Name: "crabboxtest", Version: "0"},
		NodeBootstrap: artifacts.NodeBootstrap{
			Archive:     artifacts.Archive{Path: "node-bootstrap/" + nh + ".tgz", Bytes: int64(len(node)), SHA256: nh},
			PackagePath: artifacts.PackagePath,
		},
		WorkerBundle: artifacts.WorkerBundle{
			Archive: artifacts.Archive{Path: "worker-artifacts/" + wh + ".tgz", Bytes: int64(len(worker)), SHA256: wh},
			Entries: wes,
		},
	}
	m.WorkerBundle.BundleHash = artifacts.BundleHash(m.WorkerBundle.HashEntries())
	if err := m.Validate(); err != nil {
		return "", err
	}
	raw, err := m.Marshal()
	if err != nil {
		return "", err
	}
	for rel, b := range map[string][]byte{m.NodeBootstrap.Path: node, m.WorkerBundle.Path: worker, artifacts.ManifestName: raw} {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return "", err
		}
	}
	return filepath.Join(dir, artifacts.ManifestName), nil
}
