#!/usr/bin/env bash
# scripts/first-run-cost.sh: what this checkout's first run has cost so far
# on disk, as README ("The first run's cost") counts it: peers/ (the npm
# peers and Node 24), Go's module cache and build cache, and npm's own
# cache (outside the checkout, but the first `make peers` fills it). Run it
# after `make demo` and `make test` on a fresh clone with empty caches to
# measure a first run; the figures are this machine's, printed, never
# written down anywhere by the script.
set -euo pipefail
cd "$(dirname "$0")/.."
size() { # PATH: its size in MB (0 when absent)
	if [ -e "$1" ]; then du -sm "$1" 2>/dev/null | cut -f1; else echo 0; fi
}
npm_cache=$(npm config get cache 2>/dev/null || echo "$HOME/.npm")
total=0
for row in "peers/ (npm peers + Node 24):$(size peers)" \
	"Go module cache ($(go env GOMODCACHE)):$(size "$(go env GOMODCACHE)")" \
	"Go build cache ($(go env GOCACHE)):$(size "$(go env GOCACHE)")" \
	"npm cache ($npm_cache):$(size "$npm_cache")" \
	"dist/ (make release):$(size dist/release)"; do
	mb=${row##*:}
	total=$((total + mb))
	printf '%8s MB  %s\n' "$mb" "${row%:*}"
done
printf '%8s MB  total\n' "$total"
