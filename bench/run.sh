#!/usr/bin/env bash
# The snowflake benchmark: one command, run as root, prints one results
# table measured in this run.  docs/benchmarks.md has the latest results,
# docs/benchmarks-archive.md what each part measures, how, and earlier runs.
#
#   bash bench/run.sh [VERSION]
#
# VERSION (or BENCH_PG_VERSION) is the PostgreSQL major version to run
# against: 15 (default, Debian 12's server), 17 or 18 (built from Debian's
# sources by test/install-pg-versions.sh, cached).  On 18, part 1 also
# times the built-in uuidv7().  On 17 and 18 BENCH_BASE_COMMIT defaults to
# empty: the base commit builds against 15 only.
#
# Steps: installs the build dependencies (test/install-deps.sh), copies the
# PostgreSQL installation to a temporary directory (nothing below is
# installed system-wide), builds and installs into that copy the extension
# and the no-op C function of bench/noop/, builds the base commit
# (BENCH_BASE_COMMIT, the commit before the durable reservation) from
# `git archive` and installs it, as the extension snowflake, into a second
# copy of PostgreSQL of its own, starts four throwaway clusters as the
# unprivileged tester user (Unix socket only, in a temporary directory, on
# free ports):
#
#   A  default snowflake settings (max_drift = 1000 ms)
#   B  snowflake.max_drift = 60000 ms, so that parts 1 and 6 never meet the
#      bit limit
#   C  like B, but run by the base's copy of PostgreSQL: the base commit's
#      library and its own install script
#
#   D  no shared_preload_libraries at all: part 8's baseline
#
# runs the nine parts, prints the table, then stops and removes the
# clusters, the build copies and the copy of PostgreSQL with all that was
# installed into it.  About 5 minutes.  Part 9, the snowflake type against
# bigint, is bench/type.sh's measurement on cluster B, smaller
# (BENCH_TYPE_ROWS 500000, BENCH_TYPE_RUNS 5, BENCH_TYPE_ALTERNATIONS 4,
# BENCH_TYPE_JOIN_CHILDREN 200; its other knobs apply too): about 40
# seconds more; BENCH_TYPE_ROWS=0 skips it.
#
# Knobs (environment): BENCH_RUNS (7), BENCH_PERCALL_N (2000000),
# BENCH_SUSTAINED_N (20000000), BENCH_SUSTAINED_RUNS (5), BENCH_BURST_N
# (2000000), BENCH_WAL_N (1000000), BENCH_WAL_RUNS (3), BENCH_WAL_SETTLE
# (0.2 s), BENCH_PACED_RUNS (2), BENCH_PACED_BATCH (8000), BENCH_PACED_PAUSE
# (0.05 s), BENCH_PGBENCH_SECONDS (6), BENCH_PGBENCH_RUNS (3),
# BENCH_PGBENCH_CLIENTS ("1 2 4 8"), BENCH_BASE_COMMIT (29bfeb8; empty skips
# part 6, part 7's base side and cluster C), BENCH_BASE_REPO (the git
# repository to take the base commit from; default: this tree's),
# BENCH_TREE_NAME (how the output names this tree; default: git describe),
# BENCH_CMP_ROUNDS (13), BENCH_CMP_REPS (3), BENCH_STEADY_CALLS (30),
# BENCH_IDLE_CALLS (3), BENCH_CONN_ROUNDS (15), BENCH_CONN_TX (100).
# Shared code: bench/lib.sh.
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
WAL_SETTLE=${BENCH_WAL_SETTLE:-0.2}
PACED_RUNS=${BENCH_PACED_RUNS:-2}
PACED_BATCH=${BENCH_PACED_BATCH:-8000}
PACED_PAUSE=${BENCH_PACED_PAUSE:-0.05}
BASE_COMMIT=${BENCH_BASE_COMMIT-29bfeb8}
BASE_REPO=${BENCH_BASE_REPO:-$top}
CMP_ROUNDS=${BENCH_CMP_ROUNDS:-13}
CMP_REPS=${BENCH_CMP_REPS:-3}
STEADY_CALLS=${BENCH_STEADY_CALLS:-30}
IDLE_CALLS=${BENCH_IDLE_CALLS:-3}
CONN_ROUNDS=${BENCH_CONN_ROUNDS:-15}
CONN_TX=${BENCH_CONN_TX:-100}

# shellcheck source=bench/lib.sh
. "$top/bench/lib.sh"
# Part 9: bench/type.sh's type_measure and type_report, smaller.
: "${BENCH_TYPE_ROWS:=500000}" "${BENCH_TYPE_RUNS:=5}" "${BENCH_TYPE_ALTERNATIONS:=4}"
: "${BENCH_TYPE_JOIN_CHILDREN:=200}"
# shellcheck source=bench/type.sh
. "$top/bench/type.sh"
bench_require_root

bench_pg_version "${1:-}"
# The base commit builds against 15 only (17 renamed what it uses).
if [ "$bench_version" != 15 ] && [ -z "${BENCH_BASE_COMMIT+set}" ]; then
	BASE_COMMIT=
fi
"$top/test/install-deps.sh"
# Our own copy of the tree, apart from the test suite's.
export SNOWFLAKE_WORKDIR=/tmp/sf-bench
# shellcheck source=test/tester-env.sh
. "$top/test/tester-env.sh"
cluster_on_exit bench_cleanup

# A private copy of PostgreSQL: see bench/lib.sh.
bench_copy_postgres /tmp/sf-bench-pg

# The base commit comes from BASE_REPO (default: the repository this tree
# is in); "this tree" is always the tree run.sh is in, as it is.
git_base() { git -c safe.directory="$BASE_REPO" -C "$BASE_REPO" "$@"; }
head_rev=${BENCH_TREE_NAME:-$(git -c safe.directory="$top" -C "$top" describe --always --dirty \
	--abbrev=7 2>/dev/null || echo "not a git checkout")}
if [ -n "$BASE_COMMIT" ]; then
	base_rev=$(git_base rev-parse --short "$BASE_COMMIT^{commit}")
fi

bench_build_with_noop "$top"

# The base commit: its tracked files only, built as the tester like the
# tree above, and installed, as the extension snowflake, into a copy of
# the PostgreSQL installation of its own (inside the private copy, so that
# it goes with it), whose programs run cluster C: the base's code finds its
# objects as members of its extension, as this tree's does.
if [ -n "$BASE_COMMIT" ]; then
	note "building $base_rev (base) into a PostgreSQL installation of its own"
	base_dir="$SNOWFLAKE_WORKDIR/bench-base"
	mkdir -p "$base_dir"
	git_base archive "$base_rev" | tar -x -C "$base_dir"
	chown -R "$SNOWFLAKE_TEST_USER" "$base_dir"
	base_pg="$pg_priv/base"
	mkdir "$base_pg"
	for d in "$pg_priv"/*; do
		[ "$d" = "$base_pg" ] || cp -a "$d" "$base_pg/"
	done
	base_pg_config=$base_pg${PG_CONFIG#"$pg_priv"}
	base_bindir=$("$base_pg_config" --bindir)
	as_tester make -s -C bench-base PG_CONFIG="$base_pg_config" >/dev/null
	make -s -C "$base_dir" install PG_CONFIG="$base_pg_config" >/dev/null
fi

bench_clusters_dir /tmp/sf-bench-clusters

port_b=$(free_port 54320)
note "starting cluster B (snowflake.max_drift = 60000) on port $port_b"
bench_start B "$port_b" snowflake "snowflake.max_drift = 60000"
port_a=$(free_port $((port_b + 1)))
note "starting cluster A (default settings) on port $port_a"
bench_start A "$port_a" snowflake
sql "$port_b" -c "CREATE EXTENSION snowflake"
sql "$port_a" -c "CREATE EXTENSION snowflake"
sql "$port_b" -f "$SNOWFLAKE_WORKDIR/bench/sql/setup.sql"
sql "$port_a" -f "$SNOWFLAKE_WORKDIR/bench/sql/setup.sql"
if [ -n "$BASE_COMMIT" ]; then
	# The base has no reservation: after every start of C a slot's floor is
	# the start time + max_drift, so part 6's sessions wait for headroom.
	port_c=$(free_port $((port_a + 1)))
	note "starting cluster C ($base_rev, snowflake.max_drift = 60000) on port $port_c"
	PG_BINDIR=$base_bindir bench_start C "$port_c" snowflake "snowflake.max_drift = 60000"
	sql "$port_c" -c "CREATE EXTENSION snowflake"
	sql "$port_c" -f "$SNOWFLAKE_WORKDIR/bench/sql/setup.sql"
fi
port_d=$(free_port $((port_a + 2)))
note "starting cluster D (no library preloaded) on port $port_d"
bench_start D "$port_d" ""
bit_limit=$(sql "$port_a" -c "SELECT 1 << sequence_bits FROM snowflake_status()")
drift_b=$(sql "$port_b" -c "SELECT max_drift_ms FROM snowflake_status()")
drift_a=$(sql "$port_a" -c "SELECT max_drift_ms FROM snowflake_status()")
reserve_ahead=$(sql "$port_a" -c "SELECT setting FROM pg_settings WHERE name = 'snowflake.reserve_ahead'")
pg_version=$(sql "$port_a" -c "SHOW server_version")

# wal_window_begin / wal_window_end: psql lines that record, around a
# window, the WAL insert position and the reservation records written
# (snowflake_status().reservations, counted by whoever wrote them: the
# background worker or a session that ran out).  The window ends
# WAL_SETTLE seconds after its statement, so that a record the worker
# writes in response to the statement's IDs (it looks every 50 ms) falls
# inside it.  Prints: label|run|WAL bytes|reservations|IDs|l0|l1
wal_window_begin() {
	echo "SELECT pg_current_wal_insert_lsn() AS l0, reservations AS r0, ids_issued AS i0 FROM snowflake_status() \\gset"
}
wal_window_end() {
	echo "SELECT pg_sleep($WAL_SETTLE) \\g /dev/null"
	echo "SELECT '$1', $2, pg_wal_lsn_diff(pg_current_wal_insert_lsn(), :'l0')::bigint,"
	echo "       reservations - :r0, ids_issued - :i0, :'l0', pg_current_wal_insert_lsn() FROM snowflake_status();"
}

# ---------------------------------------------------------------- part 5
# First, while nothing else has written WAL for a while.  (a) full speed:
# one statement of WAL_N calls per window, each its own transaction (its
# commit record included); (b) paced: WAL_N IDs in statements of
# PACED_BATCH with a pause of PACED_PAUSE s between them.
note "part 5: WAL of $WAL_N IDs x $WAL_RUNS at full speed, x $PACED_RUNS paced"
wal_script="$clusters/wal.sql"
{
	echo "SELECT snowflake_nextval(), nextval('bench_seq') \\g /dev/null"
	for ((r = 1; r <= WAL_RUNS; r++)); do
		for e in "1" "snowflake_nextval()" "nextval(''bench_seq'')"; do
			wal_window_begin
			echo "SELECT bench_ms(bench_query('$e', $WAL_N)) \\g /dev/null"
			wal_window_end "$e" "$r"
		done
	done
	for ((r = 1; r <= PACED_RUNS; r++)); do
		wal_window_begin
		echo "SELECT bench_paced('snowflake_nextval()', $WAL_N, $PACED_BATCH, $PACED_PAUSE) AS paced_s \\gset"
		wal_window_end "paced" "$r"
		echo "SELECT 'paced_s', $r, :paced_s;"
	done
} >"$wal_script"
chown "$SNOWFLAKE_TEST_USER" "$wal_script"
sql "$port_a" -f "$wal_script" >"$clusters/wal.out"
wal_col() { awk -F'|' -v e="$1" -v c="$2" '$1 == e { print $c }' "$clusters/wal.out"; }
wal_of() { wal_col "$1" 3 | median; }
wal_sum() { wal_col "$1" "$2" | awk '{ s += $1 } END { print s + 0 }'; }
wal_base=$(wal_of "1")
wal_sf=$(wal_of "snowflake_nextval()")
wal_seq=$(wal_of "nextval('bench_seq')")
wal_sf_total=$(wal_sum "snowflake_nextval()" 3)
wal_sf_res=$(wal_sum "snowflake_nextval()" 4)
wal_other_res=$(($(wal_sum "1" 4) + $(wal_sum "nextval('bench_seq')" 4)))
wal_sf_per_m=$(calc "$wal_sf_total / ($WAL_RUNS * $WAL_N / 1e6)")
paced_bytes=$(wal_of "paced")
paced_res=$(wal_col "paced" 4 | median)
paced_s=$(wal_col "paced_s" 3 | median)
paced_per_m=$(calc "$paced_bytes / ($WAL_N / 1e6)")

# ---------------------------------------------------------------- part 1
percall_ids=$(((RUNS + 1) * PERCALL_N))
note "part 1: per-call cost, $RUNS runs of $PERCALL_N calls (cluster B)"
waited=$(sql "$port_b" -c "SELECT round(bench_wait_for_headroom($percall_ids)::numeric, 1)")
[ "$waited" = "0.0" ] || note "  waited ${waited}s for $percall_ids IDs of drift headroom"
waits_b0=$(sql "$port_b" -c "SELECT bench_overflow_waits()")
res_b0=$(sql "$port_b" -c "SELECT reservations FROM snowflake_status()")
sql "$port_b" -c "SELECT expr, run, ms FROM bench_percall($PERCALL_N, $RUNS)" >"$clusters/percall.out"
waits_b1=$(sql "$port_b" -c "SELECT bench_overflow_waits()")
res_b1=$(sql "$port_b" -c "SELECT reservations FROM snowflake_status()")
percall_ms() { awk -F'|' -v e="$1" '$1 == e && $2 > 0 { print $3 }' "$clusters/percall.out" | median; }
declare -A pc_ms pc_ns
pc_exprs=("1" "snowflake_bench_noop()" "clock_timestamp()" "snowflake_nextval()"
	"nextval('bench_seq')" "gen_random_uuid()")
# PostgreSQL 18's built-in UUID v7 (bench_percall() times it there too).
[ "$bench_version" -ge 18 ] && pc_exprs+=("uuidv7()")
for e in "${pc_exprs[@]}"; do
	pc_ms[$e]=$(percall_ms "$e")
done
for e in "${pc_exprs[@]}"; do
	pc_ns[$e]=$(calc "(${pc_ms[$e]} - ${pc_ms[1]}) * 1e6 / $PERCALL_N")
done

# ---------------------------------------------------------------- part 2
note "part 2: sustained rate, $SUSTAINED_RUNS runs of $SUSTAINED_N IDs (cluster A)"
# One WAL window (see part 5) around the whole of it: the IDs that use up
# the headroom and the timed runs, all at the bit limit.
{
	wal_window_begin
	echo "SELECT run, ms, waits, drift_after FROM bench_sustained($SUSTAINED_N, $SUSTAINED_RUNS);"
	wal_window_end "sustained" 1
} >"$clusters/sustained.sql"
chown "$SNOWFLAKE_TEST_USER" "$clusters/sustained.sql"
sql "$port_a" -f "$clusters/sustained.sql" >"$clusters/sustained.all"
grep '^sustained|' "$clusters/sustained.all" >>"$clusters/wal.out"
grep -v '^sustained|' "$clusters/sustained.all" >"$clusters/sustained.out"
sus_bytes=$(wal_of "sustained")
sus_res=$(wal_col "sustained" 4)
sus_ids=$(wal_col "sustained" 5)
sus_per_m=$(calc "$sus_bytes / ($sus_ids / 1e6)")
sus_ms=$(cut -d'|' -f2 "$clusters/sustained.out" | median)
sus_waits=$(cut -d'|' -f3 "$clusters/sustained.out" | median)
sus_rate=$(calc "$SUSTAINED_N / $sus_ms")
sus_pct=$(calc "100 * $sus_rate / $bit_limit")

# What the WAL of parts 5 and 2 consists of, read back with pg_waldump:
# per window, the reservation records (rmgr "snowflake", id 148, which
# pg_waldump names custom148) and everything else.  A commit first, so that
# all of it is flushed.
waldump_stats() {
	if [ "$2" = "$3" ]; then
		echo "0 0 0 0 -"
		return
	fi
	{ as_tester pg_waldump -p "$clusters/$1/pg_wal" -s "$2" -e "$3" --stats=rmgr 2>/dev/null || true; } |
		awk '{ gsub(/\([^)]*\)/, ""); gsub(/\[[^]]*\]/, "") }
			NF == 5 && $2 ~ /^[0-9]+$/ && $2 > 0 && $1 != "Total" {
				if ($1 == "custom148") { sn += $2; sb += $5 }
				else { on += $2; ob += $5; names = names (names ? "," : "") $1 }
			}
			END { printf "%d %d %d %d %s\n", sn, sb, on, ob, (names ? names : "-") }'
}
sql "$port_a" -c "SELECT txid_current()" >/dev/null
# label|run|LSN bytes|reservations|IDs|l0|l1|pg_waldump: sf records|sf bytes|other records|other bytes|other rmgrs
while IFS='|' read -r label run bytes res ids l0 l1; do
	case $label in
		"snowflake_nextval()" | paced | sustained)
			echo "$label|$run|$bytes|$res|$ids|$l0|$l1|$(waldump_stats A "$l0" "$l1" | tr ' ' '|')" ;;
	esac
done <"$clusters/wal.out" >"$clusters/waldump.out"
wd_sum() { awk -F'|' -v c="$1" '{ s += $c } END { print s + 0 }' "$clusters/waldump.out"; }
wd_records=$(wd_sum 8)
wd_bytes=$(wd_sum 9)
wd_counted=$(wd_sum 4)
wd_other_records=$(wd_sum 10)
wd_other_bytes=$(wd_sum 11)
wd_other_rmgrs=$(cut -d'|' -f12 "$clusters/waldump.out" | tr ',' '\n' | { grep -v '^-$' || true; } |
	sort -u | paste -sd, -)

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

# ---------------------------------------------------------------- part 6
# Part 1's per-call cost over the count(1) baseline, this tree (cluster B)
# against the base commit (cluster C), both max_drift = 60000.  Each round
# restarts both clusters (a fresh address-space layout for each, so that
# one lucky or unlucky layout cannot decide the comparison), then runs one
# session per cluster with bench_pair() (headroom wait, warm-up, then
# CMP_REPS x baseline + snowflake_nextval(), of which the fastest of each
# count); the order of the clusters alternates from round to round.
# ci: distribution-free confidence interval of the median from order
# statistics, [x(k), x(n-k+1)] with the largest k that keeps at least 90 %
# coverage.  Prints: low high coverage%
ci() {
	sort -g | awk '{ v[++n] = $1 } END {
		k = 1; cov = 1 - 2 / 2 ^ n; cum = 0; c = 1
		for (j = 0; 2 * (j + 1) <= n; j++) {
			cum += c / 2 ^ n
			if (1 - 2 * cum < 0.90) break
			k = j + 1; cov = 1 - 2 * cum
			c = c * (n - j) / (j + 1)
		}
		printf "%s %s %.1f\n", v[k], v[n - k + 1], 100 * cov
	}'
}
if [ -n "$BASE_COMMIT" ]; then
	note "part 6: per-call cost, this tree (B) against $base_rev (C), $CMP_ROUNDS rounds with restarts"
	: >"$clusters/cmp.out"
	cmp_res=0
	for ((r = 1; r <= CMP_ROUNDS; r++)); do
		PG_BINDIR=$base_bindir restart_cluster C
		restart_cluster B
		if ((r % 2)); then order="new base"; else order="base new"; fi
		for v in $order; do
			if [ "$v" = new ]; then p=$port_b; else p=$port_c; fi
			sql "$p" -c "SELECT '$v', $r, rep, expr, ms FROM bench_pair($PERCALL_N, $CMP_REPS)" >>"$clusters/cmp.out"
		done
		cmp_res=$((cmp_res + $(sql "$port_b" -c "SELECT reservations FROM snowflake_status()")))
	done
	cmp_waits=$(awk -F'|' '$4 == "overflow_waits" { s += $5 } END { print s + 0 }' "$clusters/cmp.out")
	sed -i '/|overflow_waits|/d' "$clusters/cmp.out"
	# version|round|ns per call over the baseline|baseline ns per row
	# The fastest of each round's CMP_REPS statements: on a shared machine
	# noise only ever adds time.
	awk -F'|' -v n="$PERCALL_N" '{ k = $1 "|" $2
			if ($4 == "1") { if (!(k in b) || $5 < b[k]) b[k] = $5 }
			else if (!(k in f) || $5 < f[k]) f[k] = $5 }
		END { for (k in b) printf "%s|%.3f|%.3f\n", k, (f[k] - b[k]) * 1e6 / n, b[k] * 1e6 / n }' \
		"$clusters/cmp.out" | sort -t'|' -k1,1 -k2,2n >"$clusters/cmp_rounds.out"
	cmp_col() { awk -F'|' -v v="$1" -v c="$2" '$1 == v { print $c }' "$clusters/cmp_rounds.out"; }
	cmp_new=$(cmp_col new 3 | median)
	cmp_base=$(cmp_col base 3 | median)
	cmp_new_range=$(cmp_col new 3 | sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%.1f-%.1f", lo, hi }')
	cmp_base_range=$(cmp_col base 3 | sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%.1f-%.1f", lo, hi }')
	# Paired by round: new minus base.
	awk -F'|' '{ v[$1 "|" $2] = $3; w[$1 "|" $2] = $4; r[$2] = 1 }
		END { for (i in r) printf "%s|%.3f|%.3f\n", i, v["new|" i] - v["base|" i], w["new|" i] - w["base|" i] }' \
		"$clusters/cmp_rounds.out" | sort -t'|' -k1,1n >"$clusters/cmp_diff.out"
	cmp_diff=$(cut -d'|' -f2 "$clusters/cmp_diff.out" | median)
	read -r cmp_lo cmp_hi cmp_cov < <(cut -d'|' -f2 "$clusters/cmp_diff.out" | ci)
	cmp_aa=$(cut -d'|' -f3 "$clusters/cmp_diff.out" | median)
	read -r cmp_aa_lo cmp_aa_hi cmp_aa_cov < <(cut -d'|' -f3 "$clusters/cmp_diff.out" | ci)
fi

# ---------------------------------------------------------------- part 7
# Single calls, timed alone: STEADY_CALLS calls 0.1 s apart, then
# IDLE_CALLS calls each after a pause longer than snowflake.reserve_ahead,
# on cluster A (this tree, defaults) and cluster C (base).  A call that has
# to extend the reservation itself waits for a WAL flush and two fsyncs.
idle_pause=$(calc "$reserve_ahead / 1000 + 0.3")
note "part 7: single calls, $STEADY_CALLS x 0.1 s apart and $IDLE_CALLS x after ${idle_pause} s idle"
latency_run() {
	local v=$1 p=$2 r0 r1
	r0=$(sql "$p" -c "SELECT reservations FROM snowflake_status()" 2>/dev/null || echo "")
	sql "$p" -c "SELECT '$v', 'steady', sample, us FROM bench_after_idle('{0.1}', $STEADY_CALLS)"
	sql "$p" -c "SELECT '$v', 'idle', sample, us FROM bench_after_idle('{$idle_pause}', $IDLE_CALLS)"
	r1=$(sql "$p" -c "SELECT reservations FROM snowflake_status()" 2>/dev/null || echo "")
	[ -n "$r0" ] && echo "$v|reservations|0|$((r1 - r0))"
	return 0
}
{
	latency_run new "$port_a"
	if [ -n "$BASE_COMMIT" ]; then latency_run base "$port_c"; fi
} >"$clusters/latency.out"
lat_col() { awk -F'|' -v v="$1" -v k="$2" '$1 == v && $2 == k { print $4 }' "$clusters/latency.out"; }
lat_med() { lat_col "$1" "$2" | median; }
lat_max() { lat_col "$1" "$2" | sort -g | tail -1; }
lat_slow() { lat_col "$1" "$2" | awk '$1 > 500 { n++ } END { print n + 0 }'; }
lat_res_new=$(lat_col new reservations)

# ---------------------------------------------------------------- part 8
# A new connection that runs one statement: pgbench -C, one client, each
# statement CONN_TX connections per round, CONN_ROUNDS rounds, the order of
# the statements rotating from round to round, so that the machine's load
# falls on all of them alike.  SELECT 1 on cluster D (nothing preloaded) is
# the baseline of the preload; the others run on cluster A, where earlier
# sessions already took IDs, as in any running database; a built-in
# function (gen_random_uuid(), and on 18 uuidv7()) shows what calling any
# function costs a new backend.  Microseconds per
# connection = 1e6 / TPS (pgbench counts the connection in).
note "part 8: new connections, $CONN_ROUNDS rounds of $CONN_TX per statement (clusters A and D)"
declare -A conn_sql conn_port
conn_names=(unpreloaded one snowflake sequence uuid)
conn_sql[unpreloaded]="SELECT 1;" conn_port[unpreloaded]=$port_d
conn_sql[one]="SELECT 1;" conn_port[one]=$port_a
conn_sql[snowflake]="SELECT snowflake_nextval();" conn_port[snowflake]=$port_a
conn_sql[sequence]="SELECT nextval('bench_seq');" conn_port[sequence]=$port_a
# A built-in function: what a new backend pays to find and call any function.
conn_sql[uuid]="SELECT gen_random_uuid();" conn_port[uuid]=$port_a
if [ "$bench_version" -ge 18 ]; then
	conn_names+=(uuidv7)
	conn_sql[uuidv7]="SELECT uuidv7();" conn_port[uuidv7]=$port_a
fi
for n in "${conn_names[@]}"; do
	echo "${conn_sql[$n]}" >"$clusters/conn_$n.sql"
	chown "$SNOWFLAKE_TEST_USER" "$clusters/conn_$n.sql"
done
conn_us() {
	local out tps
	out=$(as_tester pgbench -n -C -c 1 -t "$CONN_TX" -f "$clusters/conn_$1.sql" \
		-h "$clusters" -p "${conn_port[$1]}" bench 2>&1) || true
	tps=$(sed -n 's/^tps = \([0-9.]*\) .*/\1/p' <<<"$out")
	if [ -z "$tps" ]; then
		echo "$out" >&2
		return 1
	fi
	calc "1e6 / $tps"
}
# round|statement|us per connection
: >"$clusters/conn.out"
for ((r = 0; r < CONN_ROUNDS; r++)); do
	for ((k = 0; k < ${#conn_names[@]}; k++)); do
		n=${conn_names[$(((k + r) % ${#conn_names[@]}))]}
		echo "$r|$n|$(conn_us "$n")" >>"$clusters/conn.out"
	done
done
conn_col() { awk -F'|' -v n="$1" '$2 == n { print $3 }' "$clusters/conn.out"; }
# The rounds' ratios of statement $1 to statement $2.
conn_ratios() {
	awk -F'|' -v a="$1" -v b="$2" '{ v[$1 "|" $2] = $3; r[$1] = 1 }
		END { for (i in r) printf "%.4f\n", v[i "|" a] / v[i "|" b] }' "$clusters/conn.out"
}
declare -A conn_med
for n in "${conn_names[@]}"; do
	conn_med[$n]=$(conn_col "$n" | median)
done
conn_preload=$(conn_ratios one unpreloaded | median)
conn_first=$(conn_ratios snowflake one | median)
# ---------------------------------------------------------------- part 9
# The snowflake type against bigint, on cluster B (bench/type.sh).
if ((TYPE_ROWS > 0)); then
	type_measure "$port_b"
fi

# ---------------------------------------------------------------- report
status_a=$(sql "$port_a" -c "SELECT ids_issued, overflow_waits, reservations FROM snowflake_status()")
cpu=$(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)
clocksource=$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null || echo "?")

echo
echo "snowflake benchmark  $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "machine: $(nproc) CPUs ($cpu), kernel $(uname -r), clocksource $clocksource"
echo "PostgreSQL $pg_version, $(g++ --version | head -1)"
echo "cluster A: default settings (max_drift ${drift_a} ms, reserve_ahead ${reserve_ahead} ms); cluster B: max_drift ${drift_b} ms"
if [ -n "$BASE_COMMIT" ]; then
	echo "cluster C: base commit $base_rev in a PostgreSQL copy of its own, max_drift 60000 ms; A and B run this tree ($head_rev)"
fi
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
echo "   snowflake overflow waits during part 1: $((waits_b1 - waits_b0)) (0 = bit limit never bound);"
echo "   reservation records written on B during part 1: $((res_b1 - res_b0))"
echo
echo "2. Sustained, one backend, after using up the drift headroom (cluster A),"
echo "   $SUSTAINED_N IDs per run, median of $SUSTAINED_RUNS:"
printf "   %.1f ms -> %.1f IDs/ms = %.2f%% of %d; clock waits per run %s\n" \
	"$sus_ms" "$sus_rate" "$sus_pct" "$bit_limit" "$sus_waits"
printf "   WAL during all of part 2 (%s IDs): %s bytes, %s reservation records\n" \
	"$sus_ids" "$sus_bytes" "$sus_res"
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
echo "5. WAL (cluster A): pg_current_wal_insert_lsn() before the statement and ${WAL_SETTLE} s after it"
echo "   a) full speed, one statement of $WAL_N calls, median of $WAL_RUNS:"
printf "      count(1) baseline %s bytes   snowflake_nextval() %s bytes   nextval('bench_seq') %s bytes\n" \
	"$wal_base" "$wal_sf" "$wal_seq"
printf "      snowflake, all %s runs: %s IDs, %s reservation records, %s bytes = %.0f bytes per million IDs\n" \
	"$WAL_RUNS" "$((WAL_RUNS * WAL_N))" "$wal_sf_res" "$wal_sf_total" "$wal_sf_per_m"
printf "      (reservation records in the count(1) and nextval() windows: %s)\n" "$wal_other_res"
printf "      nextval(): %.2f bytes per value, %.0f bytes per WAL record (one per 32 values)\n" \
	"$(calc "$wal_seq / $WAL_N")" "$(calc "$wal_seq / ($WAL_N / 32)")"
printf "   b) paced: %s IDs in statements of %s, %s s apart (%.1f s, %.0f IDs/s), median of %s:\n" \
	"$WAL_N" "$PACED_BATCH" "$PACED_PAUSE" "$paced_s" "$(calc "$WAL_N / $paced_s")" "$PACED_RUNS"
printf "      %s bytes, %s reservation records = %.0f bytes per million IDs, %.0f bytes per second\n" \
	"$paced_bytes" "$paced_res" "$paced_per_m" "$(calc "$paced_bytes / $paced_s")"
printf "   c) at the bit limit (all of part 2): %.0f bytes per million IDs\n" "$sus_per_m"
printf "   pg_waldump over the windows of a), b), c): %s records of rmgr snowflake (custom148,\n" "$wd_records"
printf "      %s bytes; the counter says %s), other WAL: %s records, %s bytes (%s)\n" \
	"$wd_bytes" "$wd_counted" "$wd_other_records" "$wd_other_bytes" "${wd_other_rmgrs:-none}"

if [ -n "$BASE_COMMIT" ]; then
	echo
	echo "6. Per-call cost before and after, part 1's statement, $PERCALL_N calls, over count(1):"
	echo "   this tree on cluster B against $base_rev on cluster C (both max_drift 60000),"
	echo "   $CMP_ROUNDS rounds, both clusters restarted before each, order alternating; per round and"
	echo "   cluster the fastest of $CMP_REPS baseline and of $CMP_REPS snowflake_nextval() statements"
	printf "   %-26s %16s %18s\n" "" "median ns/call" "range of rounds"
	printf "   %-26s %16.1f %18s\n" "base $base_rev (C)" "$cmp_base" "$cmp_base_range"
	printf "   %-26s %16.1f %18s\n" "this tree $head_rev (B)" "$cmp_new" "$cmp_new_range"
	printf "   paired by round, this tree - base: %+.2f ns per call, %s%% CI [%+.2f, %+.2f]\n" \
		"$cmp_diff" "$cmp_cov" "$cmp_lo" "$cmp_hi"
	printf "   the count(1) baseline alone, B - C: %+.2f ns per row, %s%% CI [%+.2f, %+.2f]\n" \
		"$cmp_aa" "$cmp_aa_cov" "$cmp_aa_lo" "$cmp_aa_hi"
	echo "   overflow waits on B and C during part 6: $cmp_waits;" \
		"reservation records on B: $cmp_res"
fi
echo
echo "7. Single snowflake_nextval() calls, timed alone, microseconds:"
printf "   %-26s %26s %26s\n" "" "$STEADY_CALLS calls 0.1 s apart" "$IDLE_CALLS after ${idle_pause} s idle"
printf "   %-26s %8s %8s %8s %8s %8s %8s\n" "" "median" "max" "> 500" "median" "max" "> 500"
for v in new base; do
	[ "$v" = base ] && [ -z "$BASE_COMMIT" ] && continue
	if [ "$v" = new ]; then label="this tree (A)"; else label="base $base_rev (C)"; fi
	printf "   %-26s %8.0f %8.0f %8s %8.0f %8.0f %8s\n" "$label" \
		"$(lat_med "$v" steady)" "$(lat_max "$v" steady)" "$(lat_slow "$v" steady)" \
		"$(lat_med "$v" idle)" "$(lat_max "$v" idle)" "$(lat_slow "$v" idle)"
done
echo "   reservation records on A during part 7: $lat_res_new"
if ((TYPE_ROWS > 0)); then
	echo
	echo "8. The snowflake type against bigint, as bench/type.sh measures it (cluster B):"
	type_report "   "
fi

echo
echo "8. A new connection running one statement: pgbench -n -C -c 1 -t $CONN_TX, $CONN_ROUNDS rounds,"
echo "   the statements interleaved, their order rotating; microseconds per connection"
printf "   %-34s %-18s %12s %18s\n" "statement" "cluster" "median us" "over SELECT 1 (A)"
for n in "${conn_names[@]}"; do
	if [ "$n" = unpreloaded ]; then label="D (not preloaded)"; else label="A (preloaded)"; fi
	printf "   %-34s %-18s %12.0f %18s\n" "${conn_sql[$n]%;}" "$label" "${conn_med[$n]}" \
		"$(if [ "$n" = one ] || [ "$n" = unpreloaded ]; then echo "-"; else
			fmt "%+.0f" "$(calc "${conn_med[$n]} - ${conn_med[one]}")"; fi)"
done
printf "   ratios, median of the rounds' own: SELECT 1 preloaded / not %.3fx;\n" "$conn_preload"
printf "   first snowflake_nextval() / SELECT 1 %.3fx\n" "$conn_first"

sf_minus_clock=$(calc "${pc_ns[snowflake_nextval()]} - ${pc_ns[clock_timestamp()]}")
echo
echo "Targets"
printf "   %-44s %-26s %-14s %s\n" "what" "measured" "target" "result"
printf "   %-44s %-26s %-14s %s\n" "per-call: snowflake minus clock_timestamp()" \
	"$(fmt "%+.1f ns" "$sf_minus_clock")" "<= +15 ns" "$(pass_if "$sf_minus_clock <= 15")"
if [ -n "$BASE_COMMIT" ]; then
	printf "   %-44s %-26s %-14s %s\n" "per-call: this tree - $base_rev (paired)" \
		"$(fmt "%+.2f ns" "$cmp_diff") [$(fmt "%+.2f" "$cmp_lo"), $(fmt "%+.2f" "$cmp_hi")]" \
		"CI holds 0" "$(pass_if "$cmp_lo <= 0")"
fi
printf "   %-44s %-26s %-14s %s\n" "burst $BURST_N: snowflake / nextval time" \
	"$(fmt "%.3fx" "$burst_ratio")" "<= 0.40x" "$(pass_if "$burst_ratio <= 0.40")"
printf "   %-44s %-26s %-14s %s\n" "sustained one backend, % of bit limit" \
	"$(fmt "%.2f%%" "$sus_pct")" ">= 95%" "$(pass_if "$sus_pct >= 95")"
printf "   %-44s %-26s %-14s %s\n" "pgbench TPS snowflake / nextval (lowest)" \
	"$(fmt "%.3fx" "$min_ratio") at $min_ratio_c clients" ">= 1.00x each" "$(pass_if "$min_ratio >= 1")"
printf "   %-44s %-26s %-14s %s\n" "WAL per million IDs, full speed" \
	"$(fmt "%.0f bytes" "$wal_sf_per_m")" "< 1000 bytes" "$(pass_if "$wal_sf_per_m < 1000")"
printf "   %-44s %-26s %-14s %s\n" "WAL per million IDs, paced (${paced_s%.*} s)" \
	"$(fmt "%.0f bytes" "$paced_per_m")" "< 1000 bytes" "$(pass_if "$paced_per_m < 1000")"
printf "   %-44s %-26s %-14s %s\n" "WAL per million IDs, at the bit limit" \
	"$(fmt "%.0f bytes" "$sus_per_m")" "< 1000 bytes" "$(pass_if "$sus_per_m < 1000")"
printf "   %-44s %-26s %-14s %s\n" "new connection: SELECT 1 preloaded / not" \
	"$(fmt "%.3fx" "$conn_preload")" "<= 1.05x" "$(pass_if "$conn_preload <= 1.05")"
printf "   %-44s %-26s %-14s %s\n" "new connection: snowflake_nextval() / SELECT 1" \
	"$(fmt "%.3fx" "$conn_first")" "<= 1.05x" "$(pass_if "$conn_first <= 1.05")"
echo
echo "Raw runs: ms, except clock waits, TPS, part 5 (WAL bytes), part 6 (ns per call over"
echo "the baseline), part 7 (microseconds) and part 8 (microseconds per connection, by round);"
echo "run 0 of parts 1 and 3 is a warm-up and not counted"
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
printf "   part 5 %-22s %s\n" "snowflake records" "$(wal_col "snowflake_nextval()" 4 | tr '\n' ' ')"
printf "   part 5 %-22s %s\n" "paced bytes" "$(wal_col paced 3 | tr '\n' ' ')"
printf "   part 5 %-22s %s\n" "paced records" "$(wal_col paced 4 | tr '\n' ' ')"
printf "   part 5 %-22s %s\n" "paced seconds" "$(wal_col paced_s 3 | awk '{ printf "%.2f ", $1 }')"
while IFS='|' read -r label run bytes res ids l0 l1 sn sb on ob names; do
	printf "   part 5 %-22s %s\n" "pg_waldump $label $run" \
		"$l0-$l1: snowflake $sn records $sb bytes (counter $res), other $on records $ob bytes $names"
done <"$clusters/waldump.out"
if [ -n "$BASE_COMMIT" ]; then
	for v in base new; do
		printf "   part 6 %-22s %s\n" "$v ns/call" "$(cmp_col "$v" 3 | tr '\n' ' ')"
	done
	for v in base new; do
		printf "   part 6 %-22s %s\n" "$v baseline ns/row" "$(cmp_col "$v" 4 | tr '\n' ' ')"
	done
fi
for v in new base; do
	for k in steady idle; do
		if [ -n "$(lat_col "$v" "$k")" ]; then
			printf "   part 7 %-22s %s\n" "$v $k" "$(lat_col "$v" "$k" | awk '{ printf "%.0f ", $1 }')"
		fi
	done
done
for n in "${conn_names[@]}"; do
	printf "   part 8 %-22s %s\n" "$n us" "$(conn_col "$n" | awk '{ printf "%.0f ", $1 }')"
done
echo "   cluster A at the end: ids_issued|overflow_waits|reservations = $status_a"
echo "   total time: ${SECONDS}s"
