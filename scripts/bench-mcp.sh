#!/usr/bin/env bash
# MCP benchmarks (docs/mcp.md records the figures):
#  1. framer throughput (go test -bench BenchmarkLineFramer);
#  2. serial tools/call round trips/s with p50/p99 against the same Go echo
#     server for clawkit's client, the official Go SDK and mcp-go;
#  3. relay cost: the same client direct and through the real `clawkit mcp
#     proxy` binary, in interleaved batches over connections open side by
#     side (so machine load hits both alike), as p50s, the ratio of the
#     p50s and the median of per-round ratios; against the Go echo server
#     and the Node server-everything. CLAWKIT_BIN_BEFORE=path[:path…] adds
#     other builds to the same rounds (before/after figures of one run).
#     With a C compiler, scripts/relayfloor (a relay that only copies
#     bytes, from one thread in poll(2)) joins the same rounds as
#     "proxy-relayfloor": the cost of any extra process on the path on this
#     machine, the floor under clawkit's ratio.
#  4. over HTTP: serial tools/call against the same Go server (the Go SDK's
#     streamable handler in its own process, answering with SSE and with
#     JSON) for clawkit's client, the Go SDK's and mcp-go's; the relay cost
#     of `clawkit mcp proxy --listen` in front of that server over stdio
#     against its own HTTP mode; the proxy's heap per open session at 1, 8
#     and 32 sessions (flat when the per-session figure does not grow).
#  5. 2026-07-28 over HTTP: the same three clients pinned to 2026-07-28
#     (stateless) against the Go SDK's stateless handler; the relay cost of
#     the proxy's 2026-07-28 era (one shared child) beside the legacy one
#     (part of 4).
# BENCH_ONLY=http runs only 4 and 5.
# BENCHTIME (default 20000x) and COUNT (default 3) tune the runs
# (HTTP_BENCHTIME, default 5000x, the HTTP ones).
set -euo pipefail
cd "$(dirname "$0")/.."
BENCHTIME=${BENCHTIME:-20000x}
COUNT=${COUNT:-3}
bin=$(mktemp -d)/clawkit
trap 'rm -rf "$(dirname "$bin")"' EXIT
go build -o "$bin" ./cmd/clawkit
if command -v cc >/dev/null; then
  cc -O2 -o "$(dirname "$bin")/relayfloor" scripts/relayfloor/relayfloor.c
  export CLAWKIT_BIN_BEFORE="${CLAWKIT_BIN_BEFORE:+$CLAWKIT_BIN_BEFORE:}$(dirname "$bin")/relayfloor"
fi

if [ "${BENCH_ONLY:-}" != http ]; then
echo "== framer throughput"
go test -run '^$' -bench 'BenchmarkLineFramer' -benchtime 2s -count "$COUNT" ./pkg/mcp | grep -E '^Benchmark'

echo "== tools/call round trips (serial), direct and through clawkit mcp proxy"
CLAWKIT_BIN="$bin" go test -run '^$' -bench 'BenchmarkToolsCall$' -benchtime "$BENCHTIME" -count "$COUNT" ./pkg/mcp/mcpstdio | grep -E '^Benchmark'

echo "== relay cost, interleaved with direct: Go echo server"
CLAWKIT_BIN="$bin" go test -run '^$' -bench 'BenchmarkRelayEcho' -benchtime "${RELAY_BENCHTIME:-10000x}" -count "$COUNT" ./pkg/mcp/mcpstdio | grep -E '^Benchmark'

echo "== relay cost, interleaved with direct: Node server-everything (skipped without node/peers)"
CLAWKIT_BIN="$bin" go test -run '^$' -bench 'BenchmarkToolsCallEverything' -benchtime "${EVERYTHING_BENCHTIME:-10000x}" -count "$COUNT" ./pkg/mcp/mcpstdio | grep -E '^Benchmark|SKIP' || true

fi

echo "== over HTTP: tools/call round trips (serial), same Go server, three clients"
go test -run '^$' -bench 'BenchmarkToolsCallHTTP$' -benchtime "${HTTP_BENCHTIME:-5000x}" -count "$COUNT" ./pkg/mcp/mcphttp | grep -E '^Benchmark'

echo "== 2026-07-28 over HTTP: tools/call round trips (serial), one Go server (stateless), three clients"
go test -run '^$' -bench 'BenchmarkToolsCallHTTP2026$' -benchtime "${HTTP_BENCHTIME:-5000x}" -count "$COUNT" ./pkg/mcp/mcphttp | grep -E '^Benchmark'

echo "== over HTTP: relay cost of clawkit mcp proxy --listen vs the server's own HTTP mode, both eras"
CLAWKIT_BIN="$bin" go test -run '^$' -bench 'BenchmarkRelayHTTP$' -benchtime "${HTTP_BENCHTIME:-5000x}" -count "$COUNT" ./pkg/mcp/mcphttp | grep -E '^Benchmark'

echo "== over HTTP: the proxy's heap per open session"
go test -run '^$' -bench 'BenchmarkProxySessionMemory$' -benchtime 1x -count 1 ./pkg/mcp/mcphttp | grep -E '^Benchmark'
