/* snowflake--1.0.sql: the first release; later versions add the upgrade scripts */

\echo Use "CREATE EXTENSION snowflake" to load this file. \quit

-- Layouts in force in this database, oldest first.  An ID uses the layout
-- of the row with the largest first_id not above it.
CREATE TABLE snowflake_layout (
    first_id      bigint      NOT NULL CHECK (first_id >= 0),
    epoch         timestamptz NOT NULL,
    node_bits     integer     NOT NULL CHECK (node_bits >= 0),
    worker_bits   integer     NOT NULL CHECK (worker_bits >= 0),
    sequence_bits integer     NOT NULL CHECK (sequence_bits >= 1),
    recorded_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (first_id, recorded_at),
    CHECK (node_bits + worker_bits + sequence_bits <= 32)
);

COMMENT ON TABLE snowflake_layout IS
    'Snowflake ID layouts recorded in this database; maintained by the extension';

-- pg_dump keeps the history, so restored IDs still decode.
SELECT pg_catalog.pg_extension_config_dump('snowflake_layout', '');

GRANT SELECT ON snowflake_layout TO PUBLIC;

CREATE FUNCTION snowflake_nextval()
RETURNS bigint
AS 'MODULE_PATHNAME', 'snowflake_nextval'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;

COMMENT ON FUNCTION snowflake_nextval() IS
    'Returns a new snowflake ID, larger than every ID this session issued before';

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
                                 OUT drift_ms bigint)
RETURNS record
AS 'MODULE_PATHNAME', 'snowflake_status'
LANGUAGE C VOLATILE PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_status() IS
    'Reports the running layout, worker slot use and generator counters';

CREATE FUNCTION snowflake_release_worker()
RETURNS boolean
AS 'MODULE_PATHNAME', 'snowflake_release_worker'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;

COMMENT ON FUNCTION snowflake_release_worker() IS
    'Hands this session''s worker slot back; false if it held none';

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
    'Lists the claimed worker slots; used by the snowflake_workers view';

CREATE VIEW snowflake_workers AS
    SELECT s.worker_id,
           s.pid,
           d.datname,
           r.rolname AS usename,
           s.claimed_at,
           s.ids_issued,
           s.last_timestamp
      FROM snowflake_worker_slots() AS s
           LEFT JOIN pg_catalog.pg_database AS d ON d.oid = s.database_id
           LEFT JOIN pg_catalog.pg_roles AS r ON r.oid = s.user_id;

COMMENT ON VIEW snowflake_workers IS
    'One row per claimed snowflake worker slot';

GRANT SELECT ON snowflake_workers TO PUBLIC;

-- Record the layout the server runs now; this also fails early, with a
-- hint, when the library was not preloaded.
INSERT INTO snowflake_layout (first_id, epoch, node_bits, worker_bits, sequence_bits)
    SELECT 0, epoch, node_bits, worker_bits, sequence_bits
      FROM snowflake_status();
