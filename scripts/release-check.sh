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
#   3. the license is in every archive, package and SBOM; SHA256SUMS and the
#      provenance are signed with a throwaway key (generated here, outside
#      both clones) and verify with openssl and, when $COSIGN names a cosign
#      binary, with cosign verify-blob; the provenance names every archive
#      and package with its SHA-256 and the commit; the .deb passes lintian
#      (scripts/lintian-overrides explains what is accepted), installs into
#      a throwaway root and runs; the .rpm's file list is as documented;
#   4. make image in both clones gives the same OCI layout (same index
#      digest); the amd64 image's layers unpacked into a rootfs run
#      `clawkit version` as 65532:65532 under chroot;
#   5. scripts/install.sh installs the linux/amd64 archive from the release
#      folder (signature and SHA256SUMS checked), and the README's first
#      session runs with that binary (make first-session
#      FIRST_SESSION_CLAWKIT=…), unless RELEASE_CHECK_SKIP_SESSION=1.
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

# The throwaway signing key: outside both clones, gone with $work.
openssl ecparam -name prime256v1 -genkey -noout -out "$work/signing.key" 2>/dev/null
openssl ec -in "$work/signing.key" -pubout -out "$work/signing.pub" 2>/dev/null

clone() {
	git clone --quiet --no-checkout "$repo" "$1"
	git -C "$1" checkout --quiet --detach "$commit"
}

echo "== release-check: first build ($a)"
clone "$a"
(cd "$a" && umask 022 && TZ=UTC make --no-print-directory release SIGNING_KEY="$work/signing.key" >/dev/null)
(cd "$a" && make --no-print-directory image >"$work/digest-a")
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
# The key from the environment this time (the other documented way).
(cd "$b" && umask 077 && TZ=Pacific/Kiritimati GOCACHE=$cache CLAWKIT_SIGNING_KEY="$(cat "$work/signing.key")" make --no-print-directory release >/dev/null)
(cd "$b" && GOCACHE=$cache make --no-print-directory image >"$work/digest-b")

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
		*.deb) diff <(dpkg-deb -c "$f") <(dpkg-deb -c "$b/dist/release/$n") >&2 || true ;;
		*.rpm) diff <(rpm -qp --dump "$f" 2>/dev/null) <(rpm -qp --dump "$b/dist/release/$n" 2>/dev/null) >&2 || true ;;
		esac
		fail=1
	fi
done
if ! cmp -s "$work/digest-a" "$work/digest-b" || ! diff -r "$a/dist/image" "$b/dist/image" >/dev/null; then
	echo "release-check: the OCI image differs between the two builds: $(cat "$work/digest-a") vs $(cat "$work/digest-b")" >&2
	fail=1
fi
[ "$fail" = 0 ] || { echo "release-check: FAILED: the release is not reproducible" >&2; exit 1; }
(cd "$a/dist/release" && sha256sum --check --quiet SHA256SUMS)
cat "$a/dist/release/SHA256SUMS"
echo "release-check: $(grep -c . "$a/dist/release/SHA256SUMS") files identical in both builds, image $(cat "$work/digest-a") in both"
rel=$a/dist/release
version=$(sed -n 1p <(sh "$a/scripts/version.sh"))
die() { echo "release-check: FAILED: $*" >&2; exit 1; }

echo "== release-check: the license everywhere"
for f in "$rel"/*.tar.gz; do
	tar -xzOf "$f" LICENSE | cmp -s - "$repo/LICENSE" || die "$(basename "$f") does not hold LICENSE"
done
for f in "$rel"/*.cdx.json; do
	[ "$(jq -r '.metadata.component.licenses[0].license.id' "$f")" = MIT ] || die "$(basename "$f"): metadata.component has no MIT license"
done
for f in "$rel"/*.deb; do
	dpkg-deb --fsys-tarfile "$f" | tar -xOf - ./usr/share/doc/clawkit/copyright | grep -q '^License: Expat$' || die "$(basename "$f") has no copyright file with the license"
	[ "$(dpkg-deb -f "$f" Maintainer)" != "" ] || die "$(basename "$f") has no maintainer"
done
for f in "$rel"/*.rpm; do
	[ "$(rpm -qp --queryformat '%{LICENSE}' "$f" 2>/dev/null)" = MIT ] || die "$(basename "$f"): License is not MIT"
	rpm2cpio "$f" | cpio -i --quiet --to-stdout ./usr/share/licenses/clawkit/LICENSE | cmp -s - "$repo/LICENSE" || die "$(basename "$f") does not hold LICENSE"
done
echo "release-check: LICENSE in $(find "$rel" -maxdepth 1 \( -name '*.tar.gz' -o -name '*.deb' -o -name '*.rpm' \) | wc -l) archives and packages, MIT in $(find "$rel" -maxdepth 1 -name '*.cdx.json' | wc -l) SBOMs"

echo "== release-check: signatures (openssl$([ -n "${COSIGN:-}" ] && echo ", cosign"))"
prov=clawkit_$version.intoto.json
for f in SHA256SUMS "$prov"; do
	openssl base64 -d -A -in "$rel/$f.sig" -out "$work/sig.der"
	openssl dgst -sha256 -verify "$work/signing.pub" -signature "$work/sig.der" "$rel/$f" >/dev/null || die "openssl rejects $f.sig"
	if [ -n "${COSIGN:-}" ]; then
		"$COSIGN" verify-blob --key "$work/signing.pub" --signature "$rel/$f.sig" --insecure-ignore-tlog=true --offline=true "$rel/$f" 2>/dev/null || die "cosign rejects $f.sig"
	fi
done
# The checks can fail: a changed SHA256SUMS is rejected by both (with
# SHA256SUMS's own signature: the loop above left the statement's in sig.der).
openssl base64 -d -A -in "$rel/SHA256SUMS.sig" -out "$work/sig.der"
openssl dgst -sha256 -verify "$work/signing.pub" -signature "$work/sig.der" "$rel/SHA256SUMS" >/dev/null || die "openssl rejects SHA256SUMS.sig"
{ cat "$rel/SHA256SUMS"; echo "0000000000000000000000000000000000000000000000000000000000000000  extra"; } >"$work/SHA256SUMS.changed"
if openssl dgst -sha256 -verify "$work/signing.pub" -signature "$work/sig.der" "$work/SHA256SUMS.changed" >/dev/null 2>&1; then die "openssl accepts a changed file"; fi
if [ -n "${COSIGN:-}" ] && "$COSIGN" verify-blob --key "$work/signing.pub" --signature "$rel/SHA256SUMS.sig" --insecure-ignore-tlog=true --offline=true "$work/SHA256SUMS.changed" 2>/dev/null; then
	die "cosign accepts a changed SHA256SUMS"
fi
[ -n "${COSIGN:-}" ] || echo "release-check: note: COSIGN is not set; cosign verify-blob not run" >&2

echo "== release-check: provenance"
[ "$(jq -r .predicateType "$rel/$prov")" = https://slsa.dev/provenance/v1 ] || die "$prov is not SLSA provenance v1"
[ "$(jq -r '.predicate.buildDefinition.resolvedDependencies[0].digest.gitCommit' "$rel/$prov")" = "$commit" ] || die "$prov names another commit"
diff <(jq -r '.subject[] | "\(.digest.sha256)  \(.name)"' "$rel/$prov") \
	<(cd "$rel" && sha256sum -- *.tar.gz *.deb *.rpm | sort -k2) >&2 || die "$prov's subjects are not the archives and packages"
echo "release-check: $prov: $(jq '.subject | length' "$rel/$prov") subjects, $(jq -r '.predicate.runDetails.builder.version.go' "$rel/$prov")"

echo "== release-check: packages"
deb=$rel/clawkit_${version}_linux_amd64.deb
lintian --fail-on error,warning --suppress-tags-from-file "$repo/scripts/lintian-overrides" "$deb" >&2 || die "lintian findings on $(basename "$deb") (above)"
mkdir "$work/debroot"
dpkg -x "$deb" "$work/debroot"
"$work/debroot/usr/bin/clawkit" version | grep -q "^clawkit $version" || die "the .deb's clawkit does not report $version"
for p in usr/share/man/man1/clawkit.1.gz usr/share/bash-completion/completions/clawkit usr/lib/systemd/system/clawkit-gateway@.service usr/lib/systemd/user/clawkit-gateway.service usr/lib/sysusers.d/clawkit.conf; do
	[ -f "$work/debroot/$p" ] || die "the .deb lacks /$p"
done
grep -q '^ExecStart=/usr/bin/clawkit ' "$work/debroot/usr/lib/systemd/system/clawkit-gateway@.service" || die "the packaged unit does not run /usr/bin/clawkit"
rpmfiles=$(rpm -qlp "$rel/clawkit_${version}_linux_amd64.rpm" 2>/dev/null)
for p in /usr/bin/clawkit /usr/share/man/man1/clawkit.1.gz /usr/share/bash-completion/completions/clawkit /usr/share/zsh/site-functions/_clawkit /usr/share/fish/vendor_completions.d/clawkit.fish /usr/lib/systemd/system/clawkit-gateway@.service /usr/lib/systemd/user/clawkit-gateway.service /usr/lib/sysusers.d/clawkit.conf /usr/share/licenses/clawkit/LICENSE; do
	printf '%s\n' "$rpmfiles" | grep -qx "$p" || die "rpm -qlp: the .rpm lacks $p"
done
rpm -qp --scripts "$rel/clawkit_${version}_linux_amd64.rpm" 2>/dev/null | grep -q 'systemd-sysusers clawkit.conf' || die "the .rpm does not create the clawkit user"
echo "release-check: the .deb runs from a throwaway root ($("$work/debroot/usr/bin/clawkit" version)); rpm -qlp lists $(printf '%s\n' "$rpmfiles" | wc -l) files"

echo "== release-check: the image runs from its layers (chroot as 65532:65532)"
img=$a/dist/image
blob() { printf '%s/blobs/sha256/%s' "$img" "${1#sha256:}"; }
index=$(jq -r '.manifests[0].digest' "$img/index.json")
[ "$index" = "$(cat "$work/digest-a")" ] || die "index.json names $index, make image printed $(cat "$work/digest-a")"
manifest=$(jq -r '.manifests[] | select(.platform.architecture == "amd64" and .platform.os == "linux") | .digest' "$(blob "$index")")
[ -n "$manifest" ] || die "the index has no linux/amd64 image"
jq -r '.manifests[].platform | "\(.os)/\(.architecture)"' "$(blob "$index")" | sort | tr '\n' ' ' | grep -qx 'linux/amd64 linux/arm64 ' || die "the index is not linux/amd64 + linux/arm64"
mkdir "$work/rootfs"
for layer in $(jq -r '.layers[].digest' "$(blob "$manifest")"); do
	tar -xzf "$(blob "$layer")" -C "$work/rootfs"
done
[ "$(jq -r .config.User "$(blob "$(jq -r .config.digest "$(blob "$manifest")")")")" = 65532:65532 ] || die "the image does not run as 65532:65532"
out=$(env -i HOME=/home/clawkit PATH=/usr/local/bin "$(command -v chroot)" --userspec=65532:65532 "$work/rootfs" /usr/local/bin/clawkit version) || die "clawkit version failed in the image's rootfs"
printf '%s\n' "$out" | grep -q "^clawkit $version" || die "the image's clawkit reports '$out'"
echo "release-check: image $index: $out"

echo "== release-check: the go command's own stamp agrees"
(cd "$a" && GOFLAGS=-buildvcs=true CGO_ENABLED=0 go build -o "$work/plain-clawkit" ./cmd/clawkit)
mkdir "$work/inst"
sh "$repo/scripts/install.sh" --version "$version" --from "$a/dist/release" --public-key "$work/signing.pub" --bin-dir "$work/inst/bin" --man-dir "$work/inst/man"
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
