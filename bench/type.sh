#!/usr/bin/env bash
# The snowflake type against bigint: a primary key of type snowflake is
# served by the same index scans as a bigint one, at the same cost.  One
# command, run as root; prints one table measured in this run.  See
# docs/benchmarks.md ("The snowflake type against bigint").
#
#   bash bench/type.sh [15|17|18]
#
# Builds and installs the extension and bench/noop into a private copy of
# PostgreSQL (bench/lib.sh), starts one throwaway cluster as the tester
# user (Unix socket only; snowflake.max_drift = 60000 so that the bit limit
# never binds; shared_buffers = 512MB, so that both sets of tables stay in
# it) and, with bench/sql/type.sql, loads two identical sets of
# tables whose keys differ only in type:
#
#   t_bigint, t_snowflake  (id bigint|snowflake PRIMARY KEY, v int): the
#                          same BENCH_TYPE_ROWS IDs (2,000,000), from
#                          snowflake_nextval(n), in ID order
#   c_bigint, c_snowflake  (cid int PRIMARY KEY, parent bigint|snowflake
#                          REFERENCES t_...): BENCH_TYPE_CHILDREN children
#                          (ROWS / 10), each with a random parent, the same
#                          in both, and an index on parent
#
# then VACUUM ANALYZE (the tables have autovacuum off, so the statistics
# stay as this leaves them), compares each statement's plan for both
# (EXPLAIN, before and after the rounds) and fails if the two differ or a
# snowflake lookup or range does not scan its primary key, and times, inside the server, in BENCH_TYPE_RUNS
# rounds (9) after a warm-up round; in each round every operation
# BENCH_TYPE_ALTERNATIONS (8) times in the order A B B A (join_all and the
# baselines once), the variants turning which is A, each unit a timed
# statement:
#
#   insert          INSERT INTO ins_K (v) VALUES (i), the key DEFAULT
#                   snowflake_nextval(), BENCH_TYPE_INSERTS (2,000) single
#                   statements; also into a bigserial key and a uuid key
#                   DEFAULT gen_random_uuid() (baselines)
#   insert_child    INSERT INTO c_K, the same count, each row checked by the
#                   foreign key against t_K's key
#   lookup          SELECT v FROM t_K WHERE id = k, k a PL/pgSQL variable of
#                   the key's type (a cached plan with a parameter), for
#                   BENCH_TYPE_LOOKUPS (4,000) random IDs
#   lookup_literal  the same with the ID as a literal, parsed and planned
#                   each time, BENCH_TYPE_LITERALS (1,000) of them
#   range           SELECT count(v) FROM t_K WHERE id BETWEEN lo AND hi,
#                   BENCH_TYPE_WINDOWS (4) windows of BENCH_TYPE_RANGE_ROWS
#                   (10,000) rows spread over the table
#   ts_range        the same windows written as snowflake_timestamp(id) >= a
#                   AND snowflake_timestamp(id) < b (the planner's rewrite)
#   ts_cast         on the snowflake key, the same as id::timestamptz >= a
#                   AND id::timestamptz < b (the type's cast), against
#                   bigint's ts_range
#   join_window     children JOIN parents ON p.id = c.parent for a window of
#                   BENCH_TYPE_JOIN_CHILDREN (1,000) children, per window
#   join_all        the same join over all the loaded children
#
# and, in the same rounds, bench/run.sh's part 1 statement over
# BENCH_TYPE_PERCALL_N (200,000) calls of 1, the no-op C function,
# snowflake_nextval(), nextval() on a sequence and gen_random_uuid() (the
# baselines).  Every operation returns a check value (a sum of what it
# read), which must be the same for both kinds.  It reports, per
# operation, the median time of each kind and the median of the per-round
# ratios snowflake / bigint, and the sizes of the tables and indexes.
# About 2 to 3 minutes on the shared 2-CPU machine, the build included.
#
# bench/run.sh sources this file for its part 9 (type_measure and
# type_report below, on its cluster B).
#
# Knobs (environment; defaults above): BENCH_TYPE_ROWS, BENCH_TYPE_CHILDREN,
# BENCH_TYPE_RUNS, BENCH_TYPE_ALTERNATIONS, BENCH_TYPE_INSERTS,
# BENCH_TYPE_LOOKUPS, BENCH_TYPE_LITERALS, BENCH_TYPE_WINDOWS,
# BENCH_TYPE_RANGE_ROWS, BENCH_TYPE_JOIN_CHILDREN, BENCH_TYPE_PERCALL_N (a
# multiple of 4000).

TYPE_ROWS=${BENCH_TYPE_ROWS:-2000000}
TYPE_CHILDREN=${BENCH_TYPE_CHILDREN:-$((TYPE_ROWS / 10))}
TYPE_RUNS=${BENCH_TYPE_RUNS:-9}
TYPE_INSERTS=${BENCH_TYPE_INSERTS:-2000}
TYPE_LOOKUPS=${BENCH_TYPE_LOOKUPS:-4000}
TYPE_LITERALS=${BENCH_TYPE_LITERALS:-1000}
TYPE_WINDOWS=${BENCH_TYPE_WINDOWS:-4}
TYPE_ALTERNATIONS=${BENCH_TYPE_ALTERNATIONS:-8}
TYPE_RANGE_ROWS=${BENCH_TYPE_RANGE_ROWS:-10000}
TYPE_JOIN_CHILDREN=${BENCH_TYPE_JOIN_CHILDREN:-1000}
TYPE_PERCALL_N=${BENCH_TYPE_PERCALL_N:-200000}

type_ops=(insert insert_child lookup lookup_literal range ts_range ts_cast join_window join_all)
type_exprs=("1" "snowflake_bench_noop()" "snowflake_nextval()" "nextval('bench_seq')" "gen_random_uuid()")

# type_measure PORT: loads the tables into the "bench" database of the
# cluster on PORT (setup.sql already loaded), checks the plans and times
# the rounds; leaves its results in $clusters/type.*.  Exits if a plan or a
# check value differs between the kinds.
type_measure() {
	local port=$1 t0 kind
	sql "$port" -f "$SNOWFLAKE_WORKDIR/bench/sql/type.sql" >/dev/null
	note "type: $TYPE_ROWS IDs and $TYPE_CHILDREN children into t_bigint/c_bigint and t_snowflake/c_snowflake"
	t0=$SECONDS
	sql "$port" -c "SELECT bench_type_data($TYPE_ROWS, $TYPE_CHILDREN, $TYPE_LOOKUPS, $TYPE_WINDOWS,
		$TYPE_RANGE_ROWS, $TYPE_JOIN_CHILDREN)" >/dev/null
	: >"$clusters/type.load"
	for kind in bigint snowflake; do
		sql "$port" -c "SELECT '$kind', step, ms FROM bench_type_load('$kind')" >>"$clusters/type.load"
	done
	sql "$port" -c "VACUUM ANALYZE" >/dev/null
	type_load_s=$((SECONDS - t0))

	# The same IDs in both: count, sum, smallest and largest.
	local same
	same=$(sql "$port" -c "SELECT (SELECT (count(*), sum(id), min(id), max(id)) FROM t_bigint)
		= (SELECT (count(*), sum(id), min(id), max(id)) FROM t_snowflake)")
	if [ "$same" != t ]; then
		echo "bench/type.sh: t_bigint and t_snowflake do not hold the same IDs" >&2
		exit 1
	fi

	note "type: plans (EXPLAIN)"
	type_check_plans "$port" before
	note "type: $TYPE_RUNS rounds and a warm-up"
	t0=$SECONDS
	sql "$port" -c "SELECT * FROM bench_type_rounds($TYPE_RUNS, $TYPE_ALTERNATIONS, $TYPE_INSERTS,
		$TYPE_LITERALS, $TYPE_PERCALL_N)" >"$clusters/type.runs"
	type_rounds_s=$((SECONDS - t0))
	# The plans again: the rounds' INSERTs must not have changed them.
	type_check_plans "$port" after
	# Per operation, variant and round: the mean of its units, their check
	# values summed, the fastest unit.
	awk -F'|' '{ k = $1 "|" $2 "|" $3; s[k] += $4; c[k] += $5; n[k]++; if (!(k in m) || $4 < m[k]) m[k] = $4 }
		END { for (k in s) printf "%s|%.4f|%s|%.4f\n", k, s[k] / n[k], c[k], m[k] }' "$clusters/type.runs" |
		sort -t'|' -k1,1 -k2,2 -k3,3n >"$clusters/type.rounds"
	# Both kinds read the same values in every round.
	local differ
	differ=$(awk -F'|' '$2 == "bigint" || $2 == "snowflake" { v[$1 "|" $3 "|" $2] = $5; k[$1 "|" $3] = 1 }
		END { for (x in k) if (v[x "|bigint"] != v[x "|snowflake"]) print x ": " v[x "|bigint"] " " v[x "|snowflake"] }' \
		"$clusters/type.rounds")
	if [ -n "$differ" ]; then
		echo "bench/type.sh: bigint and snowflake read different values (operation|round: bigint snowflake):" >&2
		echo "$differ" >&2
		exit 1
	fi

	sql "$port" -c "SELECT r, pg_relation_size(r) FROM unnest(ARRAY['t_bigint', 't_snowflake',
		't_bigint_pkey', 't_snowflake_pkey', 'c_bigint', 'c_snowflake', 'c_bigint_parent',
		'c_snowflake_parent', 'ins_bigint_pkey', 'ins_snowflake_pkey', 'ins_bigserial_pkey',
		'ins_uuid_pkey']) AS r" >"$clusters/type.sizes"
	IFS='|' read -r type_first_ts type_last_ts < <(sql "$port" -c "
		SELECT to_char(snowflake_timestamp(min(id)) AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.MS'),
		       to_char(snowflake_timestamp(max(id)) AT TIME ZONE 'UTC', 'HH24:MI:SS.MS')
		  FROM t_bigint")
}

# type_check_plans PORT WHEN: bench_type_plans() into $clusters/type.plans
# (WHEN: before or after the rounds); exits if a statement's plan differs
# between the kinds, or if a snowflake lookup or range (by ID or by
# timestamp) does not scan the key's index.
type_check_plans() {
	local port=$1 when=$2 op j b s bad=0
	sql "$port" -c "SELECT op, kind, j, shape, coalesce(index_cond, '-') FROM bench_type_plans()" \
		>"$clusters/type.plans"
	while IFS='|' read -r op j; do
		b=$(type_plan "$op" bigint 4 "$j")
		s=$(type_plan "$op" snowflake 4 "$j")
		if [ -z "$b" ] || [ "$b" != "$s" ]; then
			echo "bench/type.sh: the plans of $op (window $j) differ $when the rounds (K: the key's type):" >&2
			echo "  bigint:    $b" >&2
			echo "  snowflake: $s" >&2
			bad=1
		fi
		# (The joins: the planner picks by the tables' sizes, for both alike.)
		case $op:$s in
			join_*) ;;
			*:*"Index Scan using t_K_pkey"* | *:*"Index Only Scan using t_K_pkey"*) ;;
			*)
				echo "bench/type.sh: the snowflake plan of $op (window $j) does not scan t_snowflake_pkey" \
					"$when the rounds: $s" >&2
				bad=1
				;;
		esac
	done < <(awk -F'|' '{ print $1 "|" $3 }' "$clusters/type.plans" | sort -u)
	if ((bad)); then exit 1; fi
}
# type_plan OP KIND FIELD [WINDOW]: a column of bench_type_plans()'s row
# (the first window's, unless WINDOW).
type_plan() {
	awk -F'|' -v o="$1" -v k="$2" -v f="$3" -v j="${4:-1}" '$1 == o && $2 == k && $3 == j { print $f }' \
		"$clusters/type.plans"
}
# The distinct plans of an operation's windows, for one kind.
type_plan_shapes() {
	awk -F'|' -v o="$1" -v k="$2" '$1 == o && $2 == k && !seen[$4]++ { print $4 }' "$clusters/type.plans" |
		paste -sd';' | sed 's/;/; /g'
}
# The ms per unit of one operation and kind in each timed round (run 0 is
# the warm-up).
type_ms() { awk -F'|' -v o="$1" -v k="$2" '$1 == o && $2 == k && $3 > 0 { print $4 }' "$clusters/type.rounds"; }
# Its fastest unit of all the timed rounds.
type_fastest() {
	awk -F'|' -v o="$1" -v k="$2" '$1 == o && $2 == k && $3 > 0 { print $6 }' "$clusters/type.rounds" |
		sort -g | head -1
}
# The ratio KIND / bigint of each round.
type_ratios() {
	awk -F'|' -v o="$1" -v k="$2" '$1 == o && $3 > 0 { if ($2 == k) a[$3] = $4; if ($2 == "bigint") b[$3] = $4 }
		END { for (r in a) if (r in b && b[r] > 0) printf "%.4f\n", a[r] / b[r] }' "$clusters/type.rounds" | sort -g
}
# The units of an operation per kind and round.
type_units() { if [ "$1" = join_all ]; then echo 2; else echo $((2 * TYPE_ALTERNATIONS)); fi; }
# The mean unit of each round of an operation and kind, round 0 first.
type_raw() {
	awk -F'|' -v o="$1" -v k="$2" '$1 == o && $2 == k { printf "%.1f ", $4 }' "$clusters/type.rounds"
}
type_size() { awk -F'|' -v r="$1" '$1 == r { print $2 }' "$clusters/type.sizes"; }
# What one timed unit of an operation holds, and its count.
type_unit() {
	case $1 in
		insert | insert_child) echo "$TYPE_INSERTS row" ;;
		lookup) echo "$TYPE_LOOKUPS lookup" ;;
		lookup_literal) echo "$TYPE_LITERALS lookup" ;;
		range | ts_range | ts_cast | join_window) echo "$TYPE_WINDOWS statement" ;;
		join_all) echo "1 statement" ;;
	esac
}

# type_report [INDENT]: the results of type_measure, as a table.
type_report() {
	local ind=${1:-} op kind n what b s ratio rmin rmax e rows
	echo "${ind}data: $TYPE_ROWS IDs from snowflake_nextval(n), timestamps $type_first_ts" \
		"to $type_last_ts UTC,"
	echo "${ind}  the same in t_bigint and t_snowflake; $TYPE_CHILDREN children, loaded and VACUUM ANALYZEd" \
		"in ${type_load_s} s"
	printf "%s  load, ms: %-18s %10s %10s %8s\n" "$ind" "step" "bigint" "snowflake" "ratio"
	while read -r step; do
		b=$(awk -F'|' -v s="$step" '$1 == "bigint" && $2 == s { print $3 }' "$clusters/type.load")
		s=$(awk -F'|' -v s="$step" '$1 == "snowflake" && $2 == s { print $3 }' "$clusters/type.load")
		printf "%s            %-18s %10.1f %10.1f %8.3f\n" "$ind" "$step" "$b" "$s" "$(calc "$s / $b")"
	done < <(awk -F'|' '$1 == "bigint" { print $2 }' "$clusters/type.load")
	echo
	echo "${ind}Plans, EXPLAIN of every statement before and after the rounds (t_K: t_bigint or t_snowflake;"
	echo "${ind}the same for both, or the run fails; lookup: the generic plan of PREPARE ... WHERE id = \$1,"
	echo "${ind}\$1 of the key's type; the window statements: every window's, here the distinct ones):"
	for op in lookup lookup_literal range ts_range ts_cast join_window join_all; do
		printf "%s  %-15s %s\n" "$ind" "$op" "$(type_plan_shapes "$op" snowflake)"
	done
	printf "%s  ts_range's index condition, snowflake: %s\n" "$ind" "$(type_plan ts_range snowflake 5)"
	printf "%s  ts_cast's: %s\n" "$ind" "$(type_plan ts_cast snowflake 5)"
	echo
	echo "${ind}Time, server-side, $TYPE_RUNS rounds; in each, every unit $((2 * TYPE_ALTERNATIONS)) times per kind, in $TYPE_ALTERNATIONS turns of"
	echo "${ind}A B B A (join_all: one turn): medians of the rounds' means, ms per unit and microseconds per row,"
	echo "${ind}lookup or statement (bigint, then snowflake); ratio: snowflake / bigint of each round's means,"
	echo "${ind}median and range; fastest: of the fastest units; rows: the rows a statement finds, on average"
	printf "%s  %-15s %-17s %9s %9s %9s %9s %7s %13s %7s %7s\n" "$ind" "operation" "unit" "bigint" "snowflake" \
		"per, us" "per, us" "ratio" "range" "fastest" "rows"
	for op in "${type_ops[@]}"; do
		read -r n what <<<"$(type_unit "$op")"
		b=$(type_ms "$op" bigint | median)
		s=$(type_ms "$op" snowflake | median)
		ratio=$(type_ratios "$op" snowflake | median)
		rmin=$(type_ratios "$op" snowflake | head -1)
		rmax=$(type_ratios "$op" snowflake | tail -1)
		case $what in
			# (the check value is the sum of the round's units' counts)
			statement) rows=$(awk -F'|' -v o="$op" -v n="$n" -v u="$(type_units "$op")" \
				'$1 == o && $2 == "bigint" { print $5 / n / u; exit }' "$clusters/type.rounds") ;;
			*) rows=- ;;
		esac
		printf "%s  %-15s %-17s %7.1fms %7.1fms %9.2f %9.2f %7.3f %13s %7.3f %7s\n" "$ind" "$op" \
			"$n $what$( ((n == 1)) || echo s)" "$b" "$s" "$(calc "$b * 1000 / $n")" "$(calc "$s * 1000 / $n")" \
			"$ratio" "$(fmt "%.3f" "$rmin")-$(fmt "%.3f" "$rmax")" \
			"$(calc "$(type_fastest "$op" snowflake) / $(type_fastest "$op" bigint)")" "$rows"
	done
	b=$(type_ms insert bigint | median)
	echo "${ind}  INSERT baselines, the same $TYPE_INSERTS single-row INSERTs, per row, and against a bigint key"
	echo "${ind}  DEFAULT snowflake_nextval() (ratio of each round, median):"
	for kind in bigserial uuid; do
		s=$(type_ms insert "$kind" | median)
		printf "%s    %-34s %8.2f us   %6.3fx\n" "$ind" \
			"$(if [ "$kind" = uuid ]; then echo "uuid DEFAULT gen_random_uuid()"; else echo "bigserial"; fi)" \
			"$(calc "$s * 1000 / $TYPE_INSERTS")" "$(type_ratios insert "$kind" | median)"
	done
	echo "${ind}  per call, bench/run.sh's part 1 statement, $TYPE_PERCALL_N calls, in the same rounds:"
	b=$(type_ms percall 1 | median)
	for e in "${type_exprs[@]}"; do
		[ "$e" = 1 ] && continue
		s=$(type_ms percall "$e" | median)
		printf "%s    %-34s %8.1f ns over count(1)\n" "$ind" "$e" "$(calc "($s - $b) * 1e6 / $TYPE_PERCALL_N")"
	done
	echo
	echo "${ind}Sizes (pg_relation_size), bytes:"
	printf "%s  %-20s %12s %12s %8s\n" "$ind" "relation" "bigint" "snowflake" "ratio"
	for r in t t_pkey c c_parent ins_pkey; do
		b=$(type_size "${r%%_*}_bigint${r#"${r%%_*}"}")
		s=$(type_size "${r%%_*}_snowflake${r#"${r%%_*}"}")
		printf "%s  %-20s %12s %12s %8.4f\n" "$ind" "${r%%_*}_K${r#"${r%%_*}"}" "$b" "$s" "$(calc "$s / $b")"
	done
	printf "%s  %-20s %12s %12s   (ins_bigserial_pkey, ins_uuid_pkey)\n" "$ind" "baselines" \
		"$(type_size ins_bigserial_pkey)" "$(type_size ins_uuid_pkey)"
	echo
	echo "${ind}Targets"
	local worst="" worst_op="" r
	for op in lookup lookup_literal range ts_range ts_cast join_window; do
		r=$(type_ratios "$op" snowflake | median)
		if [ -z "$worst" ] || awk "BEGIN { exit !(($r > 1 ? $r - 1 : 1 - $r) > ($worst > 1 ? $worst - 1 : 1 - $worst)) }"; then
			worst=$r worst_op=$op
		fi
	done
	b=$(type_size t_bigint_pkey)
	s=$(type_size t_snowflake_pkey)
	printf "%s  %-50s %-22s %-14s %s\n" "$ind" "plans of snowflake and bigint" "identical" "identical" "PASS"
	printf "%s  %-50s %-22s %-14s %s\n" "$ind" "primary key size snowflake / bigint" "$(fmt "%.4f" "$(calc "$s / $b")")x" \
		"1.0000x" "$(pass_if "$s == $b")"
	printf "%s  %-50s %-22s %-14s %s\n" "$ind" "reads by key, ratio furthest from 1 (median)" \
		"$(fmt "%.3f" "$worst")x ($worst_op)" "0.95-1.05x" "$(pass_if "$worst >= 0.95 && $worst <= 1.05")"
	r=$(type_ratios insert snowflake | median)
	printf "%s  %-50s %-22s %-14s %s\n" "$ind" "INSERT per row, ratio (median)" "$(fmt "%.3f" "$r")x" \
		"0.95-1.05x" "$(pass_if "$r >= 0.95 && $r <= 1.05")"
	echo
	echo "${ind}Raw runs, ms per unit, the mean of each round's units (round 0, the warm-up, not counted):"
	for op in "${type_ops[@]}"; do
		for kind in bigint snowflake; do
			printf "%s  %-15s %-10s %s\n" "$ind" "$op" "$kind" "$(type_raw "$op" "$kind")"
		done
	done
	for kind in bigserial uuid; do
		printf "%s  %-15s %-10s %s\n" "$ind" insert "$kind" "$(type_raw insert "$kind")"
	done
	echo "${ind}  time: load ${type_load_s} s, rounds ${type_rounds_s} s"
}

# Run, not sourced: the whole benchmark on a cluster of its own.
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	set -euo pipefail
	top=$(cd "$(dirname "$0")/.." && pwd)
	# shellcheck source=bench/lib.sh
	. "$top/bench/lib.sh"
	bench_require_root

	bench_pg_version "${1:-}"
	"$top/test/install-deps.sh"
	export SNOWFLAKE_WORKDIR=/tmp/sf-bench-type
	# shellcheck source=test/tester-env.sh
	. "$top/test/tester-env.sh"
	cluster_on_exit bench_cleanup
	bench_copy_postgres /tmp/sf-bench-type-pg

	bench_build_with_noop "$top"

	bench_clusters_dir /tmp/sf-bench-type-clusters
	port=$(free_port 54380)
	note "starting a cluster (snowflake.max_drift = 60000, shared_buffers = 512MB) on port $port"
	bench_start type "$port" snowflake "snowflake.max_drift = 60000" "shared_buffers = 512MB"
	sql "$port" -c "CREATE EXTENSION snowflake"
	sql "$port" -f "$SNOWFLAKE_WORKDIR/bench/sql/setup.sql" >/dev/null

	type_measure "$port"

	cpu=$(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)
	echo
	echo "snowflake type benchmark  $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "machine: $(nproc) CPUs ($cpu), kernel $(uname -r); load average $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "tree: $(git -c safe.directory="$top" -C "$top" describe --always --dirty --abbrev=7 2>/dev/null || echo '?')," \
		"PostgreSQL $(sql "$port" -c 'SHOW server_version')"
	type_report ""
	echo "total time: ${SECONDS}s"
fi
