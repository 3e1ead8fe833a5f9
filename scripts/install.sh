#!/bin/sh
# Install one clawkit release, verified against its SHA256SUMS
# (docs/release.md, "Install"). POSIX sh: runs under dash, bash, busybox
# and macOS's sh.
#
#   install.sh --version v1.2.3 --from URL|DIR [--sums-sha256 HEX]
#              [--public-key FILE] [--bin-dir DIR] [--man-dir DIR] [--bash-completion-dir DIR]
#              [--fish-completion-dir DIR] [--no-man] [--no-completions]
#              [--os linux|darwin] [--arch amd64|arm64]
#
# --from is the folder holding the release files (SHA256SUMS and the
# clawkit_<version>_<os>_<arch>.tar.gz archives): an http(s) URL or a
# local folder. The archive is installed only when SHA256SUMS names it and
# its SHA-256 matches; a mismatch, a missing line or an unknown platform is
# refused and nothing is installed. --sums-sha256 pins SHA256SUMS itself
# (the GitHub action passes it): any other SHA256SUMS is refused.
# --public-key FILE (the release key, PEM) requires SHA256SUMS.sig and
# checks it with openssl before any sum is read: a missing or wrong
# signature is refused. The binary is put in place with one rename, so an
# interrupted install leaves the previous clawkit. When --bin-dir is PREFIX/bin (the default,
# ~/.local/bin, or /usr/local/bin), the man page goes to PREFIX/share/man
# and the bash and fish completions (as the binary prints them) to their
# usual folders under PREFIX; --no-man and --no-completions skip them.
#
# Exit codes as clawkit's: 1 failed (download, checksum), 2 usage.
set -eu

prog=install.sh
die() { # code message hint
	printf '%s: error: %s\n' "$prog" "$2" >&2
	if [ -n "${3:-}" ]; then printf '%s: hint: %s\n' "$prog" "$3" >&2; fi
	exit "$1"
}
usage() {
	die 2 "$1" "usage: install.sh --version vX.Y.Z --from URL|DIR [--sums-sha256 HEX] [--public-key FILE] [--bin-dir DIR] [--man-dir DIR] [--bash-completion-dir DIR] [--fish-completion-dir DIR] [--no-man] [--no-completions] [--os OS] [--arch ARCH]"
}

version=""
from=""
bin_dir="${HOME:-}/.local/bin"
man_dir=""
bash_dir=""
fish_dir=""
no_man=""
no_completions=""
sums_sha256=""
public_key=""
os=""
arch=""
while [ $# -gt 0 ]; do
	case $1 in
	--version | --from | --sums-sha256 | --public-key | --bin-dir | --man-dir | --bash-completion-dir | --fish-completion-dir | --os | --arch)
		[ $# -ge 2 ] || usage "$1 needs a value"
		case $1 in
		--version) version=$2 ;;
		--from) from=$2 ;;
		--sums-sha256) sums_sha256=$2 ;;
		--public-key) public_key=$2 ;;
		--bin-dir) bin_dir=$2 ;;
		--man-dir) man_dir=$2 ;;
		--bash-completion-dir) bash_dir=$2 ;;
		--fish-completion-dir) fish_dir=$2 ;;
		--os) os=$2 ;;
		--arch) arch=$2 ;;
		esac
		shift 2
		;;
	--no-man)
		no_man=1
		shift
		;;
	--no-completions)
		no_completions=1
		shift
		;;
	-h | --help)
		sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'
		exit 0
		;;
	*) usage "unknown argument: $1" ;;
	esac
done
[ -n "$version" ] || usage "--version is required (a release tag such as v1.2.3)"
[ -n "$from" ] || usage "--from is required (the release folder: a URL or a local folder)"
case $version in
v[0-9]*) ;;
*) usage "--version $version is not a release version (vX.Y.Z)" ;;
esac
case $version in
*/* | *' '*) usage "--version $version is not a release version (vX.Y.Z)" ;;
esac
[ -n "$bin_dir" ] || usage "--bin-dir is required when HOME is not set"
case $sums_sha256 in
*[!0-9a-f]*) usage "--sums-sha256 must be a SHA-256 in lower-case hex" ;;
esac
if [ -n "$sums_sha256" ] && [ ${#sums_sha256} -ne 64 ]; then usage "--sums-sha256 must be a SHA-256 in lower-case hex"; fi
# The signature check needs openssl (ECDSA P-256 over SHA-256, base64).
if [ -n "$public_key" ]; then
	[ -f "$public_key" ] || usage "--public-key $public_key is not a file"
	command -v openssl >/dev/null 2>&1 || die 1 "openssl is not installed; --public-key needs it to check SHA256SUMS.sig" "install openssl; clawkit is never installed unverified"
	openssl pkey -pubin -in "$public_key" -noout >/dev/null 2>&1 || usage "--public-key $public_key is not a PEM public key"
fi

# The platform, in Go's names.
if [ -z "$os" ]; then os=$(uname -s); fi
case $os in
Linux | linux) os=linux ;;
Darwin | darwin) os=darwin ;;
*) die 1 "unknown platform: operating system '$os'" "clawkit releases exist for linux and darwin (amd64, arm64); elsewhere build from source: CGO_ENABLED=0 go install github.com/clawkit/clawkit/cmd/clawkit@$version" ;;
esac
if [ -z "$arch" ]; then arch=$(uname -m); fi
case $arch in
x86_64 | amd64) arch=amd64 ;;
aarch64 | arm64) arch=arm64 ;;
*) die 1 "unknown platform: architecture '$arch'" "clawkit releases exist for amd64 and arm64; elsewhere build from source: CGO_ENABLED=0 go install github.com/clawkit/clawkit/cmd/clawkit@$version" ;;
esac
name="clawkit_${version}_${os}_${arch}.tar.gz"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/clawkit-install.XXXXXX") || die 1 "cannot create a temporary folder"
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# fetch FILE: copy FILE of the release folder into $tmp.
fetch() {
	case $from in
	http://* | https://*)
		url="${from%/}/$1"
		if command -v curl >/dev/null 2>&1; then
			curl -fsSL --proto '=http,https' -o "$tmp/$1" "$url" || die 1 "cannot download $url" "check --from and --version"
		elif command -v wget >/dev/null 2>&1; then
			wget -q -O "$tmp/$1" "$url" || die 1 "cannot download $url" "check --from and --version"
		else
			die 1 "neither curl nor wget is installed" "install one, or download the release folder and pass it as --from DIR"
		fi
		;;
	*)
		src="${from#file://}/$1"
		[ -f "$src" ] || die 1 "$src does not exist" "check --from and --version"
		cp "$src" "$tmp/$1" || die 1 "cannot copy $src"
		;;
	esac
}

sha256() {
	if command -v sha256sum >/dev/null 2>&1; then
		sha256sum "$1" | cut -d' ' -f1
	elif command -v shasum >/dev/null 2>&1; then
		shasum -a 256 "$1" | cut -d' ' -f1
	elif command -v openssl >/dev/null 2>&1; then
		openssl dgst -sha256 -r "$1" | cut -d' ' -f1
	else
		die 1 "no SHA-256 tool (sha256sum, shasum or openssl) is installed" "install one; clawkit is never installed unverified"
	fi
}

fetch SHA256SUMS
# The signature first: with a key, no sum is read from an unsigned or
# wrongly signed SHA256SUMS.
if [ -n "$public_key" ]; then
	case $from in
	http://* | https://*)
		if command -v curl >/dev/null 2>&1; then
			curl -fsSL --proto '=http,https' -o "$tmp/SHA256SUMS.sig" "${from%/}/SHA256SUMS.sig" || rm -f "$tmp/SHA256SUMS.sig"
		else
			wget -q -O "$tmp/SHA256SUMS.sig" "${from%/}/SHA256SUMS.sig" || rm -f "$tmp/SHA256SUMS.sig"
		fi
		;;
	*) if [ -f "${from#file://}/SHA256SUMS.sig" ]; then cp "${from#file://}/SHA256SUMS.sig" "$tmp/SHA256SUMS.sig" || die 1 "cannot copy SHA256SUMS.sig"; fi ;;
	esac
	[ -s "$tmp/SHA256SUMS.sig" ] || die 1 "SHA256SUMS.sig is missing from the release folder" "--public-key requires a signed release; nothing was installed"
	if ! openssl base64 -d -A -in "$tmp/SHA256SUMS.sig" -out "$tmp/SHA256SUMS.sig.der" >/dev/null 2>&1 ||
		! openssl dgst -sha256 -verify "$public_key" -signature "$tmp/SHA256SUMS.sig.der" "$tmp/SHA256SUMS" >/dev/null 2>&1; then
		die 1 "the signature of SHA256SUMS does not verify with $public_key" "the release was not signed with that key, or SHA256SUMS was tampered with; nothing was installed"
	fi
fi
if [ -n "$sums_sha256" ]; then
	sums_got=$(sha256 "$tmp/SHA256SUMS")
	if [ "$sums_got" != "$sums_sha256" ]; then
		die 1 "SHA256SUMS does not match --sums-sha256: it is $sums_got, the pin is $sums_sha256" "the release folder does not hold the release pinned; nothing was installed"
	fi
fi
# The one line naming the archive ("HASH  NAME", or "HASH *NAME").
want=$(awk -v n="$name" '$2 == n || $2 == "*" n { print $1 }' "$tmp/SHA256SUMS")
case $want in
"") die 1 "SHA256SUMS has no line for $name" "the release folder does not hold $version for $os/$arch, or its SHA256SUMS is incomplete; nothing was installed" ;;
*"
"*) die 1 "SHA256SUMS has more than one line for $name" "the release folder is inconsistent; nothing was installed" ;;
esac
case $want in
*[!0-9a-f]*) die 1 "SHA256SUMS's line for $name holds no SHA-256" "nothing was installed" ;;
esac
[ ${#want} -eq 64 ] || die 1 "SHA256SUMS's line for $name holds no SHA-256" "nothing was installed"

fetch "$name"
got=$(sha256 "$tmp/$name")
if [ "$got" != "$want" ]; then
	die 1 "checksum mismatch for $name: SHA256SUMS says $want, the archive is $got" "the archive is corrupt or was tampered with; nothing was installed"
fi

mkdir "$tmp/x"
tar -xzf "$tmp/$name" -C "$tmp/x" || die 1 "cannot unpack $name"
# Every member installed is a regular file, never a link (whose target
# would be what gets installed), checked before anything is written.
regular() { [ -f "$tmp/x/$1" ] && [ ! -h "$tmp/x/$1" ] && [ ! -h "$tmp/x/$(dirname "$1")" ]; }
present() { [ -e "$tmp/x/$1" ] || [ -h "$tmp/x/$1" ] || [ -h "$tmp/x/$(dirname "$1")" ]; }
regular clawkit || die 1 "$name holds no clawkit binary" "nothing was installed"
if present man/clawkit.1 && ! regular man/clawkit.1; then
	die 1 "$name's man/clawkit.1 is not a regular file" "the archive is not as make release lays it out; nothing was installed"
fi

# The binary reports the version asked for (when it runs here).
runs=""
if [ "$os" = "$(uname -s | tr '[:upper:]' '[:lower:]')" ]; then
	if out=$("$tmp/x/clawkit" --json version 2>/dev/null); then
		runs=1
		case $out in
		*"\"version\": \"$version\""*) ;;
		*) die 1 "$name holds a clawkit that is not $version" "the release folder is inconsistent; nothing was installed" ;;
		esac
	fi
fi

# The default folders of the man page and the completions: under PREFIX
# when the binary goes to PREFIX/bin (fish's per-user folder for the
# default ~/.local/bin, as fish reads no vendor folder there).
prefix=""
case ${bin_dir%/} in
*/bin) prefix=${bin_dir%/}
	prefix=${prefix%/bin} ;;
esac
if [ -n "$prefix" ]; then
	[ -n "$man_dir" ] || man_dir="$prefix/share/man"
	[ -n "$bash_dir" ] || bash_dir="$prefix/share/bash-completion/completions"
	if [ -z "$fish_dir" ]; then
		if [ -n "${HOME:-}" ] && [ "$prefix" = "$HOME/.local" ]; then
			fish_dir="${XDG_CONFIG_HOME:-$HOME/.config}/fish/completions"
		else
			fish_dir="$prefix/share/fish/vendor_completions.d"
		fi
	fi
fi
[ -z "$no_man" ] || man_dir=""
[ -z "$no_completions" ] || {
	bash_dir=""
	fish_dir=""
}

# place SRC DIR NAME MODE: puts SRC at DIR/NAME with one rename from an
# exclusive, unpredictable staging file in DIR (mktemp), so a link planted
# in a shared folder is never written through; a folder at DIR/NAME is
# refused rather than moved into.
staged=""
trap 'rm -rf "$tmp"; if [ -n "$staged" ]; then rm -f "$staged"; fi' EXIT
place() {
	mkdir -p "$2" || return 1
	if [ -d "$2/$3" ] && [ ! -h "$2/$3" ]; then return 1; fi
	staged=$(mktemp "$2/.$3.install.XXXXXX") || {
		staged=""
		return 1
	}
	if [ -h "$staged" ] || [ ! -f "$staged" ] || ! { cat "$1" >"$staged" && chmod "$4" "$staged" && mv -f "$staged" "$2/$3"; }; then
		rm -f "$staged"
		staged=""
		return 1
	fi
	staged=""
}

mkdir -p "$bin_dir" || die 1 "cannot create $bin_dir" "pass --bin-dir DIR pointing at a writable folder"
place "$tmp/x/clawkit" "$bin_dir" clawkit 0755 || die 1 "cannot put clawkit in $bin_dir" "pass --bin-dir DIR pointing at a writable folder"
if [ -n "$man_dir" ] && regular man/clawkit.1; then
	place "$tmp/x/man/clawkit.1" "$man_dir/man1" clawkit.1 0644 || die 1 "cannot write $man_dir/man1" "clawkit itself is installed at $bin_dir/clawkit; pass --man-dir DIR or --no-man"
fi
# The completions are what this binary prints (docs/cli.md): only when it
# runs here. zsh's is sourced from .zshrc, not installed (it is no fpath
# function).
for sh_ in bash fish; do
	if [ "$sh_" = bash ]; then dir=$bash_dir file=clawkit; else dir=$fish_dir file=clawkit.fish; fi
	[ -n "$dir" ] || continue
	if [ -z "$runs" ]; then
		printf '%s: note: %s completions not installed: the binary does not run here\n' "$prog" "$sh_" >&2
		continue
	fi
	"$tmp/x/clawkit" completion "$sh_" >"$tmp/completion" 2>/dev/null || die 1 "clawkit completion $sh_ failed" "clawkit itself is installed at $bin_dir/clawkit; pass --no-completions"
	place "$tmp/completion" "$dir" "$file" 0644 || die 1 "cannot write $dir" "clawkit itself is installed at $bin_dir/clawkit; pass --$sh_-completion-dir DIR or --no-completions"
done
signed=""
if [ -n "$public_key" ]; then signed=", signature verified"; fi
printf 'installed clawkit %s (%s/%s, sha256 %s%s) at %s\n' "$version" "$os" "$arch" "$got" "$signed" "$bin_dir/clawkit"
case ":${PATH:-}:" in
*":$bin_dir:"*) ;;
*) printf '%s: note: %s is not on PATH\n' "$prog" "$bin_dir" >&2 ;;
esac
