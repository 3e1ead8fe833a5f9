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
