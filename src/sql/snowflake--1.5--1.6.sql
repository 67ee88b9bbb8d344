/* snowflake--1.5--1.6.sql: the snowflake type, its compact text forms, and the horizon in snowflake_status() */

\echo Use "ALTER EXTENSION snowflake UPDATE TO '1.6'" to load this file. \quit

-- This script runs as the superuser who updates the extension, with
-- search_path set to the extension's schema: every name it uses is
-- qualified.

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
                                             OUT horizon_seconds bigint)
RETURNS record
AS 'MODULE_PATHNAME', 'snowflake_status'
LANGUAGE C VOLATILE PARALLEL SAFE;

COMMENT ON FUNCTION @extschema@.snowflake_status() IS
    'Reports the layout and its horizon, worker slots and their sessions, the reservation, clock steps and the node registry';
