#!/usr/bin/env bash
# Shared by the benchmark scripts (bench/run.sh, bench/insert.sh, ...);
# sourced, not run.  The sourcing script sets SNOWFLAKE_WORKDIR, sources
# test/tester-env.sh and registers bench_cleanup (cluster_on_exit
# bench_cleanup); then:
#
#   bench_pg_version [VERSION]   the server version to run against
#   bench_copy_postgres PREFIX   a private copy of PostgreSQL
#   bench_build_with_noop TOP    build and install this tree and bench/noop
#   bench_clusters_dir PREFIX    the directory of the throwaway clusters
#   bench_start, restart_cluster, sql, and test/lib/cluster.sh's free_port
#   median, calc, fmt, pass_if
#
# Everything these create, the EXIT trap of test/lib/cluster.sh stops and
# removes (the clusters), then bench_cleanup (the rest).

# shellcheck source=test/lib/cluster.sh
. "$(dirname "${BASH_SOURCE[0]}")/../test/lib/cluster.sh"

note() { echo "bench: $*" >&2; }

# bench_require_root: the scripts install into their copy of PostgreSQL
# and run the clusters through runuser.
bench_require_root() {
	if [ "$(id -u)" -ne 0 ]; then
		echo "$0: run as root (it installs the extension)" >&2
		exit 1
	fi
}

clusters=""
pg_priv=""
# After the clusters' stop: their programs are in pg_priv.
bench_cleanup() {
	[ -n "$pg_priv" ] && rm -rf "$pg_priv"
	rm -rf "$SNOWFLAKE_WORKDIR"
}

# The PostgreSQL major version the benchmarks run against: the script's
# first argument, else BENCH_PG_VERSION, else 15 (Debian 12's server).
# Other versions are the source builds of test/install-pg-versions.sh,
# which test/install-deps.sh makes (and caches) when SNOWFLAKE_PG_VERSIONS
# names them.
bench_pg_version() {
	bench_version=${1:-${BENCH_PG_VERSION:-15}}
	case $bench_version in
		15 | 17 | 18) ;;
		*)
			echo "$0: PostgreSQL $bench_version is not one the benchmarks run against (15, 17, 18)" >&2
			exit 2
			;;
	esac
	export SNOWFLAKE_PG_VERSIONS=$bench_version
}

# A private copy of the PostgreSQL installation of bench_version (for 15,
# its programs, libraries, share and include directories, at the same
# paths under PREFIX.XXXXXX; for a source build, its whole prefix):
# everything the benchmark builds goes in there, so it neither replaces nor
# is replaced by another checkout's "make install" on a shared machine.
# PostgreSQL finds its directories relative to its programs, so the copy
# works as it is; PG_CONFIG (read by the Makefiles) and PG_BINDIR (the
# tester's PATH, test/tester-env.sh) point into it, pkglibdir is its
# library directory.
bench_copy_postgres() {
	local d sys_bindir
	pg_priv=$(mktemp -d "$1.XXXXXX")
	chmod 755 "$pg_priv"
	if [ "${bench_version:-15}" = 15 ]; then
		sys_bindir=$(pg_config --bindir)
		for d in "$(dirname "$sys_bindir")" "$(pg_config --sharedir)" "$(pg_config --includedir)"; do
			(cd / && cp -a --parents "${d#/}" "$pg_priv")
		done
		export PG_CONFIG="$pg_priv$sys_bindir/pg_config"
	else
		cp -a "$(readlink -f "${SNOWFLAKE_PG_CACHE:-/var/cache/snowflake-pg}/$bench_version")/pg" "$pg_priv/pg"
		export PG_CONFIG="$pg_priv/pg/bin/pg_config"
	fi
	# shellcheck disable=SC2034  # read by as_tester (test/tester-env.sh)
	PG_BINDIR=$("$PG_CONFIG" --bindir)
	pkglibdir=$("$PG_CONFIG" --pkglibdir)
	case $pkglibdir in
		"$pg_priv"/*) ;;
		*)
			echo "$0: the copy of PostgreSQL in $pg_priv still installs into $pkglibdir" >&2
			exit 1
			;;
	esac
}

# bench_build_with_noop TOP: builds this tree as the tester and installs
# it, with the no-op C function of bench/noop/ (a baseline), into the
# PostgreSQL of PG_CONFIG.
bench_build_with_noop() {
	note "building and installing snowflake and bench/noop"
	prepare_tester_copy "$1"
	build_and_install
	as_tester make -s -C bench/noop clean >/dev/null
	as_tester make -s -C bench/noop
	make -s -C "$SNOWFLAKE_WORKDIR/bench/noop" install >/dev/null
}

# bench_clusters_dir PREFIX: PREFIX.XXXXXX, the tester's only, for the
# clusters' data directories, logs and Unix sockets.
bench_clusters_dir() {
	cluster_init "$1.XXXXXX"
	clusters=$CLUSTER_ROOT
}

# bench_start NAME PORT LIBRARY [extra postgresql.conf lines]: a cluster
# whose superuser is the tester (psql and pgbench need no -U), in UTF8 and
# the C locale, with a database "bench".
bench_start() {
	local name=$1 port=$2 library=$3
	shift 3
	start_cluster -p "$port" -U "$SNOWFLAKE_TEST_USER" -i -E -i UTF8 -i --locale=C "$name" \
		"shared_preload_libraries = '$library'" "$@"
	as_tester createdb -h "$clusters" -p "$port" bench
}

# A new postmaster: its backends get a new address-space layout (ASLR),
# which moved part 1's timings by up to ~30 % from one start to the next.
restart_cluster() {
	as_tester pg_ctl -D "$clusters/$1" -l "$clusters/$1.log" -m fast -w -t 60 restart >/dev/null
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
