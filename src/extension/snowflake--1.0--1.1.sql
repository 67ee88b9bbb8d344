/* snowflake--1.0--1.1.sql: the durable reservation and clock steps in snowflake_status() */

\echo Use "ALTER EXTENSION snowflake UPDATE TO '1.1'" to load this file. \quit

-- New output columns need a new function; nothing depends on the old one.
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
                                 OUT largest_step_back_ms bigint)
RETURNS record
AS 'MODULE_PATHNAME', 'snowflake_status'
LANGUAGE C VOLATILE PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_status() IS
    'Reports the running layout, worker slot use, the reservation and clock steps';
