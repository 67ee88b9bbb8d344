-- Each evaluation of snowflake_lease_worker() is one grant, and each row one whole lease;
-- (f()).* is refused.  Worker ids and tokens are compared, not printed.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS snowflake;
RESET client_min_messages;
\set SHOW_CONTEXT never

-- Releases the held leases of "h"; how many.
CREATE FUNCTION release_held(h text) RETURNS bigint LANGUAGE sql AS $$
SELECT count(*) FROM snowflake_leases
 WHERE CASE WHEN holder = h AND state = 'held' THEN snowflake_release_lease(token, NULL) END
$$;
-- Whether a row of snowflake_lease_worker() is the one lease the server holds for its token.
CREATE FUNCTION is_one_lease(worker integer, tok bigint, nb timestamptz, na timestamptz,
                             granted timestamptz) RETURNS boolean LANGUAGE sql AS $$
SELECT EXISTS (SELECT 1 FROM snowflake_leases AS l
                WHERE l.token = tok AND l.worker_id = worker AND l.not_before = nb
                  AND l.not_after = na AND l.since = granted AND l.state = 'held')
$$;
-- The held leases of holder "h".
CREATE FUNCTION held(h text) RETURNS bigint LANGUAGE sql AS $$
SELECT count(*) FROM snowflake_leases WHERE holder = h AND state = 'held'
$$;
SELECT count(*) AS held_at_start FROM snowflake_leases WHERE state = 'held' \gset
SELECT coalesce(max(token), 0) AS max_token FROM snowflake_leases \gset

-- Selecting a column of the call's result is refused at parse analysis.
SELECT (snowflake_lease_worker('star', interval '1 minute')).*;
\echo :LAST_ERROR_SQLSTATE
\set VERBOSITY terse
-- Each column written out, and PostgreSQL's functional notation.
SELECT (snowflake_lease_worker('fields', interval '1 minute')).worker_id,
       (snowflake_lease_worker('fields', interval '1 minute')).token;
SELECT token(snowflake_lease_worker('notation', interval '1 minute'));
-- In a subquery, a CTE and a sublink.
SELECT * FROM (SELECT (snowflake_lease_worker('sub', interval '1 minute')).*) AS s;
WITH c AS (SELECT (snowflake_lease_worker('cte', interval '1 minute')).token)
SELECT * FROM c;
SELECT 1 WHERE 0 < (SELECT (snowflake_lease_worker('sublink', interval '1 minute')).token);
-- In EXPLAIN, CREATE TABLE AS and a cursor.
EXPLAIN (COSTS OFF) SELECT (snowflake_lease_worker('explain', interval '1 minute')).*;
CREATE TEMP TABLE t AS SELECT (snowflake_lease_worker('ctas', interval '1 minute')).*;
BEGIN;
DECLARE c CURSOR FOR SELECT (snowflake_lease_worker('cursor', interval '1 minute')).*;
ROLLBACK;
-- A view, and an SQL function whose body is validated, fail to be created.
CREATE VIEW v AS SELECT (snowflake_lease_worker('view', interval '1 minute')).*;
CREATE FUNCTION lease_token(h text) RETURNS bigint LANGUAGE sql
AS $$ SELECT (snowflake_lease_worker(h, interval '1 minute')).token $$;
-- A column default fails to be stored (ADD COLUMN and COPY FROM fill rows without a plan).
CREATE TEMP TABLE two_defaults (
    w integer DEFAULT (snowflake_lease_worker('default', interval '1 minute')).worker_id,
    t bigint DEFAULT (snowflake_lease_worker('default', interval '1 minute')).token);
CREATE TEMP TABLE lease_rows (n integer);
INSERT INTO lease_rows VALUES (1), (2);
ALTER TABLE lease_rows ADD COLUMN lease text
    DEFAULT ROW((snowflake_lease_worker('add column', interval '1 minute')).*)::text;
ALTER TABLE lease_rows ADD COLUMN t bigint;
ALTER TABLE lease_rows ALTER COLUMN t
    SET DEFAULT (snowflake_lease_worker('set default', interval '1 minute')).token;
CREATE DOMAIN lease_text AS text
    DEFAULT ROW((snowflake_lease_worker('domain', interval '1 minute')).*)::text;
CREATE DOMAIN plain_text AS text;
ALTER DOMAIN plain_text
    SET DEFAULT ROW((snowflake_lease_worker('domain', interval '1 minute')).*)::text;
ALTER TABLE lease_rows ADD COLUMN d plain_text;
SELECT * FROM lease_rows ORDER BY n;
-- A body created unchecked, BEGIN ATOMIC and a PL/pgSQL expression are refused when they run.
SET check_function_bodies = off;
CREATE FUNCTION unchecked_token(h text) RETURNS bigint LANGUAGE sql SET search_path FROM CURRENT
AS $$ SELECT (snowflake_lease_worker(h, interval '1 minute')).token $$;
RESET check_function_bodies;
SELECT unchecked_token('unchecked');
CREATE FUNCTION atomic_lease(h text)
RETURNS TABLE (worker_id integer, token bigint) LANGUAGE sql
BEGIN ATOMIC
    SELECT (snowflake_lease_worker(h, interval '1 minute')).worker_id,
           (snowflake_lease_worker(h, interval '1 minute')).token;
END;
SELECT * FROM atomic_lease('atomic');
DO $$
DECLARE
    t bigint;
BEGIN
    t := (snowflake_lease_worker('plpgsql', interval '1 minute')).token;
END
$$;
\set VERBOSITY default
-- None of these took a lease.
SELECT coalesce(max(token), 0) = :max_token AS nothing_granted FROM snowflake_leases;
DROP FUNCTION unchecked_token(text), atomic_lease(text);
DROP TABLE lease_rows;
DROP DOMAIN plain_text;

-- In FROM: one call, one lease, every column from it.
SELECT count(*) AS held_before FROM snowflake_leases WHERE state = 'held' \gset
CREATE TEMP TABLE from_call AS
SELECT * FROM snowflake_lease_worker('from', interval '1 minute', clock_timestamp());
SELECT count(*) - :held_before AS leases_taken,
       (SELECT bool_and(is_one_lease(worker_id, token, not_before, not_after, granted_at))
          FROM from_call) AS one_lease
  FROM snowflake_leases WHERE state = 'held';
SELECT release_held('from') AS released;
-- Beside another FROM item, the call is still made once: both rows carry one lease.
SELECT count(*) AS rows, count(DISTINCT l.token) AS tokens, held('joined') AS leases
  FROM generate_series(1, 2) AS g, snowflake_lease_worker('joined', interval '1 minute') AS l;
SELECT release_held('joined') AS released;
-- LATERAL with an argument of the outer row: a call, and a lease, per row.
CREATE TEMP TABLE lateral_calls AS
SELECT g, l.* FROM generate_series(1, 3) AS g,
       LATERAL snowflake_lease_worker('lateral-' || g, interval '1 minute') AS l;
SELECT count(*) AS rows, count(DISTINCT token) AS tokens, count(DISTINCT worker_id) AS workers,
       bool_and(is_one_lease(worker_id, token, not_before, not_after, granted_at)) AS each_one_lease
  FROM lateral_calls;
SELECT release_held('lateral-1') + release_held('lateral-2') + release_held('lateral-3')
       AS released;
-- The whole record in the select list: a call per row, each record one lease.
SELECT count(*) AS rows, count(DISTINCT (r).token) AS tokens, held('records') AS leases,
       bool_and(is_one_lease((r).worker_id, (r).token, (r).not_before, (r).not_after,
                             (r).granted_at)) AS each_one_lease
  FROM (SELECT snowflake_lease_worker('records', interval '1 minute') AS r
          FROM generate_series(1, 3)) AS s;
SELECT release_held('records') AS released;
-- Columns of a subquery's column: the volatile subquery is not flattened, so one lease.
SELECT (s.r).token = (s.r).token AS same, held('subquery') AS leases
  FROM (SELECT snowflake_lease_worker('subquery', interval '1 minute') AS r) AS s;
SELECT release_held('subquery') AS released;
-- Two calls written in one statement: two leases.
SELECT a.token <> b.token AS two_tokens, held('two-calls') AS leases
  FROM snowflake_lease_worker('two-calls', interval '1 minute') AS a,
       snowflake_lease_worker('two-calls', interval '1 minute') AS b;
SELECT release_held('two-calls') AS released;
-- A prepared statement executed twice, and rows fetched from a cursor.
PREPARE take_one AS SELECT token FROM snowflake_lease_worker('prepared', interval '1 minute');
EXECUTE take_one \gset p1_
EXECUTE take_one \gset p2_
DEALLOCATE take_one;
SELECT :p1_token <> :p2_token AS two_leases, held('prepared') AS leases;
SELECT release_held('prepared') AS released;
BEGIN;
DECLARE leases CURSOR FOR
SELECT l.* FROM generate_series(1, 2) AS g,
       LATERAL snowflake_lease_worker('cursor-' || g, interval '1 minute') AS l;
FETCH 1 FROM leases \gset c1_
FETCH 1 FROM leases \gset c2_
COMMIT;
SELECT :c1_token <> :c2_token AS two_leases,
       is_one_lease(:c1_worker_id, :c1_token, :'c1_not_before', :'c1_not_after', :'c1_granted_at')
       AND is_one_lease(:c2_worker_id, :c2_token, :'c2_not_before', :'c2_not_after',
                        :'c2_granted_at') AS each_one_lease;
SELECT release_held('cursor-1') + release_held('cursor-2') AS released;

-- A PL/pgSQL loop of grants with one holder: a lease each.
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
SELECT held('loop') AS leases, release_held('loop') AS released;

-- A PL/pgSQL wrapper: each call a lease of its own, twice in one transaction too.
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
SELECT :first_worker <> :second_worker AS two_worker_ids, :first_tok <> :second_tok AS two_tokens,
       held('wrapper') AS leases;
SELECT release_held('wrapper') AS released;
-- (w()).* of a wrapper calls it once per column: the row mixes two leases, and renewing or
-- releasing the token with an ID of that worker id is refused.
SELECT (lease_for_thread('wrapper-star')).* \gset mixed_
SELECT held('wrapper-star') AS leases,
       (SELECT worker_id FROM snowflake_leases WHERE token = :mixed_tok) <> :mixed_worker
       AS worker_id_of_another_lease;
SELECT ((floor(extract(epoch FROM l.not_before) * 1000)::bigint + 1
         - (extract(epoch FROM s.epoch) * 1000)::bigint) << 22)
       | (l.node_id::bigint << 19) | (l.worker_id::bigint << 12) AS mixed_id
  FROM snowflake_leases AS l, snowflake_status() AS s
 WHERE l.worker_id = :mixed_worker AND l.holder = 'wrapper-star' AND l.state = 'held' \gset
SET lease_calls.token = :'mixed_tok';
SET lease_calls.id = :'mixed_id';
DO $$
BEGIN
    BEGIN
        PERFORM snowflake_renew_lease(current_setting('lease_calls.token')::bigint,
                                      current_setting('lease_calls.id')::bigint);
    EXCEPTION WHEN OTHERS THEN
        RAISE NOTICE 'renewal: %, %', SQLSTATE,
            SQLERRM ~ '^snowflake ID [0-9]+ was not issued under lease [0-9]+$';
    END;
    BEGIN
        PERFORM snowflake_release_lease(current_setting('lease_calls.token')::bigint,
                                        current_setting('lease_calls.id')::bigint);
    EXCEPTION WHEN OTHERS THEN
        RAISE NOTICE 'release: %, %', SQLSTATE,
            SQLERRM ~ '^snowflake ID [0-9]+ was not issued under lease [0-9]+$';
    END;
END
$$;
RESET lease_calls.token;
RESET lease_calls.id;
SELECT release_held('wrapper-star') AS released;
DROP FUNCTION lease_for_thread(text);
-- The limit (docs/leases.md): a BEGIN ATOMIC body inlined by the planner escapes the check.
CREATE TYPE lease_pair AS (worker_id integer, token bigint);
CREATE FUNCTION inlined_pair(h text) RETURNS lease_pair LANGUAGE sql
BEGIN ATOMIC
    SELECT ROW((snowflake_lease_worker(h, interval '1 minute')).worker_id,
               (snowflake_lease_worker(h, interval '1 minute')).token)::lease_pair;
END;
SELECT held('inlined') AS leases,
       (SELECT worker_id FROM snowflake_leases WHERE token = (p).token) <> (p).worker_id
       AS worker_id_of_another_lease
  FROM (SELECT inlined_pair('inlined') AS p OFFSET 0) AS s;
SELECT release_held('inlined') AS released;
DROP FUNCTION inlined_pair(text);
DROP TYPE lease_pair;

-- The holder is printable ASCII, valid in every database's encoding; nothing else changes.
SELECT max(token) AS max_token FROM snowflake_leases \gset
\i test/fixtures/refusal.sql
\pset format unaligned
SELECT * FROM pg_temp.refusals(ARRAY[
    $$SELECT * FROM snowflake_lease_worker(E'host\tname', interval '1 minute')$$,
    $$SELECT * FROM snowflake_lease_worker(E'host\x7f', interval '1 minute')$$,
    $$SELECT * FROM snowflake_lease_worker('hôte', interval '1 minute')$$]);
\pset format aligned
SELECT max(token) = :max_token AS nothing_granted FROM snowflake_leases;
-- Space and tilde are the ends of printable ASCII.
SELECT token AS edge_token FROM snowflake_lease_worker(' a-Z~', interval '1 minute') \gset
SELECT '[' || holder || ']' AS holder FROM snowflake_leases WHERE token = :edge_token;
SELECT snowflake_release_lease(:edge_token, NULL) AS released;

-- Read-only transactions refuse grants, renewals and releases; snowflake_nextval() works.
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
DROP FUNCTION release_held(text), held(text),
    is_one_lease(integer, bigint, timestamptz, timestamptz, timestamptz);
