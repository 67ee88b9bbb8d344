#!/usr/bin/env bash
# Throwaway PostgreSQL clusters for the shell tiers (test/clients/run.sh,
# test/fuzz/run.sh, test/docs/run.sh, test/demo.sh, bench/lib.sh); sourced,
# not run.  A script makes one private directory, starts its clusters in
# it, and leaves their stop and the directory's removal to the EXIT trap
# this file installs:
#
#   cluster_init DIR       the directory of the clusters (data directories,
#                          logs, Unix sockets), mode 700, owned by the
#                          clusters' OS user: made unique (mktemp) if DIR
#                          ends in XXXXXX, else emptied.  Sets CLUSTER_ROOT.
#   start_cluster [-p PORT] [-U SUPERUSER] [-i INITDB_ARG]... NAME [LINE]...
#                          initdb CLUSTER_ROOT/NAME (-A trust, superuser
#                          postgres unless -U), a Unix socket in
#                          CLUSTER_ROOT and no TCP, the port (PORT, else a
#                          free one) and the caller's postgresql.conf LINEs,
#                          and start it (log CLUSTER_ROOT/NAME.log); prints
#                          the log and fails if it does not start.  May run
#                          in the background (&) beside another.
#   cluster_port NAME      the port of a running cluster (its host is
#                          CLUSTER_ROOT)
#   free_port [FROM]       the first port from FROM (default 54320) that no
#                          TCP socket or PostgreSQL Unix socket on the
#                          machine uses and no cluster of CLUSTER_ROOT has
#                          taken, reserved for the caller
#   cluster_as_owner CMD   runs CMD as the clusters' OS user
#   cluster_on_exit CMD    the EXIT trap runs CMD too, after stopping the
#                          clusters and before removing the directory (a
#                          script sets no EXIT trap of its own)
#   cluster_keep=dir       (set by the caller, read at exit) stop the
#                          clusters but keep the directory, for a replay;
#   cluster_keep=running   leave the clusters running (the demo)
#
# PostgreSQL refuses to run as root: a script run as root (the demo, the
# benchmarks) runs initdb, pg_ctl and the rest as SNOWFLAKE_TEST_USER
# (default sftest; test/tester-env.sh creates it) with PG_BINDIR first on
# PATH; an unprivileged script runs them as itself.

CLUSTER_ROOT=
cluster_keep=
cluster_exit_commands=()

cluster_as_owner() {
	if [ "$(id -u)" -eq 0 ]; then
		(cd "${CLUSTER_ROOT:-/}" &&
			runuser -u "${SNOWFLAKE_TEST_USER:-sftest}" -- env PATH="${PG_BINDIR:+$PG_BINDIR:}$PATH" "$@")
	else
		"$@"
	fi
}

cluster_init() {
	local dir=$1
	case $dir in
	*XXXXXX) dir=$(mktemp -d "$dir") ;;
	*)
		rm -rf "$dir"
		mkdir -p "$dir"
		;;
	esac
	CLUSTER_ROOT=$dir
	chmod 700 "$CLUSTER_ROOT"
	if [ "$(id -u)" -eq 0 ]; then
		chown "${SNOWFLAKE_TEST_USER:-sftest}" "$CLUSTER_ROOT"
	fi
}

free_port() {
	local p used
	# Every TCP socket and every listening Unix socket on the machine (any
	# user's; /proc/net/unix is readable by all).
	used=$({ ss -Htan && ss -Hxl; } 2>/dev/null) || true
	for ((p = ${1:-54320}; p < 65000; p++)); do
		case $used in
		*":$p "* | *"/.s.PGSQL.$p "*) continue ;;
		esac
		# The reservation: noclobber makes the file's creation atomic, so
		# that two clusters started at once take two ports.
		if (set -o noclobber && : >"$CLUSTER_ROOT/.port.$p") 2>/dev/null; then
			echo "$p"
			return 0
		fi
	done
	echo "free_port: no free port from ${1:-54320}" >&2
	return 1
}

start_cluster() {
	local port='' superuser=postgres initdb_args=() opt OPTIND=1
	while getopts p:U:i: opt; do
		case $opt in
		p) port=$OPTARG ;;
		U) superuser=$OPTARG ;;
		i) initdb_args+=("$OPTARG") ;;
		*) return 2 ;;
		esac
	done
	shift $((OPTIND - 1))
	local name=$1 data="$CLUSTER_ROOT/$1" log="$CLUSTER_ROOT/$1.log"
	shift
	cluster_as_owner initdb -D "$data" -A trust -U "$superuser" --no-sync "${initdb_args[@]}" \
		>"$CLUSTER_ROOT/$name.initdb.log" 2>&1 ||
		{ cat "$CLUSTER_ROOT/$name.initdb.log"; return 1; }
	# The port is taken just before the start, from a random point, so
	# that scripts starting clusters at the same moment seldom pick the
	# same one.
	if [ -z "$port" ]; then
		port=$(free_port $((54320 + RANDOM % 1000))) || return 1
	else
		: >"$CLUSTER_ROOT/.port.$port"
	fi
	{
		echo "listen_addresses = ''"
		echo "unix_socket_directories = '$CLUSTER_ROOT'"
		echo "port = $port"
		printf '%s\n' "$@"
	} >>"$data/postgresql.conf"
	cluster_as_owner pg_ctl -D "$data" -l "$log" -w -t 120 start >/dev/null ||
		{ cat "$log"; return 1; }
}

# Line 4 of postmaster.pid is the port.
cluster_port() {
	sed -n 4p "$CLUSTER_ROOT/$1/postmaster.pid"
}

cluster_on_exit() {
	cluster_exit_commands+=("$*")
}

cluster_exit() {
	local d c
	set +e
	if [ -n "$CLUSTER_ROOT" ] && [ "$cluster_keep" != running ]; then
		for d in "$CLUSTER_ROOT"/*/; do
			[ -f "$d/postmaster.pid" ] &&
				cluster_as_owner pg_ctl -D "$d" -m immediate -w stop >/dev/null 2>&1
		done
	fi
	for c in "${cluster_exit_commands[@]}"; do
		eval "$c"
	done
	if [ -n "$CLUSTER_ROOT" ] && [ -z "$cluster_keep" ]; then
		rm -rf "$CLUSTER_ROOT"
	fi
}
trap cluster_exit EXIT
# An interrupt ends the script through its EXIT trap.
trap 'exit 130' INT
trap 'exit 143' TERM
