#!/usr/bin/env bash
# Runs every whole-process benchmark: scripts/bench-*.sh (one per command
# group). Go micro-benchmarks run with: go test -run '^$' -bench . ./pkg/...
set -euo pipefail
cd "$(dirname "$0")/.."
make -s build
for s in scripts/bench-*.sh; do
  echo "== $s"
  BIN=bin/clawkit bash "$s"
done
