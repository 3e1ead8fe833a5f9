#!/usr/bin/env bash
# Whole-process latency of a trivial stateful command (`session show`),
# routed through a running gateway and offline (in-process under the owner
# lock). Prints the median and p90 over N runs of each.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-200}
BIN=${BIN:-bin/clawkit}
[ -x "$BIN" ] || make -s build BIN="$BIN"
home=$(mktemp -d /tmp/ckbench.XXXXXX)
trap '"$BIN" --home "$home/h" gateway stop >/dev/null 2>&1 || true; rm -rf "$home"' EXIT
export CLAWKIT_HOME="$home/h"
"$BIN" session create bench >/dev/null

measure() { # label
  local i t0 t1
  for ((i = 0; i < N; i++)); do
    t0=$(date +%s%N)
    "$BIN" session show bench >/dev/null
    t1=$(date +%s%N)
    echo $(((t1 - t0) / 1000))
  done | sort -n | awk -v label="$1" '{a[NR]=$1} END {printf "%-28s median %.2f ms  p90 %.2f ms  (n=%d)\n", label, a[int(NR/2)+1]/1000, a[int(NR*0.9)]/1000, NR}'
}

measure "session show (offline)"
"$BIN" gateway run --detach >/dev/null
measure "session show (routed)"
"$BIN" gateway stop >/dev/null
