/* snowflake--1.2--1.3.sql: least privilege, a pinned search_path, shared worker slots */

\echo Use "ALTER EXTENSION snowflake UPDATE TO '1.3'" to load this file. \quit

-- ---------------------------------------------------------------------------
-- Shared worker slots (issue 9).  Any number of sessions attach to one
-- worker slot; nobody waits for a slot or is refused one.
-- snowflake_status() counts the attached sessions and the shared slots, in
-- two new columns at the end; snowflake_workers lists one row per attached
-- session (same columns as before).
-- ---------------------------------------------------------------------------

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
                                 OUT slots_shared integer)
RETURNS record
AS 'MODULE_PATHNAME', 'snowflake_status'
LANGUAGE C VOLATILE PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_status() IS
    'Reports the layout, worker slots and their sessions, the reservation, clock steps and node collisions';

COMMENT ON FUNCTION snowflake_worker_slots() IS
    'Lists the sessions attached to worker slots; used by the snowflake_workers view';

COMMENT ON VIEW snowflake_workers IS
    'One row per session attached to a snowflake worker slot';

COMMENT ON FUNCTION snowflake_release_worker() IS
    'Detaches this session from its worker slot; false if it was attached to none';
