#!/usr/bin/env bash
# Whole-process figures for skill authoring:
#  1. `skill validate --dir` over every SKILL.md folder of the installed
#     openclaw peer (one process per skill, as a CI lint step would run it);
#  2. `skill write` latency (a support file, alternating content so every
#     call commits and records an event), offline and routed to a gateway.
# Prints medians and p90 over N runs.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-100}
BIN=${BIN:-bin/clawkit}
[ -x "$BIN" ] || go build -o "$BIN" ./cmd/clawkit
BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")
work=$(mktemp -d /tmp/ckskills.XXXXXX)
trap '"$BIN" --home "$work/h" gateway stop >/dev/null 2>&1 || true; rm -rf "$work"' EXIT

stats() { # label
  sort -n | awk -v label="$1" '{a[NR]=$1} END {printf "%-34s median %.2f ms  p90 %.2f ms  (n=%d)\n", label, a[int(NR/2)+1]/1000, a[int(NR*0.9)]/1000, NR}'
}

# Baseline: the cost of starting the binary at all.
for ((i = 0; i < N; i++)); do
  t0=$(date +%s%N); "$BIN" version >/dev/null; t1=$(date +%s%N)
  echo $(((t1 - t0) / 1000))
done | stats "clawkit version (startup baseline)"

corpus=peers/node_modules/openclaw
if [ -d "$corpus" ]; then
  dirs=$(find "$corpus" -name SKILL.md -exec dirname {} \; | sort)
  n=$(echo "$dirs" | wc -l)
  t0=$(date +%s%N)
  for d in $dirs; do "$BIN" skill validate --dir "$d" >/dev/null 2>&1 || true; done
  t1=$(date +%s%N)
  printf "%-34s %d skills in %.0f ms (%.2f ms per skill, one process each)\n" "validate --dir (openclaw corpus)" "$n" $(((t1 - t0) / 1000000)) "$(echo "($t1 - $t0) / 1000000 / $n" | bc -l)"
  for d in $dirs; do
    t0=$(date +%s%N); "$BIN" skill validate --dir "$d" >/dev/null 2>&1 || true; t1=$(date +%s%N)
    echo $(((t1 - t0) / 1000))
  done | stats "validate --dir (per skill)"
fi

export CLAWKIT_HOME="$work/h"
mkdir -p "$work/h/plugins/bench"
echo '{"id": "bench", "agentSkillsDir": "skills"}' >"$work/h/plugins/bench/openclaw.plugin.json"
printf -- '---\nname: pdf\ndescription: Bench skill.\n---\n# Bench\n' | "$BIN" skill write pdf SKILL.md --plugin bench >/dev/null

measure() { # label
  local i t0 t1
  for ((i = 0; i < N; i++)); do
    t0=$(date +%s%N)
    echo "note $i" | "$BIN" skill write pdf references/note.md --plugin bench >/dev/null
    t1=$(date +%s%N)
    echo $(((t1 - t0) / 1000))
  done | stats "$1"
}
measure "skill write (offline)"
"$BIN" gateway run --detach >/dev/null
measure "skill write (routed to gateway)"
"$BIN" gateway stop >/dev/null
