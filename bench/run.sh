#!/usr/bin/env bash
# The snowflake benchmark: one command, run as root, prints one results
# table measured in this run.  See docs/benchmarks.md for what each part
# measures, how, and how to read it.
#
#   bash bench/run.sh
#
# Steps: installs the build dependencies (test/install-deps.sh), builds and
# installs the extension and the no-op C function of bench/noop/, starts two
# throwaway clusters as the unprivileged tester user (Unix socket only, in a
# temporary directory, on free ports):
#
#   A  default snowflake settings (max_drift = 1000 ms)
#   B  snowflake.max_drift = 60000 ms, so that part 1 never meets the bit
#      limit
#
# runs the five parts, prints the table, then stops and removes the
# clusters, the build copy and the no-op library.  About 3.5 minutes.
#
# Knobs (environment): BENCH_RUNS (7), BENCH_PERCALL_N (2000000),
# BENCH_SUSTAINED_N (20000000), BENCH_SUSTAINED_RUNS (5), BENCH_BURST_N
# (2000000), BENCH_WAL_N (1000000), BENCH_WAL_RUNS (3), BENCH_PGBENCH_SECONDS
# (6), BENCH_PGBENCH_RUNS (3), BENCH_PGBENCH_CLIENTS ("1 2 4 8").
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)

RUNS=${BENCH_RUNS:-7}
PERCALL_N=${BENCH_PERCALL_N:-2000000}
SUSTAINED_N=${BENCH_SUSTAINED_N:-20000000}
SUSTAINED_RUNS=${BENCH_SUSTAINED_RUNS:-5}
BURST_N=${BENCH_BURST_N:-2000000}
WAL_N=${BENCH_WAL_N:-1000000}
WAL_RUNS=${BENCH_WAL_RUNS:-3}
PGBENCH_SECONDS=${BENCH_PGBENCH_SECONDS:-6}
PGBENCH_RUNS=${BENCH_PGBENCH_RUNS:-3}
PGBENCH_CLIENTS=${BENCH_PGBENCH_CLIENTS:-1 2 4 8}

if [ "$(id -u)" -ne 0 ]; then
	echo "bench/run.sh: run as root (it installs the extension)" >&2
	exit 1
fi

note() { echo "bench: $*" >&2; }

"$top/test/install-deps.sh"
# Our own copy of the tree, apart from the test suite's.
export SNOWFLAKE_WORKDIR=/tmp/sf-bench
# shellcheck source=test/tester-env.sh
. "$top/test/tester-env.sh"

clusters=""
started=()
cleanup() {
	local d
	set +e
	for d in "${started[@]}"; do
		as_tester pg_ctl -D "$d" -m fast -w stop >/dev/null 2>&1
	done
	[ -n "$clusters" ] && rm -rf "$clusters"
	[ -d "$SNOWFLAKE_WORKDIR/bench/noop" ] &&
		make -s -C "$SNOWFLAKE_WORKDIR/bench/noop" uninstall >/dev/null 2>&1
	rm -rf "$SNOWFLAKE_WORKDIR"
}
trap cleanup EXIT

note "building and installing snowflake and bench/noop"
prepare_tester_copy "$top"
build_and_install
as_tester make -s -C bench/noop clean >/dev/null
as_tester make -s -C bench/noop
make -s -C "$SNOWFLAKE_WORKDIR/bench/noop" install >/dev/null

clusters=$(mktemp -d /tmp/sf-bench-clusters.XXXXXX)
chown "$SNOWFLAKE_TEST_USER" "$clusters"
chmod 700 "$clusters"

# A port no TCP socket uses and no socket file in our directory names.
free_port() {
	local p
	for ((p = $1; p < 65000; p++)); do
		if [ -z "$(ss -Htan "( sport = :$p )" 2>/dev/null)" ] &&
			[ ! -e "$clusters/.s.PGSQL.$p" ]; then
			echo "$p"
			return 0
		fi
	done
	return 1
}

# start_cluster NAME PORT [extra postgresql.conf lines]
start_cluster() {
	local name=$1 port=$2 dir="$clusters/$1"
	shift 2
	as_tester initdb -D "$dir" -A trust -U "$SNOWFLAKE_TEST_USER" -E UTF8 \
		--locale=C --no-sync >/dev/null
	{
		echo "shared_preload_libraries = 'snowflake'"
		echo "listen_addresses = ''"
		echo "unix_socket_directories = '$clusters'"
		echo "port = $port"
		local line
		for line in "$@"; do echo "$line"; done
	} >>"$dir/postgresql.conf"
	as_tester pg_ctl -D "$dir" -l "$clusters/$name.log" -w -t 60 start >/dev/null
	started+=("$dir")
	as_tester createdb -h "$clusters" -p "$port" bench
}

# sql PORT psql-args...: unaligned, no headers, fields split by '|'.
# JIT off (it would compile each statement, tens of ms of noise) and no
# parallel workers: every part measures one backend.
sql() {
	local port=$1
	shift
	as_tester env PGOPTIONS="-c jit=off -c max_parallel_workers_per_gather=0" \
		psql -X -q -At -F '|' -v ON_ERROR_STOP=1 -h "$clusters" -p "$port" -d bench "$@"
}

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "nan";
	else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
calc() { awk "BEGIN { printf \"%s\", $1 }"; }
fmt() { awk -v v="$2" "BEGIN { printf \"$1\", v }"; }
pass_if() { if awk "BEGIN { exit !($1) }"; then echo PASS; else echo MISS; fi; }

port_b=$(free_port 54320)
note "starting cluster B (snowflake.max_drift = 60000) on port $port_b"
start_cluster B "$port_b" "snowflake.max_drift = 60000"
port_a=$(free_port $((port_b + 1)))
note "starting cluster A (default settings) on port $port_a"
start_cluster A "$port_a"
sql "$port_b" -f "$SNOWFLAKE_WORKDIR/bench/sql/setup.sql"
sql "$port_a" -f "$SNOWFLAKE_WORKDIR/bench/sql/setup.sql"
bit_limit=$(sql "$port_a" -c "SELECT 1 << sequence_bits FROM snowflake_status()")
drift_b=$(sql "$port_b" -c "SELECT max_drift_ms FROM snowflake_status()")
drift_a=$(sql "$port_a" -c "SELECT max_drift_ms FROM snowflake_status()")
pg_version=$(sql "$port_a" -c "SHOW server_version")

# ---------------------------------------------------------------- part 5
# First, while nothing else has written WAL for a while.  LSN of the next
# WAL insert before and after each statement, each statement its own
# transaction (its commit record included).
note "part 5: WAL of $WAL_N IDs x $WAL_RUNS"
wal_script="$clusters/wal.sql"
{
	echo "SELECT snowflake_nextval(), nextval('bench_seq') \\g /dev/null"
	for ((r = 1; r <= WAL_RUNS; r++)); do
		for e in "1" "snowflake_nextval()" "nextval(''bench_seq'')"; do
			echo "SELECT pg_current_wal_insert_lsn() AS l0 \\gset"
			echo "SELECT bench_ms(bench_query('$e', $WAL_N)) \\g /dev/null"
			echo "SELECT '$e', $r, pg_wal_lsn_diff(pg_current_wal_insert_lsn(), :'l0')::bigint;"
		done
	done
} >"$wal_script"
chown "$SNOWFLAKE_TEST_USER" "$wal_script"
sql "$port_a" -f "$wal_script" >"$clusters/wal.out"
wal_of() { awk -F'|' -v e="$1" '$1 == e { print $3 }' "$clusters/wal.out" | median; }
wal_base=$(wal_of "1")
wal_sf=$(wal_of "snowflake_nextval()")
wal_seq=$(wal_of "nextval('bench_seq')")

# ---------------------------------------------------------------- part 1
percall_ids=$(((RUNS + 1) * PERCALL_N))
note "part 1: per-call cost, $RUNS runs of $PERCALL_N calls (cluster B)"
waited=$(sql "$port_b" -c "SELECT round(bench_wait_for_headroom($percall_ids)::numeric, 1)")
[ "$waited" = "0.0" ] || note "  waited ${waited}s for $percall_ids IDs of drift headroom"
waits_b0=$(sql "$port_b" -c "SELECT bench_overflow_waits()")
sql "$port_b" -c "SELECT expr, run, ms FROM bench_percall($PERCALL_N, $RUNS)" >"$clusters/percall.out"
waits_b1=$(sql "$port_b" -c "SELECT bench_overflow_waits()")
percall_ms() { awk -F'|' -v e="$1" '$1 == e && $2 > 0 { print $3 }' "$clusters/percall.out" | median; }
declare -A pc_ms pc_ns
pc_exprs=("1" "snowflake_bench_noop()" "clock_timestamp()" "snowflake_nextval()"
	"nextval('bench_seq')" "gen_random_uuid()")
for e in "${pc_exprs[@]}"; do
	pc_ms[$e]=$(percall_ms "$e")
done
for e in "${pc_exprs[@]}"; do
	pc_ns[$e]=$(calc "(${pc_ms[$e]} - ${pc_ms[1]}) * 1e6 / $PERCALL_N")
done

# ---------------------------------------------------------------- part 2
note "part 2: sustained rate, $SUSTAINED_RUNS runs of $SUSTAINED_N IDs (cluster A)"
sql "$port_a" -c "SELECT run, ms, waits, drift_after FROM bench_sustained($SUSTAINED_N, $SUSTAINED_RUNS)" \
	>"$clusters/sustained.out"
sus_ms=$(cut -d'|' -f2 "$clusters/sustained.out" | median)
sus_waits=$(cut -d'|' -f3 "$clusters/sustained.out" | median)
sus_rate=$(calc "$SUSTAINED_N / $sus_ms")
sus_pct=$(calc "100 * $sus_rate / $bit_limit")

# ---------------------------------------------------------------- part 3
note "part 3: bursts of $BURST_N IDs x $RUNS (cluster A)"
sql "$port_a" -c "SELECT run, expr, ms, waits, drift_after FROM bench_burst($BURST_N, $RUNS)" \
	>"$clusters/burst.out"
burst_col() { awk -F'|' -v e="$1" -v c="$2" '$2 == e && $1 > 0 { print $c }' "$clusters/burst.out" | median; }
burst_sf=$(burst_col "snowflake_nextval()" 3)
burst_seq=$(burst_col "nextval('bench_seq')" 3)
burst_waits=$(burst_col "snowflake_nextval()" 4)
burst_drift=$(burst_col "snowflake_nextval()" 5)
burst_ratio=$(calc "$burst_sf / $burst_seq")

# ---------------------------------------------------------------- part 4
note "part 4: pgbench, ${PGBENCH_SECONDS}s x $PGBENCH_RUNS runs per client count (cluster A)"
pgb() {
	local script=$1 clients=$2 seconds=$3 jobs=$(($2 < 2 ? $2 : 2)) out tps
	out=$(as_tester pgbench -n -M prepared -T "$seconds" -c "$clients" -j "$jobs" \
		-f "bench/pgbench/$script.sql" -h "$clusters" -p "$port_a" bench 2>&1) || true
	tps=$(sed -n 's/^tps = \([0-9.]*\) .*/\1/p' <<<"$out")
	if [ -z "$tps" ]; then
		echo "$out" >&2
		return 1
	fi
	echo "$tps"
}
pgb snowflake 2 2 >/dev/null
pgb sequence 2 2 >/dev/null
declare -A tps_sf tps_seq tps_raw
for c in $PGBENCH_CLIENTS; do
	sf_list="" seq_list=""
	for ((r = 1; r <= PGBENCH_RUNS; r++)); do
		# Alternate which script goes first.
		if ((r % 2)); then
			sf_list+=" $(pgb snowflake "$c" "$PGBENCH_SECONDS")"
			seq_list+=" $(pgb sequence "$c" "$PGBENCH_SECONDS")"
		else
			seq_list+=" $(pgb sequence "$c" "$PGBENCH_SECONDS")"
			sf_list+=" $(pgb snowflake "$c" "$PGBENCH_SECONDS")"
		fi
	done
	tps_sf[$c]=$(echo "$sf_list" | tr ' ' '\n' | grep . | median)
	tps_seq[$c]=$(echo "$seq_list" | tr ' ' '\n' | grep . | median)
	tps_raw[$c]="snowflake:$sf_list; nextval:$seq_list"
done

# ---------------------------------------------------------------- report
status_a=$(sql "$port_a" -c "SELECT ids_issued, overflow_waits FROM snowflake_status()")
cpu=$(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)
clocksource=$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null || echo "?")

echo
echo "snowflake benchmark  $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "machine: $(nproc) CPUs ($cpu), kernel $(uname -r), clocksource $clocksource"
echo "PostgreSQL $pg_version, $(g++ --version | head -1)"
echo "cluster A: default settings (max_drift ${drift_a} ms); cluster B: max_drift ${drift_b} ms"
echo "bit limit: $bit_limit IDs per ms per backend; medians of $RUNS runs unless noted"
echo
echo "1. Per-call cost (cluster B, server-side timing), $PERCALL_N calls per run:"
echo "   SELECT count(EXPR) FROM generate_series(1, $((PERCALL_N / 4000))) a, generate_series(1, 4000) b"
printf "   %-24s %10s %12s %16s\n" "EXPR" "median ms" "ns per row" "ns/call - base"
for e in "${pc_exprs[@]}"; do
	label=$e
	[ "$e" = "1" ] && label="1  (baseline)"
	printf "   %-24s %10.1f %12.1f %16s\n" "$label" "${pc_ms[$e]}" \
		"$(calc "${pc_ms[$e]} * 1e6 / $PERCALL_N")" \
		"$(if [ "$e" = "1" ]; then echo "-"; else fmt "%.1f" "${pc_ns[$e]}"; fi)"
done
echo "   snowflake overflow waits during part 1: $((waits_b1 - waits_b0)) (0 = bit limit never bound)"
echo
echo "2. Sustained, one backend, after using up the drift headroom (cluster A),"
echo "   $SUSTAINED_N IDs per run, median of $SUSTAINED_RUNS:"
printf "   %.1f ms -> %.1f IDs/ms = %.2f%% of %d; clock waits per run %s\n" \
	"$sus_ms" "$sus_rate" "$sus_pct" "$bit_limit" "$sus_waits"
echo
echo "3. Burst of $BURST_N IDs in one statement, from drift 0 (cluster A):"
printf "   snowflake_nextval() %8.1f ms   nextval('bench_seq') %8.1f ms   ratio %.3f\n" \
	"$burst_sf" "$burst_seq" "$burst_ratio"
printf "   drift right after the burst: %s ms of %s (the burst used %.0f ms of timestamps\n" \
	"$burst_drift" "$drift_a" "$(calc "$BURST_N / $bit_limit")"
printf "   in %.0f ms of wall clock); clock waits during the burst: %s\n" "$burst_sf" "$burst_waits"
# At r IDs/ms a burst from drift 0 gains (r / bit_limit - 1) ms of drift per
# ms; it meets the clock once that reaches max_drift.
burst_rate=$(calc "$BURST_N / $burst_sf")
if awk "BEGIN { exit !($burst_rate > $bit_limit) }"; then
	printf "   at this speed (%.0f IDs/ms) a burst from drift 0 runs %.1f million IDs before\n" \
		"$burst_rate" "$(calc "$bit_limit * $drift_a / (1 - $bit_limit / $burst_rate) / 1e6")"
	echo "   it first waits for the clock; a second burst within max_drift has less headroom"
fi
echo
echo "4. pgbench -n -M prepared -T $PGBENCH_SECONDS, median TPS of $PGBENCH_RUNS runs (cluster A):"
printf "   %-8s %18s %18s %8s\n" "clients" "snowflake_nextval" "nextval('seq')" "ratio"
min_ratio=""
for c in $PGBENCH_CLIENTS; do
	ratio=$(calc "${tps_sf[$c]} / ${tps_seq[$c]}")
	printf "   %-8s %18.0f %18.0f %8.3f\n" "$c" "${tps_sf[$c]}" "${tps_seq[$c]}" "$ratio"
	if [ -z "$min_ratio" ] || awk "BEGIN { exit !($ratio < $min_ratio) }"; then
		min_ratio=$ratio
		min_ratio_c=$c
	fi
done
echo
echo "5. WAL per $WAL_N calls (cluster A, pg_current_wal_insert_lsn() around the statement),"
echo "   median of $WAL_RUNS:"
printf "   count(1) baseline %8s bytes   snowflake_nextval() %8s bytes   nextval('bench_seq') %9s bytes\n" \
	"$wal_base" "$wal_sf" "$wal_seq"
printf "   per ID: snowflake %.4f bytes, sequence %.2f bytes\n" \
	"$(calc "$wal_sf / $WAL_N")" "$(calc "$wal_seq / $WAL_N")"

sf_minus_clock=$(calc "${pc_ns[snowflake_nextval()]} - ${pc_ns[clock_timestamp()]}")
echo
echo "Targets"
printf "   %-44s %-26s %-14s %s\n" "what" "measured" "target" "result"
printf "   %-44s %-26s %-14s %s\n" "per-call: snowflake minus clock_timestamp()" \
	"$(fmt "%+.1f ns" "$sf_minus_clock")" "<= +15 ns" "$(pass_if "$sf_minus_clock <= 15")"
printf "   %-44s %-26s %-14s %s\n" "burst $BURST_N: snowflake / nextval time" \
	"$(fmt "%.3fx" "$burst_ratio")" "<= 0.40x" "$(pass_if "$burst_ratio <= 0.40")"
printf "   %-44s %-26s %-14s %s\n" "sustained one backend, % of bit limit" \
	"$(fmt "%.2f%%" "$sus_pct")" ">= 95%" "$(pass_if "$sus_pct >= 95")"
printf "   %-44s %-26s %-14s %s\n" "pgbench TPS snowflake / nextval (lowest)" \
	"$(fmt "%.3fx" "$min_ratio") at $min_ratio_c clients" ">= 1.00x each" "$(pass_if "$min_ratio >= 1")"
printf "   %-44s %-26s %-14s %s\n" "WAL per snowflake ID" \
	"$(fmt "%.4f bytes" "$(calc "$wal_sf / $WAL_N")")" "~0 (<0.001)" \
	"$(pass_if "$wal_sf / $WAL_N < 0.001")"
echo
echo "Raw runs: ms, except clock waits, TPS and part 5 (WAL bytes); run 0 of parts 1"
echo "and 3 is a warm-up and not counted"
for e in "${pc_exprs[@]}"; do
	printf "   part 1 %-22s %s\n" "$e" "$(awk -F'|' -v e="$e" '$1 == e { printf "%.1f ", $3 }' \
		"$clusters/percall.out")"
done
printf "   part 2 %-22s %s\n" "ms" "$(cut -d'|' -f2 "$clusters/sustained.out" | awk '{ printf "%.1f ", $1 }')"
printf "   part 2 %-22s %s\n" "clock waits" "$(cut -d'|' -f3 "$clusters/sustained.out" | tr '\n' ' ')"
for e in "snowflake_nextval()" "nextval('bench_seq')"; do
	printf "   part 3 %-22s %s\n" "$e" "$(awk -F'|' -v e="$e" '$2 == e { printf "%.1f ", $3 }' \
		"$clusters/burst.out")"
done
printf "   part 3 %-22s %s\n" "drift after (ms)" "$(awk -F'|' '$2 == "snowflake_nextval()" { printf "%s ", $5 }' \
	"$clusters/burst.out")"
for c in $PGBENCH_CLIENTS; do
	printf "   part 4 %-22s %s\n" "$c clients TPS" "${tps_raw[$c]}"
done
for e in "1" "snowflake_nextval()" "nextval('bench_seq')"; do
	printf "   part 5 %-22s %s\n" "$e" "$(awk -F'|' -v e="$e" '$1 == e { printf "%s ", $3 }' \
		"$clusters/wal.out")"
done
echo "   cluster A at the end: ids_issued|overflow_waits = $status_a"
echo "   total time: ${SECONDS}s"
