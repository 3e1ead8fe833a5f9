#!/usr/bin/env bash
# make demo part: one MCP request to the real reference server (installed
# by make peers, which make demo runs first), with an exact environment
# and guaranteed cleanup. Without the peers it says so loudly on stderr and
# fails (DEMO_ALLOW_SKIP=1: skips). BIN and DEMO_DIR come
# from scripts/demo.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-$PWD/bin/clawkit}
srv=$PWD/peers/node_modules/@modelcontextprotocol/server-everything/dist/index.js
if [ ! -f "$srv" ]; then
	# make demo installs the peers first; a direct run without them says so
	# on stderr where it cannot be missed, and the demo ends non-zero
	# unless DEMO_ALLOW_SKIP=1.
	{
		echo "   ************************************************************"
		echo "   SKIPPED: the MCP part (the reference server is not installed)"
		echo "   install it with: make peers   (or run: make demo)"
		echo "   ************************************************************"
	} >&2
	[ "${DEMO_ALLOW_SKIP:-}" = 1 ] && exit 0
	exit 3
fi
"$BIN" mcp call --method tools/list --env-pass PATH -- node "$srv" stdio >"$DEMO_DIR/tools.json"
echo "   tools/list: $(grep -o '"name": *"[^"]*"' "$DEMO_DIR/tools.json" | wc -l) tools, first bytes:"
head -c 200 "$DEMO_DIR/tools.json" | sed 's/^/     /'; echo
