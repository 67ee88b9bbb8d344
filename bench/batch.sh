#!/usr/bin/env bash
# The batch benchmark: what snowflake_nextval(n) saves per ID against n
# single snowflake_nextval() calls in one statement.  One command, run as
# root; prints one table measured in this run.  See docs/benchmarks.md.
#
#   bash bench/batch.sh
#
# Builds and installs the extension and bench/noop into a private copy of
# PostgreSQL (bench/lib.sh), starts one throwaway cluster as the tester
# user (Unix socket only; snowflake.max_drift = 60000 so that the bit
# limit never binds), and times, inside the server, each of these
# statements BENCH_BATCH_RUNS times, interleaved:
#
#   single EXPR       SELECT count(x) FROM (SELECT EXPR AS x FROM generate_series(1, N)) AS s
#   batch, select list  SELECT count(x) FROM (SELECT snowflake_nextval(N) AS x) AS s
#   batch, FROM         SELECT count(x) FROM snowflake_nextval(N) AS x
#
# with EXPR one of 1 (the row machinery alone), snowflake_nextval(),
# nextval() on a sequence, gen_random_uuid() and a no-op C function.
# About 1 minute.  Knobs: BENCH_BATCH_N (10000), BENCH_BATCH_RUNS (41).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)

N=${BENCH_BATCH_N:-10000}
RUNS=${BENCH_BATCH_RUNS:-41}

# shellcheck source=bench/lib.sh
. "$top/bench/lib.sh"
bench_require_root

bench_pg_version "${1:-}"
"$top/test/install-deps.sh"
export SNOWFLAKE_WORKDIR=/tmp/sf-bench-batch
# shellcheck source=test/tester-env.sh
. "$top/test/tester-env.sh"
cluster_on_exit bench_cleanup
bench_copy_postgres /tmp/sf-bench-batch-pg

bench_build_with_noop "$top"

bench_clusters_dir /tmp/sf-bench-batch-clusters
port=$(free_port 54340)
note "starting a cluster (snowflake.max_drift = 60000) on port $port"
bench_start batch "$port" snowflake "snowflake.max_drift = 60000"
sql "$port" -c "CREATE EXTENSION snowflake"
sql "$port" -f "$SNOWFLAKE_WORKDIR/bench/sql/setup.sql"
sql "$port" -f "$SNOWFLAKE_WORKDIR/bench/sql/batch.sql"

ids=$(((RUNS + 1) * N * 3))
sql "$port" -c "SELECT bench_wait_for_headroom($ids)" >/dev/null
note "timing $RUNS runs of each statement, $N rows each"
waits0=$(sql "$port" -c "SELECT bench_overflow_waits()")
sql "$port" -c "SELECT form, run, ms FROM bench_batch($N, $RUNS)" >"$clusters/batch.out"
waits1=$(sql "$port" -c "SELECT bench_overflow_waits()")

forms=("baseline 1" "single snowflake_nextval()" "batch, select list" "batch, FROM"
	"single nextval('bench_seq')" "single gen_random_uuid()" "single snowflake_bench_noop()")
# Nanoseconds per row of one form: the median of its timed runs.
ns_per_row() {
	awk -F'|' -v f="$1" -v n="$N" '$1 == f && $2 > 0 { print $3 * 1e6 / n }' "$clusters/batch.out" | median
}
declare -A ns
for f in "${forms[@]}"; do
	ns[$f]=$(ns_per_row "$f")
done
single=${ns[single snowflake_nextval()]}
ratio_list=$(calc "$single / ${ns[batch, select list]}")
ratio_from=$(calc "$single / ${ns[batch, FROM]}")

cpu=$(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)
echo
echo "snowflake batch benchmark  $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "machine: $(nproc) CPUs ($cpu), kernel $(uname -r)"
echo "tree: $(git -c safe.directory="$top" -C "$top" describe --always --dirty --abbrev=7 2>/dev/null || echo '?')," \
	"PostgreSQL $(sql "$port" -c 'SHOW server_version')"
echo "$N IDs per statement, server-side timing, median of $RUNS runs"
echo
printf "   %-32s %12s %22s\n" "statement" "ns per ID" "single snowflake / this"
for f in "${forms[@]}"; do
	printf "   %-32s %12.1f %22.2f\n" "$f" "${ns[$f]}" "$(calc "$single / ${ns[$f]}")"
done
echo "   clock waits during the runs: $((waits1 - waits0)) (0 = the bit limit never bound)"
echo
echo "Targets"
printf "   %-44s %-12s %-10s %s\n" "per ID: single calls / batch (select list)" \
	"$(fmt "%.2fx" "$ratio_list")" ">= 2x" "$(pass_if "$ratio_list >= 2")"
printf "   %-44s %-12s %-10s %s\n" "per ID: single calls / batch (FROM)" \
	"$(fmt "%.2fx" "$ratio_from")" "(reported)" "-"
echo
echo "Raw runs (ms per statement; run 0 is a warm-up):"
for f in "${forms[@]}"; do
	printf "   %-32s %s\n" "$f" "$(awk -F'|' -v f="$f" '$1 == f { printf "%.2f ", $3 }' "$clusters/batch.out")"
done
echo "   total time: ${SECONDS}s"
