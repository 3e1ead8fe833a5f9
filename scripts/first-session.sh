#!/usr/bin/env bash
# make first-session: run the README's "A first session" block word for
# word (the lines between the first-session markers), from the repository
# root, with a throwaway HOME and TMPDIR so nothing outside one temp folder
# is touched. Any line that fails fails the target (errexit and pipefail),
# and the folder, with everything the block started, is removed on every
# exit (KEEP=1 keeps the folder and says where).
# FIRST_SESSION_README names another file to read the block from (the
# tests use it to show that a failing line fails the target).
set -euo pipefail
cd "$(dirname "$0")/.."
readme=${FIRST_SESSION_README:-README.md}
block=$(sed -n '/<!-- first-session:begin -->/,/<!-- first-session:end -->/p' "$readme" | sed '1,2d;$d' | sed '$d')
[ -n "$block" ] || { echo "first-session: no block between the markers in $readme" >&2; exit 1; }
# FIRST_SESSION_CLAWKIT=PATH runs the block with that clawkit binary (a
# released one: scripts/release-check.sh) in front of the one make build
# writes, and proves every `clawkit` of the block is it.
if [ -n "${FIRST_SESSION_CLAWKIT:-}" ]; then
	# shellcheck disable=SC2016 # the README's words, not expanded here
	first='make build && export PATH=$PWD/bin:$PATH REPO=$PWD'
	[ "$(head -n 1 <<<"$block")" = "$first" ] || { echo "first-session: the block no longer starts with: $first" >&2; exit 1; }
	bin=$(cd "$(dirname "$FIRST_SESSION_CLAWKIT")" && pwd)
	bin=$(printf %q "$bin")
	[ "$(basename "$FIRST_SESSION_CLAWKIT")" = clawkit ] || { echo "first-session: FIRST_SESSION_CLAWKIT must name a file called clawkit" >&2; exit 1; }
	block="make build && export PATH=$bin:\$PWD/bin:\$PATH REPO=\$PWD
test \"\$(command -v clawkit)\" = $bin/clawkit
clawkit version
$(tail -n +2 <<<"$block")"
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/clawkit-first-session.XXXXXX")
pid=
cleanup() {
	# The block runs in a session of its own: whatever it left running (the
	# fake API, a detached gateway) is in that session and goes with it.
	if [ -n "$pid" ]; then pkill -KILL -s "$pid" 2>/dev/null || true; fi
	if [ "${KEEP:-}" = 1 ]; then echo "first-session: kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
mkdir "$work/home" "$work/tmp"
echo "first-session: running $(grep -c . <<<"$block") README lines with HOME=$work/home"
# Keep Go's caches where they are (they live under HOME by default).
export GOPATH=$(go env GOPATH) GOCACHE=$(go env GOCACHE) GOMODCACHE=$(go env GOMODCACHE)
HOME=$work/home TMPDIR=$work/tmp XDG_STATE_HOME= CLAWKIT_HOME= \
	setsid bash -euo pipefail -c "set -x; $block" </dev/null &
pid=$!
rc=0
wait "$pid" || rc=$?
if [ "$rc" -ne 0 ]; then
	echo "first-session: a README line failed (exit $rc); see the trace above" >&2
	exit "$rc"
fi
echo "first-session: every README line ran"
