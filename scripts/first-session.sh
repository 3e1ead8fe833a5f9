#!/usr/bin/env bash
# make first-session: run the README's "A first session" block word for
# word (the lines between the first-session markers), from the repository
# root, with a throwaway HOME so nothing outside a temp folder is touched.
set -euo pipefail
cd "$(dirname "$0")/.."
block=$(sed -n '/<!-- first-session:begin -->/,/<!-- first-session:end -->/p' README.md | sed '1,2d;$d' | sed '$d')
[ -n "$block" ] || { echo "first-session: no block between the markers in README.md" >&2; exit 1; }
home=$(mktemp -d /tmp/clawkit-first-session.XXXXXX)
echo "first-session: running $(grep -c . <<<"$block") README lines with HOME=$home"
# Keep Go's caches where they are (they live under HOME by default).
export GOPATH=$(go env GOPATH) GOCACHE=$(go env GOCACHE) GOMODCACHE=$(go env GOMODCACHE)
HOME=$home XDG_STATE_HOME= CLAWKIT_HOME= bash -euo pipefail -c "set -x; $block"
echo "first-session: every README line ran"
