#!/usr/bin/env bash
# Whole-process figures for skill authoring:
#  1. `skill validate --dir` over every SKILL.md folder of the installed
#     openclaw peer (one process per skill, as a CI lint step would run it);
#  2. `skill write` latency (a support file, alternating content so every
#     call commits and records an event), offline and routed to a gateway;
#  3. `skill validate --recursive` over generated trees shaped like the
#     public collections (TREES="500 2000" skills by default): skills/s,
#     files/s and peak RSS, to show the cost is linear in the tree and the
#     memory flat. `scripts/bench-skills.sh tree` runs only this part;
#  4. `skill watch`: memory and coalescing over 10,000 edits, edit-to-line
#     latency (`scripts/bench-skills.sh watch` runs only this part).
# Prints medians and p90 over N runs.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-100}
BIN=${BIN:-bin/clawkit}
[ -x "$BIN" ] || go build -o "$BIN" ./cmd/clawkit
BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")
work=$(mktemp -d /tmp/ckskills.XXXXXX)
trap '"$BIN" --home "$work/h" gateway stop >/dev/null 2>&1 || true; rm -rf "$work"' EXIT

# gen_tree ROOT N: N skill folders shaped like the public collections:
# SKILL.md (frontmatter with a flow-style list, a long description, CJK
# text in every third), LICENSE.txt, references/ (nested), scripts/, and
# agents/openai.yaml in every third; 4-6 files, ~9 KB per skill.
gen_tree() {
  awk -v root="$1" -v n="$2" 'BEGIN {
    lic = "Copyright the authors.\nPermission is hereby granted, free of charge, to any person obtaining a copy of this software.\n"
    para = "Use the helper script for repeatable results, and read the reference before changing the defaults.\n"
    for (i = 0; i < n; i++) {
      name = sprintf("skill-%05d", i); d = root "/col-" int(i / 100) "/" name
      system("mkdir -p " d "/references/api " d "/scripts" (i % 3 == 0 ? " " d "/agents" : ""))
      f = d "/SKILL.md"
      printf "---\nname: %s\ndescription: Process documents of kind %d. Use when the user asks for kind %d conversions, summaries or checks.%s\nlicense: Complete terms in LICENSE.txt\nallowed-tools: [Bash, Read, Write]\nmetadata:\n  author: bench\n  version: \"1.0\"\n---\n# %s\n\n", name, i, i, (i % 3 == 0 ? " 处理文档并生成摘要。" : ""), name > f
      for (k = 0; k < 12; k++) printf "%s", para > f
      printf "Run `scripts/run.sh INPUT`; see [the API](references/api/endpoints.md).\n" > f
      close(f)
      printf "%s", lic > (d "/LICENSE.txt"); close(d "/LICENSE.txt")
      g = d "/references/api/endpoints.md"; printf "# Endpoints\n\n" > g
      for (k = 0; k < 40; k++) printf "- GET /v1/items/%d returns the item as JSON.\n", k > g
      close(g)
      s = d "/scripts/run.sh"; printf "#!/bin/sh\nset -eu\nin=\"$1\"\nwc -l \"$in\"\n" > s; close(s)
      if (i % 3 == 0) { a = d "/agents/openai.yaml"; printf "interface:\n  display_name: %s\n", name > a; close(a) }
    }
  }'
}

bench_tree() { # N
  local n=$1 root="$work/tree-$1" out
  gen_tree "$root" "$n"
  local files
  files=$(find "$root" -type f | wc -l)
  /usr/bin/time -o "$work/time.out" -f '%e %M' "$BIN" skill validate --recursive "$root" >"$work/tree.out" 2>/dev/null || true
  out=$(tail -1 "$work/time.out")
  tail -1 "$work/tree.out" | grep -q "^$n skills checked" || { echo "validate --recursive $n: unexpected summary: $(tail -1 "$work/tree.out")" >&2; exit 1; }
  set -- $out
  awk -v n="$n" -v f="$files" -v s="$1" -v rss="$2" 'BEGIN { if (s < 0.01) s = 0.01; printf "%-34s %5d skills %6d files in %6.2f s: %7.0f skills/s %8.0f files/s, peak RSS %.1f MB\n", "validate --recursive (generated)", n, f, s, n / s, f / s, rss / 1024 }'
  rm -rf "$root"
}

# bench_watch: `skill watch --dir` as a process: 10,000 edits (a shell
# loop rewriting one support file of a skill), its RSS after 1,000 and after
# 10,000 edits and its peak, and how many change lines the edits gave
# (coalesced). Then the Go benchmarks of edit-to-line latency and of the
# live heap over 10,000 edits (pkg/skills/watch_bench_test.go).
# `scripts/bench-skills.sh watch` runs only this part.
bench_watch() {
  local d="$work/watch/pdf" pid rss1k i
  mkdir -p "$d/references"
  printf -- '---\nname: pdf\ndescription: Bench skill.\n---\n' >"$d/SKILL.md"
  CLAWKIT_HOME="$work/wh" "$BIN" skill watch --dir "$d" --json --interval 100ms >"$work/watch.out" &
  pid=$!
  until [ -s "$work/watch.out" ]; do sleep 0.05; done
  for ((i = 1; i <= 10000; i++)); do
    echo "edit $i" >"$d/references/notes.md"
    if [ "$i" = 1000 ]; then sleep 0.5; rss1k=$(awk '/VmRSS/ {print $2}' /proc/$pid/status); fi
  done
  sleep 0.5
  awk -v r1="$rss1k" -v lines="$(wc -l <"$work/watch.out")" '/VmRSS/ {r=$2} /VmHWM/ {h=$2} END {printf "%-34s RSS %.1f MB after 1,000 edits, %.1f MB after 10,000 (peak %.1f MB); %d change lines for 10,000 edits\n", "skill watch (10,000 edits)", r1/1024, r/1024, h/1024, lines - 1}' /proc/$pid/status
  kill -INT "$pid"; wait "$pid" || true
  go test -run '^$' -bench 'BenchmarkWatch' -benchtime "${WATCH_BENCHTIME:-100x}" ./pkg/skills | grep '^Benchmark'
}

if [ "${1:-}" = watch ]; then
  bench_watch
  exit 0
fi

if [ "${1:-}" = tree ]; then
  for n in ${TREES:-500 2000}; do bench_tree "$n"; done
  exit 0
fi

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

for n in ${TREES:-500 2000}; do bench_tree "$n"; done
