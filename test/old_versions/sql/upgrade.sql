--
-- The upgrade chain: install the first release, update step by step to the
-- default version, and pin the extension's objects at each step.
--
-- The shipped files no longer install any version but the current one, so
-- this runs in test/t/039_install_versions.pl, with pg_regress, against a
-- relocated copy of the installation whose snowflake--1.0.sql is the first
-- release's script (test/fixtures/snowflake--1.0.sql), on a database of
-- its own.
--

-- The extension's member objects, and what its functions look like.  The
-- row types of its tables and views (and their array types), which
-- PostgreSQL 17 and later list too, are left out: they come with the
-- relation.
CREATE TEMP VIEW extension_objects AS
SELECT pg_describe_object(d.classid, d.objid, 0) AS object
  FROM pg_depend AS d
       JOIN pg_extension AS e ON e.oid = d.refobjid
       LEFT JOIN pg_type AS t
         ON d.classid = 'pg_type'::regclass AND t.oid = d.objid
       LEFT JOIN pg_type AS elem ON elem.oid = t.typelem
 WHERE d.refclassid = 'pg_extension'::regclass AND e.extname = 'snowflake'
   AND coalesce(t.typrelid, 0) = 0 AND coalesce(elem.typrelid, 0) = 0;
CREATE TEMP VIEW extension_functions AS
SELECT p.proname, pg_get_function_arguments(p.oid) AS args,
       pg_get_function_result(p.oid) AS result, p.provolatile, p.proisstrict,
       p.proparallel, p.prosecdef, p.proconfig, md5(p.prosrc) AS source
  FROM pg_proc AS p
 WHERE p.proname LIKE 'snowflake%';

SELECT version FROM pg_available_extension_versions
 WHERE name = 'snowflake' ORDER BY version;
SELECT source, target, path FROM pg_extension_update_paths('snowflake')
 WHERE path IS NOT NULL ORDER BY source, target;

CREATE EXTENSION snowflake VERSION '1.0';
SELECT extversion FROM pg_extension WHERE extname = 'snowflake';
SELECT object FROM extension_objects ORDER BY 1;

SELECT pg_get_function_arguments('snowflake_status'::regproc) AS status_1_0;
-- The library serves each version's shorter declaration of snowflake_status().
SELECT timestamp_bits + node_bits + worker_bits + sequence_bits AS bits_1_0, drift_ms >= 0 AS drift_1_0
  FROM snowflake_status();

ALTER EXTENSION snowflake UPDATE TO '1.1';
SELECT extversion FROM pg_extension WHERE extname = 'snowflake';
SELECT object FROM extension_objects ORDER BY 1;
SELECT pg_get_function_arguments('snowflake_status'::regproc) AS status_1_1;
SELECT reservations >= 0 AND clock_steps_back >= 0 AND largest_step_back_ms >= 0 AS counters_1_1
  FROM snowflake_status();

ALTER EXTENSION snowflake UPDATE TO '1.2';
SELECT extversion FROM pg_extension WHERE extname = 'snowflake';
SELECT object FROM extension_objects ORDER BY 1;
SELECT pg_get_function_arguments(p.oid) AS convert_column_1_2,
       pg_get_function_result(p.oid) AS result, p.proconfig
  FROM pg_proc AS p
 WHERE p.oid = 'snowflake_convert_column'::regproc;
SELECT instance_id IS NOT NULL AS instance_1_2, node_collision AS collision_1_2
  FROM snowflake_status();

ALTER EXTENSION snowflake UPDATE TO '1.3';
SELECT extversion FROM pg_extension WHERE extname = 'snowflake';
SELECT object FROM extension_objects ORDER BY 1;
SELECT pg_get_function_arguments('snowflake_status'::regproc) AS status_1_3;
SELECT p.proconfig AS convert_column_1_3
  FROM pg_proc AS p
 WHERE p.oid = 'snowflake_convert_column'::regproc;

ALTER EXTENSION snowflake UPDATE TO '1.4';
SELECT extversion FROM pg_extension WHERE extname = 'snowflake';
SELECT object FROM extension_objects ORDER BY 1;

-- Under 1.4 the planner's rewrite has no functions to call.  Functions of
-- the same names planted in the extension's schema are not members of the
-- extension, so the planner hook never puts them into a query.
CREATE TABLE rewrite_probe (id bigint PRIMARY KEY);
CREATE FUNCTION snowflake_timestamp_lower_id(timestamptz, boolean) RETURNS bigint
LANGUAGE sql STABLE AS 'SELECT 0::bigint';
CREATE FUNCTION snowflake_timestamp_upper_id(timestamptz, boolean) RETURNS bigint
LANGUAGE sql STABLE AS 'SELECT 9223372036854775807::bigint';
CREATE FUNCTION snowflake_timestamp_lt(bigint, timestamptz) RETURNS boolean LANGUAGE sql STABLE AS 'SELECT true';
CREATE FUNCTION snowflake_timestamp_le(bigint, timestamptz) RETURNS boolean LANGUAGE sql STABLE AS 'SELECT true';
CREATE FUNCTION snowflake_timestamp_eq(bigint, timestamptz) RETURNS boolean LANGUAGE sql STABLE AS 'SELECT true';
CREATE FUNCTION snowflake_timestamp_ge(bigint, timestamptz) RETURNS boolean LANGUAGE sql STABLE AS 'SELECT true';
CREATE FUNCTION snowflake_timestamp_gt(bigint, timestamptz) RETURNS boolean LANGUAGE sql STABLE AS 'SELECT true';
EXPLAIN (COSTS OFF)
SELECT * FROM rewrite_probe WHERE snowflake_timestamp(id) >= '2026-01-01 00:00:00+00';
DROP FUNCTION snowflake_timestamp_lower_id(timestamptz, boolean),
              snowflake_timestamp_upper_id(timestamptz, boolean),
              snowflake_timestamp_lt(bigint, timestamptz), snowflake_timestamp_le(bigint, timestamptz),
              snowflake_timestamp_eq(bigint, timestamptz), snowflake_timestamp_ge(bigint, timestamptz),
              snowflake_timestamp_gt(bigint, timestamptz);

-- Under library 1.5, the SQL lease functions of 1.4 refuse: their
-- SECURITY DEFINER functions before their body runs (a schema owner could
-- turn them against the superuser), and the C function they all called,
-- since two sources would hand out one worker id twice.
\set VERBOSITY terse
SELECT * FROM snowflake_lease_worker('upgrade-refused', interval '1 hour');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM snowflake_lease_held(1, 'upgrade-refused');
\echo :LAST_ERROR_SQLSTATE
\set VERBOSITY default
-- Leases as 1.4 recorded them before the restart that loaded library 1.6:
-- one held for an hour with a reported timestamp, one released with its
-- last timestamp, one connection-scoped.  The update must carry each
-- window, token and history into the lease table of 1.5.
SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS now_ms \gset
INSERT INTO snowflake_worker_leases
       (node_id, worker_id, token, holder, holder_role, backend_pid, backend_start, instance_id,
        ttl, window_ms, layout, granted_at, renewed_at, not_before_ms, not_after_ms,
        last_timestamp_ms, released_at)
VALUES (0, 124, 1, 'upgrade-held', current_user, NULL, NULL, NULL, interval '1 hour', 3600000,
        '1735689600000/3/7/12', now(), now(), :now_ms - 1, :now_ms + 3600000, :now_ms + 5, NULL),
       (0, 125, 2, 'upgrade-released', current_user, NULL, NULL, NULL, interval '1 hour', 3600000,
        '1735689600000/3/7/12', now(), now(), :now_ms - 1, :now_ms + 3600000, :now_ms + 7, now()),
       (0, 126, 3, 'upgrade-connection', current_user, pg_backend_pid(),
        (SELECT backend_start FROM pg_stat_activity WHERE pid = pg_backend_pid()),
        (SELECT instance_id FROM snowflake_status()), NULL, 2000,
        '1735689600000/3/7/12', now(), now(), :now_ms - 1, :now_ms + 2000, NULL, NULL),
       -- another node's row, replicated here: not this node's to carry
       (5, 124, 9, 'on node 5', current_user, NULL, NULL, NULL, interval '1 hour', 3600000,
        '1735689600000/3/7/12', now(), now(), :now_ms - 1, :now_ms + 3600000, NULL, NULL);
SELECT 1 AS held_token, 124 AS held_worker, 2 AS released_token, 125 AS released_worker,
       to_timestamp((:now_ms - 1) / 1000.0) AS released_nb, 3 AS conn_token, 126 AS conn_worker,
       to_timestamp((:now_ms + 2000) / 1000.0) AS conn_na,
       to_timestamp((:now_ms + 3600000) / 1000.0) AS held_na \gset
-- 1.4's view calls its SECURITY DEFINER snowflake_lease_connection_alive()
-- for a connection-scoped lease, which is refused too; the leases as 1.4
-- showed them are read from its table, with its view's rules.
\set VERBOSITY terse
SELECT count(*) FROM snowflake_leases;
\set VERBOSITY default
CREATE TEMP TABLE leases_1_4 AS
SELECT l.worker_id, l.token,
       CASE WHEN l.released_at IS NOT NULL THEN 'released'
            WHEN l.ttl IS NULL THEN
                 CASE WHEN l.instance_id = s.instance_id
                           AND EXISTS (SELECT FROM pg_stat_activity AS a
                                        WHERE a.pid = l.backend_pid
                                          AND a.backend_start = l.backend_start)
                      THEN 'held' ELSE 'disconnected' END
            WHEN l.not_after_ms > floor(extract(epoch FROM clock_timestamp()) * 1000) THEN 'held'
            ELSE 'expired' END AS state,
       l.holder, l.holder_role, l.ttl, to_timestamp(l.not_before_ms / 1000.0) AS not_before,
       to_timestamp(l.not_after_ms / 1000.0) AS not_after,
       to_timestamp(l.last_timestamp_ms / 1000.0) AS last_timestamp,
       l.released_at IS NOT NULL AS released
  FROM snowflake_worker_leases AS l, snowflake_status() AS s
 WHERE l.node_id = 0;

-- A row changed by hand, with NULL in a column that 1.4 declares NOT NULL,
-- stops the update (23502) before it carries any lease: read as 0 it would
-- carry a lease with a window of nothing.
BEGIN;
ALTER TABLE snowflake_worker_leases ALTER COLUMN window_ms DROP NOT NULL;
UPDATE snowflake_worker_leases SET window_ms = NULL;
\set VERBOSITY terse
ALTER EXTENSION snowflake UPDATE TO '1.5';
\echo :LAST_ERROR_SQLSTATE
\set VERBOSITY default
ROLLBACK;

ALTER EXTENSION snowflake UPDATE TO '1.5';
SELECT extversion FROM pg_extension WHERE extname = 'snowflake';
SELECT object FROM extension_objects ORDER BY 1;
-- Under 1.5 the same query is rewritten into a range of id and a recheck.
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF)
SELECT * FROM rewrite_probe WHERE snowflake_timestamp(id) >= '2026-01-01 00:00:00+00';
RESET enable_bitmapscan;
DROP TABLE rewrite_probe;

-- No function of the extension runs with rights other than its caller's,
-- and only snowflake_convert_column() and snowflake_publication_tables() pin
-- their search_path.
SELECT proname, prosecdef, proconfig FROM extension_functions
 WHERE prosecdef OR proconfig IS NOT NULL ORDER BY 1;

-- Every lease came across: the same worker id, token, holder, role, window
-- and last reported timestamp.  The held one is still held; the released
-- one is released; the connection-scoped one is carried as ended.
SELECT o.holder, n.worker_id = o.worker_id AS same_worker, n.token = o.token AS same_token,
       n.holder_role = o.holder_role AS same_role, n.ttl = o.ttl AS same_ttl,
       n.not_before = o.not_before AS same_nb, n.not_after = o.not_after AS same_na,
       n.last_timestamp IS NOT DISTINCT FROM o.last_timestamp AS same_last,
       (n.released_at IS NOT NULL) = o.released AS same_release, o.state AS state_1_4,
       n.state AS state_1_5
  FROM leases_1_4 AS o JOIN snowflake_leases AS n USING (token)
 ORDER BY o.token;
SELECT count(*) AS leases_after_update FROM snowflake_leases;
-- The holder of the held lease renews it with its token under 1.5.
SELECT not_after >= :'held_na'::timestamptz AS renewed_under_1_5
  FROM snowflake_renew_lease(:held_token, NULL);
-- New grants get new tokens: the never-leased worker id first, then the
-- released one, and the connection-scoped lease's worker id last, only
-- above its whole window (its holder may still issue until then).
SELECT g.worker_id = :conn_worker AS conn_worker, g.token > :conn_token AS newer_token,
       g.worker_id <> :held_worker AS not_the_held_one,
       CASE WHEN g.worker_id = :conn_worker
            THEN g.not_before >= :'conn_na'::timestamptz - interval '1 ms' END AS above_old_window,
       CASE WHEN g.worker_id = :released_worker
            THEN g.not_before = :'released_nb'::timestamptz + interval '8 ms' END AS above_last_id
  FROM (VALUES (1, 'after-1'), (2, 'after-2'), (3, 'after-3')) AS v(n, h),
       LATERAL snowflake_lease_worker(v.h, interval '1 minute') AS g
 ORDER BY v.n;
SELECT snowflake_release_lease(token, NULL) AS released_after_upgrade
  FROM snowflake_leases WHERE state = 'held' ORDER BY token;

-- 1.6 adds the snowflake type.
ALTER EXTENSION snowflake UPDATE TO '1.6';
SELECT extversion FROM pg_extension WHERE extname = 'snowflake';

-- The upgraded extension matches a fresh install of the default version.
CREATE TEMP TABLE upgraded AS SELECT * FROM extension_functions;
CREATE TEMP TABLE upgraded_objects AS SELECT * FROM extension_objects;
DROP EXTENSION snowflake;
CREATE EXTENSION snowflake;
SELECT extversion = (SELECT default_version FROM pg_available_extensions
                      WHERE name = 'snowflake') AS at_default_version
  FROM pg_extension WHERE extname = 'snowflake';
SELECT count(*) AS differences
  FROM ((SELECT * FROM upgraded EXCEPT SELECT * FROM extension_functions)
        UNION ALL
        (SELECT * FROM extension_functions EXCEPT SELECT * FROM upgraded)) AS d;
SELECT count(*) AS object_differences
  FROM ((SELECT * FROM upgraded_objects EXCEPT SELECT * FROM extension_objects)
        UNION ALL
        (SELECT * FROM extension_objects EXCEPT SELECT * FROM upgraded_objects)) AS d;

-- Still working after the update.
SELECT snowflake_nextval() > 0 AS works;

-- The recorded layouts accept only what the settings accept (since 1.5).
\set VERBOSITY terse
INSERT INTO snowflake_layout (first_id, epoch, node_bits, worker_bits, sequence_bits)
    VALUES (1, 'infinity', 3, 7, 12);
INSERT INTO snowflake_layout (first_id, epoch, node_bits, worker_bits, sequence_bits)
    VALUES (1, '-infinity', 3, 7, 12);
INSERT INTO snowflake_layout (first_id, epoch, node_bits, worker_bits, sequence_bits)
    VALUES (1, '2025-01-01', 0, 0, 32);
INSERT INTO snowflake_layout (first_id, epoch, node_bits, worker_bits, sequence_bits)
    VALUES (1, '2025-01-01', 17, 0, 12);
\set VERBOSITY default
