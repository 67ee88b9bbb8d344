/* snowflake--1.2--1.3.sql: least privilege, a pinned search_path, shared worker slots, time bounds, batches */

\echo Use "ALTER EXTENSION snowflake UPDATE TO '1.3'" to load this file. \quit

-- Least privilege.  snowflake_nodes names hosts, ports, data directories
-- and system identifiers, which PostgreSQL shows only to superusers and
-- monitoring roles; everyone may still see which node ids run and when they
-- last beat.
REVOKE SELECT ON snowflake_nodes FROM PUBLIC;
GRANT SELECT (node_id, instance_id, timeline, started_at, last_seen, beats)
    ON snowflake_nodes TO PUBLIC;
GRANT SELECT ON snowflake_nodes TO pg_monitor;

-- The function runs its statements with the caller's rights, but a caller
-- may be a superuser working in a database whose schemas others can create
-- in; so nothing but pg_catalog is on its path, and it names the
-- extension's own objects with their schema.
ALTER FUNCTION snowflake_convert_column(regclass, name)
    SET search_path = pg_catalog, pg_temp;

-- Shared worker slots: any number of sessions attach to one worker slot,
-- and nobody waits for a slot or is refused one.  snowflake_status() counts
-- the attached sessions and the shared slots, and reports the node
-- registry's last round and problem; snowflake_workers lists one row per
-- attached session (same columns as before).  New output columns need a new
-- function; nothing depends on the old one.
DROP FUNCTION snowflake_status();

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
                                 OUT registry_problem text)
RETURNS record
AS 'MODULE_PATHNAME', 'snowflake_status'
LANGUAGE C VOLATILE PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_status() IS
    'Reports the layout, worker slots and their sessions, the reservation, clock steps and the node registry';

COMMENT ON FUNCTION snowflake_worker_slots() IS
    'Lists the sessions attached to worker slots; used by the snowflake_workers view';

COMMENT ON VIEW snowflake_workers IS
    'One row per session attached to a snowflake worker slot';

COMMENT ON FUNCTION snowflake_release_worker() IS
    'Detaches this session from its worker slot; false if it was attached to none';

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

-- Batches: n IDs in one call, in increasing order, with the guarantees of
-- n single calls.
CREATE FUNCTION snowflake_nextval(n integer)
RETURNS SETOF bigint
AS 'MODULE_PATHNAME', 'snowflake_nextval_batch'
LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED ROWS 100;

COMMENT ON FUNCTION snowflake_nextval(integer) IS
    'Returns n new snowflake IDs in increasing order, larger than every ID this session issued before';
