#!/usr/bin/env bash
# Static checks that fail on any finding: go vet, staticcheck (every
# default check), deadcode (functions no program or test reaches) and
# golangci-lint (errcheck, errorlint, revive, gocritic; .golangci.yml).
# The tools are installed at pinned versions into $(go env GOPATH)/bin when
# they are missing. docs/architecture.md ("Checks") says why they run.
set -euo pipefail
cd "$(dirname "$0")/.."

STATICCHECK_VERSION=v0.8.2
DEADCODE_VERSION=v0.52.0 # golang.org/x/tools
GOLANGCI_LINT_VERSION=v2.15.0

bin=$(go env GOPATH)/bin
need() { # need TOOL MODULE@VERSION
	if ! [ -x "$bin/$1" ] || ! go version -m "$bin/$1" | grep -q "${2#*@}"; then
		echo "== installing $2"
		go install "$2"
	fi
}
need staticcheck "honnef.co/go/tools/cmd/staticcheck@$STATICCHECK_VERSION"
need deadcode "golang.org/x/tools/cmd/deadcode@$DEADCODE_VERSION"
need golangci-lint "github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$GOLANGCI_LINT_VERSION"

status=0
echo "== go vet"
go vet ./... || status=1

echo "== staticcheck"
"$bin/staticcheck" ./... || status=1

# -test: tests are programs too, so a helper only tests call is alive.
echo "== deadcode"
dead=$("$bin/deadcode" -test ./...)
if [ -n "$dead" ]; then
	printf '%s\n' "$dead"
	echo "deadcode: the functions above are never reached; delete them or use them" >&2
	status=1
fi

echo "== golangci-lint"
"$bin/golangci-lint" run ./... || status=1

if [ "$status" -ne 0 ]; then
	echo "lint: findings above" >&2
fi
exit "$status"
