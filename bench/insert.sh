#!/usr/bin/env bash
# The INSERT benchmark: what users compare ID schemes on.  One command, run
# as root; prints one results table measured in this run, writes the
# results as TSV and plots them.  See docs/benchmarks.md ("INSERT workload:
# snowflake vs bigserial vs UUID") for the latest results and how to read
# them, docs/benchmarks-archive.md for what it measures and how.
#
#   bash bench/insert.sh [VERSION]
#
# VERSION (or BENCH_PG_VERSION): the PostgreSQL major version, 15 (default),
# 17 or 18 (source builds, see bench/lib.sh).
#
# Steps: installs the build dependencies (test/install-deps.sh) and, for the
# plot, gnuplot-nox; copies the PostgreSQL installation to a temporary
# directory (nothing is installed system-wide), builds and installs this
# tree's extension into that copy, starts one throwaway cluster as the
# unprivileged tester user (Unix socket only, in a temporary directory;
# max_connections = 600, snowflake preloaded, otherwise default settings),
# then:
#
#   1. throughput: pgbench, one "INSERT INTO t (v) VALUES (1)" per
#      transaction, into a table whose primary key is each of
#        snowflake  bigint DEFAULT snowflake_nextval()
#        bigserial  bigserial (a sequence)
#        uuidv4     uuid DEFAULT gen_random_uuid()
#        uuidv7     uuid DEFAULT bench_uuidv7() (plain SQL, bench/sql/uuidv7.sql)
#        uuidv7pg   uuid DEFAULT uuidv7() (built in from PostgreSQL 18; added
#                   to the default keys there)
#      at each client count, RUNS runs of about SECONDS each; the table is
#      created anew and a CHECKPOINT taken before every run.  Per run: TPS,
#      p99 and mean latency over the steady part of the run, from pgbench's
#      per-transaction log (see pgbench_run), failed transactions and
#      aborted clients, WAL bytes per row inserted, and primary-key index
#      bytes per row.
#   2. index size: one INSERT ... SELECT of INDEX_ROWS rows from
#      generate_series into each table (the default evaluated per row),
#      then pg_relation_size() of the primary-key index and its leaf
#      density (pgstattuple).
#
# and on exit (also on error) stops and removes the cluster, the build copy
# and the copy of PostgreSQL.  About 20 minutes with the defaults on the
# shared 2-CPU machine of docs/benchmarks.md (19.5-21 in three runs), half
# of part 1 being pgbench connecting and disconnecting 256 and 500 clients
# (a backend start took ~37 ms there).
#
# Knobs (environment): BENCH_INSERT_SECONDS (5), BENCH_INSERT_RUNS (3),
# BENCH_INSERT_CLIENTS ("1 8 64 256 500"), BENCH_INSERT_KEYS ("snowflake
# bigserial uuidv4 uuidv7"), BENCH_INSERT_JOBS (2: pgbench -j min(clients,
# this)), BENCH_INSERT_MAX_CONNECTIONS (600), BENCH_INSERT_SNOWFLAKE_CONF
# (extra postgresql.conf lines, one per line; default none),
# BENCH_INDEX_ROWS (10000000; 0 skips part 2), BENCH_INSERT_TSV
# (docs/insert-benchmark.tsv), BENCH_INSERT_PLOT (docs/insert-benchmark.png;
# empty: no plot, and gnuplot is not needed), BENCH_INSERT_WORKDIR (the
# tester's build copy, /tmp/sf-bench-insert), BENCH_INSERT_TMP (prefix of
# the temporary directories, /tmp/sf-bench-insert), BENCH_TREE_NAME (how the
# output names this tree; default: git describe).  Relative paths are
# relative to the top of this tree.  Shared code: bench/lib.sh.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)

SECS=${BENCH_INSERT_SECONDS:-5}
RUNS=${BENCH_INSERT_RUNS:-3}
CLIENTS=${BENCH_INSERT_CLIENTS:-1 8 64 256 500}
KEYS=${BENCH_INSERT_KEYS:-snowflake bigserial uuidv4 uuidv7}
JOBS=${BENCH_INSERT_JOBS:-2}
MAX_CONNECTIONS=${BENCH_INSERT_MAX_CONNECTIONS:-600}
SNOWFLAKE_CONF=${BENCH_INSERT_SNOWFLAKE_CONF:-}
INDEX_ROWS=${BENCH_INDEX_ROWS:-10000000}
TSV=${BENCH_INSERT_TSV-docs/insert-benchmark.tsv}
PLOT=${BENCH_INSERT_PLOT-docs/insert-benchmark.png}
WORKDIR=${BENCH_INSERT_WORKDIR:-/tmp/sf-bench-insert}
TMP_PREFIX=${BENCH_INSERT_TMP:-/tmp/sf-bench-insert}

case $TSV in "" | /*) ;; *) TSV=$top/$TSV ;; esac
case $PLOT in "" | /*) ;; *) PLOT=$top/$PLOT ;; esac

# shellcheck source=bench/lib.sh
. "$top/bench/lib.sh"
bench_require_root

# The primary key of each kind, as a column definition of t.
declare -A key_column=(
	[snowflake]="id bigint PRIMARY KEY DEFAULT snowflake_nextval()"
	[bigserial]="id bigserial PRIMARY KEY"
	[uuidv4]="id uuid PRIMARY KEY DEFAULT gen_random_uuid()"
	[uuidv7]="id uuid PRIMARY KEY DEFAULT bench_uuidv7()"
	[uuidv7pg]="id uuid PRIMARY KEY DEFAULT uuidv7()"
)
read -r -a keys <<<"$KEYS"
read -r -a clients <<<"$CLIENTS"
for k in "${keys[@]}"; do
	if [ -z "${key_column[$k]:-}" ]; then
		echo "$0: unknown key type \"$k\" in BENCH_INSERT_KEYS (known: ${!key_column[*]})" >&2
		exit 1
	fi
done
has_key() { [[ " ${keys[*]} " == *" $1 "* ]]; }

bench_pg_version "${1:-}"
if [ "$bench_version" -ge 18 ] && [ -z "${BENCH_INSERT_KEYS:-}" ]; then
	keys+=(uuidv7pg)
fi
for k in "${keys[@]}"; do
	if [ "$k" = uuidv7pg ] && [ "$bench_version" -lt 18 ]; then
		echo "$0: uuidv7() is built in from PostgreSQL 18; this run is against $bench_version" >&2
		exit 1
	fi
done
"$top/test/install-deps.sh"
if [ -n "$PLOT" ] && ! command -v gnuplot >/dev/null; then
	note "installing gnuplot-nox for the plot"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends gnuplot-nox >/dev/null
fi

# pgbench holds one socket per client.  runuser's PAM session (pam_limits)
# resets the tester's soft limit on open files (to 1024 on Debian), keeping
# the hard limit it inherits: so raise the hard limit here if it is too low,
# and the soft one inside the tester's command (as_tester_nofile).
max_clients=0
for c in "${clients[@]}"; do
	if ((c > max_clients)); then max_clients=$c; fi
done
nofile=$((max_clients + 100))
hard=$(ulimit -Hn)
if [ "$hard" != unlimited ] && ((hard < nofile)); then
	ulimit -Hn "$nofile"
fi
# shellcheck disable=SC2016  # $0 and $@ belong to the inner bash
as_tester_nofile() { as_tester bash -c 'ulimit -n "$0" && exec "$@"' "$nofile" "$@"; }

export SNOWFLAKE_WORKDIR=$WORKDIR
# shellcheck source=test/tester-env.sh
. "$top/test/tester-env.sh"
cluster_on_exit bench_cleanup
bench_copy_postgres "$TMP_PREFIX-pg"

head_rev=${BENCH_TREE_NAME:-$(git -c safe.directory="$top" -C "$top" describe --always --dirty \
	--abbrev=7 2>/dev/null || echo "not a git checkout")}

note "building and installing snowflake"
prepare_tester_copy "$top"
build_and_install

bench_clusters_dir "$TMP_PREFIX-clusters"
port=$(free_port 54330)
conf=("max_connections = $MAX_CONNECTIONS")
if [ -n "$SNOWFLAKE_CONF" ]; then
	mapfile -t extra <<<"$SNOWFLAKE_CONF"
	conf+=("${extra[@]}")
fi
note "starting the cluster on port $port (${conf[*]})"
bench_start I "$port" snowflake "${conf[@]}"
sql "$port" -c "CREATE EXTENSION snowflake" -c "CREATE EXTENSION pgstattuple" \
	-f bench/sql/uuidv7.sql
# bench_uuidv7() must make what it claims: version 7, variant 10, and the
# time of the call in its first 48 bits.
uuid_check=$(sql "$port" <<'EOF'
SELECT count(*) FILTER (WHERE substr(u::text, 15, 1) <> '7'
		OR substr(u::text, 20, 1) NOT IN ('8', '9', 'a', 'b')
		OR abs(('x' || lpad(replace(left(u::text, 13), '-', ''), 16, '0'))::bit(64)::int8
			- floor(extract(epoch FROM t) * 1000)::int8) > 1000)
	|| ' bad, ' || count(DISTINCT u) || ' distinct of ' || count(*)
FROM (SELECT bench_uuidv7() AS u, clock_timestamp() AS t FROM generate_series(1, 10000)) s
EOF
)
if [ "$uuid_check" != "0 bad, 10000 distinct of 10000" ]; then
	echo "$0: bench_uuidv7() does not make UUID v7s: $uuid_check" >&2
	exit 1
fi
pg_version=$(sql "$port" -c "SHOW server_version")
slots=$(sql "$port" -c "SELECT slots_total FROM snowflake_status()")
load_start=$(cut -d' ' -f1-3 /proc/loadavg)

# create_table KEY: a new, empty t with KEY's primary key, then a
# checkpoint, so that every run starts alike: no full-page images are owed
# from before, and no checkpoint falls inside a short run.  Autovacuum is
# off for t: a 10 s run would otherwise meet an autovacuum at random.
create_table() {
	sql "$port" -c "SET client_min_messages = warning" -c "DROP TABLE IF EXISTS t" \
		-c "CREATE TABLE t (${key_column[$1]}, v int) WITH (autovacuum_enabled = off)" \
		-c "CHECKPOINT"
}

# What each run measures: pgbench's per-transaction log (one file per
# thread: client, transaction, latency in us or "failed", script, and the
# time the transaction ended, in s and us) read back over a steady window,
# from the moment every client has finished its first transaction to the
# moment pgbench's -T timer expires.  Left out, because they belong to
# pgbench and to new connections rather than to the key: the ramp before
# the window (each pgbench thread opens its connections one after the
# other, a backend start took 15-60 ms on the 2-CPU machine of
# docs/benchmarks.md, and a new backend's first INSERT loads its caches:
# 12-25 s from launch until all of 500 clients had inserted once) and the
# drain after it (the transactions in flight when -T expires finish slowly
# while hundreds of backends exit: latencies of several seconds).
# pgbench's own TPS includes both and is kept in the TSV only.  -T is SECS
# plus the ramp last seen at this client count (+30 % + 0.5 s), so that
# about SECS remain in the window; the window's real length is reported.
declare -A ramp_s
last_ramp="" last_c=""
ramp_allowance() {
	local c=$1 r=${ramp_s[$1]:-}
	if [ -z "$r" ]; then
		# First run at this client count: scale the last one seen.
		if [ -n "$last_ramp" ]; then r=$(calc "$last_ramp * $c / $last_c"); else r=0; fi
	fi
	awk -v r="$r" 'BEGIN { printf "%d", r * 1.3 + 0.5 + 0.999 }'
}

# pgbench_run KEY CLIENTS SECONDS RUN: one pgbench run into a new table.
# Prints: key clients run tps p99_ms mean_ms failed aborted rows wal_bytes
# index_bytes window_s ramp_s pgbench_tps.  A run whose clients abort
# (pgbench exits non-zero) is counted, not fatal.  A run whose window came
# out shorter than half of SECONDS without any client aborting (the ramp
# grew beyond the allowance; under outside load 500 clients once did not
# all connect within 35 s) is made once more with a longer -T; if that
# fails too, its TPS and latencies are "nan" and left out of the medians.
pgbench_run() {
	local key=$1 c=$2 secs=$3 run=$4 jobs out logdir lsn0 rc failed aborted wal rows idx
	local t launch stop warm nc n p99 mean tps window ramp pgb_tps attempt more=0
	jobs=$((c < JOBS ? c : JOBS))
	out="$clusters/pgbench-$key-$c-$run.out"
	for attempt in 1 2; do
		rc=0
		t=$((secs + $(ramp_allowance "$c") + more))
		logdir="$clusters/txlog"
		create_table "$key"
		rm -rf "$logdir"
		as_tester mkdir "$logdir"
		lsn0=$(sql "$port" -c "SELECT pg_current_wal_insert_lsn()")
		launch=$(date +%s.%N)
		as_tester_nofile pgbench -n -M prepared -T "$t" -c "$c" -j "$jobs" \
			-l --log-prefix="$logdir/tx" -f bench/pgbench/insert.sql \
			-h "$clusters" -p "$port" bench >"$out" 2>&1 || rc=$?
		wal=$(sql "$port" -c "SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '$lsn0')::bigint")
		IFS='|' read -r rows idx < <(sql "$port" -c "SELECT count(*), pg_relation_size('t_pkey') FROM t")
		pgb_tps=$(sed -n 's/^tps = \([0-9.]*\) .*/\1/p' "$out")
		failed=$(sed -n 's/^number of failed transactions: \([0-9]*\).*/\1/p' "$out")
		aborted=$(grep -c '^pgbench: error: client [0-9]* .*aborted' "$out" || true)

		{ cat "$logdir"/tx.* 2>/dev/null || true; } >"$clusters/tx.all"
		# The window starts when the last client to finish a first transaction
		# did (clients that never finished one, e.g. aborted ones, do not
		# count) and ends at launch + -T: launch is taken before runuser, so
		# this is at most a few ms before pgbench's own timer.
		stop=$(awk -v l="$launch" -v t="$t" 'BEGIN { printf "%.6f", l + t }')
		read -r warm nc < <(awk '$3 ~ /^[0-9]+$/ { e = $5 + $6 / 1e6
				if (!($1 in f) || e < f[$1]) f[$1] = e }
			END { w = 0; n = 0; for (c in f) { n++; if (f[c] > w) w = f[c] }
				printf "%.6f %d\n", w, n }' "$clusters/tx.all")
		read -r n p99 mean < <(awk -v w="$warm" -v s="$stop" '$3 ~ /^[0-9]+$/ {
				e = $5 + $6 / 1e6; if (e > w && e <= s) print $3 }' "$clusters/tx.all" | sort -n |
			awk '{ v[NR] = $1; sum += $1 } END { if (NR == 0) { print "0 nan nan"; exit }
				r = int(0.99 * NR); if (r < 0.99 * NR) r++
				printf "%d %.3f %.3f\n", NR, v[r] / 1000, sum / NR / 1000 }')
		if ((nc > 0)); then
			ramp=$(calc "$warm - $launch")
			ramp_s[$c]=$ramp
			last_ramp=$ramp last_c=$c
			window=$(calc "$stop - $warm")
		else
			ramp=nan window=0
		fi
		if ((n > 0)) && awk "BEGIN { exit !($window > 0) }"; then
			tps=$(calc "$n / $window")
		else
			tps=nan
		fi
		if ((aborted > 0)) || awk "BEGIN { exit !($window >= $secs / 2) }"; then
			break
		fi
		if ((attempt == 1)); then
			note "  $key, $c clients, run $run: $(fmt "%.1f" "$window") s window with -T $t" \
				"(ramp ${ramp} s); once more with a longer -T"
			# Without a ramp seen (no client got through), twice the -T.
			if ((nc == 0)); then more=$t; fi
		fi
	done
	if [ "$rc" -ne 0 ] || [ "$aborted" -ne 0 ] || [ "$rows" -eq 0 ] ||
		awk "BEGIN { exit !($window < $secs / 2) }"; then
		note "  $key, $c clients, run $run: pgbench exit $rc, $aborted clients aborted, $rows rows," \
			"$(fmt "%.1f" "$window") s window:"
		{ grep -m3 -E 'error|fatal' "$out" || tail -3 "$out"; } | sed 's/^/bench:     /' >&2
	fi
	echo "$key $c $run $tps $p99 $mean ${failed:-0} $aborted $rows $wal $idx $window $ramp ${pgb_tps:-0}"
}

# ---------------------------------------------------------------- part 1
note "warm-up: 2 s of each key at 8 clients"
for k in "${keys[@]}"; do pgbench_run "$k" 8 2 0 >/dev/null; done
t1=$SECONDS
note "part 1: pgbench INSERT, ${SECS}s x $RUNS runs, clients: ${clients[*]}, keys: ${keys[*]}"
: >"$clusters/runs.out"
nkeys=${#keys[@]}
for c in "${clients[@]}"; do
	for ((r = 1; r <= RUNS; r++)); do
		# Each run starts with the next key, so that no key is always first
		# after the other client count or always last.
		for ((i = 0; i < nkeys; i++)); do
			k=${keys[$(((i + r - 1) % nkeys))]}
			pgbench_run "$k" "$c" "$SECS" "$r" >>"$clusters/runs.out"
		done
	done
	note "  $c clients done ($((SECONDS - t1)) s; ramp $(fmt "%.1f" "${ramp_s[$c]:-0}") s)"
done
part1_s=$((SECONDS - t1))
sql "$port" -c "DROP TABLE t"

# run_col KEY CLIENTS FIELD: that field of each run (1-based, as printed by
# pgbench_run).
run_col() { awk -v k="$1" -v c="$2" -v f="$3" '$1 == k && $2 == c { print $f }' "$clusters/runs.out"; }
# The same without the runs that measured nothing ("nan").
run_num() { run_col "$@" | { grep -vx nan || true; }; }
run_sum() { run_col "$@" | awk '{ s += $1 } END { print s + 0 }'; }
declare -A tps p99 mean failed aborted walrow idxrow tps_lo tps_hi
for k in "${keys[@]}"; do
	for c in "${clients[@]}"; do
		tps[$k,$c]=$(run_num "$k" "$c" 4 | median)
		tps_lo[$k,$c]=$(run_num "$k" "$c" 4 | sort -g | head -1)
		tps_hi[$k,$c]=$(run_num "$k" "$c" 4 | sort -g | tail -1)
		p99[$k,$c]=$(run_num "$k" "$c" 5 | median)
		mean[$k,$c]=$(run_num "$k" "$c" 6 | median)
		failed[$k,$c]=$(run_sum "$k" "$c" 7)
		aborted[$k,$c]=$(run_sum "$k" "$c" 8)
		walrow[$k,$c]=$(awk -v k="$k" -v c="$c" '$1 == k && $2 == c && $9 > 0 { print $10 / $9 }' \
			"$clusters/runs.out" | median)
		idxrow[$k,$c]=$(awk -v k="$k" -v c="$c" '$1 == k && $2 == c && $9 > 0 { print $11 / $9 }' \
			"$clusters/runs.out" | median)
	done
done

# ---------------------------------------------------------------- part 2
declare -A ix_bytes ix_table ix_secs ix_wal ix_density
t2=$SECONDS
if ((INDEX_ROWS > 0)); then
	note "part 2: primary-key index after one INSERT ... SELECT of $INDEX_ROWS rows"
	for k in "${keys[@]}"; do
		create_table "$k"
		IFS='|' read -r "ix_secs[$k]" "ix_wal[$k]" "ix_bytes[$k]" "ix_table[$k]" "ix_density[$k]" \
			< <(sql "$port" <<EOF
SELECT pg_current_wal_insert_lsn() AS l0, clock_timestamp() AS t0 \gset
INSERT INTO t (v) SELECT 1 FROM generate_series(1, $INDEX_ROWS);
SELECT extract(epoch FROM clock_timestamp() - :'t0'::timestamptz) AS secs,
	pg_wal_lsn_diff(pg_current_wal_insert_lsn(), :'l0')::bigint AS wal \gset
SELECT :secs, :wal, pg_relation_size('t_pkey'), pg_relation_size('t'), avg_leaf_density
FROM pgstatindex('t_pkey');
EOF
			)
		note "  $k: $(fmt "%.1f" "${ix_secs[$k]}") s, index ${ix_bytes[$k]} bytes"
		sql "$port" -c "DROP TABLE t"
	done
fi
part2_s=$((SECONDS - t2))
load_end=$(cut -d' ' -f1-3 /proc/loadavg)

# ---------------------------------------------------------------- report
label() {
	case $1 in
		snowflake) echo "snowflake_nextval()" ;;
		bigserial) echo "bigserial" ;;
		uuidv4) echo "uuid v4 (gen_random_uuid)" ;;
		uuidv7) echo "uuid v7 (SQL function)" ;;
		uuidv7pg) echo "uuid v7 (built-in uuidv7)" ;;
	esac
}
ratio() { if has_key "$2"; then fmt "%.3f" "$(calc "$1 / $3")"; else echo "-"; fi; }
cpu=$(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)

echo
echo "snowflake INSERT benchmark  $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "machine: $(nproc) CPUs ($cpu), kernel $(uname -r); load average at start $load_start, at end $load_end"
echo "PostgreSQL $pg_version, this tree $head_rev; snowflake worker slots: $slots"
echo "cluster: $(printf '%s; ' "${conf[@]}")otherwise default settings (synchronous_commit on)"
echo
echo "1. pgbench -n -M prepared -j min(clients,$JOBS), one INSERT INTO t (v) VALUES (1) per transaction;"
echo "   a new table and a CHECKPOINT before each run; TPS, p99 and mean latency over each run's"
echo "   steady window (~${SECS} s: every client has inserted once, -T not yet expired), from"
echo "   pgbench's per-transaction log; medians of $RUNS runs; failed and aborted: totals of all runs;"
echo "   WAL and index bytes per row: over the whole run (median)"
printf "   %-10s %7s %9s %17s %9s %9s %7s %8s %10s %10s %11s\n" "key" "clients" "TPS" "TPS range" \
	"p99 ms" "mean ms" "failed" "aborted" "WAL B/row" "idx B/row" "/bigserial"
for k in "${keys[@]}"; do
	for c in "${clients[@]}"; do
		printf "   %-10s %7s %9.0f %17s %9.2f %9.2f %7s %8s %10.1f %10.1f %11s\n" "$k" "$c" \
			"${tps[$k,$c]}" "$(fmt "%.0f" "${tps_lo[$k,$c]}")-$(fmt "%.0f" "${tps_hi[$k,$c]}")" \
			"${p99[$k,$c]}" "${mean[$k,$c]}" "${failed[$k,$c]}" "${aborted[$k,$c]}" \
			"${walrow[$k,$c]}" "${idxrow[$k,$c]}" \
			"$(ratio "${tps[$k,$c]}" bigserial "${tps[bigserial,$c]:-1}")"
	done
done
# paired_ratios CLIENTS: snowflake TPS / bigserial TPS of each run, the two
# measured in the same round of keys (so under much the same outside load).
paired_ratios() {
	awk -v c="$1" '$2 == c && $1 == "snowflake" { s[$3] = $4 } $2 == c && $1 == "bigserial" { b[$3] = $4 }
		END { for (r in s) if (s[r] != "nan" && b[r] != "nan" && b[r] > 0) printf "%.3f\n", s[r] / b[r] }' \
		"$clusters/runs.out" | sort -g
}
if has_key snowflake && has_key bigserial; then
	echo
	echo "   TPS snowflake / bigserial paired by run (same round of keys), lowest to highest:"
	for c in "${clients[@]}"; do
		printf "   %7s clients: %-24s median %s\n" "$c" "$(paired_ratios "$c" | tr '\n' ' ')" \
			"$(paired_ratios "$c" | median)"
	done
fi
if ((INDEX_ROWS > 0)); then
	echo
	echo "2. Primary-key index after INSERT INTO t (v) SELECT 1 FROM generate_series(1, $INDEX_ROWS)"
	echo "   (one statement, one session; size by pg_relation_size, leaf density by pgstatindex)"
	printf "   %-10s %10s %10s %12s %10s %9s %10s %11s %9s\n" "key" "index MB" "B/row" "leaf dens %" \
		"table MB" "load s" "WAL B/row" "/bigserial" "/uuidv4"
	for k in "${keys[@]}"; do
		printf "   %-10s %10.1f %10.2f %12.1f %10.1f %9.1f %10.1f %11s %9s\n" "$k" \
			"$(calc "${ix_bytes[$k]} / 1048576")" "$(calc "${ix_bytes[$k]} / $INDEX_ROWS")" \
			"${ix_density[$k]}" "$(calc "${ix_table[$k]} / 1048576")" "${ix_secs[$k]}" \
			"$(calc "${ix_wal[$k]} / $INDEX_ROWS")" \
			"$(ratio "${ix_bytes[$k]}" bigserial "${ix_bytes[bigserial]:-1}")" \
			"$(ratio "${ix_bytes[$k]}" uuidv4 "${ix_bytes[uuidv4]:-1}")"
	done
fi

if has_key snowflake; then
	echo
	echo "Targets (issue 9)"
	printf "   %-46s %-34s %-16s %s\n" "what" "measured" "target" "result"
	sf_bad=0
	for c in "${clients[@]}"; do
		sf_bad=$((sf_bad + ${failed[snowflake,$c]} + ${aborted[snowflake,$c]}))
	done
	printf "   %-46s %-34s %-16s %s\n" "snowflake failed + aborted, all client counts" \
		"$sf_bad" "0" "$(pass_if "$sf_bad == 0")"
	if has_key bigserial; then
		lowest="" lowest_c=""
		for c in "${clients[@]}"; do
			rt=$(calc "${tps[snowflake,$c]} / ${tps[bigserial,$c]}")
			if [ -z "$lowest" ] || awk "BEGIN { exit !($rt < $lowest) }"; then
				lowest=$rt lowest_c=$c
			fi
		done
		printf "   %-46s %-34s %-16s %s\n" "TPS snowflake / bigserial, medians (lowest)" \
			"$(fmt "%.3f" "$lowest")x at $lowest_c clients" ">= 1.00x each" "$(pass_if "$lowest >= 1")"
		lowest="" lowest_c=""
		for c in "${clients[@]}"; do
			rt=$(paired_ratios "$c" | median)
			if [ -z "$lowest" ] || awk "BEGIN { exit !($rt < $lowest) }"; then
				lowest=$rt lowest_c=$c
			fi
		done
		printf "   %-46s %-34s %-16s %s\n" "TPS snowflake / bigserial, paired (lowest)" \
			"$(fmt "%.3f" "$lowest")x at $lowest_c clients" ">= 1.00x each" "$(pass_if "$lowest >= 1")"
	fi
	if ((INDEX_ROWS > 0)); then
		if has_key bigserial; then
			rt=$(calc "${ix_bytes[snowflake]} / ${ix_bytes[bigserial]}")
			printf "   %-46s %-34s %-16s %s\n" "index size snowflake / bigserial" "$(fmt "%.4f" "$rt")x" \
				"within 2 %" "$(pass_if "$rt >= 0.98 && $rt <= 1.02")"
		fi
		if has_key uuidv4; then
			rt=$(calc "${ix_bytes[snowflake]} / ${ix_bytes[uuidv4]}")
			printf "   %-46s %-34s %-16s %s\n" "index size snowflake / uuid v4" "$(fmt "%.4f" "$rt")x" \
				"<= 0.60x" "$(pass_if "$rt <= 0.6")"
		fi
	fi
fi

echo
echo "Raw runs, in run order (TPS; p99 ms; window s; ramp s):"
for k in "${keys[@]}"; do
	for c in "${clients[@]}"; do
		printf "   %-10s %4s clients  %s;  %s;  %s;  %s\n" "$k" "$c" \
			"$(run_col "$k" "$c" 4 | awk '{ printf "%.0f ", $1 }')" \
			"$(run_col "$k" "$c" 5 | awk '{ printf "%.2f ", $1 }')" \
			"$(run_col "$k" "$c" 12 | awk '{ printf "%.1f ", $1 }')" \
			"$(run_col "$k" "$c" 13 | awk '{ printf "%.1f ", $1 }')"
	done
done
echo "   time: part 1 ${part1_s} s, part 2 ${part2_s} s, total ${SECONDS} s"

# ---------------------------------------------------------------- files
# Long format: one value per line.  part: insert (pgbench) or index (bulk
# load); run: the run number or "median" (for failed and aborted: "total").
if [ -n "$TSV" ]; then
	{
		echo "# snowflake INSERT benchmark, $(date -u '+%Y-%m-%d %H:%M UTC'), tree $head_rev, PostgreSQL $pg_version"
		echo "# $(nproc) CPUs ($cpu); load average at start $load_start, at end $load_end"
		echo "# cluster: $(printf '%s; ' "${conf[@]}")pgbench -T $SECS x $RUNS runs, -j min(clients,$JOBS); index rows $INDEX_ROWS"
		printf "part\tkey\tclients\trun\tmetric\tvalue\n"
		awk -v OFS='\t' '{
			print "insert", $1, $2, $3, "tps", $4
			print "insert", $1, $2, $3, "p99_ms", $5
			print "insert", $1, $2, $3, "mean_ms", $6
			print "insert", $1, $2, $3, "failed", $7
			print "insert", $1, $2, $3, "aborted_clients", $8
			print "insert", $1, $2, $3, "rows", $9
			print "insert", $1, $2, $3, "wal_bytes", $10
			print "insert", $1, $2, $3, "index_bytes", $11
			print "insert", $1, $2, $3, "window_seconds", $12
			print "insert", $1, $2, $3, "ramp_seconds", $13
			print "insert", $1, $2, $3, "pgbench_tps", $14
		}' "$clusters/runs.out"
		for k in "${keys[@]}"; do
			for c in "${clients[@]}"; do
				printf "insert\t%s\t%s\tmedian\ttps\t%s\n" "$k" "$c" "${tps[$k,$c]}"
				printf "insert\t%s\t%s\tmedian\tp99_ms\t%s\n" "$k" "$c" "${p99[$k,$c]}"
				printf "insert\t%s\t%s\tmedian\tmean_ms\t%s\n" "$k" "$c" "${mean[$k,$c]}"
				printf "insert\t%s\t%s\ttotal\tfailed\t%s\n" "$k" "$c" "${failed[$k,$c]}"
				printf "insert\t%s\t%s\ttotal\taborted_clients\t%s\n" "$k" "$c" "${aborted[$k,$c]}"
				printf "insert\t%s\t%s\tmedian\twal_bytes_per_row\t%s\n" "$k" "$c" "${walrow[$k,$c]}"
				printf "insert\t%s\t%s\tmedian\tindex_bytes_per_row\t%s\n" "$k" "$c" "${idxrow[$k,$c]}"
				if has_key bigserial; then
					printf "insert\t%s\t%s\tmedian\ttps_vs_bigserial\t%s\n" "$k" "$c" \
						"$(ratio "${tps[$k,$c]}" bigserial "${tps[bigserial,$c]}")"
				fi
				if [ "$k" = snowflake ] && has_key bigserial; then
					printf "insert\tsnowflake\t%s\tmedian\ttps_vs_bigserial_paired\t%s\n" "$c" \
						"$(paired_ratios "$c" | median)"
				fi
			done
		done
		if ((INDEX_ROWS > 0)); then
			for k in "${keys[@]}"; do
				printf "index\t%s\t1\t1\trows\t%s\n" "$k" "$INDEX_ROWS"
				printf "index\t%s\t1\t1\tindex_bytes\t%s\n" "$k" "${ix_bytes[$k]}"
				printf "index\t%s\t1\t1\tleaf_density_pct\t%s\n" "$k" "${ix_density[$k]}"
				printf "index\t%s\t1\t1\ttable_bytes\t%s\n" "$k" "${ix_table[$k]}"
				printf "index\t%s\t1\t1\tload_seconds\t%s\n" "$k" "${ix_secs[$k]}"
				printf "index\t%s\t1\t1\twal_bytes\t%s\n" "$k" "${ix_wal[$k]}"
				if has_key bigserial; then
					printf "index\t%s\t1\t1\tindex_vs_bigserial\t%s\n" "$k" \
						"$(ratio "${ix_bytes[$k]}" bigserial "${ix_bytes[bigserial]}")"
				fi
				if has_key uuidv4; then
					printf "index\t%s\t1\t1\tindex_vs_uuidv4\t%s\n" "$k" \
						"$(ratio "${ix_bytes[$k]}" uuidv4 "${ix_bytes[uuidv4]}")"
				fi
			done
		fi
	} >"$TSV"
	note "results written to $TSV"
fi

# Two panels: TPS (median, and the range of the runs as error bars) and
# p99 latency (median) against clients, one line per key, log x axis (log
# y for the latency, which spans 1000x).  The keys' points are spread a
# little sideways so that their error bars do not hide each other.
if [ -n "$PLOT" ]; then
	dat="$clusters/plot.dat"
	for c in "${clients[@]}"; do
		printf "%s" "$c"
		for k in "${keys[@]}"; do
			printf "\t%s\t%s\t%s\t%s" "${tps[$k,$c]}" "${tps_lo[$k,$c]}" "${tps_hi[$k,$c]}" "${p99[$k,$c]}"
		done
		echo
	done >"$dat"
	xtics=$(printf '%s,' "${clients[@]}")
	xmin=$(printf '%s\n' "${clients[@]}" | sort -g | head -1)
	tps_plot="" p99_plot=""
	for ((i = 0; i < nkeys; i++)); do
		col=$((2 + 4 * i))
		shift_x=$(calc "1 + 0.05 * ($i - ($nkeys - 1) / 2)")
		title=$(label "${keys[$i]}")
		tps_plot+=" '$dat' using (\$1 * $shift_x):$col:$((col + 1)):$((col + 2)) with yerrorlines lw 2 pt 7 lc $((i + 1)) title '$title',"
		p99_plot+=" '$dat' using 1:$((col + 3)) with linespoints lw 2 pt 7 lc $((i + 1)) title '$title',"
	done
	{
		echo "set terminal pngcairo noenhanced size 1280,540 font 'sans,11'"
		echo "set output '$PLOT'"
		echo "set datafile separator tab"
		echo "set key top left box opaque"
		echo "set grid"
		echo "set logscale x"
		echo "set xtics (${xtics%,})"
		echo "set xrange [$xmin / 1.6:$max_clients * 1.6]"
		echo "set xlabel 'clients (pgbench -c)'"
		printf 'set multiplot layout 1,2 title "%s\\n%s"\n' \
			"INSERT into a table with a primary key, one row per transaction: PostgreSQL $pg_version, $(nproc) CPUs, tree $head_rev" \
			"$(date -u '+%Y-%m-%d'); $(printf '%s; ' "${conf[@]}")steady-window figures, $RUNS runs of ~${SECS} s each"
		echo "set ylabel 'transactions per second (median; bars: lowest to highest run)'"
		echo "set yrange [0:*]"
		echo "set offsets 0, 0, graph 0.3, 0"
		echo "plot ${tps_plot%,}"
		echo "set ylabel 'p99 latency, ms (median of the runs)'"
		echo "set logscale y"
		echo "set yrange [*:*]"
		echo "set offsets 0, 0, 0, 0"
		echo "plot ${p99_plot%,}"
		echo "unset multiplot"
	} >"$clusters/plot.gp"
	gnuplot "$clusters/plot.gp"
	note "plot written to $PLOT"
fi
