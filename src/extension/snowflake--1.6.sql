/* snowflake--1.6.sql: install script of version 1.6 */

\echo Use "CREATE EXTENSION snowflake" to load this file. \quit

-- A fresh install of 1.6 builds exactly the objects that updating 1.0
-- through 1.3 to 1.6 (the snowflake--X--Y.sql scripts) builds: the same
-- columns, constraints, function labels, comments and grants.  Older
-- versions cannot be installed anew; test/t/039_install_versions.pl
-- compares the two catalogs item by item.  A change here is made in
-- snowflake--1.3--1.6.sql too (README.md).
--
-- The script runs as the superuser who creates the extension, with
-- search_path set to the extension's schema (pg_catalog is searched
-- first).  The views name the functions they call with their schema, and
-- the function bodies that run later pin their search_path and name the
-- extension's objects with their schema, so that no object another role
-- creates can take part in them.

--
-- The layout history
--

-- Layouts in force in this database, oldest first.  An ID uses the layout
-- of the row with the largest first_id not above it.  The recorded layouts
-- accept only what the settings accept: a finite epoch and widths within
-- the settings' ranges.
CREATE TABLE snowflake_layout (
    first_id      bigint      NOT NULL CHECK (first_id >= 0),
    epoch         timestamptz NOT NULL,
    node_bits     integer     NOT NULL CHECK (node_bits >= 0),
    worker_bits   integer     NOT NULL CHECK (worker_bits >= 0),
    sequence_bits integer     NOT NULL CHECK (sequence_bits >= 1),
    recorded_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (first_id, recorded_at),
    CONSTRAINT snowflake_layout_check
        CHECK (node_bits + worker_bits + sequence_bits <= 32),
    CONSTRAINT snowflake_layout_epoch_check CHECK (isfinite(epoch)),
    CONSTRAINT snowflake_layout_widths_check
        CHECK (node_bits <= 16 AND worker_bits <= 16 AND sequence_bits <= 24)
);

COMMENT ON TABLE snowflake_layout IS
    'Snowflake ID layouts recorded in this database; maintained by the extension';

-- pg_dump keeps the history, so restored IDs still decode.
SELECT pg_catalog.pg_extension_config_dump('@extschema@.snowflake_layout', '');

GRANT SELECT ON snowflake_layout TO PUBLIC;

--
-- The node registry
--

-- Instances that ran with each node_id: every run of a server heartbeats
-- here, so that two running primaries with one node_id notice each other.
-- Multi-primary replication must carry this table.
CREATE TABLE snowflake_nodes (
    node_id           integer     NOT NULL,
    instance_id       uuid        NOT NULL,
    system_identifier text        NOT NULL,
    timeline          integer     NOT NULL,
    host              text        NOT NULL,
    port              integer     NOT NULL,
    data_directory    text        NOT NULL,
    started_at        timestamptz NOT NULL,
    last_seen         timestamptz NOT NULL,
    beats             bigint      NOT NULL,
    clock             timestamptz NOT NULL DEFAULT '-infinity',
    clocks_ahead      uuid[]      NOT NULL DEFAULT '{}',
    clocks_ahead_ms   bigint[]    NOT NULL DEFAULT '{}',
    PRIMARY KEY (node_id, instance_id)
);

COMMENT ON TABLE snowflake_nodes IS
    'Running and past instances of each snowflake node; maintained by the extension';

-- Least privilege.  The table names hosts, ports, data directories and
-- system identifiers, which PostgreSQL shows only to superusers and
-- monitoring roles; everyone may see which node ids run and when they last
-- beat.
GRANT SELECT (node_id, instance_id, timeline, started_at, last_seen, beats,
              clock, clocks_ahead, clocks_ahead_ms)
    ON snowflake_nodes TO PUBLIC;
GRANT SELECT ON snowflake_nodes TO pg_monitor;

--
-- Issuing IDs
--

CREATE FUNCTION snowflake_nextval()
RETURNS bigint
AS 'MODULE_PATHNAME', 'snowflake_nextval'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;

COMMENT ON FUNCTION snowflake_nextval() IS
    'Returns a new snowflake ID, larger than every ID this session issued before';

-- Batches: n IDs in one call, in increasing order, with the guarantees of
-- n single calls.
CREATE FUNCTION snowflake_nextval(n integer)
RETURNS SETOF bigint
AS 'MODULE_PATHNAME', 'snowflake_nextval_batch'
LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED ROWS 100;

COMMENT ON FUNCTION snowflake_nextval(integer) IS
    'Returns n new snowflake IDs in increasing order, larger than every ID this session issued before';

CREATE FUNCTION snowflake_release_worker()
RETURNS boolean
AS 'MODULE_PATHNAME', 'snowflake_release_worker'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;

COMMENT ON FUNCTION snowflake_release_worker() IS
    'Detaches this session from its worker slot; false if it was attached to none';

--
-- Reading IDs
--

CREATE FUNCTION snowflake_decode(id bigint,
                                 OUT ts timestamptz,
                                 OUT node_id integer,
                                 OUT worker_id integer,
                                 OUT seq integer)
RETURNS record
AS 'MODULE_PATHNAME', 'snowflake_decode'
LANGUAGE C STABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_decode(bigint) IS
    'Splits a snowflake ID into its timestamp, node id, worker id and sequence';

-- Time to ID and back.  STABLE: the answer follows the layout history in
-- snowflake_layout.  Usable in index conditions on the primary key.
CREATE FUNCTION snowflake_timestamp(id bigint)
RETURNS timestamptz
AS 'MODULE_PATHNAME', 'snowflake_timestamp'
LANGUAGE C STABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_timestamp(bigint) IS
    'Returns the timestamp of a snowflake ID';

CREATE FUNCTION snowflake_min_id(ts timestamptz)
RETURNS bigint
AS 'MODULE_PATHNAME', 'snowflake_min_id'
LANGUAGE C STABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_min_id(timestamptz) IS
    'Returns the smallest snowflake ID that can carry the millisecond of ts';

CREATE FUNCTION snowflake_max_id(ts timestamptz)
RETURNS bigint
AS 'MODULE_PATHNAME', 'snowflake_max_id'
LANGUAGE C STABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_max_id(timestamptz) IS
    'Returns the largest snowflake ID that can carry the millisecond of ts';

-- How many IDs a span of time covers under the layout in force now: the
-- partition width, in IDs, of a table range-partitioned on its snowflake
-- key (pg_partman's integer intervals; docs/partitioning.md).
CREATE FUNCTION snowflake_id_interval(span interval)
RETURNS bigint
AS 'MODULE_PATHNAME', 'snowflake_id_interval'
LANGUAGE C STABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_id_interval(interval) IS
    'Returns the number of snowflake IDs that a span of time covers under the layout in force now';

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

CREATE TYPE snowflake;

CREATE FUNCTION snowflake_in(cstring)
RETURNS snowflake
AS 'MODULE_PATHNAME', 'snowflake_in'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION snowflake_out(snowflake)
RETURNS cstring
AS 'MODULE_PATHNAME', 'snowflake_out'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION snowflake_recv(internal)
RETURNS snowflake
AS 'MODULE_PATHNAME', 'snowflake_recv'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION snowflake_send(snowflake)
RETURNS bytea
AS 'MODULE_PATHNAME', 'snowflake_send'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE TYPE snowflake (
    INPUT = snowflake_in,
    OUTPUT = snowflake_out,
    RECEIVE = snowflake_recv,
    SEND = snowflake_send,
    INTERNALLENGTH = 8,
    PASSEDBYVALUE,
    ALIGNMENT = double,
    STORAGE = plain,
    CATEGORY = 'N'
);

COMMENT ON TYPE snowflake IS
    'A snowflake ID: a bigint that JSON functions write as a string';

-- snowflake to bigint is implicit, so that every operator, operator class
-- and function of bigint applies; bigint to snowflake only on assignment
-- (DEFAULT snowflake_nextval(), INSERT, UPDATE): with implicit casts both
-- ways, an expression mixing the two would take the type of whichever
-- comes first.  An integer literal becomes a
-- snowflake implicitly, so that COALESCE(id, 0) stays a snowflake.
CREATE CAST (snowflake AS bigint) WITHOUT FUNCTION AS IMPLICIT;

CREATE CAST (bigint AS snowflake) WITHOUT FUNCTION AS ASSIGNMENT;

CREATE FUNCTION snowflake(integer)
RETURNS snowflake
AS 'MODULE_PATHNAME', 'snowflake_from_integer'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake(integer) IS
    'Converts an integer to a snowflake';

CREATE CAST (integer AS snowflake) WITH FUNCTION snowflake(integer) AS IMPLICIT;

CREATE CAST (snowflake AS timestamptz) WITH FUNCTION snowflake_timestamp(bigint);

-- Compact text forms of an ID, for URLs and logs: base32hex (RFC 4648's
-- alphabet 0-9A-V), crockford (Crockford's base32) and base62 (0-9A-Za-z),
-- written at a fixed width (13, 13 and 11 characters), zero-padded, so
-- that under the C collation the text sorts as the IDs do; and decimal,
-- the type's own text.  Reading is strict: the full width, no sign, no
-- separator.  The forms are src/core/text_forms.hpp; docs/reference.md.
CREATE FUNCTION snowflake_to_text(id bigint, format text)
RETURNS text
AS 'MODULE_PATHNAME', 'snowflake_to_text'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_to_text(bigint, text) IS
    'Writes a snowflake ID in a text form: base32hex, crockford or base62 (fixed width, sorting as the IDs do under the C collation), or decimal';

CREATE FUNCTION snowflake_from_text(input text, format text)
RETURNS snowflake
AS 'MODULE_PATHNAME', 'snowflake_from_text'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_from_text(text, text) IS
    'Reads a snowflake ID in a text form of snowflake_to_text(): base32hex, crockford, base62 or decimal';

--
-- Comparisons of an ID's timestamp, served by indexes on the ID
--

-- The library's planner hook turns
--     snowflake_timestamp(id) >= x
-- into
--     id >= snowflake_timestamp_lower_id(x, true) AND snowflake_timestamp_ge(id, x)
-- (and the same for <, <=, =, >, and for (snowflake_decode(id)).ts), so a
-- B-tree or BRIN index on id, partition pruning on id and id's statistics
-- all serve it.  See src/pg/planner/README.md.

-- The bounds: the smallest and largest IDs whose timestamp lies on one side
-- of ts, under the layout history.  NULL when no ID does.  STABLE: they
-- follow the history in snowflake_layout.
CREATE FUNCTION snowflake_timestamp_lower_id(ts timestamptz, inclusive boolean)
RETURNS bigint
AS 'MODULE_PATHNAME', 'snowflake_timestamp_lower_id'
LANGUAGE C STABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_timestamp_lower_id(timestamptz, boolean) IS
    'Returns the smallest snowflake ID whose timestamp is at or after ts (after ts when not inclusive), or NULL';

CREATE FUNCTION snowflake_timestamp_upper_id(ts timestamptz, inclusive boolean)
RETURNS bigint
AS 'MODULE_PATHNAME', 'snowflake_timestamp_upper_id'
LANGUAGE C STABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_timestamp_upper_id(timestamptz, boolean) IS
    'Returns the largest snowflake ID whose timestamp is at or before ts (before ts when not inclusive), or NULL';

-- The rechecks: the comparison itself, kept beside the range.  Their
-- support function gives them selectivity 1, since the range beside them
-- carries the estimate.
CREATE FUNCTION snowflake_timestamp_support(internal)
RETURNS internal
AS 'MODULE_PATHNAME', 'snowflake_timestamp_support'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION snowflake_timestamp_lt(id bigint, ts timestamptz)
RETURNS boolean
AS 'MODULE_PATHNAME', 'snowflake_timestamp_lt'
LANGUAGE C STABLE STRICT PARALLEL SAFE
SUPPORT snowflake_timestamp_support;

COMMENT ON FUNCTION snowflake_timestamp_lt(bigint, timestamptz) IS
    'snowflake_timestamp(id) < ts; the planner''s recheck beside an ID range';

CREATE FUNCTION snowflake_timestamp_le(id bigint, ts timestamptz)
RETURNS boolean
AS 'MODULE_PATHNAME', 'snowflake_timestamp_le'
LANGUAGE C STABLE STRICT PARALLEL SAFE
SUPPORT snowflake_timestamp_support;

COMMENT ON FUNCTION snowflake_timestamp_le(bigint, timestamptz) IS
    'snowflake_timestamp(id) <= ts; the planner''s recheck beside an ID range';

CREATE FUNCTION snowflake_timestamp_eq(id bigint, ts timestamptz)
RETURNS boolean
AS 'MODULE_PATHNAME', 'snowflake_timestamp_eq'
LANGUAGE C STABLE STRICT PARALLEL SAFE
SUPPORT snowflake_timestamp_support;

COMMENT ON FUNCTION snowflake_timestamp_eq(bigint, timestamptz) IS
    'snowflake_timestamp(id) = ts; the planner''s recheck beside an ID range';

CREATE FUNCTION snowflake_timestamp_ge(id bigint, ts timestamptz)
RETURNS boolean
AS 'MODULE_PATHNAME', 'snowflake_timestamp_ge'
LANGUAGE C STABLE STRICT PARALLEL SAFE
SUPPORT snowflake_timestamp_support;

COMMENT ON FUNCTION snowflake_timestamp_ge(bigint, timestamptz) IS
    'snowflake_timestamp(id) >= ts; the planner''s recheck beside an ID range';

CREATE FUNCTION snowflake_timestamp_gt(id bigint, ts timestamptz)
RETURNS boolean
AS 'MODULE_PATHNAME', 'snowflake_timestamp_gt'
LANGUAGE C STABLE STRICT PARALLEL SAFE
SUPPORT snowflake_timestamp_support;

COMMENT ON FUNCTION snowflake_timestamp_gt(bigint, timestamptz) IS
    'snowflake_timestamp(id) > ts; the planner''s recheck beside an ID range';

--
-- Monitoring
--

CREATE FUNCTION snowflake_status(OUT epoch timestamptz,
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

COMMENT ON FUNCTION snowflake_status() IS
    'Reports the layout and its horizon, worker slots and their sessions, the reservation, clock steps and the node registry';

CREATE FUNCTION snowflake_worker_slots(OUT worker_id integer,
                                       OUT pid integer,
                                       OUT database_id oid,
                                       OUT user_id oid,
                                       OUT claimed_at timestamptz,
                                       OUT ids_issued bigint,
                                       OUT last_timestamp timestamptz)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'snowflake_worker_slots'
LANGUAGE C VOLATILE PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_worker_slots() IS
    'Lists the sessions attached to worker slots; used by the snowflake_workers view';

-- One row per attached session.
CREATE VIEW snowflake_workers AS
    SELECT s.worker_id,
           s.pid,
           d.datname,
           r.rolname AS usename,
           s.claimed_at,
           s.ids_issued,
           s.last_timestamp
      FROM @extschema@.snowflake_worker_slots() AS s
           LEFT JOIN pg_catalog.pg_database AS d ON d.oid = s.database_id
           LEFT JOIN pg_catalog.pg_roles AS r ON r.oid = s.user_id;

COMMENT ON VIEW snowflake_workers IS
    'One row per session attached to a snowflake worker slot';

GRANT SELECT ON snowflake_workers TO PUBLIC;

--
-- Converting serial and identity keys
--


-- Converts a smallserial, serial, bigserial or identity column to
-- bigint DEFAULT snowflake_nextval(), with every column that references it
-- through foreign keys; see docs/reference.md.  Written in C: it takes
-- the table by OID and checks by OID what its ALTER TABLE did
-- (src/pg/convert/README.md).
CREATE FUNCTION snowflake_convert_column(table_name regclass, column_name name)
RETURNS TABLE (affected_table regclass,
               affected_column name,
               old_type regtype,
               action text)
AS 'MODULE_PATHNAME', 'snowflake_convert_column'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION snowflake_convert_column(regclass, name) IS
    'Converts a serial or identity column, and the columns that reference it, to bigint DEFAULT snowflake_nextval()';

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
CREATE FUNCTION snowflake_lease_worker(holder text,
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

REVOKE ALL ON FUNCTION snowflake_lease_worker(text, interval, timestamptz) FROM PUBLIC;

COMMENT ON FUNCTION snowflake_lease_worker(text, interval, timestamptz) IS
    'Leases a worker id to an application-side generator, for the connection''s life (ttl NULL) or for ttl';

CREATE FUNCTION snowflake_renew_lease(token bigint,
                                      last_id bigint,
                                      client_time timestamptz DEFAULT NULL,
                                      OUT not_after timestamptz,
                                      OUT expires_at timestamptz,
                                      OUT renewed_at timestamptz)
RETURNS record
AS 'MODULE_PATHNAME', 'snowflake_renew_lease'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

REVOKE ALL ON FUNCTION snowflake_renew_lease(bigint, bigint, timestamptz) FROM PUBLIC;

COMMENT ON FUNCTION snowflake_renew_lease(bigint, bigint, timestamptz) IS
    'Extends a worker-id lease and records the last ID its holder issued';

CREATE FUNCTION snowflake_release_lease(token bigint, last_id bigint)
RETURNS boolean
AS 'MODULE_PATHNAME', 'snowflake_release_lease'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

REVOKE ALL ON FUNCTION snowflake_release_lease(bigint, bigint) FROM PUBLIC;

COMMENT ON FUNCTION snowflake_release_lease(bigint, bigint) IS
    'Ends a worker-id lease at once, recording the last ID its holder issued';

-- The rows of snowflake_leases.  It shows a role what pg_stat_activity
-- would: all leases to pg_read_all_stats (and so pg_monitor), its own
-- roles' leases to any other role.  So PUBLIC may run it.
CREATE FUNCTION snowflake_lease_list(OUT node_id integer,
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

COMMENT ON FUNCTION snowflake_lease_list() IS
    'The worker-id leases the calling role may see; read snowflake_leases';

-- The leases, one row per worker id ever leased.  The body is one
-- qualified call: nothing in it binds to an object another role made.  It
-- names hosts and processes, as pg_stat_activity does for monitoring roles.
CREATE VIEW snowflake_leases AS
SELECT l.node_id, l.worker_id, l.token, l.state, l.holder, l.holder_role, l.client_addr,
       l.application_name, l.backend_pid, l.ttl, l.since, l.renewed_at, l.expires_at,
       l.not_before, l.not_after, l.last_timestamp, l.released_at
  FROM @extschema@.snowflake_lease_list() AS l;

COMMENT ON VIEW snowflake_leases IS
    'Worker ids leased to application-side generators: holder, state, window and last reported timestamp';

GRANT SELECT ON snowflake_leases TO pg_monitor;

--
-- Multi-primary replication
--

-- What a multi-primary setup must replicate between its nodes: every
-- permanent table of the database that no extension owns, and the node
-- registry snowflake_nodes, never snowflake_layout (each node keeps its own
-- layout history).  For CREATE PUBLICATION … FOR TABLE, which PostgreSQL's
-- own logical replication needs, since FOR ALL TABLES would also carry
-- snowflake_layout (docs/multi-primary.md).  Partitioned tables are listed
-- by their root, and their partitions not.  It runs with the caller's
-- rights, under a pinned search_path, with every name qualified, and finds
-- snowflake_nodes by the extension's membership, never by its schema's
-- name, which the schema's owner can rename and plant a decoy under.
CREATE FUNCTION snowflake_publication_tables()
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

COMMENT ON FUNCTION snowflake_publication_tables() IS
    'Returns the tables a multi-primary setup must replicate: the database''s own tables and snowflake_nodes, never snowflake_layout';

--
-- The running layout
--

-- Record the layout the server runs now; this also fails early, with a
-- hint, when the library was not preloaded.
INSERT INTO snowflake_layout (first_id, epoch, node_bits, worker_bits, sequence_bits)
    SELECT 0, s.epoch, s.node_bits, s.worker_bits, s.sequence_bits
      FROM @extschema@.snowflake_status() AS s;
