#!/usr/bin/env bash
# The worker-id lease benchmark: what a lease operation costs a client, in
# milliseconds per call, beside baselines measured in the same run.  One
# command, run as root; prints one table.  See docs/benchmarks.md.
#
#   bash bench/lease.sh [15|17|18]
#
# Builds and installs the extension and bench/noop into a private copy of
# PostgreSQL (bench/lib.sh), starts one throwaway cluster as the tester user
# (Unix socket only; snowflake.lease_workers = 16, its leases kept in the
# "bench" database), and runs each pgbench script of bench/pgbench/lease/
# for BENCH_LEASE_SECONDS, BENCH_LEASE_RUNS times, interleaved, with 1 and
# with 8 clients (each client renews a lease of its own):
#
#   round_trip          SELECT 1: the round trip of a statement
#   nextval, uuid, noop, snowflake_nextval
#                       the per-call baselines (a sequence,
#                       gen_random_uuid(), a no-op C function, an ID)
#   durable_insert      a one-row INSERT committed synchronously: one WAL
#                       flush, what any durable change costs
#   renew               snowflake_renew_lease(): what a holder pays every
#                       third of its window
#   lease_release       snowflake_lease_worker() and
#                       snowflake_release_lease() in one statement
#
# and reports the median latency of the runs.  About 4 minutes with the
# defaults: BENCH_LEASE_SECONDS (5), BENCH_LEASE_RUNS (3).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)

SECS=${BENCH_LEASE_SECONDS:-5}
RUNS=${BENCH_LEASE_RUNS:-3}

# shellcheck source=bench/lib.sh
. "$top/bench/lib.sh"
bench_require_root

bench_pg_version "${1:-}"
"$top/test/install-deps.sh"
export SNOWFLAKE_WORKDIR=/tmp/sf-bench-lease
# shellcheck source=test/tester-env.sh
. "$top/test/tester-env.sh"
cluster_on_exit bench_cleanup
bench_copy_postgres /tmp/sf-bench-lease-pg

bench_build_with_noop "$top"

bench_clusters_dir /tmp/sf-bench-lease-clusters
port=$(free_port 54350)
note "starting a cluster (snowflake.lease_workers = 16) on port $port"
bench_start lease "$port" snowflake "snowflake.lease_workers = 16" \
	"snowflake.database = 'bench'" "max_connections = 40"
# The registry worker connects to "bench" once it exists: restart so that
# it does at once, not at its next retry.
restart_cluster lease
sql "$port" -c "CREATE EXTENSION snowflake"
sql "$port" -f "$SNOWFLAKE_WORKDIR/bench/sql/setup.sql" >/dev/null
sql "$port" -c "CREATE TABLE bench_durable (client integer)"
# Tokens 1 to 8, one time-scoped lease per pgbench client (client_id + 1).
sql "$port" -c "SELECT count(*) FROM generate_series(1, 8) AS i,
                snowflake_lease_worker('bench client ' || i, interval '1 hour')" >/dev/null

scripts=(round_trip nextval uuid noop snowflake_nextval durable_insert renew lease_release)
# One pgbench run: the latency average in ms.
latency() {
	local script=$1 clients=$2
	as_tester pgbench -n -T "$SECS" -c "$clients" -j "$((clients < 2 ? 1 : 2))" \
		-f "$SNOWFLAKE_WORKDIR/bench/pgbench/lease/$script.sql" -h "$clusters" -p "$port" bench 2>&1 |
		sed -n 's/^latency average = \([0-9.]*\) ms$/\1/p'
}
declare -A ms
for clients in 1 8; do
	note "$clients client(s): ${#scripts[@]} scripts x $RUNS runs of ${SECS}s"
	declare -A runs=()
	for ((r = 1; r <= RUNS; r++)); do
		for s in "${scripts[@]}"; do
			runs[$s]+="$(latency "$s" "$clients") "
		done
	done
	for s in "${scripts[@]}"; do
		ms[$s,$clients]=$(tr ' ' '\n' <<<"${runs[$s]}" | awk NF | median)
	done
done

cpu=$(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)
echo
echo "snowflake lease benchmark  $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "machine: $(nproc) CPUs ($cpu), kernel $(uname -r)"
echo "tree: $(git -c safe.directory="$top" -C "$top" describe --always --dirty --abbrev=7 2>/dev/null || echo '?')," \
	"PostgreSQL $(sql "$port" -c 'SHOW server_version')"
echo "pgbench -T $SECS, median latency of $RUNS runs, ms per statement (one statement per transaction)"
echo
printf "   %-20s %12s %12s %24s\n" "script" "1 client" "8 clients" "1 client / durable_insert"
for s in "${scripts[@]}"; do
	printf "   %-20s %12.3f %12.3f %24.2f\n" "$s" "${ms[$s,1]}" "${ms[$s,8]}" \
		"$(calc "${ms[$s,1]} / ${ms[durable_insert,1]}")"
done
echo
echo "Targets"
ratio=$(calc "${ms[renew,1]} / ${ms[durable_insert,1]}")
printf "   %-52s %-10s %-10s %s\n" "renewal / a durable one-row INSERT (1 client)" \
	"$(fmt "%.2fx" "$ratio")" "<= 1x" "$(pass_if "$ratio <= 1")"
# 8 clients renewing at once, each its own lease: renewals per second in all.
rate=$(calc "8000 / ${ms[renew,8]}")
printf "   %-52s %-10s %-10s %s\n" "renewals per second, 8 clients at once" \
	"$(fmt "%.0f" "$rate")" ">= 10000" "$(pass_if "$rate >= 10000")"
echo "   total time: ${SECONDS}s"
