#!/usr/bin/env bash
# make demo part: one MCP request to the real reference server (installed
# by make peers), with an exact environment and guaranteed cleanup. Says
# so and skips when the peers are not installed. BIN and DEMO_DIR come
# from scripts/demo.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-$PWD/bin/clawkit}
srv=$PWD/peers/node_modules/@modelcontextprotocol/server-everything/dist/index.js
if [ ! -f "$srv" ]; then
	echo "   skipped: the MCP reference server is not installed (run make peers)"
	exit 0
fi
"$BIN" mcp call --method tools/list --env-pass PATH -- node "$srv" stdio >"$DEMO_DIR/tools.json"
echo "   tools/list: $(grep -o '"name": *"[^"]*"' "$DEMO_DIR/tools.json" | wc -l) tools, first bytes:"
head -c 200 "$DEMO_DIR/tools.json" | sed 's/^/     /'; echo
