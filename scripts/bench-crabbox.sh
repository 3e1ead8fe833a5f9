#!/usr/bin/env bash
# Whole-process benchmark of `clawkit crabbox` on the real openclaw@2026.9.6
# export (made here with `clawkit runtime-artifacts export`):
#   1. install (default: flushed with syncfs before the rename) and
#      install --no-sync, vs `tar -xzf` of the same two archives, and vs
#      `tar -xzf` followed by `sync -f` (the same durability as install);
#   2. verify and verify --deep vs `sha256sum` of the same two archives.
# Each command runs RUNS times (default 5) after an untimed warm-up; the
# median wall time and the median CPU time (user+sys) are reported.
# Usage: scripts/bench-crabbox.sh          (needs peers/: make peers)
#        BENCH_DIR=/dev/shm RUNS=9 scripts/bench-crabbox.sh
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
OC=$REPO/peers/node_modules/openclaw
RUNS=${RUNS:-5}
[ -f "$OC/package.json" ] || { echo "openclaw peer missing: run make peers" >&2; exit 1; }
command -v /usr/bin/time >/dev/null || { echo "needs GNU time at /usr/bin/time" >&2; exit 1; }

T=$(mktemp -d "${BENCH_DIR:-${TMPDIR:-/tmp}}/bench-crabbox.XXXXXX")
trap 'rm -rf "$T"' EXIT
go build -o "$T/clawkit" ./cmd/clawkit
K=$T/clawkit
"$K" runtime-artifacts export --package-root "$OC" --output "$T/export" >/dev/null
M=$T/export/manifest.json
NODE=$(ls "$T"/export/node-bootstrap/*.tgz)
WORKER=$(ls "$T"/export/worker-artifacts/*.tgz)
echo "export: $(du -b "$NODE" | cut -f1) + $(du -b "$WORKER" | cut -f1) bytes compressed, $(( $(gzip -l "$NODE" | awk 'NR==2{print $2}') + $(gzip -l "$WORKER" | awk 'NR==2{print $2}') )) bytes of tar"
echo "runs: $RUNS per command; load average now: $(cut -d' ' -f1-3 /proc/loadavg)"

# bench NAME SETUP CMD: runs SETUP (untimed) then CMD, RUNS times.
bench() {
  local name=$1 setup=$2 cmd=$3
  : >"$T/samples"
  bash -c "$setup" && bash -c "$cmd" >/dev/null 2>&1 # warm-up
  for _ in $(seq "$RUNS"); do
    bash -c "$setup"
    /usr/bin/time -o "$T/t" -f "%e %U %S" bash -c "$cmd" >/dev/null 2>"$T/err" || { cat "$T/err" >&2; return 1; }
    awk '{printf "%.3f %.3f\n", $1, $2+$3}' "$T/t" >>"$T/samples"
  done
  local wall cpu
  wall=$(cut -d' ' -f1 "$T/samples" | sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}')
  cpu=$(cut -d' ' -f2 "$T/samples" | sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}')
  printf '%-36s wall %7.2f s   cpu %7.2f s\n' "$name" "$wall" "$cpu"
  echo "$name|$wall|$cpu" >>"$T/results"
}

fresh="rm -rf $T/dst && mkdir $T/dst"
echo "== install vs tar -xzf"
bench "tar -xzf (both archives)" "$fresh" "tar -xzf $NODE -C $T/dst && tar -xzf $WORKER -C $T/dst"
bench "tar -xzf + sync -f" "$fresh" "tar -xzf $NODE -C $T/dst && tar -xzf $WORKER -C $T/dst && sync -f $T/dst"
bench "clawkit crabbox install --no-sync" "$fresh" "$K crabbox install --no-sync --manifest $M --target-home $T/dst"
bench "clawkit crabbox install" "$fresh" "$K crabbox install --manifest $M --target-home $T/dst"

echo "== verify vs sha256sum"
rm -rf "$T/dst" && mkdir "$T/dst" && "$K" crabbox install --manifest "$M" --target-home "$T/dst" >/dev/null 2>&1
bench "sha256sum (both archives)" "true" "sha256sum $NODE $WORKER"
bench "clawkit crabbox verify" "true" "$K crabbox verify --manifest $M --target-home $T/dst"
bench "clawkit crabbox verify --deep" "true" "$K crabbox verify --deep --manifest $M --target-home $T/dst"
bench "clawkit crabbox install (existing)" "true" "$K crabbox install --manifest $M --target-home $T/dst"

echo "== ratios (median wall)"
python3 - "$T/results" <<'PY'
import sys
r = {}
for line in open(sys.argv[1]):
    name, wall, cpu = line.strip().split("|")
    r[name] = (float(wall), float(cpu))
def ratio(a, b):
    print(f"{a} / {b}: wall {r[a][0]/r[b][0]:.2f}x, cpu {r[a][1]/r[b][1]:.2f}x")
ratio("clawkit crabbox install --no-sync", "tar -xzf (both archives)")
ratio("clawkit crabbox install", "tar -xzf + sync -f")
ratio("clawkit crabbox install", "tar -xzf (both archives)")
ratio("clawkit crabbox verify", "sha256sum (both archives)")
ratio("clawkit crabbox verify --deep", "sha256sum (both archives)")
PY
