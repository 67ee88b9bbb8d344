#!/usr/bin/env bash
# The fuzz tier: on one throwaway cluster with the extension preloaded,
# sqlsmith's random queries, as an ordinary role, in a database with tables
# of snowflake IDs and SQL copies of the extension's functions.  What
# sqlsmith catches is a crash or a statement that ignores the cancel of
# statement_timeout, not its own errors.  After it: the postmaster runs,
# a session opened at the start is still there (a crash ends every
# session), the server log shows no crash, and no query is left running.
# Prints the statement count, the seed, and last
#   fuzz: N checks passed
# Exits non-zero on any failure, keeping the cluster's directory (scripts,
# outputs, server log) for a replay.  Run as the unprivileged tester with
# the extension installed (test/run-tests.sh does).
#
#   FUZZ_SEED              sqlsmith's seed (default: random; printed)
#   FUZZ_SQLSMITH_SECONDS  how long sqlsmith runs (default 40)
#   FUZZ_SQLSMITH_QUERIES  the most queries it sends (default 100000)
#   FUZZ_STATEMENT_TIMEOUT the statement_timeout of sqlsmith's sessions
#                          (default 5s; its setup runs without one)
#   FUZZ_TIMEOUT           the approximate limit of the whole tier, in seconds
#                          (default 180): each step gets what is left, but at
#                          least a few seconds, and the checks at the end wait
#                          for the statement timeout, so a run that reaches
#                          the limit overshoots it by up to a minute or so
#   FUZZ_PORT              the cluster's port, on a Unix socket only (default: a
#                          free one)
#   FUZZ_KEEP              1: keep the cluster's directory even when all passed
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

seed=${FUZZ_SEED:-$(((RANDOM << 15 | RANDOM) % 2147483647))}
sqlsmith_seconds=${FUZZ_SQLSMITH_SECONDS:-40}
sqlsmith_queries=${FUZZ_SQLSMITH_QUERIES:-100000}
statement_timeout=${FUZZ_STATEMENT_TIMEOUT:-5s}
total_timeout=${FUZZ_TIMEOUT:-180}
start=$SECONDS
deadline=$((SECONDS + total_timeout))
# sqlsmith's run is cut by time and steered by the errors it meets, so a
# run with the same seed is not exactly a replay (its query count is
# printed below: FUZZ_SQLSMITH_QUERIES set to it comes closer).
echo "fuzz: seed $seed (FUZZ_SEED=$seed FUZZ_SQLSMITH_SECONDS=$sqlsmith_seconds FUZZ_SQLSMITH_QUERIES=$sqlsmith_queries FUZZ_STATEMENT_TIMEOUT=$statement_timeout bash test/fuzz/run.sh comes close to a replay)"

# shellcheck source=test/lib/cluster.sh
. "$here/../lib/cluster.sh"
cluster_init /tmp/snowflake-fuzz.XXXXXX
tmp=$CLUSTER_ROOT
data=$tmp/server
log=$tmp/server.log
work=$tmp/work
mkdir -p "$work"
checks=0
failures=()
watcher=
check() {
	local what=$1
	shift
	if "$@"; then
		checks=$((checks + 1))
	else
		failures+=("$what")
		echo "fuzz: FAILED: $what"
	fi
}
# After the cluster's stop (test/lib/cluster.sh).
cleanup() {
	if [ -n "$watcher" ]; then
		kill "$watcher" 2>/dev/null || true
	fi
	if [ ${#failures[@]} -ne 0 ] || [ "${FUZZ_KEEP:-0}" = 1 ]; then
		cluster_keep=dir
		echo "fuzz: kept $tmp (scripts and outputs in work/, the server log in server.log)"
	fi
}
cluster_on_exit cleanup
trap 'failures+=("interrupted"); exit 1' INT TERM
# The time left before the tier's limit, for a step that may take $1 at most.
left() {
	local want=$1 rest=$((deadline - SECONDS))
	[ "$rest" -lt 5 ] && rest=5
	[ "$want" -lt "$rest" ] && rest=$want
	echo "$rest"
}

# sqlsmith's errors would flood the log: only LOG, FATAL and PANIC
# (crashes, with their query) go there; and no JIT, whose compile time
# would dwarf the queries'.  A query whose client went away (sqlsmith
# stopped by its time limit) ends (client_connection_check_interval).
start_cluster ${FUZZ_PORT:+-p "$FUZZ_PORT"} server \
	"shared_preload_libraries = 'snowflake'" \
	"fsync = off" \
	"max_connections = 40" \
	"max_prepared_transactions = 4" \
	"snowflake.lease_workers = 16" \
	"log_line_prefix = '%m [%p] %a '" \
	"log_min_error_statement = panic" \
	"log_min_messages = log" \
	"jit = off" \
	"client_connection_check_interval = 1000"
port=$(cluster_port server)

export PGHOST=$tmp PGPORT=$port PGUSER=postgres PGDATABASE=fuzz PGCONNECT_TIMEOUT=10
export HOME=$tmp
psql_admin() { psql -X -q -At -v ON_ERROR_STOP=1 -d postgres "$@"; }
# The setup runs with statement_timeout=0 (PGOPTIONS), so that a slow
# CREATE INDEX or ANALYZE on a loaded machine is no hang.
psql_admin -v st="$statement_timeout" <<'EOF'
CREATE ROLE smith LOGIN;
CREATE DATABASE fuzz;
CREATE DATABASE smith;
ALTER DATABASE fuzz SET statement_timeout = :'st';
ALTER ROLE smith SET statement_timeout = :'st';
ALTER ROLE smith SET idle_in_transaction_session_timeout = :'st';
EOF
# The timeout in milliseconds, as the server reads it (0: none).
statement_timeout_ms=$(psql -X -At -d fuzz -c "SELECT setting FROM pg_settings WHERE name = 'statement_timeout'")
# The extension in "postgres" too: a second database with a node registry
# (snowflake.database is '', so every database with the extension has one).
psql_admin -c 'CREATE EXTENSION snowflake'
psql -X -q -v ON_ERROR_STOP=1 -d fuzz -c 'CREATE EXTENSION snowflake'

# What must last: the postmaster, and a session opened now (a crash of any
# backend makes the postmaster end every session and start them anew).
postmaster_pid=$(head -n 1 "$data/postmaster.pid")
PGAPPNAME=fuzz_watcher psql -X -q -At -d postgres \
	-c 'SET statement_timeout = 0' -c 'SELECT pg_sleep(100000)' >"$tmp/watcher.out" 2>&1 &
watcher=$!
watcher_active() {
	while kill -0 "$watcher" 2>/dev/null && [ "$SECONDS" -lt "$deadline" ]; do
		[ "$(psql_admin -c "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'fuzz_watcher' AND state = 'active' AND query = 'SELECT pg_sleep(100000)'")" = 1 ] &&
			return 0
		sleep 0.1
	done
	cat "$tmp/watcher.out" >&2
	return 1
}
check "the session opened at the start (fuzz_watcher) is running" watcher_active

# ---------------------------------------------------------------- sqlsmith
# Its database: the extension, tables of snowflake IDs and edge values, and
# SQL copies of the extension's functions in schema sfwrap (sqlsmith draws
# functions from the whole catalog, which has thousands; the copies make
# ours a good share of its draws).  Its role is no superuser: it has what
# PUBLIC has (EXECUTE on most built-in functions, among them set_config(),
# which could lift its timeout), plus these tables and the lease
# functions; statement_timeout is a setting of the role, so each of its
# sessions starts with it.  The cluster listens on a Unix socket in $tmp
# only.
echo "--- sqlsmith"
smith_setup() {
	PGOPTIONS='-c statement_timeout=0' psql -X -q -v ON_ERROR_STOP=1 -d smith <<'EOF'
CREATE EXTENSION snowflake;
CREATE TABLE sf_events (
    id bigint PRIMARY KEY DEFAULT snowflake_nextval(),
    at timestamptz, ts timestamp, span interval, note text, ok boolean, n integer, big bigint);
INSERT INTO sf_events (at, ts, span, note, ok, n, big)
SELECT (ARRAY['infinity', '-infinity', '4714-11-24 00:00:00+00 BC', '294276-12-31 23:59:59+00', 'epoch',
              '2025-01-01 00:00:00+00', now()::text, (now() - interval '1 hour')::text])[1 + g % 8]::timestamptz,
       (ARRAY['infinity', '-infinity', 'epoch', '2025-01-01', now()::text])[1 + g % 5]::timestamp,
       (ARRAY['0', '1 ms', '-1 ms', '1 s', '1 mon', '178000000 years', '-178000000 years', '2147483647 days', '1 h'])[1 + g % 9]::interval,
       (ARRAY['', 'x', 'id', 'snowflake_layout', repeat('h', 201), '%s%n'])[1 + g % 6],
       (ARRAY[true, false, NULL])[1 + g % 3],
       (ARRAY[0, 1, -1, 2147483647, -2147483648, 65535, 4096])[1 + g % 7],
       (ARRAY[0, 1, -1, 2147483648, 9007199254740992, 9223372036854775807, -9223372036854775808])[1 + g % 7]
  FROM generate_series(1, 300) AS g;
INSERT INTO sf_events (id, at) VALUES (0, 'epoch'), (1, NULL), (4194304, now()),
    (9007199254740992, now()), (9223372036854775807, 'infinity');
CREATE INDEX ON sf_events (at);
CREATE TABLE sf_brin (id bigint NOT NULL DEFAULT snowflake_nextval(), note text);
CREATE INDEX ON sf_brin USING brin (id);
INSERT INTO sf_brin (note) SELECT 'b' || g FROM generate_series(1, 300) AS g;
CREATE TABLE sf_part (id bigint NOT NULL DEFAULT snowflake_nextval(), at timestamptz DEFAULT now())
    PARTITION BY RANGE (id);
DO $$
DECLARE b bigint := snowflake_min_id(now() - interval '1 hour');
BEGIN
    EXECUTE format('CREATE TABLE sf_part_old PARTITION OF sf_part FOR VALUES FROM (MINVALUE) TO (%s)', b);
    EXECUTE format('CREATE TABLE sf_part_new PARTITION OF sf_part FOR VALUES FROM (%s) TO (MAXVALUE)', b);
END $$;
INSERT INTO sf_part (id, at) SELECT id, at FROM sf_events WHERE id >= 0;
-- The snowflake type, and texts that are, nearly are, or name the text
-- forms of an ID.
CREATE TABLE sf_typed (
    id snowflake PRIMARY KEY DEFAULT snowflake_nextval(), ref snowflake, code text);
INSERT INTO sf_typed (ref, code)
SELECT (ARRAY[0, 1, -1, 9007199254740992, 9223372036854775807, '-9223372036854775808'::bigint])[1 + g % 6],
       (ARRAY['', '0', '-1', 'zzzzzzzzzzz', 'AzL8n0Y58m7', 'AzL8n0Y58m8', '0000000000000', 'oo7zzzzzzzzzz',
              '7VVVVVVVVVVVV', '9223372036854775808', 'base32hex', 'crockford', 'base62', 'decimal'])[1 + g % 14]
  FROM generate_series(1, 200) AS g;
UPDATE sf_typed SET code = snowflake_to_text(id, (ARRAY['base32hex', 'crockford', 'base62', 'decimal'])[1 + id % 4])
 WHERE id % 3 = 0;
CREATE VIEW sf_decoded AS
    SELECT e.id, d.ts, d.node_id, d.worker_id, d.seq FROM sf_events AS e, snowflake_decode(e.id) AS d;
GRANT SELECT, INSERT, UPDATE, DELETE ON sf_events, sf_brin, sf_part, sf_typed, sf_decoded TO smith;
GRANT EXECUTE ON FUNCTION snowflake_lease_worker(text, interval, timestamptz),
                          snowflake_renew_lease(bigint, bigint, timestamptz),
                          snowflake_release_lease(bigint, bigint) TO smith;
-- The copies: LANGUAGE sql, same arguments, result and labels, so that
-- the planner inlines what it can and the rewrite sees the real calls;
-- only of the functions smith may execute, and not of those that take or
-- return a pseudo-type but record and void (the type's I/O functions take
-- and return cstring and internal, which a SQL function cannot).
CREATE SCHEMA sfwrap;
DO $$
DECLARE
    f record;
    i integer;
BEGIN
    FOR f IN
        SELECT n.nspname, p.proname, p.pronargs, pg_get_function_arguments(p.oid) AS args,
               pg_get_function_result(p.oid) AS result, p.proretset, t.typtype,
               p.prorettype = 'record'::regtype AS is_record,
               CASE p.provolatile WHEN 'i' THEN 'IMMUTABLE' WHEN 's' THEN 'STABLE' ELSE 'VOLATILE' END AS vol,
               CASE p.proparallel WHEN 's' THEN 'SAFE' WHEN 'r' THEN 'RESTRICTED' ELSE 'UNSAFE' END AS par,
               CASE WHEN p.proisstrict THEN 'STRICT' ELSE '' END AS is_strict
          FROM pg_proc AS p
          JOIN pg_namespace AS n ON n.oid = p.pronamespace
          JOIN pg_type AS t ON t.oid = p.prorettype
          JOIN pg_depend AS d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid
                             AND d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e'
          JOIN pg_extension AS e ON e.oid = d.refobjid AND e.extname = 'snowflake'
         WHERE p.prokind = 'f' AND NOT p.proretset
           AND (t.typtype <> 'p' OR p.prorettype IN ('record'::regtype, 'void'::regtype))
           AND NOT EXISTS (SELECT FROM unnest(p.proargtypes::oid[]) AS a(t)
                             JOIN pg_type AS at ON at.oid = a.t
                            WHERE at.typtype = 'p')
           AND has_function_privilege('smith', p.oid, 'EXECUTE')
    LOOP
        FOR i IN 1 .. 12 LOOP
            EXECUTE format('CREATE FUNCTION sfwrap.%I(%s) RETURNS %s LANGUAGE sql %s %s PARALLEL %s AS %L',
                           f.proname || '_' || i, f.args, f.result, f.vol, f.is_strict, f.par,
                           CASE WHEN f.is_record OR f.typtype = 'c' THEN 'SELECT * FROM ' ELSE 'SELECT ' END
                           || format('%I.%I', f.nspname, f.proname) || '('
                           || (SELECT coalesce(string_agg('$' || k, ', '), '')
                                 FROM generate_series(1, f.pronargs) AS k) || ')');
        END LOOP;
    END LOOP;
END $$;
GRANT USAGE ON SCHEMA sfwrap TO smith;
ANALYZE;
EOF
}
smith_status=0
smith_queries=0
smith_ours=0
smith_run() {
	local wrappers routines start=$SECONDS
	wrappers=$(psql -X -At -d smith -c "SELECT count(*) FROM pg_proc WHERE pronamespace = 'sfwrap'::regnamespace") &&
		routines=$(psql -X -At -d smith -c "SELECT count(*) FROM pg_proc WHERE prokind = 'f' AND NOT proretset") ||
		return 1
	echo "sqlsmith: $wrappers copies of the extension's functions among $routines functions; seed $seed, $sqlsmith_seconds s, at most $sqlsmith_queries queries"
	# --exclude-catalog: no queries over the catalog's tables (functions
	# stay); -oL: each query is in the dump as soon as it is sent.
	timeout --foreground -k 5 "$(left "$sqlsmith_seconds")" stdbuf -oL \
		sqlsmith --target="host=$tmp port=$port user=smith dbname=smith application_name=fuzz_sqlsmith" \
		--exclude-catalog --seed="$seed" --max-queries="$sqlsmith_queries" --dump-all-queries \
		>"$work/sqlsmith.queries" 2>"$work/sqlsmith.log" || smith_status=$?
	smith_queries=$(grep -c ';$' "$work/sqlsmith.queries" || true)
	smith_ours=$(awk '/snowflake_[a-z_0-9]*\(/ { hit = 1 } /;$/ { n += hit; hit = 0 } END { print n + 0 }' "$work/sqlsmith.queries")
	echo "sqlsmith: $smith_queries queries in $((SECONDS - start)) s, $smith_ours of them calling the extension's functions"
	# 124: stopped by its time limit, the usual end.
	if [ "$smith_status" -ne 0 ] && [ "$smith_status" -ne 124 ]; then
		echo "sqlsmith: exit status $smith_status"
		tail -n 20 "$work/sqlsmith.log"
		return 1
	fi
	[ "$smith_queries" -gt 0 ]
}
if check "sqlsmith's database set up" smith_setup; then
	check "sqlsmith ran and sent queries" smith_run
fi

# ---------------------------------------------------------------- the server
# No query still running.  Every statement of sqlsmith's ends within
# statement_timeout once cancellable, and a query of sqlsmith's, stopped
# mid-query, when the server notices its client gone (within
# client_connection_check_interval); so wait up to twice the timeout and 10
# s more for a loaded machine (up to the tier's limit if there is no
# timeout).  sqlsmith names its session "sqlsmith::dut".
ours="(application_name LIKE 'fuzz%' OR application_name LIKE 'sqlsmith%' OR usename = 'smith') AND application_name <> 'fuzz_watcher' AND backend_type = 'client backend'"
if [ "$statement_timeout_ms" -gt 0 ]; then
	query_wait=$(left $(((2 * statement_timeout_ms + 999) / 1000 + 10)))
else
	query_wait=$(left "$total_timeout")
fi
no_query_left() {
	local until=$((SECONDS + query_wait))
	while [ "$SECONDS" -lt "$until" ]; do
		[ "$(psql_admin -c "SELECT count(*) FROM pg_stat_activity WHERE $ours")" = 0 ] && return 0
		sleep 0.2
	done
	echo "fuzz: still running after $query_wait s:" >&2
	psql_admin -c "SELECT pid, state, now() - query_start, left(query, 500) FROM pg_stat_activity WHERE $ours" >&2
	psql_admin -c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE $ours" >/dev/null
	return 1
}
check "no query left running (a hang)" no_query_left
# The session opened at the start is still there: no backend crashed.
watcher_alive() {
	[ "$(psql_admin -c "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE application_name = 'fuzz_watcher'")" = t ] || return 1
	wait "$watcher" || true
	watcher=
	grep -q 'canceling statement due to user request' "$tmp/watcher.out"
}
check "the session opened at the start survived (no crash and restart)" watcher_alive
# The postmaster still runs: its process is there and no zombie (a dead
# process whose parent has not reaped it yet, which kill -0 still finds).
postmaster_runs() {
	local stat
	stat=$(cat "/proc/$postmaster_pid/stat" 2>/dev/null) || return 1
	# The state is the field after the command's name in parentheses.
	stat=${stat##*) }
	[ "${stat%% *}" != Z ]
}
check "the postmaster still runs" postmaster_runs
crash_patterns='terminated by signal|was terminated by exception|TRAP:|PANIC|server process \(PID|terminating any other active server processes|all server processes terminated|database system was interrupted|not properly shut down|automatic recovery in progress|Failed process was running|exited with exit code [^0]'
# A parallel worker that raised an error exits with status 1; that is no crash.
parallel_error='background worker "parallel worker" (PID [0-9]*) exited with exit code 1'
no_crash_in_log() {
	if grep -E "$crash_patterns" "$log" | grep -v "$parallel_error" >&2; then
		return 1
	fi
}
check "no crash, Assert() failure or PANIC in the server log" no_crash_in_log
check "the extension still issues IDs" psql -X -q -At -d fuzz -c 'SELECT snowflake_nextval()' -o /dev/null

echo "fuzz: sqlsmith $smith_queries statements; $((SECONDS - start)) s in all (seed $seed)"
if [ ${#failures[@]} -ne 0 ]; then
	echo "fuzz: server log: $log (last lines below)"
	grep -v "$parallel_error" "$log" | tail -n 30
	echo "fuzz: $checks checks passed, ${#failures[@]} failed: ${failures[*]}"
	exit 1
fi
echo "fuzz: $checks checks passed"
