#!/usr/bin/env bash
# make live-research: one tiny real deep-research job against Google's
# Gemini API, end to end through clawkit, with the key in
# CLAWKIT_LIVE_GEMINI_KEY. Skipped (exit 0) without the key, and never run
# in CI. It prints every check it makes; the first failed check fails it.
# Optional: CLAWKIT_LIVE_API_VERSION (default: clawkit's), CLAWKIT_LIVE_TIMEOUT
# (default 70m), CLAWKIT_LIVE_BASE_URL (a proxy in front of the API; default
# Google's). A real job is billed to the key's project.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -n "${CI:-}" ]; then
  echo "live-research: skipped in CI (it spends real quota)"; exit 0
fi
if [ -z "${CLAWKIT_LIVE_GEMINI_KEY:-}" ]; then
  echo "live-research: skipped: set CLAWKIT_LIVE_GEMINI_KEY to a Gemini API key to run one real research job"; exit 0
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/clawkit-live-research.XXXXXX")
trap 'rm -rf "$work"' EXIT
export CLAWKIT_HOME="$work/home"
unset CLAWKIT_GOOGLE_BASE_URL CLAWKIT_RESEARCH_TIME_SCALE
if [ -n "${CLAWKIT_LIVE_BASE_URL:-}" ]; then export CLAWKIT_GOOGLE_BASE_URL="$CLAWKIT_LIVE_BASE_URL"; fi
CGO_ENABLED=0 go build -o "$work/clawkit" ./cmd/clawkit
ck() { "$work/clawkit" "$@"; }
check() { echo "live-research: ok: $*"; }
fail() { echo "live-research: FAILED: $*" >&2; exit 1; }
field() { sed -n "s/^  \"$1\": \"\{0,1\}\([^\",]*\)\"\{0,1\},\{0,1\}$/\1/p" "$2" | head -1; }

GEMINI_API_KEY="$CLAWKIT_LIVE_GEMINI_KEY" ck auth add google:live --provider google --api-key-env GEMINI_API_KEY >/dev/null
ck config set plugins.entries.google.config.research '{"enabled":true,"profileId":"google:live"}' >/dev/null
if [ -n "${CLAWKIT_LIVE_API_VERSION:-}" ]; then
  ck config set plugins.entries.google.config.research.apiVersion "$CLAWKIT_LIVE_API_VERSION" >/dev/null
fi
ck research describe >/dev/null && check "describe (no credentials, no network)"

q="In two sentences: what does the Rayleigh scattering of sunlight explain?"
ck --json research start "$q" >"$work/start.json" || fail "start: $(cat "$work/start.json")"
job=$(field job "$work/start.json"); handle=$(field handle "$work/start.json")
[ -n "$handle" ] || fail "the create returned no interaction id"
check "create accepted: job $job, handle $handle, status $(field status "$work/start.json") (one POST, recorded before anything else)"
ck --json research wait "$job" --timeout "${CLAWKIT_LIVE_TIMEOUT:-70m}" >"$work/wait.json" || fail "wait: $(cat "$work/wait.json")"
state=$(field state "$work/wait.json")
[ "$state" = completed ] || fail "job ended $state: $(grep -E '"error(Code|Message)"' "$work/wait.json")"
check "polled to the end: state completed, $(field pollCount "$work/wait.json") polls"
dir="$CLAWKIT_HOME/research/$job"
[ -s "$dir/report.md" ] || fail "report.md is empty"
check "report.md: $(wc -c <"$dir/report.md") bytes of output_text"
grep -q '"status": "completed"' "$dir/result.json" || fail "result.json status"
check "result.json: status completed, usage $(grep -c total_tokens "$dir/result.json") block(s)"
check "citations.json: $(grep -c '"url"' "$dir/citations.json") citations, $(field dropped "$dir/citations.json") dropped"
if grep -rq -- "$CLAWKIT_LIVE_GEMINI_KEY" "$dir"; then fail "the key appears in the published files"; fi
check "the key appears in no published file"
ck research poll "$job" >/dev/null && check "a finished job is not polled again (poll answers from the record)"
echo "live-research: every check passed against ${CLAWKIT_LIVE_BASE_URL:-the Gemini API}"
