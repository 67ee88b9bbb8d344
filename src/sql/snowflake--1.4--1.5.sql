/* snowflake--1.4--1.5.sql: worker-id leases in C, on a lease table no role can steer */

\echo Use "ALTER EXTENSION snowflake UPDATE TO '1.5'" to load this file. \quit

-- Version 1.4 kept leases in the table snowflake_worker_leases, changed by
-- SECURITY DEFINER PL/pgSQL functions.  From 1.5 on they live in the
-- library: a table in shared memory, written to $PGDATA/snowflake.lease_state
-- and WAL-logged with the extension's resource manager, like the
-- reservation.  The lease functions are C functions that run with their
-- caller's rights and resolve no name; nothing here runs with more rights
-- than its caller.  See docs/leases.md and src/pg/leases/README.md.
--
-- This script runs as the superuser who updates the extension, with
-- search_path set to the extension's schema: every name it uses is
-- qualified, and every call's argument types match exactly.

-- Carry this node's leases of the old table into the lease table: window,
-- token and history of every worker id (a connection-scoped lease as ended,
-- see snowflake_lease_import_v14 in src/pg/leases/lease_functions.cpp).
CREATE FUNCTION @extschema@.snowflake_lease_import_v14(lease @extschema@.snowflake_worker_leases)
RETURNS boolean
AS 'MODULE_PATHNAME', 'snowflake_lease_import_v14'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

REVOKE ALL ON FUNCTION @extschema@.snowflake_lease_import_v14(@extschema@.snowflake_worker_leases) FROM PUBLIC;

SELECT pg_catalog.count(*) AS imported
  FROM (SELECT l FROM @extschema@.snowflake_worker_leases AS l ORDER BY l.token) AS o
 WHERE @extschema@.snowflake_lease_import_v14(o.l);

DROP FUNCTION @extschema@.snowflake_lease_import_v14(@extschema@.snowflake_worker_leases);

-- The lease functions, now in C.  CREATE OR REPLACE keeps their grants;
-- it also drops SECURITY DEFINER and the SET clauses of 1.4.
CREATE OR REPLACE FUNCTION @extschema@.snowflake_lease_worker(holder text,
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

CREATE OR REPLACE FUNCTION @extschema@.snowflake_renew_lease(token bigint,
                                      last_id bigint,
                                      client_time timestamptz DEFAULT NULL,
                                      OUT not_after timestamptz,
                                      OUT expires_at timestamptz,
                                      OUT renewed_at timestamptz)
RETURNS record
AS 'MODULE_PATHNAME', 'snowflake_renew_lease'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

CREATE OR REPLACE FUNCTION @extschema@.snowflake_release_lease(token bigint, last_id bigint)
RETURNS boolean
AS 'MODULE_PATHNAME', 'snowflake_release_lease'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

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

-- The same columns as 1.4's view, so its grants stay.  The body is one
-- qualified call: nothing in it binds to an object another role made.
CREATE OR REPLACE VIEW @extschema@.snowflake_leases AS
SELECT l.node_id, l.worker_id, l.token, l.state, l.holder, l.holder_role, l.client_addr,
       l.application_name, l.backend_pid, l.ttl, l.since, l.renewed_at, l.expires_at,
       l.not_before, l.not_after, l.last_timestamp, l.released_at
  FROM @extschema@.snowflake_lease_list() AS l;

-- 1.4's helpers and table go; the lease history now lives in the lease
-- table, which DROP SCHEMA cannot reach and pg_dump does not need.
DROP FUNCTION @extschema@.snowflake_lease_held(bigint, text);
DROP FUNCTION @extschema@.snowflake_lease_reported_ms(@extschema@.snowflake_worker_leases, bigint);
DROP FUNCTION @extschema@.snowflake_lease_check_clock(timestamptz, bigint, bigint);
DROP FUNCTION @extschema@.snowflake_lease_layout(timestamptz, integer, integer, integer);
DROP FUNCTION @extschema@.snowflake_lease_ms(timestamptz);
DROP FUNCTION @extschema@.snowflake_lease_time(bigint);
DROP FUNCTION @extschema@.snowflake_lease_connection_alive(integer, timestamptz);
DROP FUNCTION @extschema@.snowflake_lease_context(text);
ALTER EXTENSION snowflake DROP TABLE @extschema@.snowflake_worker_leases;
DROP TABLE @extschema@.snowflake_worker_leases;

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
-- rights, under a pinned search_path, with every name qualified.
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
   AND (c.oid OPERATOR(pg_catalog.=) '@extschema@.snowflake_nodes'::pg_catalog.regclass
        OR NOT EXISTS (SELECT FROM pg_catalog.pg_depend AS d
                        WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
                          AND d.objid OPERATOR(pg_catalog.=) c.oid
                          AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass
                          AND d.deptype OPERATOR(pg_catalog.=) 'e'::"char"))
 ORDER BY n.nspname, c.relname
$$;

COMMENT ON FUNCTION @extschema@.snowflake_publication_tables() IS
    'Returns the tables a multi-primary setup must replicate: the database''s own tables and snowflake_nodes, never snowflake_layout';
