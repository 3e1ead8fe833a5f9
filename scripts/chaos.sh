#!/usr/bin/env bash
# make chaos: the standing kill -9 campaign. TRIALS (default 204) real
# clawkit processes — export, install, skill write, research start against
# the fake API, config and auth writes — each killed with SIGKILL at a random
# point, then checked: final paths absent or complete, the next run succeeds,
# no duplicate create, no lost exit-0 write. Prints the table.
# CLAWKIT_CHAOS_SEED=N reproduces a draw. A 30-trial sample runs in make test.
set -euo pipefail
cd "$(dirname "$0")/.."
table=$(mktemp)
trap 'rm -f "$table"' EXIT
rc=0
CLAWKIT_CHAOS_TRIALS=${TRIALS:-204} CLAWKIT_CHAOS_TABLE=$table \
	go test ./testscript -run '^TestChaos$' -count=1 -v -timeout 60m | grep -v '^=== RUN' || rc=$?
echo
cat "$table"
exit $rc
