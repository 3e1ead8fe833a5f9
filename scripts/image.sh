#!/bin/sh
# make image: the container image of this commit's release (Dockerfile,
# docs/release.md "Container image"). The linux archive for the Docker
# daemon's architecture is taken from dist/release/ (make release builds it when
# it is missing), checked against dist/release/SHA256SUMS, and its binary is the
# only file of the build context. Tags clawkit:<version>.
set -eu
cd "$(dirname "$0")/.."
command -v docker >/dev/null 2>&1 || { echo "image: docker is not installed; nothing built" >&2; exit 1; }
docker info >/dev/null 2>&1 || { echo "image: the Docker daemon does not answer (docker info); nothing built" >&2; exit 1; }
version=$(sh scripts/version.sh | sed -n 1p)
commit=$(git rev-parse HEAD)
case $(docker version --format '{{.Server.Arch}}' 2>/dev/null || uname -m) in
arm64 | aarch64) arch=arm64 ;;
*) arch=amd64 ;;
esac
name="clawkit_${version}_linux_${arch}.tar.gz"
if [ ! -f "dist/release/$name" ]; then make --no-print-directory release; fi
want=$(awk -v n="$name" '$2 == n { print $1 }' dist/release/SHA256SUMS)
got=$(sha256sum "dist/release/$name" | cut -d' ' -f1)
if [ -z "$want" ] || [ "$want" != "$got" ]; then
	echo "image: dist/release/$name does not match dist/release/SHA256SUMS; run make release" >&2
	exit 1
fi
ctx=dist/image
rm -rf "$ctx" && mkdir -p "$ctx"
tar -xzf "dist/release/$name" -C "$ctx" clawkit
# The tag may not hold "+" (a dirty tree's version).
tag="clawkit:$(printf %s "$version" | tr + -)"
docker build --quiet --file Dockerfile --build-arg "VERSION=$version" --build-arg "REVISION=$commit" --tag "$tag" "$ctx"
echo "image: built $tag from $name (sha256 $got)"
