#!/usr/bin/env bash
# Whole-process latency of a trivial stateful command (`session show`),
# offline (in-process under the owner lock) and routed through a running
# gateway, with `clawkit version` (no state at all) as the floor of process
# start. Uses hyperfine (Debian package) when present: it times the command
# itself, without the fork/exec cost of a timing shell loop.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-300}
BIN=${BIN:-bin/clawkit}
[ -x "$BIN" ] || make -s build BIN="$BIN"
BIN=$(realpath "$BIN")
home=$(mktemp -d /tmp/ckbench.XXXXXX)
trap '"$BIN" --home "$home/h" gateway stop >/dev/null 2>&1 || true; rm -rf "$home"' EXIT
export CLAWKIT_HOME="$home/h"
"$BIN" session create bench >/dev/null

run() { # label command...
  local label=$1
  shift
  if command -v hyperfine >/dev/null; then
    hyperfine -N --warmup 20 --runs "$N" --export-json "$home/r.json" "$*" >/dev/null
    python3 - "$label" "$home/r.json" "$home/floor" <<'PY'
import json, sys, statistics
r = json.load(open(sys.argv[2]))["results"][0]["times"]
r.sort()
m = statistics.median(r) * 1000
floor = ""
try:
    f = float(open(sys.argv[3]).read())
    floor = f"  {m / f:.2f}x the dependency floor"
except (OSError, ValueError):
    pass
print(f"{sys.argv[1]:<28} median {m:.2f} ms  p90 {r[int(len(r)*0.9)]*1000:.2f} ms  (n={len(r)}, hyperfine){floor}")
if sys.argv[1].startswith("hello + clawkit's deps"):
    open(sys.argv[3], "w").write(str(m))
PY
    faults "$@"
  else
    local i t0 t1
    for ((i = 0; i < N; i++)); do
      t0=$(date +%s%N); "$@" >/dev/null; t1=$(date +%s%N)
      echo $(((t1 - t0) / 1000))
    done | sort -n | awk -v label="$label" '{a[NR]=$1} END {printf "%-28s median %.2f ms  p90 %.2f ms  (n=%d, shell loop: includes fork/exec of date)\n", label, a[int(NR/2)+1]/1000, a[int(NR*0.9)]/1000, NR}'
  fi
}

# faults prints the median count of page faults (minor + major) the
# command takes, from its rusage: a figure the load does not move. On a VM
# whose page faults are expensive, start-up time follows this count (each
# first touch of a page of code, data or heap is one fault; see README).
faults() {
  python3 - "$@" <<'PY'
import os, statistics, subprocess, sys
counts, cpu = [], []
for _ in range(21):
    p = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL)
    _, _, ru = os.wait4(p.pid, 0)
    counts.append(ru.ru_minflt + ru.ru_majflt)
    cpu.append(ru.ru_utime + ru.ru_stime)
print(f"{'':<28} page faults median {statistics.median(counts):.0f}, cpu median {statistics.median(cpu)*1000:.2f} ms (n=21, rusage)")
PY
}

# Floors measured in the same run: /bin/true (process creation) and a
# static Go hello world (Go runtime start-up), so every figure can be read
# as a multiple of what any Go command costs on this machine right now.
hello=$home/hello
mkdir -p "$hello/src"
cat >"$hello/src/main.go" <<'GO'
package main

import "os"

func main() { os.Stdout.WriteString("hello\n") }
GO
printf 'module hello\ngo 1.26\n' >"$hello/src/go.mod"
(cd "$hello/src" && CGO_ENABLED=0 go build -o "$hello/hello" .)
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load average $(cut -d' ' -f1-3 /proc/loadavg) at start"
run "/bin/true (process floor)" /bin/true
run "static Go hello (Go floor)" "$hello/hello"
# The floor of this dependency set: a hello world linking every third-party
# package clawkit imports (scripts/depsfloor), none of clawkit's code.
CGO_ENABLED=0 go build -o "$hello/depsfloor" ./scripts/depsfloor
run "hello + clawkit's deps" "$hello/depsfloor"
# The floor of clawkit's own code: the same hello linking all of clawkit
# (scripts/linkfloor), so every initialiser runs, but no command line is
# parsed. Above it is only what clawkit's main does.
CGO_ENABLED=0 go build -o "$hello/linkfloor" ./scripts/linkfloor
run "hello + all of clawkit" "$hello/linkfloor"
run "clawkit version" "$BIN" version
run "session show (offline)" "$BIN" session show bench
"$BIN" gateway run --detach >/dev/null
run "session show (routed)" "$BIN" session show bench
"$BIN" gateway stop >/dev/null
echo "load average $(cut -d' ' -f1-3 /proc/loadavg) at the end"
