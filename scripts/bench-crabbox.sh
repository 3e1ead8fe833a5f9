#!/usr/bin/env bash
# Whole-process benchmark of `clawkit crabbox` on the real openclaw@2026.9.6
# export (made here with `clawkit runtime-artifacts export`):
#   1. install (flushed with syncfs before the rename) and install
#      --no-sync, vs `tar -xzf` of the same two archives, and vs `tar -xzf`
#      followed by `sync -f` (the same durability as install), run in
#      interleaved rounds so that a change of machine load hits all alike;
#   2. install of an existing verified install;
#   3. verify and verify --deep vs `sha256sum` of the same two archives;
#   4. peak RSS of install on the export and on a copy grown by 1 GiB
#      (scripts/crabboxgrow), to show memory does not follow the size;
#   5. in the same rounds as 1, the floor: scripts/crabboxfloor (C, two
#      threads) creating the same tree (every folder, file size, link and
#      hard link of the node bootstrap, plus the worker archive as one file)
#      with no inflation, hashing or checks.
# Before each sample, an untimed sync flushes what the earlier ones left
# dirty: without it, whichever synced command followed a --no-sync sample
# also wrote that sample's 600 MB, and background write-back of earlier
# samples stole CPU from later ones.
# Every sample extracts into a new folder, and the folders are removed only
# at the end: ext4 allocates inodes slowly for a while after tens of
# thousands were deleted (it skips recently deleted ones), which would
# penalise whichever command ran right after a removal.
# (On tmpfs, which has no such effect, KEEP=0 removes each sample's folder
# right after it, to save memory.)
# Medians of RUNS rounds (default 3) of wall, user+sys CPU and peak RSS.
# Usage: scripts/bench-crabbox.sh          (needs peers/: make peers)
#        BENCH_DIR=/some/disk RUNS=5 GROW=0 scripts/bench-crabbox.sh
#        BENCH_DIR=/dev/shm KEEP=0 scripts/bench-crabbox.sh
#        EXPORT=DIR scripts/bench-crabbox.sh   (an export made beforehand)
# GROW=0 skips the 1 GiB copy (it needs about 3 GB of disk and a minute).
set -euo pipefail
cd "$(dirname "$0")/.."
OC=$PWD/peers/node_modules/openclaw
RUNS=${RUNS:-3}
GROW=${GROW:-1}
KEEP=${KEEP:-1}
# EXPORT=DIR reuses an existing export of that peer instead of making one.
EXPORT=${EXPORT:-}
[ -n "$EXPORT" ] || [ -f "$OC/package.json" ] || { echo "openclaw peer missing: run make peers" >&2; exit 1; }
command -v /usr/bin/time >/dev/null || { echo "needs GNU time at /usr/bin/time" >&2; exit 1; }

T=$(mktemp -d "${BENCH_DIR:-${TMPDIR:-/tmp}}/bench-crabbox.XXXXXX")
trap 'rm -rf "$T"' EXIT
CGO_ENABLED=0 go build -o "$T/clawkit" ./cmd/clawkit
K=$T/clawkit
if [ -n "$EXPORT" ]; then
  cp -r "$EXPORT" "$T/export"
else
  "$K" runtime-artifacts export --package-root "$OC" --output "$T/export" >/dev/null
fi
M=$T/export/manifest.json
NODE=$(ls "$T"/export/node-bootstrap/*.tgz)
WORKER=$(ls "$T"/export/worker-artifacts/*.tgz)
echo "export: $(du -b "$NODE" | cut -f1) + $(du -b "$WORKER" | cut -f1) bytes compressed, $(( $(gzip -l "$NODE" | awk 'NR==2{print $2}') + $(gzip -l "$WORKER" | awk 'NR==2{print $2}') )) bytes of tar, $(nproc) cores"
echo "runs: $RUNS rounds; load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
mkdir "$T/d"
: >"$T/samples"
FLOOR=""
if command -v cc >/dev/null; then
  cc -O2 -pthread -o "$T/crabboxfloor" scripts/crabboxfloor/crabboxfloor.c
  python3 - "$NODE" "node_modules/openclaw/worker-artifacts/$(basename "$WORKER")" "$(du -b "$WORKER" | cut -f1)" >"$T/floor.list" <<'PY'
import sys, tarfile
node, wrel, wsize = sys.argv[1], sys.argv[2], sys.argv[3]
with tarfile.open(node, "r:gz") as tf:
    for m in tf:
        name = m.name.rstrip("/")
        if m.isdir():
            print(f"d {name}")
        elif m.issym():
            print(f"l {m.linkname}\t{name}")
        elif m.islnk():
            print(f"h {m.linkname}\t{name}")
        elif m.isfile():
            print(f"f {m.size} {name}")
print(f"f {wsize} {wrel}")
PY
  FLOOR="C floor: same tree, 2 threads|$T/crabboxfloor $T/floor.list \$DST"
fi

# sample NAME CMD: runs CMD once (with DST set to a new folder), records
# "NAME wall cpu rss_kb".
n=0
sample() {
  local name=$1 cmd=$2
  n=$((n + 1))
  local dst=$T/d/$n
  mkdir "$dst"
  # Untimed: flush what earlier samples left dirty, so no sample pays for
  # another's data (a syncfs flushes the whole file system) and no
  # background write-back competes with the next one.
  sync
  DST=$dst /usr/bin/time -o "$T/t" -f "%e %U %S %M" bash -c "$cmd" >/dev/null 2>"$T/err" || { cat "$T/err" >&2; exit 1; }
  awk -v n="$name" '{printf "%s|%.3f|%.3f|%d\n", n, $1, $2+$3, $4}' "$T/t" >>"$T/samples"
  [ "$KEEP" = 1 ] || rm -rf "$dst"
}

# Warm the page cache with the archives (untimed).
cat "$NODE" "$WORKER" >/dev/null
TAR="tar -xzf $NODE -C \$DST && tar -xzf $WORKER -C \$DST"
INSTALL="$K crabbox install --manifest $M --target-home \$DST"
for r in $(seq "$RUNS"); do
  # Rotate the order each round.
  cmds=("tar -xzf (both archives)|$TAR" "tar -xzf + sync -f|$TAR && sync -f \$DST"
    "clawkit crabbox install --no-sync|$INSTALL --no-sync" "clawkit crabbox install|$INSTALL")
  [ -z "$FLOOR" ] || cmds+=("$FLOOR")
  for i in $(seq 0 $((${#cmds[@]} - 1))); do
    c=${cmds[$(((i + r) % ${#cmds[@]}))]}
    sample "${c%%|*}" "${c#*|}"
  done
done
load_mid=$(cut -d' ' -f1-3 /proc/loadavg)

H=$T/home
"$K" crabbox install --manifest "$M" --target-home "$H" >/dev/null 2>&1
for _ in $(seq "$RUNS"); do
  sample "clawkit crabbox install (existing)" "$K crabbox install --manifest $M --target-home $H"
  sample "sha256sum (both archives)" "sha256sum $NODE $WORKER"
  sample "clawkit crabbox verify" "$K crabbox verify --manifest $M --target-home $H"
  sample "clawkit crabbox verify --deep" "$K crabbox verify --deep --manifest $M --target-home $H"
done

if [ "$GROW" = 1 ]; then
  go build -o "$T/crabboxgrow" ./scripts/crabboxgrow
  "$T/crabboxgrow" "$M" "$T/grown" $((1 << 30))
  GM=$T/grown/manifest.json
  echo "grown export: $(du -b "$T"/grown/node-bootstrap/*.tgz | cut -f1) bytes compressed (+1 GiB of content)"
  for _ in $(seq "$RUNS"); do
    sample "clawkit crabbox install --no-sync (+1 GiB)" "$K crabbox install --no-sync --manifest $GM --target-home \$DST"
  done
fi
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg) (after the install rounds: $load_mid)"

python3 - "$T/samples" <<'PY'
import sys, statistics
r = {}
for line in open(sys.argv[1]):
    name, wall, cpu, rss = line.strip().split("|")
    r.setdefault(name, []).append((float(wall), float(cpu), int(rss)))
med = {k: tuple(statistics.median(s[i] for s in v) for i in range(3)) for k, v in r.items()}
for k, (w, c, m) in med.items():
    print(f"{k:44s} wall {w:7.2f} s   cpu {c:7.2f} s   peak RSS {m/1024:6.1f} MB   (n={len(r[k])})")
print("== ratios (median wall)")
def ratio(a, b):
    if a in med and b in med:
        print(f"{a} / {b}: wall {med[a][0]/med[b][0]:.2f}x, cpu {med[a][1]/med[b][1]:.2f}x")
ratio("clawkit crabbox install --no-sync", "tar -xzf (both archives)")
ratio("clawkit crabbox install", "tar -xzf + sync -f")
ratio("clawkit crabbox install", "tar -xzf (both archives)")
ratio("clawkit crabbox install --no-sync", "C floor: same tree, 2 threads")
ratio("tar -xzf (both archives)", "C floor: same tree, 2 threads")
ratio("clawkit crabbox verify", "sha256sum (both archives)")
ratio("clawkit crabbox verify --deep", "sha256sum (both archives)")
PY
