#!/usr/bin/env bash
# Scale-out benchmark (docs/scale-out.md): JOBS running research jobs
# (default 10,000) against the fake Interactions API, polled by 1, 2 and 3
# gateways sharing one PostgreSQL database, and by one SQLite gateway on the
# same jobs. Every job polls until the end of the window, at 20× real time
# (250 ms fast interval), so the gateways are saturated and polls/s is
# their aggregate capacity. Reports per setup: aggregate polls/s, gateway
# CPU per poll, database round trips per poll (counted by each gateway's
# PostgreSQL connections, `gateway status` dbRoundTrips) and transactions
# per poll (pg_stat_database, every client of the database), PostgreSQL
# backend CPU per poll when the server runs on this machine, the scaling
# of polls/s at 2 and 3 gateways against 1, and on
# PostgreSQL with ≥ 2 gateways the takeover time after kill -9 of one:
# from the kill until none of its river jobs is still held.
# TAKEOVER_SIGNAL=TERM stops it gracefully instead (SIGTERM: it drains,
# releases its river jobs and its lease), for the takeover time with the
# graceful shutdown; SETUPS (default "sqlite:1 postgres:1 postgres:2
# postgres:3") picks the setups measured.
#
# HOST_CPUS=F (e.g. 0.25) stands in for gateways on separate hosts: each
# gateway process is capped at F CPUs of its own (a cgroup CPU quota,
# cgroup v2 or v1's cpu controller; needs root), while PostgreSQL and the
# fake API stay uncapped. On one machine every gateway otherwise competes
# with the others and the database for the same cores, so adding a
# gateway can only show what the cores have left, not what a host adds.
#
# Needs a PostgreSQL server ($CLAWKIT_TEST_DATABASE_URL or
# 127.0.0.1:5432 trust, user postgres) and psql.
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS=${JOBS:-10000}
WINDOW=${WINDOW:-20}
ADMIN=${CLAWKIT_TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable}
# A BIN given is used as is; otherwise this tree is built (a stale
# bin/clawkit would measure an older build).
if [ -z "${BIN:-}" ]; then BIN=bin/clawkit; make -s build BIN="$BIN"; fi
BIN=$(realpath "$BIN")
work=$(mktemp -d /tmp/ckscale.XXXXXX)
go test -c -o "$work/helpers" ./testscript
for h in fakegoogle bench-seed-research; do ln -s "$work/helpers" "$work/$h"; done
export PATH="$work:$PATH"
db=ckscale_$$
dburl=$(python3 -c 'import sys,urllib.parse as u; p=u.urlparse(sys.argv[1]); print(p._replace(path="/"+sys.argv[2]).geturl())' "$ADMIN" "$db")

HOST_CPUS=${HOST_CPUS:-}
cgroot=""
if [ -n "$HOST_CPUS" ]; then
  quota=$(python3 -c "print(int(float('$HOST_CPUS') * 100000))") # per 100 ms period
  if [ -w /sys/fs/cgroup/cgroup.subtree_control ]; then
    # v2: the cpu controller must be enabled for each level's children.
    cgroot=/sys/fs/cgroup/ckscale$$; mkdir "$cgroot"; cgver=2
    echo +cpu >/sys/fs/cgroup/cgroup.subtree_control
    echo +cpu >"$cgroot/cgroup.subtree_control"
  elif [ -d /sys/fs/cgroup/cpu ] && [ -w /sys/fs/cgroup/cpu ]; then
    cgroot=/sys/fs/cgroup/cpu/ckscale$$; mkdir "$cgroot"; cgver=1
  else
    echo "HOST_CPUS needs a writable cgroup CPU controller (root)" >&2; exit 1
  fi
fi
# cap PID N: moves gateway PID into its own cgroup limited to HOST_CPUS CPUs.
cap() {
  [ -n "$cgroot" ] || return 0
  local g=$cgroot/g$2
  mkdir -p "$g"
  if [ "$cgver" = 2 ]; then echo "$quota 100000" >"$g/cpu.max"; else echo 100000 >"$g/cpu.cfs_period_us"; echo "$quota" >"$g/cpu.cfs_quota_us"; fi
  echo "$1" >"$g/cgroup.procs"
}
uncap() { # moves every capped process back to the root group, removes the groups
  [ -n "$cgroot" ] || return 0
  local g p top=/sys/fs/cgroup; [ "$cgver" = 1 ] && top=/sys/fs/cgroup/cpu
  for g in "$cgroot"/g*; do
    [ -d "$g" ] || continue
    for p in $(cat "$g/cgroup.procs"); do echo "$p" >"$top/cgroup.procs" 2>/dev/null || true; done
    rmdir "$g" 2>/dev/null || true
  done
}

fakepid=""
cleanup() {
  for g in "$work"/g*; do [ -d "$g" ] && "$BIN" --home "$g" gateway stop --wait 10s >/dev/null 2>&1 || true; done
  [ -n "$fakepid" ] && kill "$fakepid" 2>/dev/null || true
  psql -q "$ADMIN" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1 || true
  rm -rf "$work"
  uncap; [ -n "$cgroot" ] && rmdir "$cgroot" 2>/dev/null || true
}
trap cleanup EXIT

export GEMINI_API_KEY=bench-key CLAWKIT_RESEARCH_TIME_SCALE=20
cpu_of() { # total utime+stime ticks of the gateways' pids
  local t=0 p
  for p in "$@"; do t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat"))); done
  echo $t
}
gets() { grep -c '"req":"GET /interactions/' "$work/fake.log" || true; }
roundtrips() { # database requests the gateways (homes g1..gN) sent so far
  local t=0 i
  for i in $(seq 1 "$1"); do
    t=$((t + $("$BIN" --home "$work/g$i" --json gateway status | python3 -c 'import json,sys; print(json.load(sys.stdin).get("dbRoundTrips", 0))')))
  done
  echo $t
}
xacts() { psql -Atq "$dburl" -c "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = current_database()"; }
# PostgreSQL's CPU for the gateways: a "pid ticks" line per server backend
# connected to the bench database, when the server runs on this machine
# (none listed otherwise). Backends only: autovacuum and the WAL writer
# are left out.
pg_backends() {
  local p
  for p in $(psql -Atq "$dburl" -c "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"); do
    [ -r "/proc/$p/stat" ] && awk -v p="$p" '{print p, $14 + $15}' "/proc/$p/stat" 2>/dev/null || true
  done
}

setup() { # engine gateways
  local engine=$1 n=$2 i
  for g in "$work"/g*; do [ -d "$g" ] && "$BIN" --home "$g" gateway stop --wait 10s >/dev/null 2>&1 || true; done
  uncap
  rm -rf "$work"/g* "$work/fake.log" "$work/url"
  [ -n "$fakepid" ] && kill "$fakepid" 2>/dev/null || true
  fakegoogle "$work/url" "$work/fake.log" & fakepid=$!
  while [ ! -s "$work/url" ]; do sleep 0.05; done
  export CLAWKIT_GOOGLE_BASE_URL=$(cat "$work/url")
  psql -q "$ADMIN" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" -c "CREATE DATABASE $db" >/dev/null
  for i in $(seq 1 "$n"); do
    mkdir "$work/g$i"
    if [ "$engine" = postgres ]; then
      printf '{"database":{"engine":"postgres","url":"%s"},"plugins":{"entries":{"google":{"config":{"research":{"enabled":true,"profileId":"google:default"}}}}}}\n' "$dburl" >"$work/g$i/config.json"
    else
      printf '{"plugins":{"entries":{"google":{"config":{"research":{"enabled":true,"profileId":"google:default"}}}}}}\n' >"$work/g$i/config.json"
    fi
    "$BIN" --home "$work/g$i" auth add google:default --provider google --api-key-env GEMINI_API_KEY >/dev/null
  done
  "$BIN" --home "$work/g1" state migrate >/dev/null
  local t0=$(date +%s.%N)
  bench-seed-research "$work/g1" "$JOBS" "fake-polls:1000000 bench"
  printf '  seeded %d jobs in %.1f s\n' "$JOBS" "$(echo "$(date +%s.%N) - $t0" | bc)"
}

measure() { # label engine gateways
  local label=$1 engine=$2 n=$3 i pids=()
  setup "$engine" "$n"
  for i in $(seq 1 "$n"); do
    "$BIN" --home "$work/g$i" --json gateway run --detach >"$work/g$i.json"
    pids+=("$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' "$work/g$i.json")")
    cap "${pids[-1]}" "$i"
  done
  sleep 5 # warm-up: river adopts/fetches, the poller fills its batches
  local g0 c0 x0=0 r0=0 t0 g1 c1 x1=0 r1=0 t1
  if [ "$engine" = postgres ]; then x0=$(xacts); r0=$(roundtrips "$n"); pg_backends >"$work/pg0"; fi
  g0=$(gets); c0=$(cpu_of "${pids[@]}"); t0=$(date +%s.%N)
  sleep "$WINDOW"
  g1=$(gets); c1=$(cpu_of "${pids[@]}"); t1=$(date +%s.%N)
  if [ "$engine" = postgres ]; then x1=$(xacts); r1=$(roundtrips "$n"); pg_backends >"$work/pg1"; fi
  python3 - "$label" "$g0" "$g1" "$c0" "$c1" "$x0" "$x1" "$r0" "$r1" "$t0" "$t1" "$(getconf CLK_TCK)" "$engine" "$n" "$work/results" "$work/pg0" "$work/pg1" <<'PY'
import os, sys
label, g0, g1, c0, c1, x0, x1, r0, r1, t0, t1, hz, engine, n, results, pg0, pg1 = sys.argv[1:]
polls = int(g1) - int(g0); secs = float(t1) - float(t0)
cpu = (int(c1) - int(c0)) / int(hz)
rate = polls / secs
line = f"{label:<26} {rate:8.0f} polls/s  CPU/poll {1000*cpu/max(polls,1):.3f} ms"
if engine == "postgres":
    line += f"  db round trips/poll {(int(r1)-int(r0))/max(polls,1):.2f}  db xacts/poll {(int(x1)-int(x0))/max(polls,1):.2f}"
    def ticks(path):
        return dict(l.split() for l in open(path)) if os.path.exists(path) else {}
    before, after = ticks(pg0), ticks(pg1)
    if after:  # a backend that started in the window counts from 0
        pg = sum(int(v) - int(before.get(p, 0)) for p, v in after.items()) / int(hz)
        line += f"  server CPU/poll {1000*pg/max(polls,1):.3f} ms"
    with open(results, "a") as f:
        f.write(f"{n} {rate}\n")
print(line, flush=True)
PY
  if [ "$engine" = postgres ] && [ "$n" -ge 2 ]; then
    local owner client k0 k1
    inc=$(psql -Atq "$dburl" -c "SELECT incarnation FROM owners WHERE pid = ${pids[0]} AND stopped_at IS NULL")
    k0=$(date +%s.%N)
    kill -"${TAKEOVER_SIGNAL:-9}" "${pids[0]}"
    while [ "$(psql -Atq "$dburl" -c "SELECT count(*) FROM river.river_job WHERE state = 'running' AND attempted_by[array_upper(attempted_by,1)] = 'clawkit-owner-$inc'")" != 0 ]; do sleep 0.1; done
    k1=$(date +%s.%N)
    local held
    held=$(psql -Atq "$dburl" -c "SELECT count(*) FROM owners WHERE incarnation = $inc AND stopped_at IS NULL AND lease_expires_at > (extract(epoch FROM clock_timestamp()) * 1000)::bigint")
    printf '%-26s takeover after kill -%s: %.1f s (lease TTL 10 s; its lease still held then: %s)\n' "" "${TAKEOVER_SIGNAL:-9}" "$(echo "$k1 - $k0" | bc)" "$held"
  fi
}

echo "== $JOBS running jobs, ${WINDOW}s window, $(nproc) cores${HOST_CPUS:+, each gateway capped at $HOST_CPUS CPUs (HOST_CPUS)}"
for setup in ${SETUPS:-sqlite:1 postgres:1 postgres:2 postgres:3}; do
  n=${setup#*:}
  measure "${setup%%:*}, $n gateway$([ "$n" = 1 ] || echo s)" "${setup%%:*}" "$n"
done
python3 - "$work/results" <<'PY'
import sys
r = dict(l.split() for l in open(sys.argv[1])) if __import__("os").path.exists(sys.argv[1]) else {}
one = float(r.get("1", 0))
for n in ("2", "3"):
    if not one or n not in r:
        continue
    print(f"postgres scaling: {n} gateways = {float(r[n]) / one:.2f}x one gateway's polls/s")
PY
