--
-- Which calls of snowflake_lease_worker() share a lease (one row of one
-- call's copies, as (f()).* makes them) and which take one of their own
-- (every other call: loops, wrappers, rows, executions, call sites); the
-- holder's text; grants, renewals and releases in read-only transactions.
-- Four worker ids are leased here (test/conf/regress.conf); every test
-- releases what it takes, and worker ids and tokens are compared, not
-- printed, since which ids are free depends on the tests before.
--
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS snowflake;
RESET client_min_messages;
\set SHOW_CONTEXT never

-- Releases the held leases of "h"; how many.
CREATE FUNCTION release_held(h text) RETURNS bigint LANGUAGE sql AS $$
SELECT count(*) FROM snowflake_leases
 WHERE CASE WHEN holder = h AND state = 'held' THEN snowflake_release_lease(token, NULL) END
$$;
-- Whether a row of snowflake_lease_worker() is one lease: its worker id,
-- window and grant time are those the server holds for its token.
CREATE FUNCTION is_one_lease(worker integer, tok bigint, nb timestamptz, na timestamptz,
                             granted timestamptz) RETURNS boolean LANGUAGE sql AS $$
SELECT EXISTS (SELECT 1 FROM snowflake_leases AS l
                WHERE l.token = tok AND l.worker_id = worker AND l.not_before = nb
                  AND l.not_after = na AND l.since = granted AND l.state = 'held')
$$;
SELECT count(*) AS held_at_start FROM snowflake_leases WHERE state = 'held' \gset

-- A PL/pgSQL loop of grants: a lease each (a loop that took one lease
-- three times would let three generators share a worker id).
DO $$
DECLARE
    r record;
    workers integer[] := '{}';
    tokens bigint[] := '{}';
BEGIN
    FOR i IN 1..3 LOOP
        r := snowflake_lease_worker('loop', interval '1 minute');
        workers := workers || r.worker_id;
        tokens := tokens || r.token;
    END LOOP;
    RAISE NOTICE 'distinct worker ids: %, distinct tokens: %',
        (SELECT count(DISTINCT w) FROM unnest(workers) AS w),
        (SELECT count(DISTINCT t) FROM unnest(tokens) AS t);
END
$$;
SELECT release_held('loop') AS released;

-- A PL/pgSQL wrapper, called twice in one transaction, and twice in one row.
CREATE FUNCTION lease_for_thread(h text, OUT worker integer, OUT tok bigint)
LANGUAGE plpgsql AS $$
DECLARE
    r record;
BEGIN
    r := snowflake_lease_worker(h, interval '1 minute');
    worker := r.worker_id;
    tok := r.token;
END
$$;
BEGIN;
SELECT worker, tok FROM lease_for_thread('wrapper') \gset first_
SELECT worker, tok FROM lease_for_thread('wrapper') \gset second_
COMMIT;
SELECT :first_worker <> :second_worker AS two_worker_ids, :first_tok <> :second_tok AS two_tokens;
SELECT (lease_for_thread('wrapper-row')).tok <> (lease_for_thread('wrapper-row')).tok
       AS two_leases_in_one_row;
SELECT release_held('wrapper') + release_held('wrapper-row') AS released;

-- (f()).* evaluates the call once per column: one lease, every column of
-- the row from it.  With the client's clock too (clock_timestamp() differs
-- from one column's copy to the next).
SELECT count(*) AS held_before FROM snowflake_leases WHERE state = 'held' \gset
CREATE TEMP TABLE expanded AS
SELECT (snowflake_lease_worker('expanded', interval '1 minute')).*;
CREATE TEMP TABLE clocked AS
SELECT (snowflake_lease_worker('clocked', interval '1 minute', clock_timestamp())).*;
SELECT count(*) - :held_before AS leases_taken FROM snowflake_leases WHERE state = 'held';
SELECT holder, is_one_lease(e.worker_id, e.token, e.not_before, e.not_after, e.granted_at)
  FROM (SELECT 'expanded' AS holder, * FROM expanded
        UNION ALL SELECT 'clocked', * FROM clocked) AS e
 ORDER BY 1;
SELECT release_held('expanded') + release_held('clocked') AS released;

-- One lease per row: rows of a scan, rows beside a set-returning function,
-- rows fetched from a cursor one by one.
SELECT count(*) AS held_before FROM snowflake_leases WHERE state = 'held' \gset
CREATE TEMP TABLE per_row AS
SELECT g, (snowflake_lease_worker('per-row', interval '1 minute')).* FROM generate_series(1, 3) AS g;
SELECT count(*) - :held_before AS leases_taken FROM snowflake_leases WHERE state = 'held';
SELECT count(DISTINCT token) AS tokens,
       bool_and(is_one_lease(worker_id, token, not_before, not_after, granted_at)) AS each_one_lease
  FROM per_row;
SELECT release_held('per-row') AS released;
-- Beside a set-returning function in the select list, PostgreSQL evaluates
-- the call once more for the row it then finds empty: that lease is taken
-- and returned to no one (it runs out with its ttl).
SELECT count(*) AS held_before FROM snowflake_leases WHERE state = 'held' \gset
CREATE TEMP TABLE beside_srf AS
SELECT generate_series(1, 2) AS n, (snowflake_lease_worker('beside-srf', interval '1 minute')).*;
SELECT count(*) - :held_before AS leases_taken FROM snowflake_leases WHERE state = 'held';
SELECT count(*) AS rows, count(DISTINCT token) AS tokens,
       bool_and(is_one_lease(worker_id, token, not_before, not_after, granted_at)) AS each_one_lease
  FROM beside_srf;
SELECT release_held('beside-srf') AS released;
BEGIN;
DECLARE leases CURSOR FOR
SELECT (snowflake_lease_worker('cursor', interval '1 minute')).* FROM generate_series(1, 2);
FETCH 1 FROM leases \gset c1_
FETCH 1 FROM leases \gset c2_
COMMIT;
SELECT :c1_token <> :c2_token AS two_leases,
       is_one_lease(:c1_worker_id, :c1_token, :'c1_not_before', :'c1_not_after', :'c1_granted_at')
       AND is_one_lease(:c2_worker_id, :c2_token, :'c2_not_before', :'c2_not_after',
                        :'c2_granted_at') AS each_one_lease;
SELECT release_held('cursor') AS released;

-- Two calls written in one statement are two call sites: two leases.
SELECT (snowflake_lease_worker('two-sites', interval '1 minute')).token AS a,
       (snowflake_lease_worker('two-sites', interval '1 minute')).token AS b \gset two_
SELECT :two_a <> :two_b AS two_leases;
SELECT release_held('two-sites') AS released;

-- In FROM the function is called once; a prepared statement executed twice
-- calls it twice.
SELECT count(*) AS held_before FROM snowflake_leases WHERE state = 'held' \gset
SELECT worker_id IS NOT NULL AS leased FROM snowflake_lease_worker('from', interval '1 minute');
SELECT count(*) - :held_before AS leases_taken FROM snowflake_leases WHERE state = 'held';
PREPARE take_one AS SELECT token FROM snowflake_lease_worker('prepared', interval '1 minute');
EXECUTE take_one \gset p1_
EXECUTE take_one \gset p2_
DEALLOCATE take_one;
SELECT :p1_token <> :p2_token AS two_leases;
SELECT release_held('from') + release_held('prepared') AS released;

-- An SQL function that PostgreSQL inlines: each of its calls carries the
-- location of the call in its body, so two of its calls in one row, with
-- the same holder, share a lease; with different holders they do not.  A
-- SET clause keeps it from being inlined: a lease per call.
CREATE FUNCTION lease_token(h text) RETURNS bigint LANGUAGE sql
AS $$ SELECT (snowflake_lease_worker(h, interval '1 minute')).token $$;
CREATE FUNCTION lease_token_set(h text) RETURNS bigint LANGUAGE sql SET search_path FROM CURRENT
AS $$ SELECT (snowflake_lease_worker(h, interval '1 minute')).token $$;
EXPLAIN (VERBOSE, COSTS OFF) SELECT lease_token('inlined'), lease_token('inlined');
SELECT lease_token('inlined') = lease_token('inlined') AS one_lease_shared;
SELECT release_held('inlined') AS released;
SELECT lease_token('inlined-a') <> lease_token('inlined-b') AS two_leases_two_holders;
SELECT release_held('inlined-a') + release_held('inlined-b') AS released;
SELECT lease_token_set('not-inlined') <> lease_token_set('not-inlined') AS two_leases_not_inlined;
SELECT release_held('not-inlined') AS released;
SELECT count(DISTINCT lease_token('inlined-row')) AS leases_of_two_rows FROM generate_series(1, 2);
SELECT release_held('inlined-row') AS released;
-- A view's stored expressions have no location: two calls in its row,
-- with the same holder, share a lease.
CREATE VIEW two_calls AS
SELECT (snowflake_lease_worker('view', interval '1 minute')).token AS a,
       (snowflake_lease_worker('view', interval '1 minute')).token AS b;
SELECT a = b AS one_lease_shared FROM two_calls;
SELECT release_held('view') AS released;
DROP VIEW two_calls;
-- So do a table's column defaults, one lease per row inserted.
CREATE TEMP TABLE two_defaults (
    a bigint DEFAULT (snowflake_lease_worker('default', interval '1 minute')).token,
    b bigint DEFAULT (snowflake_lease_worker('default', interval '1 minute')).token);
INSERT INTO two_defaults SELECT FROM generate_series(1, 2);
SELECT count(*) AS rows, count(DISTINCT a) AS leases, bool_and(a = b) AS shared_in_each_row
  FROM two_defaults;
SELECT release_held('default') AS released;
DROP FUNCTION lease_token(text), lease_token_set(text), lease_for_thread(text);

-- The holder is printable ASCII, valid in the encoding of every database
-- (leases belong to the server): a control character, a byte above 0x7E
-- and a non-ASCII character are refused (22021) before anything changes.
SELECT max(token) AS max_token FROM snowflake_leases \gset
SELECT * FROM snowflake_lease_worker(E'host\tname', interval '1 minute');
\echo :LAST_ERROR_SQLSTATE
\set VERBOSITY terse
SELECT * FROM snowflake_lease_worker(E'host\x7f', interval '1 minute');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM snowflake_lease_worker('hôte', interval '1 minute');
\echo :LAST_ERROR_SQLSTATE
\set VERBOSITY default
SELECT max(token) = :max_token AS nothing_granted FROM snowflake_leases;
-- Space and tilde are the ends of printable ASCII.
SELECT token AS edge_token FROM snowflake_lease_worker(' a-Z~', interval '1 minute') \gset
SELECT '[' || holder || ']' AS holder FROM snowflake_leases WHERE token = :edge_token;
SELECT snowflake_release_lease(:edge_token, NULL) AS released;

-- Read-only transactions: grants, renewals and releases are refused as
-- nextval() on a sequence is (25006), before anything changes;
-- snowflake_nextval() changes no database state and works.
SELECT token AS ro_token FROM snowflake_lease_worker('read-only', interval '1 minute') \gset
SELECT max(token) AS max_token, max(renewed_at) AS renewed FROM snowflake_leases \gset
BEGIN READ ONLY;
SELECT * FROM snowflake_lease_worker('read-only-2', interval '1 minute');
ROLLBACK;
\echo :LAST_ERROR_SQLSTATE
BEGIN READ ONLY;
SELECT * FROM snowflake_renew_lease(:ro_token, NULL);
ROLLBACK;
\echo :LAST_ERROR_SQLSTATE
BEGIN READ ONLY;
SELECT snowflake_release_lease(:ro_token, NULL);
ROLLBACK;
\echo :LAST_ERROR_SQLSTATE
BEGIN;
SET TRANSACTION READ ONLY;
SELECT * FROM snowflake_renew_lease(:ro_token, NULL);
ROLLBACK;
\echo :LAST_ERROR_SQLSTATE
SET default_transaction_read_only = on;
SELECT * FROM snowflake_lease_worker('read-only-3', interval '1 minute');
\echo :LAST_ERROR_SQLSTATE
RESET default_transaction_read_only;
SELECT max(token) = :max_token AS nothing_granted,
       max(renewed_at) = :'renewed' AS nothing_renewed,
       bool_and(state <> 'released') FILTER (WHERE token = :ro_token) AS not_released
  FROM snowflake_leases;
BEGIN READ ONLY;
SELECT snowflake_nextval() > 0 AS nextval_works;
SELECT count(*) AS batch FROM snowflake_nextval(3);
SELECT count(*) > 0 AS view_reads FROM snowflake_leases;
COMMIT;
SELECT snowflake_release_lease(:ro_token, NULL) AS released;

SELECT count(*) = :held_at_start AS all_released FROM snowflake_leases WHERE state = 'held';
DROP FUNCTION release_held(text), is_one_lease(integer, bigint, timestamptz, timestamptz, timestamptz);
