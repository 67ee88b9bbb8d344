#!/usr/bin/env bash
# The timestamp-range benchmark: what the planner's rewrite of
# snowflake_timestamp(id) comparisons into ranges of id saves.  One
# command, run as root; prints one table measured in this run.  See
# docs/benchmarks.md ("Timestamp ranges").
#
#   bash bench/decode.sh [15|17|18]
#
# Builds and installs the extension and bench/noop into a private copy of
# PostgreSQL (bench/lib.sh), starts one throwaway cluster as the tester
# user (Unix socket only; snowflake preloaded, otherwise default settings)
# and loads, with bench/sql/decode.sql:
#
#   events       BENCH_DECODE_ROWS rows (10,000,000) of (id bigint PRIMARY
#                KEY, payload text): snowflake IDs spread evenly over the
#                BENCH_DECODE_DAYS days (30) before now, in ID order
#   events_brin  the same rows, a BRIN index on id and no B-tree
#
# then VACUUM ANALYZE, and times, inside the server, BENCH_DECODE_RUNS times
# each (7), interleaved, with snowflake.rewrite_timestamp_comparisons off
# ("before": the plan without the rewrite) and on ("after"):
#
#   count         SELECT count(*) FROM events WHERE snowflake_timestamp(id) >= now() - interval '1 hour'
#   select *      SELECT * FROM events WHERE <the same>
#   decode count  SELECT count(*) FROM events WHERE (snowflake_decode(id)).ts >= <the same>
#   brin count    SELECT count(*) FROM events_brin WHERE <as count>
#
# It reports each statement's plan (the scan's node type and index, the
# planner's row estimate against the rows returned, from EXPLAIN (ANALYZE,
# FORMAT JSON), once), the sizes of the tables and indexes, and the
# baselines: the functions' cost per row over the table's rows against
# count(id) and the no-op C function, and per call in bench/run.sh's
# part 1 statement against the no-op C function, nextval() on a sequence
# and gen_random_uuid().  About 4 minutes.  Knobs: BENCH_DECODE_ROWS,
# BENCH_DECODE_DAYS, BENCH_DECODE_RUNS, BENCH_DECODE_ROW_RUNS (5),
# BENCH_PERCALL_N (2000000).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)

ROWS=${BENCH_DECODE_ROWS:-10000000}
DAYS=${BENCH_DECODE_DAYS:-30}
RUNS=${BENCH_DECODE_RUNS:-7}
ROW_RUNS=${BENCH_DECODE_ROW_RUNS:-5}
PERCALL_N=${BENCH_PERCALL_N:-2000000}

# shellcheck source=bench/lib.sh
. "$top/bench/lib.sh"
bench_require_root

bench_pg_version "${1:-}"
"$top/test/install-deps.sh"
export SNOWFLAKE_WORKDIR=/tmp/sf-bench-decode
# shellcheck source=test/tester-env.sh
. "$top/test/tester-env.sh"
cluster_on_exit bench_cleanup
bench_copy_postgres /tmp/sf-bench-decode-pg

bench_build_with_noop "$top"

bench_clusters_dir /tmp/sf-bench-decode-clusters
port=$(free_port 54360)
note "starting a cluster on port $port"
bench_start decode "$port" snowflake
sql "$port" -c "CREATE EXTENSION snowflake"
sql "$port" -f "$SNOWFLAKE_WORKDIR/bench/sql/setup.sql" >/dev/null
sql "$port" -f "$SNOWFLAKE_WORKDIR/bench/sql/decode.sql" >/dev/null

now_s() { date +%s.%N; }

note "loading $ROWS rows over $DAYS days into events and events_brin"
t0=$(now_s)
sql "$port" -c "SELECT step, ms FROM bench_decode_load($ROWS, $DAYS)" >"$clusters/load.out"
t1=$(now_s)
sql "$port" -c "VACUUM ANALYZE events" -c "VACUUM ANALYZE events_brin"
t2=$(now_s)
load_s=$(calc "$t2 - $t0")
vacuum_s=$(calc "$t2 - $t1")
load_step() { awk -F'|' -v s="$1" '$1 == s { printf "%.1f", $2 / 1000 }' "$clusters/load.out"; }

# What was loaded: the span of timestamps, the ID order on disk (the
# correlation ANALYZE found) and the sizes.
IFS='|' read -r first_ts last_ts per_row_ms <<<"$(sql "$port" -c "
	SELECT to_char(min(snowflake_timestamp(id)) AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS'),
	       to_char(max(snowflake_timestamp(id)) AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS'),
	       round((extract(epoch FROM max(snowflake_timestamp(id)) - min(snowflake_timestamp(id)))
	              * 1000 / (count(*) - 1))::numeric, 1)
	  FROM events")"
correlation=$(sql "$port" -c "SELECT string_agg(tablename || ' ' || round(correlation::numeric, 4), ', '
	ORDER BY tablename) FROM pg_stats WHERE attname = 'id' AND tablename IN ('events', 'events_brin')")
declare -A size
for rel in events events_pkey events_brin events_brin_id; do
	size[$rel]=$(sql "$port" -c "SELECT pg_relation_size('$rel')")
done
pretty() { sql "$port" -c "SELECT pg_size_pretty($1::bigint)"; }

note "plans (EXPLAIN ANALYZE, once)"
sql "$port" -c "SELECT * FROM bench_decode_plans()" >"$clusters/plans.out"
note "timing $RUNS runs of each statement, before and after"
sql "$port" -c "SELECT * FROM bench_decode_runs($RUNS)" >"$clusters/runs.out"
note "per row over events: $ROW_RUNS runs"
sql "$port" -c "SELECT * FROM bench_decode_perrow($ROW_RUNS)" >"$clusters/perrow.out"
note "per call: $PERCALL_N calls x $RUNS runs"
sql "$port" -c "SELECT * FROM bench_decode_percall($PERCALL_N, $RUNS)" >"$clusters/percall.out"

labels=("count" "select *" "decode count" "brin count")
# The median of a statement's timed runs (run 0 is a warm-up).
run_ms() {
	awk -F'|' -v l="$1" -v r="$2" '$1 == l && $2 == r && $3 > 0 { print $4 }' "$clusters/runs.out" | median
}
# One column of a statement's plan: rewrite f (before) or t (after).
plan_col() {
	awk -F'|' -v l="$1" -v r="$2" -v c="$3" '$1 == l && $2 == r { print $c }' "$clusters/plans.out"
}
declare -A before after speedup
for l in "${labels[@]}"; do
	before[$l]=$(run_ms "$l" f)
	after[$l]=$(run_ms "$l" t)
	speedup[$l]=$(calc "${before[$l]} / ${after[$l]}")
done
# The estimate against the actual rows, as a factor >= 1 either way.
est_factor() {
	local est act
	est=$(plan_col "$1" "$2" 5)
	act=$(plan_col "$1" "$2" 6)
	calc "($est > $act ? $est / $act : $act / $est)"
}
col_ms() { awk -F'|' -v e="$2" '$1 == e && $2 > 0 { print $3 }' "$1" | median; }
perrow_exprs=("*" "id" "snowflake_bench_noop()" "snowflake_timestamp(id)" "snowflake_timestamp_ge(id, now())")
percall_exprs=("1" "snowflake_bench_noop()" "nextval('bench_seq')" "gen_random_uuid()"
	"snowflake_timestamp(id)" "snowflake_timestamp_ge(id, ts)"
	"snowflake_timestamp_lower_id(ts, true)" "(snowflake_decode(id)).ts")
declare -A rowms callms
for e in "${perrow_exprs[@]}"; do rowms[$e]=$(col_ms "$clusters/perrow.out" "$e"); done
for e in "${percall_exprs[@]}"; do callms[$e]=$(col_ms "$clusters/percall.out" "$e"); done

cpu=$(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)
echo
echo "snowflake timestamp-range benchmark  $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "machine: $(nproc) CPUs ($cpu), kernel $(uname -r)"
echo "tree: $(git -c safe.directory="$top" -C "$top" describe --always --dirty --abbrev=7 2>/dev/null || echo '?')," \
	"PostgreSQL $(sql "$port" -c 'SHOW server_version')"
printf "events: %s rows, %s to %s UTC (one per %s ms), correlation of id: %s\n" \
	"$ROWS" "$first_ts" "$last_ts" "$per_row_ms" "$correlation"
printf "load: %.1f s (INSERT %s s, primary key %s s, copy to events_brin %s s, BRIN %s s, VACUUM ANALYZE %.1f s)\n" \
	"$load_s" "$(load_step INSERT)" "$(load_step "PRIMARY KEY")" "$(load_step "copy to events_brin")" \
	"$(load_step "BRIN index")" "$vacuum_s"
printf "sizes: events %s, events_pkey (B-tree) %s, events_brin %s, events_brin_id (BRIN) %s; B-tree / BRIN %.0fx\n" \
	"$(pretty "${size[events]}")" "$(pretty "${size[events_pkey]}")" "$(pretty "${size[events_brin]}")" \
	"$(pretty "${size[events_brin_id]}")" "$(calc "${size[events_pkey]} / ${size[events_brin_id]}")"
echo
echo "1. WHERE snowflake_timestamp(id) >= now() - interval '1 hour', server-side timing, median of $RUNS runs, ms;"
echo "   before: snowflake.rewrite_timestamp_comparisons = off, after: on"
echo "   count         SELECT count(*) FROM events WHERE ..."
echo "   select *      SELECT * FROM events WHERE ..."
echo "   decode count  SELECT count(*) FROM events WHERE (snowflake_decode(id)).ts >= now() - interval '1 hour'"
echo "   brin count    SELECT count(*) FROM events_brin WHERE ...  (BRIN index on id, no B-tree)"
printf "   %-14s %10s %10s %10s %8s\n" "statement" "before" "after" "speedup" "rows"
for l in "${labels[@]}"; do
	printf "   %-14s %10.1f %10.2f %9.0fx %8s\n" "$l" "${before[$l]}" "${after[$l]}" "${speedup[$l]}" \
		"$(plan_col "$l" t 6)"
done
echo "   (rows: what the statement finds, from section 2's EXPLAIN)"
echo
echo "2. Plans, EXPLAIN (ANALYZE, FORMAT JSON) once: the scan of the table, its estimated and actual rows"
printf "   %-14s %-7s %-17s %-15s %9s %9s %8s %9s  %s\n" "statement" "rewrite" "scan" "index" \
	"estimated" "actual" "factor" "discarded" "reads"
while IFS='|' read -r l rw node idx est act removed blocks; do
	printf "   %-14s %-7s %-17s %-15s %9.0f %9.0f %7.2fx %9.0f  %s\n" "$l" \
		"$(if [ "$rw" = t ]; then echo on; else echo off; fi)" "$node" "$idx" "$est" "$act" \
		"$(est_factor "$l" "$rw")" "$removed" "$blocks"
done <"$clusters/plans.out"
echo "   (factor: estimated / actual or actual / estimated, whichever is >= 1; discarded: rows"
echo "   removed by the filter or the bitmap's recheck)"
echo
echo "3. Per row over the $ROWS rows of events: SELECT count(EXPR) FROM events (a sequential"
echo "   scan), median of $ROW_RUNS runs; each EXPR over the baseline that reads the same columns"
printf "   %-36s %10s %12s %26s\n" "EXPR" "median ms" "ns per row" "ns/row over baseline"
for e in "${perrow_exprs[@]}"; do
	case $e in
		"*" | id) base="" ;;
		snowflake_bench_noop\(\)) base="*" ;;
		*) base=id ;;
	esac
	printf "   %-36s %10.1f %12.1f %26s\n" "$e" "${rowms[$e]}" "$(calc "${rowms[$e]} * 1e6 / $ROWS")" \
		"$(if [ -z "$base" ]; then echo "(baseline)"; else
			echo "$(fmt "%+.1f" "$(calc "(${rowms[$e]} - ${rowms[$base]}) * 1e6 / $ROWS")") over count($base)"
		fi)"
done
echo
echo "4. Per call, bench/run.sh's part 1 statement, $PERCALL_N calls, median of $RUNS runs:"
echo "   SELECT count(EXPR) FROM generate_series(1, $((PERCALL_N / 4000))) a, generate_series(1, 4000) b"
echo "   (id and ts: constants; the functions are STABLE, so every row calls them)"
printf "   %-40s %10s %12s %16s\n" "EXPR" "median ms" "ns per row" "ns/call - base"
for e in "${percall_exprs[@]}"; do
	label=$e
	[ "$e" = "1" ] && label="1  (baseline)"
	printf "   %-40s %10.1f %12.1f %16s\n" "$label" "${callms[$e]}" "$(calc "${callms[$e]} * 1e6 / $PERCALL_N")" \
		"$(if [ "$e" = 1 ]; then echo "-"; else fmt "%.1f" "$(calc "(${callms[$e]} - ${callms[1]}) * 1e6 / $PERCALL_N")"; fi)"
done

count_factor=$(est_factor count t)
brin_factor=$(est_factor "brin count" t)
echo
echo "Targets"
printf "   %-52s %-12s %-10s %s\n" "speedup, count, B-tree (before / after)" \
	"$(fmt "%.0fx" "${speedup[count]}")" ">= 100x" "$(pass_if "${speedup[count]} >= 100")"
printf "   %-52s %-12s %-10s %s\n" "after plan's row estimate, count, B-tree" \
	"$(fmt "%.2fx" "$count_factor") off" "<= 2x" "$(pass_if "$count_factor <= 2")"
printf "   %-52s %-12s %-10s %s\n" "after plan's row estimate, brin count, BRIN" \
	"$(fmt "%.2fx" "$brin_factor") off" "<= 2x" "$(pass_if "$brin_factor <= 2")"
printf "   %-52s %-12s %-10s %s\n" "speedup, brin count, BRIN (before / after)" \
	"$(fmt "%.0fx" "${speedup[brin count]}")" "(reported)" "-"
echo
echo "Raw runs (ms; run 0 is a warm-up and not counted):"
for l in "${labels[@]}"; do
	for rw in f t; do
		printf "   %-14s %-6s %s\n" "$l" "$(if [ "$rw" = t ]; then echo after; else echo before; fi)" \
			"$(awk -F'|' -v l="$l" -v r="$rw" '$1 == l && $2 == r { printf "%.2f ", $4 }' "$clusters/runs.out")"
	done
done
for e in "${perrow_exprs[@]}"; do
	printf "   per row  %-36s %s\n" "$e" "$(awk -F'|' -v e="$e" '$1 == e { printf "%.1f ", $3 }' "$clusters/perrow.out")"
done
for e in "${percall_exprs[@]}"; do
	printf "   per call %-36s %s\n" "$e" "$(awk -F'|' -v e="$e" '$1 == e { printf "%.1f ", $3 }' "$clusters/percall.out")"
done
echo "   total time: ${SECONDS}s"
