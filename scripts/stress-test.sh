#!/usr/bin/env bash
# make test RUNS times in a row (default 5) while BURNERS busy loops
# (default 2, one per core here) compete for the CPU. Every run must pass:
# a test that only passes on a quiet machine depends on a race.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${RUNS:-5}
burners=${BURNERS:-2}
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT
for _ in $(seq "$burners"); do
	yes >/dev/null &
	pids+=($!)
done
echo "stress-test: $runs runs of make test with $burners CPU burners ($(nproc) cores)"
total_start=$(date +%s)
for i in $(seq "$runs"); do
	start=$(date +%s)
	log=$(mktemp)
	if ! make test >"$log" 2>&1; then
		tail -n 60 "$log"
		echo "stress-test: run $i/$runs FAILED after $(( $(date +%s) - start ))s (load: $(cut -d' ' -f1-3 /proc/loadavg))"
		exit 1
	fi
	echo "stress-test: run $i/$runs passed in $(( $(date +%s) - start ))s (load: $(cut -d' ' -f1-3 /proc/loadavg)); $(tail -n 1 "$log")"
	rm -f "$log"
done
echo "stress-test: $runs/$runs passed in $(( $(date +%s) - total_start ))s"
