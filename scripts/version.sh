#!/bin/sh
# The version facts of the checkout, by the go command's own rules, for
# -ldflags -X (docs/release.md, "Version"); pkg/buildinfo reads them.
#
#   scripts/version.sh          VERSION COMMIT DATE DIRTY EPOCH, one a line
#   scripts/version.sh ldflags  the -X flags for go build
#
# VERSION is the semver tag on HEAD, else a Go pseudo-version
# (v0.0.0-YYYYMMDDHHMMSS-<12 hex> with no tag below HEAD, vX.Y.(Z+1)-0.…
# after a release tag, vX.Y.Z-pre.0.… after a pre-release tag), with
# "+dirty" when the tree has changes, as `go build` stamps it in a clone.
# DATE and EPOCH are the commit's committer time (UTC), also
# SOURCE_DATE_EPOCH for the release.
set -eu
# CLAWKIT_VERSION_REPO: another checkout (the tests compare these rules
# with the go command's own stamp in throwaway repositories).
cd "${CLAWKIT_VERSION_REPO:-$(dirname "$0")/..}"

if ! git rev-parse --verify --quiet HEAD >/dev/null 2>&1; then
	# A source tree without git (an unpacked archive): no facts to stamp;
	# the binary then reports what the go command recorded.
	echo "version.sh: not a git checkout with a commit; nothing to stamp" >&2
	if [ "${1:-}" = ldflags ]; then exit 0; fi
	exit 1
fi
semver='^v[0-9][0-9]*\.[0-9][0-9]*\.[0-9][0-9]*(-[0-9A-Za-z.-]+)?$'
commit=$(git rev-parse HEAD)
epoch=$(git show -s --format=%ct HEAD)
date=$(TZ=UTC git show -s --date=format-local:%Y-%m-%dT%H:%M:%SZ --format=%cd HEAD)
stamp=$(TZ=UTC git show -s --date=format-local:%Y%m%d%H%M%S --format=%cd HEAD)
dirty=false
if [ -n "$(git status --porcelain 2>/dev/null)" ]; then dirty=true; fi

# The highest semver tag on HEAD, else the highest below it.
highest() { grep -E "$semver" | sort -V | tail -n 1; }
version=$(git tag --points-at HEAD | highest || true)
if [ -z "$version" ]; then
	base=$(git tag --merged HEAD | highest || true)
	rev=$(printf %s "$commit" | cut -c1-12)
	case $base in
	"") version="v0.0.0-$stamp-$rev" ;;
	*-*) version="$base.0.$stamp-$rev" ;;
	*)
		major_minor=${base%.*}
		patch=${base##*.}
		version="$major_minor.$((patch + 1))-0.$stamp-$rev"
		;;
	esac
fi
if [ "$dirty" = true ]; then version="$version+dirty"; fi

case ${1:-} in
ldflags)
	p=github.com/clawkit/clawkit/pkg/buildinfo
	printf -- '-X %s.version=%s -X %s.commit=%s -X %s.date=%s -X %s.dirty=%s\n' \
		"$p" "$version" "$p" "$commit" "$p" "$date" "$p" "$dirty"
	;;
"") printf '%s\n' "$version" "$commit" "$date" "$dirty" "$epoch" ;;
*) echo "usage: scripts/version.sh [ldflags]" >&2; exit 2 ;;
esac
