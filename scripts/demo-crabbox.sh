#!/usr/bin/env bash
# make demo part: export the sample installation, print the crabbox setup
# command, run it (install), validate the receipt, verify the cache (deep),
# install again (existing-verified), then show a corrupted cache failing
# verification. BIN and DEMO_DIR come from scripts/demo.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-$PWD/bin/clawkit}
[ -x "$BIN" ] || go build -o "$BIN" ./cmd/clawkit
DEMO_DIR=${DEMO_DIR:-$(mktemp -d /tmp/clawkit-demo.XXXXXX)}
pkg=artifacts/sample/node_modules/openclaw
exp=$DEMO_DIR/crabbox-export
target=$DEMO_DIR/crabbox-target
out=$DEMO_DIR/crabbox-install.out

"$BIN" runtime-artifacts export --package-root "$pkg" --output "$exp" >/dev/null
echo "   export:   $exp/manifest.json"
echo "   setup (the credential-free command for the runtime user):"
# Printed whole on one line: wrapping would split a word and break copy-paste.
"$BIN" crabbox setup --manifest "$exp/manifest.json" --target-home "$target" | sed 's/^/     /'
"$BIN" crabbox setup --run --manifest "$exp/manifest.json" --target-home "$target" >"$out" 2>/dev/null
echo "   install:  receipt line saved in $out:"
cut -c1-120 "$out" | sed 's/$/…/; s/^/     /'
"$BIN" crabbox receipt --manifest "$exp/manifest.json" --target-home "$target" --from "$out" | sed 's/^/   /'
rt=$(ls -d "$target"/.openclaw-worker/node-runtimes/*/)
echo "   runtime:  ${rt%/}"
echo "   package:  ${rt}node_modules/openclaw"
echo "   worker:   $(ls "$rt"node_modules/openclaw/worker-artifacts/*.tgz)"
"$BIN" crabbox verify --deep --manifest "$exp/manifest.json" --target-home "$target" | cut -c1-80 | sed 's/$/…/; s/^/   verify:   /'
"$BIN" crabbox install --manifest "$exp/manifest.json" --target-home "$target" 2>/dev/null | cut -c1-80 | sed 's/$/…/; s/^/   again:    /'
# Corrupt one byte of an installed file: --deep finds it, exit 1.
f="$rt"node_modules/openclaw/dist/entry.js
printf 'X' | dd of="$f" bs=1 seek=0 conv=notrunc status=none
set +e
"$BIN" crabbox verify --deep --manifest "$exp/manifest.json" --target-home "$target" 2>&1 | sed 's/^/   corrupt:  /'
echo "   (verify exit code ${PIPESTATUS[0]})"
set -e
"$BIN" crabbox install --manifest "$exp/manifest.json" --target-home "$target" 2>&1 >/dev/null | sed 's/^/   repair:   /'
