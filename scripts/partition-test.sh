#!/usr/bin/env bash
# Partition campaign (docs/scale-out.md, "Partitions"): three gateways, a
# PostgreSQL cluster of the test's own and the in-repo fake provider, each
# in its own network namespace on a private /24 (10.231.77.0/24) that this
# script creates and removes. Links are cut silently (packets dropped at
# the receiver by `ip rule … blackhole`, or a link set down), one way or
# both, and each scenario prints one row: creates per job, late
# statements accepted/refused (the server's own log), provider requests
# and publications without a lease, takeover time, the longest gap
# between two polls of one job, CLI exit codes during the cut and the
# cut-off gateway's exit codes.
#
#   scripts/partition-test.sh          # the full campaign (make partition-test)
#   scripts/partition-test.sh quick    # one DB cut both ways (the test suite's)
#
# Needs root (namespaces), iproute2 and Debian's PostgreSQL binaries
# (/usr/lib/postgresql/*/bin); skips with a reason otherwise. CLAWKIT and
# FAKEGOOGLE name prebuilt binaries; otherwise this tree is built. Traffic
# goes only to addresses inside the test's namespaces; every loop is
# bounded; the namespaces, the cluster and the processes are removed on
# exit, whatever happens.
set -euo pipefail
cd "${PARTITION_REPO:-$(dirname "$0")/..}"
MODE=${1:-full}
skip() { echo "skip: $*"; exit 0; }
[ "$(id -u)" -eq 0 ] || skip "partition tests need root (network namespaces)"
command -v ip >/dev/null || skip "iproute2 (ip) is not installed"
PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
[ -n "$PGBIN" ] && [ -x "$PGBIN/initdb" ] || skip "no PostgreSQL binaries under /usr/lib/postgresql/*/bin"
id postgres >/dev/null 2>&1 || skip "no postgres user to run the test cluster as"

P=ckp$$                 # namespace prefix
NET=10.231.77           # the test's private /24
DB_IP=$NET.2 PROV_IP=$NET.3
declare -A GW_IP=([1]=$NET.11 [2]=$NET.12 [3]=$NET.13)
PGPORT=55432
work=$(mktemp -d /tmp/ckpart.XXXXXX)
chmod 755 "$work"
pids=()
cleanup() {
	set +e
	touch "$work/stop"
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	for ns in g1 g2 g3 prov; do
		for p in $(ip netns pids "$P$ns" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
	done
	[ -d "$work/pgdata" ] && ip netns exec "${P}db" runuser -u postgres -- "$PGBIN/pg_ctl" -D "$work/pgdata" -m immediate stop >/dev/null 2>&1
	for p in $(ip netns pids "${P}db" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
	for ns in g1 g2 g3 prov db hub; do ip netns del "$P$ns" 2>/dev/null; done
	[ -n "${KEEP:-}" ] && echo "kept $work" >&2 || rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Binaries.
if [ -z "${CLAWKIT:-}" ]; then CLAWKIT=$work/clawkit; CGO_ENABLED=0 go build -o "$CLAWKIT" ./cmd/clawkit; fi
if [ -z "${FAKEGOOGLE:-}" ]; then FAKEGOOGLE=$work/fakegoogle; CGO_ENABLED=0 go build -o "$FAKEGOOGLE" ./cmd/fakegoogle; fi
REPORT=$work/partitionreport
go build -o "$REPORT" ./scripts/partitionreport
CLAWKIT=$(command -v "$CLAWKIT")

# Network: a bridge in the hub namespace; every host a namespace with one
# veth (eth0) into it. Each host's local routing rule moves after pref 10
# so that an ingress blackhole rule (the cut) is consulted first.
ip netns add "${P}hub"
ip -n "${P}hub" link add br0 type bridge
ip -n "${P}hub" link set br0 up
host() { # host NAME IP
	ip netns add "$P$1"
	ip link add eth0 netns "$P$1" type veth peer name "v$1" netns "${P}hub"
	ip -n "${P}hub" link set "v$1" master br0 up
	ip -n "$P$1" addr add "$2/24" dev eth0
	ip -n "$P$1" link set eth0 up
	ip -n "$P$1" link set lo up
	ip -n "$P$1" rule add pref 100 table local
	ip -n "$P$1" rule del pref 0
}
host db "$DB_IP"
host prov "$PROV_IP"
for i in 1 2 3; do host "g$i" "${GW_IP[$i]}"; done

# drop NS FROMIP: NS silently drops what it receives from FROMIP.
drop() { ip -n "$P$1" rule add pref 10 from "$2" iif eth0 blackhole; }
heal() {
	for ns in db prov g1 g2 g3; do
		while ip -n "$P$ns" rule del pref 10 2>/dev/null; do :; done
	done
	for ns in db prov g1 g2 g3; do ip -n "${P}hub" link set "v$ns" up; done
}
now_ms() { date +%s%3N; }

# PostgreSQL: a cluster of the test's own, listening only inside the db
# namespace; every statement is logged with its application_name (an
# owner's connections are named after its incarnation) and SQLSTATE.
mkdir "$work/pgdata" "$work/pgsock"
touch "$work/pg.log"
chown postgres "$work/pgdata" "$work/pgsock" "$work/pg.log"
runuser -u postgres -- "$PGBIN/initdb" -D "$work/pgdata" -A trust -U postgres --no-sync >/dev/null
cat >>"$work/pgdata/postgresql.conf" <<EOF
listen_addresses = '$DB_IP'
port = $PGPORT
unix_socket_directories = '$work/pgsock'
fsync = off
log_min_duration_statement = 0
log_line_prefix = '%m [%p] app=%a code=%e '
log_timezone = 'UTC'
max_connections = 100
EOF
echo "host all all $NET.0/24 trust" >>"$work/pgdata/pg_hba.conf"
ip netns exec "${P}db" runuser -u postgres -- "$PGBIN/pg_ctl" -D "$work/pgdata" -l "$work/pg.log" -w -t 30 start >/dev/null
psql_db() { ip netns exec "${P}db" "$PGBIN/psql" -h "$DB_IP" -p $PGPORT -U postgres -Atq "$@"; }

echo "partition campaign ($MODE): namespaces ${P}*, network $NET.0/24, PostgreSQL $("$PGBIN/postgres" --version | awk '{print $3}'), load $(cut -d' ' -f1-3 /proc/loadavg)"

# run_scenario NAME KIND CUT_SECONDS TTL JOBS
#   KIND: db-both | db-out (g1→db dropped) | db-in (db→g1 dropped) |
#         prov-both | isolate (g1's link down) | flap (g2↔db, 3 s on/off) | short (g1↔db, below the lease)
run_scenario() {
	local name=$1 kind=$2 cut=$3 ttl=$4 jobs=$5
	local d=$work/$name
	mkdir -p "$d"
	local dbname=ck_$name
	dbname=${dbname//-/_}
	psql_db -d postgres -c "CREATE DATABASE $dbname"
	local dburl="postgres://postgres@$DB_IP:$PGPORT/$dbname?sslmode=disable"
	: >"$d/fake.log"
	ip netns exec "${P}prov" "$FAKEGOOGLE" --listen "$PROV_IP:8080" --url-file "$d/fake.url" --log "$d/fake.log" &
	local fakepid=$!
	pids+=("$fakepid")
	for _ in $(seq 100); do [ -s "$d/fake.url" ] && break; sleep 0.05; done
	local base
	base=$(cat "$d/fake.url")
	export CLAWKIT_GOOGLE_BASE_URL=$base GEMINI_API_KEY=partition-key
	for i in 1 2 3; do
		mkdir -p "$d/g$i"
		"$CLAWKIT" --home "$d/g$i" config set database.engine postgres >/dev/null
		"$CLAWKIT" --home "$d/g$i" auth add google:default --provider google --api-key-env GEMINI_API_KEY >/dev/null
		"$CLAWKIT" --home "$d/g$i" config set plugins.entries.google.config.research.enabled true >/dev/null
		"$CLAWKIT" --home "$d/g$i" config set plugins.entries.google.config.research.profileId google:default >/dev/null
	done
	ip netns exec "${P}g1" env CLAWKIT_DATABASE_URL="$dburl" "$CLAWKIT" --home "$d/g1" state migrate >/dev/null
	# Each gateway runs under a supervisor that restarts it when it exits
	# non-zero, as systemd's Restart=on-failure does (at most 40 times).
	supervise() {
		local i=$1 n=0 rc
		while [ $n -lt 40 ] && [ ! -e "$d/stop" ]; do
			rc=0
			ip netns exec "${P}g$i" env CLAWKIT_DATABASE_URL="$dburl" "$CLAWKIT" --home "$d/g$i" gateway run --lease-ttl "${ttl}s" --drain-timeout 5s >>"$d/g$i.log" 2>&1 || rc=$?
			echo "$(now_ms) $rc" >>"$d/g$i.exits"
			[ $rc -eq 0 ] && break
			n=$((n + 1))
			sleep 1
		done
	}
	for i in 1 2 3; do
		supervise "$i" &
		pids+=($!)
	done
	for i in 1 2 3; do
		for _ in $(seq 100); do "$CLAWKIT" --home "$d/g$i" gateway status >/dev/null 2>&1 && break; sleep 0.1; done
	done
	# Jobs, started round-robin through the three gateways; they poll every
	# 5 s (the fast interval) and finish after 3, 7, 11 or 15 polls, so some
	# are published during or after the cut.
	for k in $(seq "$jobs"); do
		local gi=$(((k % 3) + 1))
		"$CLAWKIT" --home "$d/g$gi" --json research start "fake-polls:$((3 + (k % 4) * 4)) partition $name job $k" >"$d/start-$k.json" 2>>"$d/cli.err" || echo "start $k rc=$?" >>"$d/cli.err"
	done
	local tgt=g1
	[ "$kind" = flap ] && tgt=g2
	local inc
	inc=$(psql_db -d "$dbname" -c "SELECT max(incarnation) FROM owners WHERE home = '$d/$tgt' AND stopped_at IS NULL")
	sleep 4 # steady polling before the cut
	local cut_at heal_at
	cut_at=$(now_ms)
	echo "cut $cut_at" >"$d/events"
	echo "target $tgt $inc" >>"$d/events"
	case $kind in
	db-both | short) drop db "${GW_IP[1]}"; drop g1 "$DB_IP" ;;
	db-out) drop db "${GW_IP[1]}" ;;
	db-in) drop g1 "$DB_IP" ;;
	prov-both) drop prov "${GW_IP[1]}"; drop g1 "$PROV_IP" ;;
	isolate) ip -n "${P}hub" link set vg1 down ;;
	flap) ;;
	esac
	# Routed CLI calls to the cut-off gateway, all at once, each timed.
	if [[ $kind == db-* || $kind == isolate ]]; then
		local job1
		job1=$(sed -n 's/.*"job": *"\([^"]*\)".*/\1/p' "$d/start-1.json" | head -1)
		sleep 0.5
		: >"$d/cli"
		cli() { # cli LABEL ARGS...
			local label=$1 t0 rc=0
			shift
			t0=$(now_ms)
			"$CLAWKIT" --home "$d/g1" --json "$@" >"$d/cli-$label.out" 2>&1 || rc=$?
			echo "$label $rc $(($(now_ms) - t0)) $(grep -c '"retryAfterMs"' "$d/cli-$label.out" || true)" >>"$d/cli"
		}
		cli research-list research list &
		cli research-show research show "$job1" &
		cli session-list session list &
		cli state-status state status &
		cli research-start research start "fake-polls:3 partition $name during the cut" &
		cli session-create session create "cut-$name" &
		wait_cli=0
		while [ "$(wc -l <"$d/cli" 2>/dev/null || echo 0)" -lt 6 ] && [ $wait_cli -lt 600 ]; do sleep 0.1; wait_cli=$((wait_cli + 1)); done
	fi
	# Takeover: until the target holds no running river job and (for a
	# database cut) its lease is gone at the database.
	local lease_cond="true"
	[[ $kind == prov-* ]] || lease_cond="NOT EXISTS (SELECT 1 FROM owners WHERE incarnation = $inc AND stopped_at IS NULL AND lease_expires_at > (extract(epoch FROM clock_timestamp())*1000)::bigint)"
	local end=$((cut_at + cut * 1000)) took=""
	if [ "$kind" = flap ]; then
		local on=1
		while [ "$(now_ms)" -lt $end ]; do
			if [ $on = 1 ]; then drop db "${GW_IP[2]}"; drop g2 "$DB_IP"; on=0; else heal; on=1; fi
			sleep 3
		done
	else
		while [ "$(now_ms)" -lt $end ]; do
			if [ -z "$took" ] && [ "$kind" != short ]; then
				local held
				held=$(psql_db -d "$dbname" -c "SELECT count(*) FROM river.river_job WHERE state = 'running' AND attempted_by[array_upper(attempted_by, 1)] = 'clawkit-owner-$inc' OR NOT ($lease_cond)" 2>/dev/null || echo 1)
				[ "$held" = 0 ] && took=$(($(now_ms) - cut_at))
			fi
			sleep 0.2
		done
	fi
	heal
	heal_at=$(now_ms)
	echo "heal $heal_at" >>"$d/events"
	echo "takeover ${took:--}" >>"$d/events"
	sleep "${SETTLE:-12}" # late bytes from the cut-off host would arrive now
	touch "$d/stop"
	for i in 1 2 3; do "$CLAWKIT" --home "$d/g$i" gateway stop >/dev/null 2>&1 || true; done
	for _ in $(seq 100); do
		[ -z "$(ip netns pids "${P}g1")$(ip netns pids "${P}g2")$(ip netns pids "${P}g3")" ] && break
		sleep 0.1
	done
	kill "$fakepid" 2>/dev/null || true
	wait "$fakepid" 2>/dev/null || true
	cp "$work/pg.log" "$d/pg.log"
	: >"$work/pg.log" 2>/dev/null || true
	ip netns exec "${P}db" "$REPORT" -name "$name" -kind "$kind" -db "$dburl" -dir "$d" -ttl "${ttl}s" \
		-hosts "g1=${GW_IP[1]},g2=${GW_IP[2]},g3=${GW_IP[3]}" >>"$work/table"
}

echo "| scenario | jobs | creates/job | late statements accepted / refused (expired owner's backends terminated, left) | provider requests / publications without a lease | takeover | longest poll gap (bound) | CLI during the cut (exit·s·retryAfterMs) | cut-off gateway exits |" >"$work/table"
echo "|---|---|---|---|---|---|---|---|---|" >>"$work/table"
if [ "$MODE" = quick ]; then
	run_scenario quick-db-both db-both 16 5 9
else
	run_scenario db-both db-both 25 10 15
	run_scenario db-out db-out 25 10 15
	run_scenario db-in db-in 25 10 15
	run_scenario isolate isolate 25 10 15
	run_scenario prov-both prov-both 30 10 15
	run_scenario flap flap 30 10 15
	run_scenario short short 4 10 15
fi
echo
cat "$work/table"
# A failed target fails the run (the report marks it with FAIL).
! grep -q FAIL "$work/table"
