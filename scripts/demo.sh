#!/usr/bin/env bash
# make demo: every command group end to end (state owner, runtime
# artifacts, crabbox, research against the in-repo fake, skills, MCP against
# the real reference server that make peers installs: make demo runs it
# first; without it the MCP part says so loudly and fails), in a throwaway
# folder that is removed at the end (KEEP=1 keeps it and says where).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-$PWD/bin/clawkit}
[ -x "$BIN" ] || make -s build BIN="$BIN"
work=$(mktemp -d "${TMPDIR:-/tmp}/clawkit-demo.XXXXXX")
cleanup() {
  "$BIN" gateway stop >/dev/null 2>&1 || true
  if [ "${KEEP:-}" = 1 ]; then echo "kept: everything is under $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
export CLAWKIT_HOME="$work/home" TMPDIR="$work/tmp"
mkdir -p "$TMPDIR"
echo "demo folder: $work (removed at the end; KEEP=1 keeps it)"

echo "== state owner: gateway up, routed session round trip, gateway down"
"$BIN" gateway run --detach
"$BIN" session create demo
"$BIN" session reset demo
"$BIN" gateway status | sed 's/^/   /'
"$BIN" gateway stop
"$BIN" session show demo

for part in scripts/demo-artifacts.sh scripts/demo-crabbox.sh scripts/demo-research.sh scripts/demo-skills.sh scripts/demo-mcp.sh; do
  [ -f "$part" ] || continue
  echo "== $(basename "$part" .sh | sed 's/^demo-//')"
  BIN="$BIN" DEMO_DIR="$work" bash "$part"
done
echo "done"
