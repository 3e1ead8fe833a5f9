// Package artifactstest writes the compiled-module shapes in which OpenClaw
// releases define their worker bundle inventory, for tests of installations
// that are not real releases (the sample, synthetic fixtures, hostile
// variants). The shapes follow the published releases' dist/ layout: a
// worker-bundle-hash chunk that exports the file-name constants and the hash
// function, and a bootstrap chunk whose collectWorkerBundleManifest loops
// over the list and stages each file with stageWorkerDeployArtifact.
package artifactstest

import (
	"fmt"
	"regexp"
	"strings"
)

// Inventory96 is the worker bundle inventory of openclaw 2026.9.6.
var Inventory96 = []string{
	"github-exec-launcher.mjs",
	"image-processor.worker.mjs",
	"service-child-group-anchor.mjs",
	"service-child-relay.mjs",
	"sqlite-store.worker.mjs",
	"worker.mjs",
	"workspace-rsync-receiver.mjs",
}

// Inventory8 is the worker bundle inventory of the openclaw 2026.8 releases.
var Inventory8 = []string{"worker.mjs", "workspace-rsync-receiver.mjs"}

// Shape selects how the list is written.
type Shape int

const (
	// Exported means the list is a constant of the hash chunk, imported by the
	// bootstrap chunk (2026.9.6 and later).
	Exported Shape = iota
	// Local means the list is a constant of the bootstrap chunk whose elements
	// are constants imported from the hash chunk (2026.8 to 2026.9.5).
	Local
)

const (
	// HashModule is the dist/ file name of the hash chunk written.
	HashModule = "worker-bundle-hash-T3st.mjs"
	// ProducerModule is the dist/ file name of the bootstrap chunk written.
	ProducerModule = "bootstrap-T3st.mjs"
)

var nonIdent = regexp.MustCompile(`[^A-Za-z0-9]+`)

func constName(file string) string {
	return "WORKER_BUNDLE_" + strings.ToUpper(strings.Trim(nonIdent.ReplaceAllString(strings.TrimSuffix(file, ".mjs"), "_"), "_")) + "_PATH"
}

// Modules returns the dist/-relative files (HashModule, ProducerModule) that
// define files as the worker bundle inventory in the given shape.
func Modules(files []string, shape Shape) map[string][]byte {
	var hash, prod strings.Builder
	hash.WriteString("import { createHash } from \"node:crypto\";\n//#region src/shared/worker-bundle-hash.ts\n")
	hash.WriteString("const WORKER_BUNDLE_MANIFEST_VERSION = \"openclaw-worker-bundle-v1\";\n")
	var names []string
	for _, f := range files {
		n := constName(f)
		names = append(names, n)
		fmt.Fprintf(&hash, "const %s = %q;\n", n, f)
	}
	list := "WORKER_BUNDLE_ARTIFACT_PATHS"
	if shape == Exported {
		fmt.Fprintf(&hash, "const %s = [\n\t%s\n];\n", list, strings.Join(names, ",\n\t"))
	}
	hash.WriteString("function compareWorkerBundlePaths(left, right) {\n\treturn left < right ? -1 : left > right ? 1 : 0;\n}\n")
	hash.WriteString("/** Hashes the canonical worker manifest. */\nfunction hashWorkerBundleManifest(entries) {\n\tconst hash = createHash(\"sha256\");\n")
	hash.WriteString("\thash.update(`${WORKER_BUNDLE_MANIFEST_VERSION}\\0`);\n")
	hash.WriteString("\tfor (const entry of entries) hash.update(`${entry.path}\\0${entry.mode.toString(8)}\\0${entry.size}\\0${entry.sha256}\\0`);\n")
	hash.WriteString("\treturn hash.digest(\"hex\");\n}\n//#endregion\n")
	exports := []string{"hashWorkerBundleManifest as a", "compareWorkerBundlePaths as b", "WORKER_BUNDLE_MANIFEST_VERSION as c"}
	imports := []string{"a as hashWorkerBundleManifest", "b as compareWorkerBundlePaths"}
	if shape == Exported {
		exports = append(exports, list+" as t")
		imports = append(imports, "t as "+list)
	} else {
		for i, n := range names {
			exports = append(exports, fmt.Sprintf("%s as e%d", n, i))
			imports = append(imports, fmt.Sprintf("e%d as %s", i, n))
		}
	}
	fmt.Fprintf(&hash, "export { %s };\n", strings.Join(exports, ", "))

	fmt.Fprintf(&prod, "import { %s } from \"./%s\";\nimport path from \"node:path\";\nimport fs from \"node:fs/promises\";\n", strings.Join(imports, ", "), HashModule)
	prod.WriteString("//#region src/gateway/worker-environments/bundle-staging.ts\n")
	if shape == Local {
		list = "WORKER_DEPLOY_ARTIFACT_PATHS"
		fmt.Fprintf(&prod, "const %s = [%s];\n", list, strings.Join(names, ", "))
	}
	prod.WriteString("async function stageWorkerDeployArtifact(params) {\n\tconst relativeSourcePath = `dist/worker/${params.artifactPath}`;\n")
	prod.WriteString("\tconst contents = await fs.readFile(path.join(params.sourceRoot, relativeSourcePath));\n")
	prod.WriteString("\tif (!/^[a-z]/u.test(params.artifactPath)) throw new Error(`Unsafe worker deploy artifact: ${relativeSourcePath}`);\n")
	prod.WriteString("\treturn {\n\t\tpath: params.artifactPath,\n\t\tmode: 448,\n\t\tsize: contents.byteLength,\n\t\tsha256: \"\"\n\t};\n}\n")
	prod.WriteString("async function collectWorkerBundleManifest(sourceRoot, stagingRoot) {\n\tconst manifest = [];\n")
	fmt.Fprintf(&prod, "\tfor (const artifactPath of %s) manifest.push(await stageWorkerDeployArtifact({\n\t\tsourceRoot,\n\t\tstagingRoot,\n\t\tartifactPath\n\t}));\n\treturn manifest;\n}\n", list)
	prod.WriteString("//#endregion\n// A generated script mentions the same names inside a template, which is\n// not a declaration:\nconst script = `\nconst artifactPaths = ${JSON.stringify([])};\n`;\n")
	prod.WriteString("function createWorkerBundleProducer(options = {}) {\n\treturn { prepare() { return collectWorkerBundleManifest(options.packageRoot, options.cacheDir).then((m) => hashWorkerBundleManifest(m)); } };\n}\n")
	prod.WriteString("export { createWorkerBundleProducer as r, script as s };\n")
	return map[string][]byte{HashModule: []byte(hash.String()), ProducerModule: []byte(prod.String())}
}
