#!/usr/bin/env bash
# MCP benchmarks (docs/mcp.md records the figures):
#  1. framer throughput (go test -bench BenchmarkLineFramer);
#  2. serial tools/call round trips/s with p50/p99 against the same Go echo
#     server for clawkit's client, the official Go SDK and mcp-go;
#  3. relay latency: the same client through the real `clawkit mcp proxy`
#     binary (CLAWKIT_BIN) versus direct.
# BENCHTIME (default 20000x) and COUNT (default 3) tune the runs.
set -euo pipefail
cd "$(dirname "$0")/.."
BENCHTIME=${BENCHTIME:-20000x}
COUNT=${COUNT:-3}
bin=$(mktemp -d)/clawkit
trap 'rm -rf "$(dirname "$bin")"' EXIT
go build -o "$bin" ./cmd/clawkit

echo "== framer throughput"
go test -run '^$' -bench 'BenchmarkLineFramer' -benchtime 2s -count "$COUNT" ./pkg/mcp | grep -E '^Benchmark'

echo "== tools/call round trips (serial), direct and through clawkit mcp proxy"
CLAWKIT_BIN="$bin" go test -run '^$' -bench 'BenchmarkToolsCall$' -benchtime "$BENCHTIME" -count "$COUNT" ./pkg/mcp | grep -E '^Benchmark'

echo "== relay cost against the real Node server-everything (skipped without node/peers)"
CLAWKIT_BIN="$bin" go test -run '^$' -bench 'BenchmarkToolsCallEverything' -benchtime "${EVERYTHING_BENCHTIME:-3000x}" -count "$COUNT" ./pkg/mcp | grep -E '^Benchmark|SKIP' || true
