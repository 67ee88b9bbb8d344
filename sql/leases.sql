-- Worker-id leases (124 to 127, test/conf/regress.conf).  Earlier tests' leases stay in the
-- server's lease table, so worker ids and tokens are compared here, not printed.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS snowflake;
RESET client_min_messages;
\set SHOW_CONTEXT never

SELECT slots_total, (SELECT count(*) FROM snowflake_leases WHERE state = 'held') AS held_before
  FROM snowflake_status();
SELECT name, setting, unit, context
  FROM pg_settings
 WHERE name LIKE 'snowflake.lease%'
 ORDER BY name;

SELECT coalesce(max(token), 0) AS tokens_before FROM snowflake_leases \gset

-- A time-scoped lease: its worker id, token, window, renewal interval and layout.
SELECT worker_id BETWEEN 124 AND 127 AS in_lease_space, node_id,
       token > :tokens_before AS newer_token, expires_at = not_after AS expires_at_is_not_after,
       not_after - granted_at BETWEEN interval '29 s' AND interval '30 s' AS ttl_window,
       not_before <= granted_at AS not_before_past, renew_interval,
       epoch, timestamp_bits, node_bits, worker_bits, sequence_bits
  FROM snowflake_lease_worker('app-1', interval '30 seconds');
SELECT * FROM snowflake_lease_worker('app-1', interval '30 seconds') \gset first_
-- A connection-scoped lease: no expiry, a window of lease_connection_window past each contact.
SELECT expires_at IS NULL AS no_expiry,
       not_after - granted_at BETWEEN interval '1.9 s' AND interval '2 s' AS connection_window,
       renew_interval
  FROM snowflake_lease_worker('app-2');
SELECT * FROM snowflake_lease_worker('app-3', client_time => clock_timestamp()) \gset conn_

SELECT state, holder, holder_role = current_user AS by_me,
       backend_pid = pg_backend_pid() AS this_connection, ttl,
       expires_at IS NOT DISTINCT FROM (CASE WHEN ttl IS NOT NULL THEN not_after END) AS expiry,
       last_timestamp, released_at
  FROM snowflake_leases WHERE token > :tokens_before ORDER BY token;
SELECT count(DISTINCT worker_id) AS distinct_worker_ids FROM snowflake_leases WHERE state = 'held';

-- All four are leased: the fifth request fails at once (the detail names the first expiry).
\set VERBOSITY terse
SELECT * FROM snowflake_lease_worker('app-5', interval '1 minute');
\echo :LAST_ERROR_SQLSTATE
\set VERBOSITY default

-- A renewal records the last ID issued under the lease and moves not_after.
SELECT (extract(epoch FROM :'first_not_before'::timestamptz) * 1000)::bigint + 1 AS first_ts_ms \gset
SELECT ((:first_ts_ms - (extract(epoch FROM :'first_epoch'::timestamptz) * 1000)::bigint) << 22)
       | (:first_node_id::bigint << 19) | (:first_worker_id::bigint << 12) | 7 AS first_last_id \gset
SELECT d.worker_id = :first_worker_id AS own_worker, d.seq,
       d.ts = :'first_not_before'::timestamptz + interval '1 ms' AS exact_ts
  FROM snowflake_decode(:first_last_id) AS d;
SELECT not_after > :'first_not_after'::timestamptz AS extended, expires_at = not_after AS expiry
  FROM snowflake_renew_lease(:first_token, :first_last_id);
SELECT last_timestamp = :'first_not_before'::timestamptz + interval '1 ms' AS high_water_mark
  FROM snowflake_leases WHERE token = :first_token;

-- Reported IDs must belong to the lease (node 5, worker 17) and lie inside its window (the
-- second, at 2025-01-01 00:00:01).  The worker id shows as W, the ID as ID, the token as T.
CREATE FUNCTION lease_renew_error(token bigint, last_id bigint, worker integer,
                                  show_detail boolean)
RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    detail text;
BEGIN
    PERFORM snowflake_renew_lease(token, last_id);
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS detail = PG_EXCEPTION_DETAIL;
    RETURN replace(replace(replace(SQLSTATE || ': ' || SQLERRM
                                   || CASE WHEN show_detail THEN ' DETAIL: ' || detail ELSE '' END,
                                   'worker id ' || worker || ' ', 'worker id W '),
                           last_id::text, 'ID'),
                   token::text, 'T');
END
$$;
-- An error of a statement about lease "token", with its DETAIL and HINT.
CREATE FUNCTION lease_error(statement text, token bigint) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    detail text;
    hint text;
BEGIN
    EXECUTE statement;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS detail = PG_EXCEPTION_DETAIL, hint = PG_EXCEPTION_HINT;
    RETURN replace(SQLSTATE || ': ' || SQLERRM
                   || CASE WHEN detail <> '' THEN E'\nDETAIL: ' || detail ELSE '' END
                   || CASE WHEN hint <> '' THEN E'\nHINT: ' || hint ELSE '' END,
                   token::text, 'T');
END
$$;
SELECT lease_renew_error(:first_token, 4196995114, :first_worker_id, true)
UNION ALL
SELECT lease_renew_error(:first_token, (1000::bigint << 22) | (:first_worker_id::bigint << 12),
                         :first_worker_id, false);
DROP FUNCTION lease_renew_error(bigint, bigint, integer, boolean);
-- Each time in a DETAIL is its own (timestamptz_to_str() reuses one buffer).
\i test/fixtures/refusal.sql
SET timezone = 'UTC';
SELECT detail LIKE 'Its timestamp is 2025-01-01 00:00:01+00; the lease''s IDs lie after % and before %.'
           AS names_the_id,
       w[1]::timestamptz > timestamptz '2025-01-01 00:00:01+00' AS window_starts_later,
       w[1]::timestamptz < w[2]::timestamptz AS window_ends_later
  FROM pg_temp.refusal(format('SELECT snowflake_renew_lease(%s, %s)', :first_token,
                                      (1000::bigint << 22) | (:first_worker_id::bigint << 12)))
           AS r,
       regexp_match(detail, 'after (.*) and before (.*)\.$') AS w;
RESET timezone;
SELECT * FROM snowflake_renew_lease(:first_token, -1);
\echo :LAST_ERROR_SQLSTATE

-- Releasing frees the worker id at once; a second release says false; renewing is refused.
SELECT snowflake_release_lease(:first_token, :first_last_id) AS released,
       snowflake_release_lease(:first_token, NULL) AS released_again;
SELECT lease_error(format('SELECT * FROM snowflake_renew_lease(%s, NULL)', :first_token),
                   :first_token);
SELECT state, last_timestamp = :'first_not_before'::timestamptz + interval '1 ms' AS high_water_mark
  FROM snowflake_leases WHERE worker_id = :first_worker_id;

-- The next holder starts above the last timestamp reported, not the old expiry; a newer token.
SELECT worker_id = :first_worker_id AS same_worker_id, token > :first_token AS newer_token,
       not_before = :'first_not_before'::timestamptz + interval '1 ms' AS above_last_reported
  FROM snowflake_lease_worker('app-6', interval '1 minute');
-- The old token is dead: its holder is a zombie and is told so.
SELECT lease_error(format('SELECT * FROM snowflake_renew_lease(%s, NULL)', :first_token),
                   :first_token);

-- A connection-scoped lease is renewed only on its own connection.
SELECT not_after > :'conn_not_after'::timestamptz AS extended, expires_at IS NULL AS no_expiry
  FROM snowflake_renew_lease(:conn_token, NULL, clock_timestamp());
SELECT pg_backend_pid() AS old_pid \gset
\c
SELECT lease_error(format('SELECT * FROM snowflake_renew_lease(%s, NULL)', :conn_token),
                   :conn_token);
-- Its connection ended: both connection-scoped leases are free; the next holder starts above
-- the end of the window.
SELECT set_config('regress.old_pid', :'old_pid', false) IS NOT NULL AS noted;
DO $$
BEGIN
    -- Up to 180 s for the old backend to exit; the snapshot is cleared for each look.
    FOR i IN 1..18000 LOOP
        PERFORM pg_stat_clear_snapshot();
        EXIT WHEN NOT EXISTS (SELECT 1 FROM pg_stat_activity
                               WHERE pid = current_setting('regress.old_pid')::integer);
        PERFORM pg_sleep(0.01);
    END LOOP;
    IF EXISTS (SELECT 1 FROM pg_stat_activity
                WHERE pid = current_setting('regress.old_pid')::integer) THEN
        RAISE EXCEPTION 'backend % did not exit in 180 s',
            current_setting('regress.old_pid');
    END IF;
END
$$;
SELECT holder, state FROM snowflake_leases WHERE ttl IS NULL AND token > :tokens_before ORDER BY token;
CREATE TEMP TABLE windows_before AS SELECT worker_id, state, not_after FROM snowflake_leases;
SELECT w.state = 'disconnected' AS freed_id,
       g.token, g.not_before = w.not_after - interval '1 ms' AS above_old_window
  FROM snowflake_lease_worker('app-7') AS g JOIN windows_before AS w USING (worker_id) \gset app7_
\echo freed_id :app7_freed_id above_old_window :app7_above_old_window

-- A client clock more than lease_clock_tolerance from the database's is refused.
\set VERBOSITY terse
SELECT * FROM snowflake_lease_worker('app-8', interval '1 minute', clock_timestamp() - interval '5 s');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM snowflake_lease_worker('app-8', interval '1 minute', clock_timestamp() + interval '5 s');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM snowflake_renew_lease(:app7_token, NULL, clock_timestamp() - interval '5 s');
\echo :LAST_ERROR_SQLSTATE
\set VERBOSITY default
\i test/fixtures/refusal.sql
SET timezone = 'UTC';
SELECT detail LIKE 'The client reported 2000-01-01 00:00:00+00, before the database''s clock, 20__-%'
           AS shows_the_client_time,
       detail NOT LIKE '%clock, 2000-01-01 00:00:00+00.' AS and_the_database_time
  FROM pg_temp.refusal($$SELECT snowflake_lease_worker('app-8', interval '1 minute',
                                                              timestamptz '2000-01-01 00:00:00+00')$$)
           AS r;
RESET timezone;
SELECT count(*) AS leases_after_refusals FROM snowflake_leases;

-- Arguments, one row each.  A month has no fixed length; days are 24 hours.
\pset format unaligned
SELECT * FROM pg_temp.refusals(ARRAY[
    $$SELECT * FROM snowflake_lease_worker('app-9', interval '0.5 s')$$,
    $$SELECT * FROM snowflake_lease_worker('app-9', interval '25 hours')$$,
    $$SELECT * FROM snowflake_lease_worker('app-9', interval '1 month -29 days')$$,
    $$SELECT * FROM snowflake_lease_worker('app-9', interval '1 mon')$$,
    $$SELECT * FROM snowflake_renew_lease(NULL, NULL)$$,
    $$SELECT * FROM snowflake_lease_worker('')$$,
    $$SELECT * FROM snowflake_renew_lease(424242, NULL)$$]);
\pset format aligned

-- Release what is held, and wait until no window of an unreleased lease lies ahead.
SELECT count(*) AS released
  FROM snowflake_leases AS l
 WHERE CASE WHEN l.state = 'held' THEN snowflake_release_lease(l.token, NULL) END;
SELECT pg_sleep_until(greatest(max(not_before),
                              max(not_after) FILTER (WHERE state <> 'released')))
       IS NOT NULL AS windows_passed
  FROM snowflake_leases;

-- Leases are not transactional: one granted by a block that rolls back stays granted.
SELECT count(*) AS before_block FROM snowflake_leases WHERE state = 'held' \gset
BEGIN;
SELECT token AS rolled_back_token FROM snowflake_lease_worker('app-10', interval '1 minute') \gset
ROLLBACK;
SELECT state, holder FROM snowflake_leases WHERE token = :rolled_back_token;
SELECT expires_at > clock_timestamp() AS renewable_after_rollback
  FROM snowflake_renew_lease(:rolled_back_token, NULL);
SELECT snowflake_release_lease(:rolled_back_token, NULL) AS released;
-- In a subtransaction that aborts, too.
DO $$
BEGIN
    BEGIN
        PERFORM snowflake_lease_worker('app-11', interval '1 minute');
        PERFORM 1 / 0;
    EXCEPTION WHEN division_by_zero THEN NULL;
    END;
END
$$;
SELECT state FROM snowflake_leases WHERE holder = 'app-11';
SELECT snowflake_release_lease(token, NULL) AS released FROM snowflake_leases WHERE holder = 'app-11';

-- Another execution of a statement takes a lease of its own; so does another statement
-- (lease_calls.sql has every form of call).
DO $$
DECLARE
    first_token bigint;
    second_token bigint;
BEGIN
    FOR i IN 1..2 LOOP
        SELECT token INTO second_token FROM snowflake_lease_worker('loop', interval '1 minute');
        first_token := coalesce(first_token, second_token);
    END LOOP;
    RAISE NOTICE 'two leases: %', first_token <> second_token;
    PERFORM snowflake_release_lease(first_token, NULL);
    PERFORM snowflake_release_lease(second_token, NULL);
END
$$;
CREATE TEMP TABLE twice (token bigint);
INSERT INTO twice SELECT token FROM snowflake_lease_worker('twice', interval '1 minute') \; INSERT INTO twice SELECT token FROM snowflake_lease_worker('twice', interval '1 minute');
SELECT count(DISTINCT token) AS two_leases FROM twice;
SELECT count(*) AS released
  FROM snowflake_leases
 WHERE CASE WHEN holder = 'twice' AND state = 'held' THEN snowflake_release_lease(token, NULL) END;

-- Any database with the extension leases from the server's one lease table.
CREATE DATABASE regress_snowflake_other;
\c regress_snowflake_other
SET client_min_messages = warning;
CREATE EXTENSION snowflake;
RESET client_min_messages;
SELECT token AS other_db_token FROM snowflake_lease_worker('app-13', interval '1 minute') \gset
\c contrib_regression
SELECT holder, state FROM snowflake_leases WHERE token = :other_db_token;
SELECT snowflake_release_lease(:other_db_token, NULL) AS released;
DROP DATABASE regress_snowflake_other;

-- A holder is at most 200 bytes; an infinite client clock is refused as any bad value is.
\set VERBOSITY terse
SELECT * FROM snowflake_lease_worker(repeat('x', 201), interval '1 minute');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM snowflake_lease_worker('app-14', interval '1 minute', 'infinity');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM snowflake_lease_worker('app-14', interval '1 minute', '-infinity');
\echo :LAST_ERROR_SQLSTATE
\set VERBOSITY default
SELECT token AS long_token FROM snowflake_lease_worker(repeat('x', 200), interval '1 minute') \gset
SELECT length(holder) AS longest_holder FROM snowflake_leases WHERE token = :long_token;
SELECT snowflake_release_lease(token, NULL) AS released
  FROM snowflake_leases WHERE holder = repeat('x', 200);

-- An expired time-scoped lease not leased again can still be renewed by its holder.
SELECT token AS short_token FROM snowflake_lease_worker('app-13', interval '1 second') \gset
SELECT pg_sleep_until(not_after + interval '1 ms') FROM snowflake_leases WHERE token = :short_token;
SELECT state FROM snowflake_leases WHERE token = :short_token;
SELECT expires_at > clock_timestamp() AS renewed FROM snowflake_renew_lease(:short_token, NULL);
SELECT snowflake_release_lease(:short_token, NULL) AS released;

-- No table carries the leases any more: nothing for pg_dump to carry.
SELECT count(*) AS config_tables
  FROM pg_extension AS e, unnest(e.extconfig) AS c(oid)
 WHERE e.extname = 'snowflake' AND c.oid <> 'snowflake_layout'::regclass;
DROP FUNCTION lease_error(text, bigint);
