#!/usr/bin/env bash
# The release is byte-reproducible, and what it ships works (docs/release.md,
# "Reproducible"):
#   1. two fresh clones of HEAD at different paths (one deeper, with a space),
#      built at different times with different umasks and time zones, the
#      second with an empty Go build cache (RELEASE_CHECK_WARM=1 shares the
#      cache, for a quick local run): `make release` in each must give the
#      same file names and bytes, SHA256SUMS included; any difference fails
#      and is shown (tar listings of differing archives);
#   2. the Go toolchain's own build of the same commit, without the release's
#      ldflags (go build with VCS stamping, as `go install` in a clone does),
#      reports the same version, commit, dirty flag and date;
#   3. scripts/install.sh installs the linux/amd64 archive from the release
#      folder (checked against SHA256SUMS), and the README's first session
#      runs with that binary (make first-session FIRST_SESSION_CLAWKIT=…),
#      unless RELEASE_CHECK_SKIP_SESSION=1.
# Uncommitted changes are not part of the check: it builds HEAD.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
commit=$(git rev-parse HEAD)
if [ -n "$(git status --porcelain)" ]; then
	echo "release-check: note: uncommitted changes are ignored; checking $commit" >&2
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/clawkit-release-check.XXXXXX")
trap 'rm -rf "$work"' EXIT
a=$work/a
b="$work/second clone/at/a/deeper path"

clone() {
	git clone --quiet --no-checkout "$repo" "$1"
	git -C "$1" checkout --quiet --detach "$commit"
}

echo "== release-check: first build ($a)"
clone "$a"
(cd "$a" && umask 022 && TZ=UTC make --no-print-directory release >/dev/null)
# A release must not touch the tree it builds from (it once emptied the
# tracked dist/systemd/): the checkout stays clean, or the version it
# stamps would not be the commit's.
if [ -n "$(git -C "$a" status --porcelain)" ]; then
	git -C "$a" status --short >&2
	echo "release-check: FAILED: make release changed the checkout (above)" >&2
	exit 1
fi

echo "== release-check: second build ($b)"
mkdir -p "$(dirname "$b")"
clone "$b"
cache=$(go env GOCACHE)
if [ "${RELEASE_CHECK_WARM:-}" != 1 ]; then cache=$work/gocache; fi
sleep 1 # a later wall clock: nothing may depend on it
(cd "$b" && umask 077 && TZ=Pacific/Kiritimati GOCACHE=$cache make --no-print-directory release >/dev/null)

echo "== release-check: compare"
fail=0
if ! diff <(cd "$a/dist/release" && ls -A) <(cd "$b/dist/release" && ls -A); then
	echo "release-check: the two builds made different files" >&2
	fail=1
fi
for f in "$a"/dist/release/*; do
	n=$(basename "$f")
	if ! cmp -s "$f" "$b/dist/release/$n"; then
		echo "release-check: $n differs between the two builds" >&2
		case $n in
		*.tar.gz) diff <(tar -tvzf "$f") <(tar -tvzf "$b/dist/release/$n") >&2 || true ;;
		*.json | SHA256SUMS) diff "$f" "$b/dist/release/$n" >&2 || true ;;
		esac
		fail=1
	fi
done
[ "$fail" = 0 ] || { echo "release-check: FAILED: the release is not reproducible" >&2; exit 1; }
(cd "$a/dist/release" && sha256sum --check --quiet SHA256SUMS)
cat "$a/dist/release/SHA256SUMS"
echo "release-check: $(grep -c . "$a/dist/release/SHA256SUMS") files identical in both builds"

echo "== release-check: the go command's own stamp agrees"
version=$(sed -n 1p <(sh "$a/scripts/version.sh"))
(cd "$a" && GOFLAGS=-buildvcs=true CGO_ENABLED=0 go build -o "$work/plain-clawkit" ./cmd/clawkit)
mkdir "$work/inst"
sh "$repo/scripts/install.sh" --version "$version" --from "$a/dist/release" --bin-dir "$work/inst/bin" --man-dir "$work/inst/man"
field() { "$1" --json version | sed -n "s/^  \"$2\": \\(.*\\),\$/\\1/p"; }
for k in version commit dirty date goVersion; do
	x=$(field "$work/plain-clawkit" "$k")
	y=$(field "$work/inst/bin/clawkit" "$k")
	if [ -z "$x" ] || [ "$x" != "$y" ]; then
		echo "release-check: FAILED: $k: go build says '$x', the release says '$y'" >&2
		exit 1
	fi
done
"$work/inst/bin/clawkit" version
man -l "$work/inst/man/man1/clawkit.1" >/dev/null 2>&1 || echo "release-check: note: man cannot render here; not checked" >&2

if [ "${RELEASE_CHECK_SKIP_SESSION:-}" = 1 ]; then
	echo "release-check: the first session was skipped (RELEASE_CHECK_SKIP_SESSION=1)"
	exit 0
fi
echo "== release-check: the README's first session with the released linux/amd64 binary"
FIRST_SESSION_CLAWKIT="$work/inst/bin/clawkit" scripts/first-session.sh
