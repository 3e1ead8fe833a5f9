#!/usr/bin/env bash
# make demo part: export the sample installation, inspect it, show the
# worker archive's path rule. BIN and DEMO_DIR come from scripts/demo.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-$PWD/bin/clawkit}
DEMO_DIR=${DEMO_DIR:-$(mktemp -d)}
pkg=artifacts/sample/node_modules/openclaw
out=$DEMO_DIR/runtime-artifacts
"$BIN" runtime-artifacts qualify --package-root "$pkg" | sed 's/^/   /'
"$BIN" runtime-artifacts export --package-root "$pkg" --output "$out" | sed 's/^/   /'
"$BIN" runtime-artifacts inspect "$out" | sed 's/^/   /'
sha=$(sed -n '/"workerBundle"/,/}/s/.*"sha256": "\([0-9a-f]*\)".*/\1/p' "$out/manifest.json" | head -1)
echo "   worker-path $sha -> $("$BIN" runtime-artifacts worker-path "$sha")"
