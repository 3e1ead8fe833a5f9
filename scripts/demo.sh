#!/usr/bin/env bash
# make demo: the main jobs end to end on the sample installation, in a
# throwaway folder. Prints where everything went.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-$PWD/bin/clawkit}
[ -x "$BIN" ] || make -s build BIN="$BIN"
work=$(mktemp -d /tmp/clawkit-demo.XXXXXX)
export CLAWKIT_HOME="$work/home"
echo "demo folder: $work"

echo "== state owner: gateway up, routed session round trip, gateway down"
"$BIN" gateway run --detach
"$BIN" session create demo
"$BIN" session reset demo
"$BIN" gateway status | sed 's/^/   /'
"$BIN" gateway stop
"$BIN" session show demo

for part in scripts/demo-*.sh; do
  [ -f "$part" ] || continue
  echo "== $(basename "$part" .sh | sed 's/^demo-//')"
  BIN="$BIN" DEMO_DIR="$work" bash "$part"
done
echo "done; everything is under $work"
