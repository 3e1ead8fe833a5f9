#!/usr/bin/env bash
# Provider requests per completed research job, waited for by polling
# alone (--no-stream) and by following the interaction's stream (the
# default), against the fake Interactions API with jobs that take a fixed
# time (fake-ms). CLAWKIT_RESEARCH_TIME_SCALE shrinks the poll intervals
# and the stream backstop alike, so a job of MS milliseconds stands for one
# of MS×SCALE milliseconds at real speed (default 12 s × 100 = 20 min).
# The jobs run through a gateway. Prints, per mode, the mean polls, stream requests and all requests
# (create included) per job. Modes: waited for by polling alone
# (`start --wait --no-stream`), waited for following the stream
# (`start --wait`), and `background`: started without a wait, so only the
# gateway's own scheduler polls them (and, since it follows the stream of
# the jobs it owns, streams them); their end is watched with `research
# show`, which asks the provider nothing. MODES selects some of them.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-4}
MS=${MS:-12000}
SCALE=${SCALE:-100}
BIN=${BIN:-bin/clawkit}
[ -x "$BIN" ] || make -s build BIN="$BIN"
BIN=$(realpath "$BIN")
work=$(mktemp -d /tmp/ckbench.XXXXXX)
go build -o "$work/fakegoogle" ./cmd/fakegoogle
cd "$work"
./fakegoogle --url-file url --log fake.log >/dev/null 2>&1 &
fake=$!
trap '"$BIN" gateway stop >/dev/null 2>&1 || true; kill $fake 2>/dev/null || true; rm -rf "$work"' EXIT
for _ in $(seq 100); do [ -s url ] && break; sleep 0.05; done
export CLAWKIT_HOME="$work/h" CLAWKIT_GOOGLE_BASE_URL=$(cat url) CLAWKIT_RESEARCH_TIME_SCALE=$SCALE GEMINI_API_KEY=bench-key
"$BIN" auth add google:default --provider google --api-key-env GEMINI_API_KEY >/dev/null
"$BIN" config set plugins.entries.google.config.research '{"enabled":true,"profileId":"google:default"}' >/dev/null
# The jobs run at once, so through a gateway (which also runs the waits:
# the stream is the gateway's, and so is the background poller).
"$BIN" gateway run --detach >/dev/null

run() { # mode flags...
  local mode=$1
  shift
  local before pids=() jobs=()
  before=$(wc -l <fake.log)
  if [ "$mode" = background ]; then
    for i in $(seq "$N"); do
      jobs+=("$("$BIN" research start --json "fake-ms:$MS bench $mode $i" | python3 -c 'import json,sys; print(json.load(sys.stdin)["job"])')")
    done
    for j in "${jobs[@]}"; do
      until "$BIN" research show --json "$j" | python3 -c 'import json,sys; v=json.load(sys.stdin); sys.exit(0 if v.get("finishedAtMs") else 1)'; do sleep 0.2; done
    done
  else
    for i in $(seq "$N"); do
      "$BIN" research start --wait "$@" "fake-ms:$MS bench $mode $i" >/dev/null &
      pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p"; done
  fi
  tail -n +"$((before + 1))" fake.log | python3 -c '
import json, sys
mode, n = sys.argv[1], int(sys.argv[2])
creates = polls = streams = 0
for line in sys.stdin:
    e = json.loads(line)
    if e["method"] == "POST" and e["path"] == "/interactions":
        creates += 1
    elif e["method"] == "GET" and e.get("stream"):
        streams += 1
    elif e["method"] == "GET":
        polls += 1
print(f"{mode:<10} per completed job: {polls/n:6.1f} polls  {streams/n:4.1f} stream requests  {(creates+polls+streams)/n:6.1f} requests in all  (n={n}, creates {creates})")
' "$mode" "$N"
}

echo "jobs of ${MS} ms at time scale ${SCALE} (standing for $((MS * SCALE / 60000)) min at real speed), ${N} at once"
for m in ${MODES:-polling stream background}; do
  case $m in
  polling) run polling --no-stream ;;
  stream) run stream ;;
  background) run background ;;
  esac
done
