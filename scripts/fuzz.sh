#!/usr/bin/env bash
# Runs every Go fuzz target in the module for FUZZTIME each (default 20s).
# Targets are discovered, so a new Fuzz function is fuzzed without editing
# this script. `go test ./...` (make test) already runs their seed corpora.
set -euo pipefail
cd "$(dirname "$0")/.."
FUZZTIME=${FUZZTIME:-20s}
# Minimisation of a failing input is bounded too: without it a target can
# spend far longer than FUZZTIME minimising (WalkTar once stalled there).
FUZZMINIMIZETIME=${FUZZMINIMIZETIME:-30s}
for pkg in $(go list ./...); do
  for target in $(go test -list '^Fuzz' "$pkg" 2>/dev/null | grep '^Fuzz' || true); do
    echo "== $pkg $target"
    go test -run '^$' -fuzz "^${target}\$" -fuzztime "$FUZZTIME" -fuzzminimizetime "$FUZZMINIMIZETIME" "$pkg"
  done
done
