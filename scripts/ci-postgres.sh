#!/usr/bin/env bash
# Make sure a PostgreSQL server answers for the tests (docs/scale-out.md):
# $CLAWKIT_TEST_DATABASE_URL when set, else 127.0.0.1:5432 with trust auth
# for user postgres. Idempotent: does nothing when one already answers;
# otherwise installs Debian's postgresql package if needed, allows trust
# auth on the loopback address and starts the cluster with pg_ctlcluster.
set -euo pipefail

url=${CLAWKIT_TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable}
answers() { command -v pg_isready >/dev/null && pg_isready -q -d "$url"; }

if answers; then
	echo "postgres: already answering"
	exit 0
fi
if [ -n "${CLAWKIT_TEST_DATABASE_URL:-}" ]; then
	echo "postgres: CLAWKIT_TEST_DATABASE_URL is set but does not answer" >&2
	exit 1
fi
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
if ! command -v pg_ctlcluster >/dev/null; then
	$sudo apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq postgresql >/dev/null
fi
ver=$(ls /etc/postgresql 2>/dev/null | sort -V | tail -1 || true)
if [ -z "$ver" ]; then
	$sudo pg_createcluster --start-conf=manual "$(ls /usr/lib/postgresql | sort -V | tail -1)" main
	ver=$(ls /etc/postgresql 2>/dev/null | sort -V | tail -1 || true)
fi
hba=/etc/postgresql/$ver/main/pg_hba.conf
if ! $sudo grep -q '^host all all 127.0.0.1/32 trust' "$hba"; then
	# Tests connect as postgres over TCP without a password.
	$sudo sed -i '1i host all all 127.0.0.1/32 trust' "$hba"
fi
$sudo pg_ctlcluster "$ver" main start || $sudo pg_ctlcluster "$ver" main reload
for _ in $(seq 1 60); do
	answers && { echo "postgres: started cluster $ver/main"; exit 0; }
	sleep 0.5
done
echo "postgres: cluster $ver/main did not answer" >&2
exit 1
