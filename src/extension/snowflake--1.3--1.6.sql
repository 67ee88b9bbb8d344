/* snowflake--1.3--1.6.sql: from release 1.3 to release 1.6 */

\echo Use "ALTER EXTENSION snowflake UPDATE TO '1.6'" to load this file. \quit

-- The one update script from the last release, 1.3, to this one.  During a
-- development cycle every change edits this script and the install script,
-- snowflake--1.6.sql, in place (README.md here): a database updated from
-- 1.3 gets exactly the catalog of a fresh install, which
-- test/t/039_install_versions.pl compares item by item.  The numbers 1.4
-- and 1.5 were never released and are never used.
--
-- It adds the checks of the recorded layouts, the planner's timestamp
-- comparisons, snowflake_id_interval(), snowflake_publication_tables(),
-- worker-id leases, the snowflake type and its text forms, the horizon in
-- snowflake_status(), and snowflake_convert_column() in C.
--
-- This script runs as the superuser who updates the extension, with
-- search_path set to the extension's schema: every name it uses is
-- qualified, and every call's argument types match exactly.

--
-- The layout history
--

-- The recorded layouts accept only what the settings accept: a finite
-- epoch, and widths within the settings' ranges (1.0 allowed, say, 32
-- sequence bits, which snowflake_decode() then misread).
ALTER TABLE @extschema@.snowflake_layout
    ADD CONSTRAINT snowflake_layout_epoch_check CHECK (pg_catalog.isfinite(epoch)),
    ADD CONSTRAINT snowflake_layout_widths_check
        CHECK (node_bits OPERATOR(pg_catalog.<=) 16
               AND worker_bits OPERATOR(pg_catalog.<=) 16
               AND sequence_bits OPERATOR(pg_catalog.<=) 24);

-- Comparisons of an ID's timestamp, served by indexes on the ID.  The
-- library's planner hook turns
--     snowflake_timestamp(id) >= x
-- into
--     id >= snowflake_timestamp_lower_id(x, true) AND snowflake_timestamp_ge(id, x)
-- (and the same for <, <=, =, >, and for (snowflake_decode(id)).ts), so a
-- B-tree or BRIN index on id, partition pruning on id and id's statistics
-- all serve it.  See src/pg/planner/README.md.

-- The bounds: the smallest and largest IDs whose timestamp lies on one side
-- of ts, under the layout history.  NULL when no ID does.  STABLE: they
-- follow the history in snowflake_layout.
CREATE FUNCTION @extschema@.snowflake_timestamp_lower_id(ts timestamptz, inclusive boolean)
RETURNS bigint
AS 'MODULE_PATHNAME', 'snowflake_timestamp_lower_id'
LANGUAGE C STABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION @extschema@.snowflake_timestamp_lower_id(timestamptz, boolean) IS
    'Returns the smallest snowflake ID whose timestamp is at or after ts (after ts when not inclusive), or NULL';

CREATE FUNCTION @extschema@.snowflake_timestamp_upper_id(ts timestamptz, inclusive boolean)
RETURNS bigint
AS 'MODULE_PATHNAME', 'snowflake_timestamp_upper_id'
LANGUAGE C STABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION @extschema@.snowflake_timestamp_upper_id(timestamptz, boolean) IS
    'Returns the largest snowflake ID whose timestamp is at or before ts (before ts when not inclusive), or NULL';

-- The rechecks: the comparison itself, kept beside the range.  Their
-- support function gives them selectivity 1, since the range beside them
-- carries the estimate.
CREATE FUNCTION @extschema@.snowflake_timestamp_support(internal)
RETURNS internal
AS 'MODULE_PATHNAME', 'snowflake_timestamp_support'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION @extschema@.snowflake_timestamp_lt(id bigint, ts timestamptz)
RETURNS boolean
AS 'MODULE_PATHNAME', 'snowflake_timestamp_lt'
LANGUAGE C STABLE STRICT PARALLEL SAFE
SUPPORT @extschema@.snowflake_timestamp_support;

CREATE FUNCTION @extschema@.snowflake_timestamp_le(id bigint, ts timestamptz)
RETURNS boolean
AS 'MODULE_PATHNAME', 'snowflake_timestamp_le'
LANGUAGE C STABLE STRICT PARALLEL SAFE
SUPPORT @extschema@.snowflake_timestamp_support;

CREATE FUNCTION @extschema@.snowflake_timestamp_eq(id bigint, ts timestamptz)
RETURNS boolean
AS 'MODULE_PATHNAME', 'snowflake_timestamp_eq'
LANGUAGE C STABLE STRICT PARALLEL SAFE
SUPPORT @extschema@.snowflake_timestamp_support;

CREATE FUNCTION @extschema@.snowflake_timestamp_ge(id bigint, ts timestamptz)
RETURNS boolean
AS 'MODULE_PATHNAME', 'snowflake_timestamp_ge'
LANGUAGE C STABLE STRICT PARALLEL SAFE
SUPPORT @extschema@.snowflake_timestamp_support;

CREATE FUNCTION @extschema@.snowflake_timestamp_gt(id bigint, ts timestamptz)
RETURNS boolean
AS 'MODULE_PATHNAME', 'snowflake_timestamp_gt'
LANGUAGE C STABLE STRICT PARALLEL SAFE
SUPPORT @extschema@.snowflake_timestamp_support;

COMMENT ON FUNCTION @extschema@.snowflake_timestamp_lt(bigint, timestamptz) IS
    'snowflake_timestamp(id) < ts; the planner''s recheck beside an ID range';
COMMENT ON FUNCTION @extschema@.snowflake_timestamp_le(bigint, timestamptz) IS
    'snowflake_timestamp(id) <= ts; the planner''s recheck beside an ID range';
COMMENT ON FUNCTION @extschema@.snowflake_timestamp_eq(bigint, timestamptz) IS
    'snowflake_timestamp(id) = ts; the planner''s recheck beside an ID range';
COMMENT ON FUNCTION @extschema@.snowflake_timestamp_ge(bigint, timestamptz) IS
    'snowflake_timestamp(id) >= ts; the planner''s recheck beside an ID range';
COMMENT ON FUNCTION @extschema@.snowflake_timestamp_gt(bigint, timestamptz) IS
    'snowflake_timestamp(id) > ts; the planner''s recheck beside an ID range';

-- How many IDs a span of time covers under the layout in force now: the
-- partition width, in IDs, of a table range-partitioned on its snowflake
-- key (pg_partman's integer intervals; docs/partitioning.md).
CREATE FUNCTION @extschema@.snowflake_id_interval(span interval)
RETURNS bigint
AS 'MODULE_PATHNAME', 'snowflake_id_interval'
LANGUAGE C STABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION @extschema@.snowflake_id_interval(interval) IS
    'Returns the number of snowflake IDs that a span of time covers under the layout in force now';

-- What a multi-primary setup must replicate between its nodes: every
-- permanent table of the database that no extension owns, and the node
-- registry snowflake_nodes, never snowflake_layout (each node keeps its own
-- layout history).  For CREATE PUBLICATION … FOR TABLE, which PostgreSQL's
-- own logical replication needs, since FOR ALL TABLES would also carry
-- snowflake_layout (docs/multi-primary.md).  Partitioned tables are listed
-- by their root, and their partitions not.  It runs with the caller's
-- rights, under a pinned search_path, with every name qualified, and finds
-- snowflake_nodes by the extension's membership, never by a schema name.
CREATE FUNCTION @extschema@.snowflake_publication_tables()
RETURNS SETOF regclass
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
SELECT c.oid::pg_catalog.regclass
  FROM pg_catalog.pg_class AS c
  JOIN pg_catalog.pg_namespace AS n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
 WHERE c.relkind OPERATOR(pg_catalog.=) ANY (ARRAY['r', 'p']::"char"[])
   AND c.relpersistence OPERATOR(pg_catalog.=) 'p'::"char"
   AND NOT c.relispartition
   AND n.nspname OPERATOR(pg_catalog.<>) ALL (ARRAY['pg_catalog', 'information_schema']::name[])
   AND n.nspname OPERATOR(pg_catalog.!~) '^pg_'::text
   AND ((c.relname OPERATOR(pg_catalog.=) 'snowflake_nodes'::name
         AND EXISTS (SELECT FROM pg_catalog.pg_depend AS d
                       JOIN pg_catalog.pg_extension AS e ON e.oid OPERATOR(pg_catalog.=) d.refobjid
                      WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
                        AND d.objid OPERATOR(pg_catalog.=) c.oid
                        AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass
                        AND d.deptype OPERATOR(pg_catalog.=) 'e'::"char"
                        AND e.extname OPERATOR(pg_catalog.=) 'snowflake'::name))
        OR NOT EXISTS (SELECT FROM pg_catalog.pg_depend AS d
                        WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
                          AND d.objid OPERATOR(pg_catalog.=) c.oid
                          AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass
                          AND d.deptype OPERATOR(pg_catalog.=) 'e'::"char"))
 ORDER BY n.nspname, c.relname
$$;

COMMENT ON FUNCTION @extschema@.snowflake_publication_tables() IS
    'Returns the tables a multi-primary setup must replicate: the database''s own tables and snowflake_nodes, never snowflake_layout';

--
-- Worker-id leases for application-side generators
--

-- An application instance that makes its own Snowflake IDs leases a worker
-- id of this node's lease space (the top snowflake.lease_workers ids) and
-- issues IDs whose timestamps lie strictly between the lease's not_before
-- and not_after.  The leases live in the library: a table in shared memory,
-- written to $PGDATA/snowflake.lease_state and WAL-logged.  The functions
-- run with their caller's rights and resolve no name.  Who may lease is
-- granted explicitly (see "Privileges" in the README).  See docs/leases.md
-- and src/pg/leases/README.md.
CREATE FUNCTION @extschema@.snowflake_lease_worker(holder text,
                                       ttl interval DEFAULT NULL,
                                       client_time timestamptz DEFAULT NULL,
                                       OUT worker_id integer,
                                       OUT node_id integer,
                                       OUT token bigint,
                                       OUT not_before timestamptz,
                                       OUT not_after timestamptz,
                                       OUT expires_at timestamptz,
                                       OUT granted_at timestamptz,
                                       OUT renew_interval interval,
                                       OUT epoch timestamptz,
                                       OUT timestamp_bits integer,
                                       OUT node_bits integer,
                                       OUT worker_bits integer,
                                       OUT sequence_bits integer)
RETURNS record
AS 'MODULE_PATHNAME', 'snowflake_lease_worker'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

REVOKE ALL ON FUNCTION @extschema@.snowflake_lease_worker(text, interval, timestamptz) FROM PUBLIC;

COMMENT ON FUNCTION @extschema@.snowflake_lease_worker(text, interval, timestamptz) IS
    'Leases a worker id to an application-side generator, for the connection''s life (ttl NULL) or for ttl';

CREATE FUNCTION @extschema@.snowflake_renew_lease(token bigint,
                                      last_id bigint,
                                      client_time timestamptz DEFAULT NULL,
                                      OUT not_after timestamptz,
                                      OUT expires_at timestamptz,
                                      OUT renewed_at timestamptz)
RETURNS record
AS 'MODULE_PATHNAME', 'snowflake_renew_lease'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

REVOKE ALL ON FUNCTION @extschema@.snowflake_renew_lease(bigint, bigint, timestamptz) FROM PUBLIC;

COMMENT ON FUNCTION @extschema@.snowflake_renew_lease(bigint, bigint, timestamptz) IS
    'Extends a worker-id lease and records the last ID its holder issued';

CREATE FUNCTION @extschema@.snowflake_release_lease(token bigint, last_id bigint)
RETURNS boolean
AS 'MODULE_PATHNAME', 'snowflake_release_lease'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

REVOKE ALL ON FUNCTION @extschema@.snowflake_release_lease(bigint, bigint) FROM PUBLIC;

COMMENT ON FUNCTION @extschema@.snowflake_release_lease(bigint, bigint) IS
    'Ends a worker-id lease at once, recording the last ID its holder issued';

-- The rows of snowflake_leases.  It shows a role what pg_stat_activity
-- would: all leases to pg_read_all_stats (and so pg_monitor), its own
-- roles' leases to any other role.  So PUBLIC may run it.
CREATE FUNCTION @extschema@.snowflake_lease_list(OUT node_id integer,
                                     OUT worker_id integer,
                                     OUT token bigint,
                                     OUT state text,
                                     OUT holder text,
                                     OUT holder_role name,
                                     OUT client_addr inet,
                                     OUT application_name text,
                                     OUT backend_pid integer,
                                     OUT ttl interval,
                                     OUT since timestamptz,
                                     OUT renewed_at timestamptz,
                                     OUT expires_at timestamptz,
                                     OUT not_before timestamptz,
                                     OUT not_after timestamptz,
                                     OUT last_timestamp timestamptz,
                                     OUT released_at timestamptz)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'snowflake_lease_list'
LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;

COMMENT ON FUNCTION @extschema@.snowflake_lease_list() IS
    'The worker-id leases the calling role may see; read snowflake_leases';

-- The leases, one row per worker id ever leased.  The body is one
-- qualified call: nothing in it binds to an object another role made.  It
-- names hosts and processes, as pg_stat_activity does for monitoring roles.
CREATE VIEW @extschema@.snowflake_leases AS
SELECT l.node_id, l.worker_id, l.token, l.state, l.holder, l.holder_role, l.client_addr,
       l.application_name, l.backend_pid, l.ttl, l.since, l.renewed_at, l.expires_at,
       l.not_before, l.not_after, l.last_timestamp, l.released_at
  FROM @extschema@.snowflake_lease_list() AS l;

COMMENT ON VIEW @extschema@.snowflake_leases IS
    'Worker ids leased to application-side generators: holder, state, window and last reported timestamp';

GRANT SELECT ON @extschema@.snowflake_leases TO pg_monitor;

--
-- The snowflake type
--

-- A snowflake ID for APIs: stored, sent and received exactly as a bigint,
-- written in decimal, but a type of its own, so that to_json(), json_agg(),
-- row_to_json() and jsonb_build_object() write it as a JSON string (they
-- write bigint as a bare number, which JavaScript rounds above 2^53).  It
-- has no operators of its own: the casts to and from bigint are binary
-- coercions, so bigint's B-tree, hash and BRIN operator classes serve it
-- (as text's serve varchar), every function that takes a bigint ID takes it
-- unchanged, and ALTER COLUMN ... TYPE snowflake on a bigint column
-- rewrites neither the table nor its indexes.  docs/snowflake-type.md.
-- The input, output, send and receive functions call bigint's own
-- (src/pg/type/snowflake_io.cpp).
-- The type's name must be free in the extension's schema: a table named
-- snowflake there has a row type of that name.  Say so, with what to do,
-- instead of CREATE TYPE's bare "already exists".
DO $free$
BEGIN
    IF EXISTS (SELECT FROM pg_catalog.pg_type AS t
                WHERE t.typname OPERATOR(pg_catalog.=) 'snowflake'
                  AND t.typnamespace OPERATOR(pg_catalog.=) '@extschema@'::pg_catalog.regnamespace) THEN
        RAISE EXCEPTION 'schema "%" already has a type named "snowflake"', '@extschema@'
              USING ERRCODE = 'duplicate_object',
                    DETAIL = 'Version 1.6 adds the type snowflake to the extension''s schema; a table named snowflake has a row type of that name.',
                    HINT = 'Rename the table or type, then run the command again.';
    END IF;
END
$free$;

CREATE TYPE @extschema@.snowflake;

CREATE FUNCTION @extschema@.snowflake_in(cstring)
RETURNS @extschema@.snowflake
AS 'MODULE_PATHNAME', 'snowflake_in'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION @extschema@.snowflake_out(@extschema@.snowflake)
RETURNS cstring
AS 'MODULE_PATHNAME', 'snowflake_out'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION @extschema@.snowflake_recv(internal)
RETURNS @extschema@.snowflake
AS 'MODULE_PATHNAME', 'snowflake_recv'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION @extschema@.snowflake_send(@extschema@.snowflake)
RETURNS bytea
AS 'MODULE_PATHNAME', 'snowflake_send'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE TYPE @extschema@.snowflake (
    INPUT = @extschema@.snowflake_in,
    OUTPUT = @extschema@.snowflake_out,
    RECEIVE = @extschema@.snowflake_recv,
    SEND = @extschema@.snowflake_send,
    INTERNALLENGTH = 8,
    PASSEDBYVALUE,
    ALIGNMENT = double,
    STORAGE = plain,
    CATEGORY = 'N'
);

COMMENT ON TYPE @extschema@.snowflake IS
    'A snowflake ID: a bigint that JSON functions write as a string';

-- snowflake to bigint is implicit, so that every operator, operator class
-- and function of bigint applies; bigint to snowflake only on assignment
-- (DEFAULT snowflake_nextval(), INSERT, UPDATE): with implicit casts both
-- ways, an expression mixing the two would take the type of whichever
-- comes first.  An integer literal becomes a
-- snowflake implicitly, so that COALESCE(id, 0) stays a snowflake.
CREATE CAST (@extschema@.snowflake AS bigint) WITHOUT FUNCTION AS IMPLICIT;

CREATE CAST (bigint AS @extschema@.snowflake) WITHOUT FUNCTION AS ASSIGNMENT;

CREATE FUNCTION @extschema@.snowflake(integer)
RETURNS @extschema@.snowflake
AS 'MODULE_PATHNAME', 'snowflake_from_integer'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION @extschema@.snowflake(integer) IS
    'Converts an integer to a snowflake';

CREATE CAST (integer AS @extschema@.snowflake) WITH FUNCTION @extschema@.snowflake(integer) AS IMPLICIT;

CREATE CAST (@extschema@.snowflake AS timestamptz) WITH FUNCTION @extschema@.snowflake_timestamp(bigint);

-- Compact text forms of an ID, for URLs and logs: base32hex (RFC 4648's
-- alphabet 0-9A-V), crockford (Crockford's base32) and base62 (0-9A-Za-z),
-- written at a fixed width (13, 13 and 11 characters), zero-padded, so
-- that under the C collation the text sorts as the IDs do; and decimal,
-- the type's own text.  Reading is strict: the full width, no sign, no
-- separator.  The forms are src/core/text_forms.hpp; docs/reference.md.
CREATE FUNCTION @extschema@.snowflake_to_text(id bigint, format text)
RETURNS text
AS 'MODULE_PATHNAME', 'snowflake_to_text'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION @extschema@.snowflake_to_text(bigint, text) IS
    'Writes a snowflake ID in a text form: base32hex, crockford or base62 (fixed width, sorting as the IDs do under the C collation), or decimal';

CREATE FUNCTION @extschema@.snowflake_from_text(input text, format text)
RETURNS @extschema@.snowflake
AS 'MODULE_PATHNAME', 'snowflake_from_text'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION @extschema@.snowflake_from_text(text, text) IS
    'Reads a snowflake ID in a text form of snowflake_to_text(): base32hex, crockford, base62 or decimal';

--
-- The node registry
--

-- Each heartbeat carries its writer's clock and the instances whose
-- heartbeats proved their clocks ahead of it (src/pg/registry/clock_skew.hpp).
-- A row replicated from a node not yet updated gets the defaults: no clock.
ALTER TABLE @extschema@.snowflake_nodes
    ADD COLUMN clock timestamptz NOT NULL DEFAULT '-infinity',
    ADD COLUMN clocks_ahead uuid[] NOT NULL DEFAULT '{}',
    ADD COLUMN clocks_ahead_ms bigint[] NOT NULL DEFAULT '{}';

GRANT SELECT (clock, clocks_ahead, clocks_ahead_ms) ON @extschema@.snowflake_nodes TO PUBLIC;

--
-- Monitoring
--

-- snowflake_status() adds, at the end, what the queries file for
-- postgres_exporter (monitoring/postgres_exporter/) needs beyond the old
-- columns: how far the reservation runs ahead of the clock, and the
-- layout's horizon, when its timestamp bits run out.  New output columns
-- need a new function; nothing in the extension depends on the old one.
DROP FUNCTION @extschema@.snowflake_status();

CREATE FUNCTION @extschema@.snowflake_status(OUT epoch timestamptz,
                                             OUT timestamp_bits integer,
                                             OUT node_bits integer,
                                             OUT worker_bits integer,
                                             OUT sequence_bits integer,
                                             OUT node_id integer,
                                             OUT max_drift_ms integer,
                                             OUT slots_total integer,
                                             OUT slots_used integer,
                                             OUT ids_issued bigint,
                                             OUT overflow_waits bigint,
                                             OUT drift_ms bigint,
                                             OUT reserved_until timestamptz,
                                             OUT reservations bigint,
                                             OUT clock_steps_back bigint,
                                             OUT largest_step_back_ms bigint,
                                             OUT instance_id uuid,
                                             OUT node_collision boolean,
                                             OUT sessions_attached integer,
                                             OUT slots_shared integer,
                                             OUT registry_last_round timestamptz,
                                             OUT registry_problem text,
                                             OUT reserved_ahead_ms bigint,
                                             OUT horizon timestamptz,
                                             OUT horizon_seconds bigint,
                                             OUT clock_steps_forward bigint,
                                             OUT largest_step_forward_ms bigint,
                                             OUT last_clock_step timestamptz,
                                             OUT clock_step_pending_ms bigint,
                                             OUT clock_peers integer,
                                             OUT clock_skewed_peers integer,
                                             OUT clock_skew_ms bigint)
RETURNS record
AS 'MODULE_PATHNAME', 'snowflake_status'
LANGUAGE C VOLATILE PARALLEL SAFE;

COMMENT ON FUNCTION @extschema@.snowflake_status() IS
    'Reports the layout and its horizon, worker slots and their sessions, the reservation, clock steps and the node registry';

--
-- Converting serial and identity keys
--

-- Hardened in 1.6: it refuses a CHECK or exclusion constraint, index or
-- extended statistics object on a column it widens that names a function,
-- operator or type that is not built in, changes only tables that the
-- calling role owns itself, locks every table it changes before its
-- checks, names the extension's functions from their OIDs (refusing if a
-- schema changed during the call), and runs at READ COMMITTED only.  It is
-- now written in C.  Same signature, result, owner, grants and comment.

-- Converts a smallserial, serial, bigserial or identity column to
-- bigint DEFAULT snowflake_nextval(), with every column that references it
-- through foreign keys; see docs/reference.md.  Written in C: it takes
-- the table by OID and checks by OID what its ALTER TABLE did
-- (src/pg/convert/README.md).
CREATE OR REPLACE FUNCTION @extschema@.snowflake_convert_column(table_name regclass, column_name name)
RETURNS TABLE (affected_table regclass,
               affected_column name,
               old_type regtype,
               action text)
AS 'MODULE_PATHNAME', 'snowflake_convert_column'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
