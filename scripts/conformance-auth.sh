#!/bin/sh
# Runs every auth scenario of an installed MCP conformance suite against a
# client command and prints one line per scenario: PASS or FAIL. Used to
# hold clawkit's OAuth client (scripts/conformance-auth-client.sh) and the
# Go SDK's beside it (docs/mcp.md, "Login").
#   scripts/conformance-auth.sh SUITE_DIR 'CLIENT COMMAND'
# SUITE_DIR holds node_modules/.bin/conformance; node must be on PATH.
set -u
dir=$1
client=$2
bin="$dir/node_modules/.bin/conformance"
pass=0
fail=0
for s in $("$bin" list 2>/dev/null | grep -o 'auth/[a-z0-9-]*'); do
	out=$("$bin" client --command "$client" --scenario "$s" 2>&1)
	if printf '%s\n' "$out" | grep -q 'OVERALL: PASSED'; then
		echo "PASS $s"
		pass=$((pass + 1))
	else
		echo "FAIL $s $(printf '%s\n' "$out" | grep -E 'Passed: [0-9]+/[0-9]+' | tail -1)"
		fail=$((fail + 1))
	fi
done
echo "passed $pass, failed $fail"
