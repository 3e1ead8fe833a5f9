#!/usr/bin/env bash
# make demo part: Deep Research against the in-repo fake Interactions API
# (no network, no key): register a profile, start a job and wait for it,
# show it, print the report's first lines. BIN and DEMO_DIR come from
# scripts/demo.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-$PWD/bin/clawkit}
FAKE=${FAKE:-$PWD/bin/fakegoogle}
[ -x "$FAKE" ] || go build -o "$FAKE" ./cmd/fakegoogle
DEMO_DIR=${DEMO_DIR:?run through scripts/demo.sh}
d=$DEMO_DIR/research
mkdir -p "$d"
"$FAKE" --url-file "$d/fake.url" --log "$d/fake.log" & fake=$!
trap 'kill $fake 2>/dev/null || true' EXIT
until [ -s "$d/fake.url" ]; do sleep 0.05; done
export CLAWKIT_GOOGLE_BASE_URL=$(cat "$d/fake.url") CLAWKIT_RESEARCH_TIME_SCALE=100 GEMINI_API_KEY=demo-key
"$BIN" auth add google:default --provider google --api-key-env GEMINI_API_KEY | sed 's/^/   /'
"$BIN" config set plugins.entries.google.config.research '{"enabled":true,"profileId":"google:default"}'
"$BIN" research start --wait "What changed in EU battery regulation in 2026?" --out "$d/report.md" | sed 's/^/   /'
"$BIN" research list | sed 's/^/   /'
echo "   report ($d/report.md):"
head -n 3 "$d/report.md" | sed 's/^/     /'
