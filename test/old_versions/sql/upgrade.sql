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
   AND coalesce(t.typrelid, 0) = 0 AND coalesce(elem.typrelid, 0) = 0
   -- PostgreSQL 17 and later make a member type's array type a member too.
   AND coalesce(t.typcategory, '') <> 'A';
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

-- Under 1.3 the planner's rewrite has no functions to call.  Functions of
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

-- 1.6 adds the layout checks, the planner's timestamp functions, leases,
-- the snowflake type and its text forms, and the horizon in
-- snowflake_status().
ALTER EXTENSION snowflake UPDATE TO '1.6';
SELECT extversion FROM pg_extension WHERE extname = 'snowflake';
SELECT object FROM extension_objects ORDER BY 1;
-- Under 1.6 the same query is rewritten into a range of id and a recheck.
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF)
SELECT * FROM rewrite_probe WHERE snowflake_timestamp(id) >= '2026-01-01 00:00:00+00';
RESET enable_bitmapscan;
DROP TABLE rewrite_probe;

-- No function of the extension runs with rights other than its caller's,
-- and only snowflake_publication_tables() pins its search_path.
SELECT proname, prosecdef, proconfig FROM extension_functions
 WHERE prosecdef OR proconfig IS NOT NULL ORDER BY 1;

-- Leases work in the updated database: a grant, a renewal and a release.
SELECT worker_id >= 0 AS granted, token AS lease_token
  FROM snowflake_lease_worker('after-update', interval '1 minute') \gset
SELECT :'granted' AS granted_after_update;
SELECT not_after > now() AS renewed_after_update FROM snowflake_renew_lease(:lease_token, NULL);
SELECT snowflake_release_lease(:lease_token, NULL) AS released_after_update;

-- A fresh install of the default version on the same installation.  That
-- the updated catalog equals a fresh one, item by item, is
-- test/t/039_install_versions.pl's check.
DROP EXTENSION snowflake;
CREATE EXTENSION snowflake;
SELECT extversion = (SELECT default_version FROM pg_available_extensions
                      WHERE name = 'snowflake') AS at_default_version
  FROM pg_extension WHERE extname = 'snowflake';

-- Still working after the update.
SELECT snowflake_nextval() > 0 AS works;

