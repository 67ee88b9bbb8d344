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

--
-- Converting bigint keys to the snowflake type
--

-- Converts a bigint column, and every column that references it through a
-- foreign key, directly or through further foreign keys, to the type
-- snowflake.  The casts between the two are binary coercions, so no table
-- is rewritten; values, defaults, foreign keys and indexes stay (PostgreSQL
-- builds again only the indexes of partitions and those with an expression
-- or a WHERE clause that uses a converted column).  Columns that are snowflake already are
-- reported and left alone.  Everything is checked before anything changes,
-- and everything happens in the caller's transaction.
--
-- Returns one row per column it made snowflake or found referencing the
-- key: the key first, then the referencing columns.
--
-- It runs its statements with the caller's rights, but a caller may be a
-- superuser working in a database whose schemas others can create in.  So
-- nothing but pg_catalog is on its path, it names the extension's type by
-- its schema, it reads no row of the tables, and it refuses a column that
-- an expression PostgreSQL parses again for the new type uses (a CHECK or
-- exclusion constraint, an index, extended statistics) when that
-- expression names a function, operator or type that is not built in: a
-- look-alike of the same name that takes a snowflake, made by another
-- role, would take its place and run with the caller's rights.  PostgreSQL
-- checks a CHECK constraint on a converted column again with the caller's
-- rights, and one that calls only built-ins (query_to_xml(), set_config())
-- can still run its owner's code: so it changes only tables that the
-- calling role owns itself, superusers and members of the owner included.
-- It finds its type by OID before its first lock and refuses if the
-- extension's schema was renamed or replaced while it waited.  It runs at
-- READ COMMITTED only, so that its checks, made after its locks, see
-- everything committed before them.
CREATE FUNCTION @extschema@.snowflake_convert_type(table_name regclass, column_name name)
RETURNS TABLE (affected_table regclass,
               affected_column name,
               old_type regtype,
               action text)
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $convert_type$
DECLARE
    snowflake_type oid;       -- the extension's type, found by OID below
    bigint_type    constant oid := 'bigint'::regtype;
    rel_name      name;       -- table_name's own name, for messages
    rel_kind      "char";
    key_attnum    int2;
    key_type      oid;
    key_identity  "char";
    key_inherited boolean;
    roots         text;
    ref           record;
    blocker       record;
    -- The tables locked so far, and those to lock next.
    locked        oid[] := '{}';
    new_rels      oid[];
    -- The columns that become snowflake (the key first, unless it is
    -- snowflake already) and, for a referencing column, why: its foreign
    -- key.
    w_rel         oid[];
    w_att         name[];
    w_via         text[];
    -- The report.
    r_rel         regclass[];
    r_att         name[];
    r_type        regtype[];
    r_action      text[];
    i             integer;
    via           text;
    statement     text;
    -- The calling role, which must own every table the function changes.
    caller        oid;
    -- The extension's schema and the objects of the extension that the
    -- function runs or writes into its statements, found by OID before any
    -- lock and named from their OIDs just before each statement runs.
    ext_oid       oid;
    ext_schema    oid;
    ext_schema_name name;
BEGIN
    -- At REPEATABLE READ or SERIALIZABLE the checks below would read the
    -- catalog as it was before the locks, and miss a constraint or index
    -- committed while this function waited for them.
    IF current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE EXCEPTION 'snowflake_convert_type() must run at isolation level READ COMMITTED'
              USING ERRCODE = 'invalid_transaction_state',
                    DETAIL = format('This transaction runs at %s, so its checks would read the catalog as it was before the conversion locked the tables.',
                                    upper(current_setting('transaction_isolation'))),
                    HINT = 'Run it in a READ COMMITTED transaction, the default.';
    END IF;

    -- Every table it changes must belong to the calling role itself: ALTER
    -- TABLE checks their CHECK constraints again with the caller's rights,
    -- and a superuser, or a member of the owning role, passes every
    -- ownership check while the owner's code would run as that caller.
    SELECT r.oid INTO caller FROM pg_roles AS r WHERE r.rolname = current_user;

    -- The extension's schema, by OID, before any lock: it must be the one
    -- this function was created in.
    SELECT e.oid, e.extnamespace, n.nspname INTO ext_oid, ext_schema, ext_schema_name
      FROM pg_extension AS e JOIN pg_namespace AS n ON n.oid = e.extnamespace
     WHERE e.extname = 'snowflake';
    IF ext_schema IS DISTINCT FROM '@extschema@'::regnamespace::oid THEN
        RAISE EXCEPTION 'the schema of extension snowflake is not the one %() was created in', 'snowflake_convert_type'
              USING ERRCODE = 'object_not_in_prerequisite_state',
                    HINT = 'Only a role you trust should own the schema of extension snowflake; look at what changed, then call it again.';
    END IF;
    -- Its type, which the statements name from its OID.
    SELECT o.oid INTO snowflake_type
      FROM pg_type AS o
           JOIN pg_depend AS dep
             ON dep.classid = 'pg_type'::regclass AND dep.objid = o.oid
            AND dep.refclassid = 'pg_extension'::regclass AND dep.refobjid = ext_oid AND dep.deptype = 'e'
     WHERE o.typnamespace = ext_schema AND o.typname = 'snowflake';
    IF snowflake_type IS NULL THEN
        RAISE EXCEPTION 'extension snowflake has no type snowflake in schema "%"', ext_schema_name
              USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;

    -- The table.
    SELECT c.relname, c.relkind INTO rel_name, rel_kind
      FROM pg_class AS c
     WHERE c.oid = table_name;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'relation with OID % does not exist', table_name::oid
              USING ERRCODE = 'undefined_table';
    END IF;
    IF rel_kind NOT IN ('r', 'p') THEN
        RAISE EXCEPTION '"%" is not a table', rel_name
              USING ERRCODE = 'wrong_object_type',
                    HINT = 'snowflake_convert_type() converts a column of a table or partitioned table.';
    END IF;

    -- Lock the key's table, then each table found to reference it, and
    -- look again for references until no new table turns up: no foreign
    -- key, constraint or index can appear on a locked table while the
    -- checks run.  LOCK TABLE reaches partitions and child tables, and so
    -- does ALTER TABLE, which only their owner may run: say which table
    -- before LOCK TABLE fails on it.
    new_rels := ARRAY[table_name::oid];
    LOOP
      FOR pass IN 1 .. 2 LOOP
        -- LOCK TABLE looks the names up again after a wait: a table renamed
        -- or replaced meanwhile would leave this one unlocked.
        FOR ref IN
            SELECT n.relid FROM unnest(new_rels) AS n(relid)
             WHERE pass = 2
               AND NOT EXISTS (SELECT FROM pg_locks AS l
                                WHERE l.locktype = 'relation' AND l.relation = n.relid
                                  AND l.pid = pg_backend_pid() AND l.mode = 'AccessExclusiveLock'
                                  AND l.granted)
             LIMIT 1
        LOOP
            RAISE EXCEPTION 'table % was renamed or replaced while snowflake_convert_type() waited for its lock', ref.relid::regclass
                  USING ERRCODE = 'object_not_in_prerequisite_state',
                        HINT = 'Call it again.';
        END LOOP;
        FOR ref IN
            WITH RECURSIVE tree(relid, top) AS (
                SELECT n.relid, n.relid FROM unnest(new_rels) AS n(relid)
                UNION
                SELECT inh.inhrelid, t.top
                  FROM tree AS t JOIN pg_inherits AS inh ON inh.inhparent = t.relid
            )
            SELECT c.relname, pg_get_userbyid(c.relowner) AS owner_name,
                   t.relid = t.top AS is_top, tc.relname AS top_name, t.top
              FROM tree AS t
                   JOIN pg_class AS c ON c.oid = t.relid
                   JOIN pg_class AS tc ON tc.oid = t.top
             WHERE c.relowner IS DISTINCT FROM caller
             ORDER BY array_position(new_rels, t.top), t.relid <> t.top, c.relname
             LIMIT 1
        LOOP
            via := (SELECT w.via FROM unnest(w_rel, w_via) AS w(relid, via)
                     WHERE w.relid = ref.top AND w.via IS NOT NULL LIMIT 1);
            RAISE EXCEPTION 'table "%" is owned by role "%", not by the calling role',
                            ref.relname, ref.owner_name
                  USING ERRCODE = 'insufficient_privilege',
                        DETAIL = CASE WHEN NOT ref.is_top
                                      THEN format('It is a partition or child table of table "%s", whose columns change with it.', ref.top_name)
                                      WHEN via IS NOT NULL
                                      THEN via || '.'
                                      WHEN ref.top <> table_name::oid
                                      THEN 'It is at the other end of a foreign key on a column that changes, which ALTER TABLE drops, creates again and checks.'
                                      ELSE format('Column "%s" of table "%s" is to become snowflake.', column_name, rel_name)
                                 END
                                 || ' ALTER TABLE checks the CHECK constraints and foreign keys of the tables it changes again with the rights of the role that runs it, so code of the table''s owner would run with yours.',
                        HINT = format('Run snowflake_convert_type() in a session of the role that owns every table it changes, logged in as %I (SET ROLE from a more privileged session is no boundary: the owner''s code could RESET ROLE), or change the owner of the table, then call it again. A key that tables of several owners reference needs their foreign keys dropped, and created again after the conversion.', ref.owner_name);
        END LOOP;
        EXIT WHEN pass = 2;
        EXECUTE format('LOCK TABLE %s IN ACCESS EXCLUSIVE MODE',
                       (SELECT string_agg(n.relid::regclass::text, ', ' ORDER BY n.k)
                          FROM unnest(new_rels) WITH ORDINALITY AS n(relid, k)));
        -- Checked again now that the tables are locked: their owner may
        -- have changed while this function waited.
      END LOOP;
        locked := locked || new_rels;

        IF key_attnum IS NULL THEN
            -- The column, now that its table is locked.
            SELECT a.attnum, a.atttypid, a.attidentity, a.attinhcount > 0
              INTO key_attnum, key_type, key_identity, key_inherited
              FROM pg_attribute AS a
             WHERE a.attrelid = table_name AND a.attname = column_name AND NOT a.attisdropped;
            IF NOT FOUND THEN
                RAISE EXCEPTION 'column "%" of table "%" does not exist', column_name, rel_name
                      USING ERRCODE = 'undefined_column';
            END IF;
            IF key_attnum < 0 THEN
                RAISE EXCEPTION 'cannot convert system column "%"', column_name
                      USING ERRCODE = 'feature_not_supported';
            END IF;
            IF key_inherited THEN
                WITH RECURSIVE ancestors(relid) AS (
                    SELECT inh.inhparent FROM pg_inherits AS inh WHERE inh.inhrelid = table_name
                    UNION
                    SELECT inh.inhparent
                      FROM ancestors AS an JOIN pg_inherits AS inh ON inh.inhrelid = an.relid
                )
                SELECT string_agg(format('"%s"', c.relname), ', ' ORDER BY c.relname) INTO roots
                  FROM ancestors AS an JOIN pg_class AS c ON c.oid = an.relid
                 WHERE NOT EXISTS (SELECT FROM pg_inherits AS inh WHERE inh.inhrelid = an.relid);
                RAISE EXCEPTION 'cannot convert inherited column "%" of table "%"', column_name, rel_name
                      USING ERRCODE = 'invalid_table_definition',
                            DETAIL = 'Partitions and child tables share the column of the table they inherit it from.',
                            HINT = format('Convert the column of %s; the conversion reaches every partition and child table.', roots);
            END IF;
            IF key_type NOT IN (snowflake_type, bigint_type) THEN
                RAISE EXCEPTION 'column "%" of table "%" is of type %, not bigint', column_name, rel_name, format_type(key_type, NULL)
                      USING ERRCODE = 'datatype_mismatch',
                            HINT = CASE WHEN key_type IN ('smallint'::regtype::oid, 'integer'::regtype::oid)
                                        THEN 'Make it bigint first: snowflake_convert_column() does so for a serial or identity key and the columns that reference it, ALTER TABLE ... ALTER COLUMN ... TYPE bigint for another column; either rewrites the tables.'
                                        ELSE 'snowflake_convert_type() converts bigint columns, whose values a snowflake holds unchanged.'
                                   END;
            END IF;
            IF key_identity <> '' THEN
                RAISE EXCEPTION 'column "%" of table "%" is an identity column', column_name, rel_name
                      USING ERRCODE = 'object_not_in_prerequisite_state',
                            DETAIL = 'PostgreSQL allows only smallint, integer and bigint identity columns.',
                            HINT = 'Replace the identity with DEFAULT snowflake_nextval() first, with snowflake_convert_column().';
            END IF;
        END IF;

        -- The key, and the columns that reference it, directly or through
        -- other foreign keys.  A foreign key on a partitioned table, or to
        -- one, has clones on the partitions (conparentid <> 0); ALTER TABLE
        -- on the top reaches them.
        r_rel := ARRAY[table_name];
        r_att := ARRAY[column_name];
        r_type := ARRAY[key_type::regtype];
        r_action := ARRAY[CASE WHEN key_type = snowflake_type THEN 'already snowflake' ELSE 'type snowflake' END];
        w_rel := '{}';
        w_att := '{}';
        w_via := '{}';
        IF key_type <> snowflake_type THEN
            w_rel := ARRAY[table_name::oid];
            w_att := ARRAY[column_name];
            w_via := ARRAY[NULL::text];
        END IF;
        FOR ref IN
            WITH RECURSIVE fam(top, relid) AS (
                -- Each table with partitions or children, and its descendants:
                -- ALTER TABLE changes their column too, and the foreign keys
                -- to it.
                SELECT DISTINCT inh.inhparent, inh.inhparent FROM pg_inherits AS inh
                UNION
                SELECT f.top, inh.inhrelid
                  FROM fam AS f JOIN pg_inherits AS inh ON inh.inhparent = f.relid
            ),
            famcol(top, topatt, relid, attnum) AS (
                SELECT f.top, ta.attnum, f.relid, a.attnum
                  FROM fam AS f
                       JOIN pg_attribute AS ta ON ta.attrelid = f.top AND ta.attnum > 0 AND NOT ta.attisdropped
                       JOIN pg_attribute AS a
                         ON a.attrelid = f.relid AND a.attname = ta.attname AND NOT a.attisdropped
            ),
            refs(relid, attnum, conname, ref_relid, ref_attnum) AS (
                SELECT c.conrelid, c.conkey[k.n], c.conname, c.confrelid, c.confkey[k.n]
                  FROM pg_constraint AS c,
                       generate_subscripts(c.confkey, 1) AS k(n)
                 WHERE c.contype = 'f' AND c.conparentid = 0
                   AND ((c.confrelid = table_name AND c.confkey[k.n] = key_attnum)
                        OR EXISTS (SELECT FROM famcol AS fc
                                    WHERE fc.top = table_name AND fc.topatt = key_attnum
                                      AND fc.relid = c.confrelid AND fc.attnum = c.confkey[k.n]))
                UNION
                SELECT c.conrelid, c.conkey[k.n], c.conname, c.confrelid, c.confkey[k.n]
                  FROM refs AS r
                       LEFT JOIN famcol AS fc ON fc.top = r.relid AND fc.topatt = r.attnum
                       JOIN pg_constraint AS c
                         ON c.contype = 'f' AND c.conparentid = 0
                        AND (c.confrelid = r.relid OR c.confrelid = fc.relid),
                       generate_subscripts(c.confkey, 1) AS k(n)
                 WHERE c.confkey[k.n] = CASE WHEN c.confrelid = r.relid THEN r.attnum ELSE fc.attnum END
            )
            SELECT r.relid, a.attname, a.atttypid, a.attidentity, a.attinhcount > 0 AS inherited,
                   rc.relname, r.conname, ra.attname AS ref_attname, rrc.relname AS ref_relname
              FROM refs AS r
                   JOIN pg_class AS rc ON rc.oid = r.relid
                   JOIN pg_attribute AS a ON a.attrelid = r.relid AND a.attnum = r.attnum
                   JOIN pg_class AS rrc ON rrc.oid = r.ref_relid
                   JOIN pg_attribute AS ra ON ra.attrelid = r.ref_relid AND ra.attnum = r.ref_attnum
             WHERE (r.relid, r.attnum) <> (table_name::oid, key_attnum)
             ORDER BY rc.relname, r.relid, a.attname, r.conname
        LOOP
            via := format('It references column "%s" of table "%s" through foreign key "%s", so it must become snowflake too',
                          ref.ref_attname, ref.ref_relname, ref.conname);
            IF ref.atttypid NOT IN (snowflake_type, bigint_type) THEN
                RAISE EXCEPTION 'column "%" of table "%" is of type %, not bigint',
                                ref.attname, ref.relname, format_type(ref.atttypid, NULL)
                      USING ERRCODE = 'datatype_mismatch',
                            DETAIL = via || '.',
                            HINT = CASE WHEN ref.atttypid IN ('smallint'::regtype::oid, 'integer'::regtype::oid)
                                        THEN 'Make it bigint first, with ALTER TABLE ... ALTER COLUMN ... TYPE bigint, which rewrites its table.'
                                   END;
            END IF;
            r_rel := r_rel || ref.relid::regclass;
            r_att := r_att || ref.attname;
            r_type := r_type || ref.atttypid::regtype;
            r_action := r_action || format('%s; references %I(%I) through %I',
                                           CASE WHEN ref.atttypid = snowflake_type THEN 'already snowflake' ELSE 'type snowflake' END,
                                           ref.ref_relname, ref.ref_attname, ref.conname);
            IF ref.atttypid <> snowflake_type
               AND NOT EXISTS (SELECT FROM unnest(w_rel, w_att) AS w(relid, attname)
                                WHERE (w.relid, w.attname) = (ref.relid, ref.attname)) THEN
                IF ref.inherited THEN
                    RAISE EXCEPTION 'cannot convert inherited column "%" of table "%"', ref.attname, ref.relname
                          USING ERRCODE = 'invalid_table_definition',
                                DETAIL = via || ', and only the table it is inherited from can change its type.',
                                HINT = 'Convert the column of the table it is inherited from first, with snowflake_convert_type().';
                END IF;
                IF ref.attidentity <> '' THEN
                    RAISE EXCEPTION 'column "%" of table "%" is an identity column', ref.attname, ref.relname
                          USING ERRCODE = 'object_not_in_prerequisite_state',
                                DETAIL = via || ', and PostgreSQL allows only smallint, integer and bigint identity columns.',
                                HINT = 'Replace the identity with DEFAULT snowflake_nextval() first, with snowflake_convert_column().';
                END IF;
                w_rel := w_rel || ref.relid;
                w_att := w_att || ref.attname;
                w_via := w_via || via;
            END IF;
        END LOOP;

        -- Besides the tables whose columns change, every table at the other
        -- end of a foreign key on a column that changes: those that
        -- reference the key, whatever their column's type, and those the
        -- changing columns reference.  ALTER TABLE drops such a foreign key
        -- and creates it again, locking that table, and checking the key
        -- plans a query over it, which evaluates its index expressions with
        -- the caller's rights.  They are locked and their owner checked too.
        SELECT array_agg(w.relid ORDER BY w.n) INTO new_rels
          FROM (SELECT u.relid, min(u.n) AS n
                  FROM (SELECT t.relid, t.n
                          FROM unnest(w_rel) WITH ORDINALITY AS t(relid, n)
                        UNION ALL
                        SELECT t.relid::oid, 1000000 + t.n
                          FROM unnest(r_rel) WITH ORDINALITY AS t(relid, n)
                        UNION ALL
                        SELECT c.confrelid, 2000000 + t.n
                          FROM unnest(w_rel, w_att) WITH ORDINALITY AS t(relid, attname, n)
                               CROSS JOIN LATERAL (
                                   WITH RECURSIVE d(relid) AS (
                                       SELECT t.relid
                                       UNION
                                       SELECT inh.inhrelid FROM d JOIN pg_inherits AS inh ON inh.inhparent = d.relid
                                   )
                                   SELECT d.relid FROM d) AS d
                               JOIN pg_attribute AS a
                                 ON a.attrelid = d.relid AND a.attname = t.attname
                               JOIN pg_constraint AS c
                                 ON c.contype = 'f' AND c.conrelid = d.relid
                                AND a.attnum = ANY (c.conkey)) AS u
                 WHERE u.relid <> ALL (locked)
                 GROUP BY u.relid) AS w;
        EXIT WHEN new_rels IS NULL;
    END LOOP;

    -- Every table is locked now.  The extension's schema must still be the
    -- one found before the first lock, under the same name: its owner could
    -- have renamed it and put another of the same name in its place while
    -- this function waited.
    IF NOT EXISTS (SELECT FROM pg_extension AS e
                          JOIN pg_namespace AS n ON n.oid = e.extnamespace
                    WHERE e.oid = ext_oid AND n.oid = ext_schema AND n.nspname = ext_schema_name) THEN
        RAISE EXCEPTION 'the schema of extension snowflake changed during the call'
              USING ERRCODE = 'object_not_in_prerequisite_state',
                    DETAIL = format('Schema "%s" was renamed, or extension snowflake moved, while %s() waited for its locks.', ext_schema_name, 'snowflake_convert_type'),
                    HINT = 'Only a role you trust should own the schema of extension snowflake; look at what changed, then call it again.';
    END IF;

    -- ALTER COLUMN ... TYPE fails on a column that a view, rule, trigger,
    -- policy, generated column, SQL function body or publication WHERE
    -- clause uses, or that is part of a partition key, in the table itself
    -- or in any of its partitions and child tables.  It parses the CHECK
    -- and exclusion constraints, indexes and extended statistics that use
    -- the column again, for the new type: refused when they name objects
    -- that are not built in (those have entries in pg_depend; built-in,
    -- pinned ones have none), which a look-alike could replace.
    FOR i IN 1 .. cardinality(w_rel) LOOP
        via := coalesce(w_via[i], 'The column must become snowflake');
        FOR blocker IN
            WITH RECURSIVE tree(relid) AS (
                SELECT w_rel[i]
                UNION
                SELECT inh.inhrelid FROM tree AS t JOIN pg_inherits AS inh ON inh.inhparent = t.relid
            ),
            cols AS (
                SELECT a.attrelid AS relid, a.attnum, c.relname
                  FROM tree AS t
                       JOIN pg_attribute AS a
                         ON a.attrelid = t.relid AND a.attname = w_att[i] AND NOT a.attisdropped
                       JOIN pg_class AS c ON c.oid = a.attrelid
            ),
            deps AS (
                SELECT col.relname, dep.classid, dep.objid
                  FROM cols AS col
                       JOIN pg_depend AS dep
                         ON dep.refclassid = 'pg_class'::regclass AND dep.refobjid = col.relid
                        AND dep.refobjsubid = col.attnum
            ),
            users(what, relname, rank) AS (
                SELECT CASE WHEN rw.rulename = '_RETURN' AND rc.relkind = 'm'
                                 THEN format('materialized view "%s"', rc.relname)
                            WHEN rw.rulename = '_RETURN'
                                 THEN format('view "%s"', rc.relname)
                            ELSE format('rule "%s" on table "%s"', rw.rulename, rc.relname)
                       END,
                       d.relname, 1
                  FROM deps AS d
                       JOIN pg_rewrite AS rw ON d.classid = 'pg_rewrite'::regclass AND rw.oid = d.objid
                       JOIN pg_class AS rc ON rc.oid = rw.ev_class
                UNION ALL
                SELECT format('trigger "%s"', tg.tgname), d.relname, 2
                  FROM deps AS d
                       JOIN pg_trigger AS tg ON d.classid = 'pg_trigger'::regclass AND tg.oid = d.objid
                UNION ALL
                SELECT format('policy "%s"', po.polname), d.relname, 3
                  FROM deps AS d
                       JOIN pg_policy AS po ON d.classid = 'pg_policy'::regclass AND po.oid = d.objid
                UNION ALL
                SELECT format('generated column "%s"', ga.attname), d.relname, 4
                  FROM deps AS d
                       JOIN pg_attrdef AS ad ON d.classid = 'pg_attrdef'::regclass AND ad.oid = d.objid
                       JOIN pg_attribute AS ga
                         ON ga.attrelid = ad.adrelid AND ga.attnum = ad.adnum AND ga.attgenerated <> ''
                UNION ALL
                SELECT format('function %s', d.objid::regprocedure), d.relname, 5
                  FROM deps AS d
                 WHERE d.classid = 'pg_proc'::regclass
                UNION ALL
                SELECT format('publication "%s"', pub.pubname), d.relname, 6
                  FROM deps AS d
                       JOIN pg_publication_rel AS pr ON d.classid = 'pg_publication_rel'::regclass AND pr.oid = d.objid
                       JOIN pg_publication AS pub ON pub.oid = pr.prpubid
                UNION ALL
                SELECT 'partition key', col.relname, 0
                  FROM cols AS col
                       JOIN pg_partitioned_table AS pt ON pt.partrelid = col.relid
                 WHERE col.attnum = ANY (pt.partattrs::int2[])
                    OR EXISTS (SELECT FROM pg_depend AS dep
                                WHERE dep.classid = 'pg_class'::regclass AND dep.objid = col.relid
                                  AND dep.objsubid = col.attnum AND dep.refclassid = 'pg_class'::regclass
                                  AND dep.refobjid = col.relid AND dep.refobjsubid = 0
                                  AND dep.deptype = 'i')
                UNION ALL
                SELECT CASE WHEN d.classid = 'pg_class'::regclass
                                 THEN format('index "%s"', ic.relname)
                            WHEN d.classid = 'pg_statistic_ext'::regclass
                                 THEN format('statistics object "%s"', st.stxname)
                            WHEN co.contype = 'x'
                                 THEN format('exclusion constraint "%s"', co.conname)
                            ELSE format('check constraint "%s"', co.conname)
                       END,
                       d.relname, 7
                  FROM deps AS d
                       LEFT JOIN pg_class AS ic ON d.classid = 'pg_class'::regclass AND ic.oid = d.objid
                       LEFT JOIN pg_statistic_ext AS st ON d.classid = 'pg_statistic_ext'::regclass AND st.oid = d.objid
                       LEFT JOIN pg_constraint AS co ON d.classid = 'pg_constraint'::regclass AND co.oid = d.objid
                 WHERE (ic.relkind IN ('i', 'I') OR st.oid IS NOT NULL OR co.contype IN ('c', 'x'))
                   AND EXISTS (SELECT FROM pg_depend AS code
                                WHERE code.classid = d.classid AND code.objid = d.objid
                                  AND code.refclassid IN ('pg_proc'::regclass, 'pg_operator'::regclass,
                                                         'pg_type'::regclass, 'pg_cast'::regclass))
            )
            SELECT u.what, u.relname, u.rank FROM users AS u ORDER BY u.rank, u.relname, u.what LIMIT 1
        LOOP
            IF blocker.rank = 0 THEN
                RAISE EXCEPTION 'column "%" is part of the partition key of table "%"', w_att[i], blocker.relname
                      USING ERRCODE = 'invalid_table_definition',
                            DETAIL = via || ', and PostgreSQL cannot change the type of a partition key column.',
                            HINT = 'Keep the column bigint; to_json(column::snowflake) writes a value as a string.';
            END IF;
            IF blocker.rank = 7 THEN
                RAISE EXCEPTION 'column "%" of table "%" is used by %, which names functions, operators or types that are not built in',
                                w_att[i], blocker.relname, blocker.what
                      USING ERRCODE = 'feature_not_supported',
                            DETAIL = via || ', and a change of type makes PostgreSQL parse that definition again, where a function or operator of the same name that takes a snowflake, made by another role, could take the place of the one it names and run with your rights.',
                            HINT = format('Drop %s, convert the column, then create it again.', blocker.what);
            END IF;
            RAISE EXCEPTION 'column "%" of table "%" is used by %', w_att[i], blocker.relname, blocker.what
                  USING ERRCODE = 'feature_not_supported',
                        DETAIL = via || ', and PostgreSQL cannot change the type of a column that a view, rule, trigger, policy, generated column, SQL function body or publication uses.',
                        HINT = format('Drop %s, convert the column, then create it again.', blocker.what);
        END LOOP;
    END LOOP;

    -- The changes: one ALTER TABLE per table, the key's table first.  No
    -- row is rewritten; the indexes of partitions, and those with an
    -- expression or a WHERE clause that uses a converted column, are built
    -- again, and CHECK constraints that use one are checked again.
    FOR ref IN
        SELECT u.relid
          FROM unnest(w_rel) WITH ORDINALITY AS u(relid, n)
         GROUP BY u.relid
         ORDER BY min(u.n)
    LOOP
        SELECT string_agg(format('ALTER COLUMN %I TYPE %s', w.attname, snowflake_type::regtype), ', ' ORDER BY w.n)
          INTO statement
          FROM unnest(w_rel, w_att) WITH ORDINALITY AS w(relid, attname, n)
         WHERE w.relid = ref.relid;
        EXECUTE format('ALTER TABLE %s %s', ref.relid::regclass, statement);
    END LOOP;

    RETURN QUERY
        SELECT r.relid, r.attname, r.typid, r.act
          FROM unnest(r_rel, r_att, r_type, r_action) AS r(relid, attname, typid, act);
END
$convert_type$;

COMMENT ON FUNCTION @extschema@.snowflake_convert_type(regclass, name) IS
    'Converts a bigint column, and the columns that reference it, to the type snowflake, without rewriting a table';

--
-- Converting serial and identity keys
--

-- Hardened in 1.6: it refuses a CHECK or exclusion constraint, index or
-- extended statistics object on a column it widens that names a function,
-- operator or type that is not built in, changes only tables that the
-- calling role owns itself, locks every table it changes before its
-- checks, names the extension's functions from their OIDs (refusing if the
-- extension's schema changed while it waited), and runs at READ COMMITTED
-- only.  Same signature, result, owner, grants and comment.

-- Converts a smallserial, serial, bigserial or identity column to
-- bigint DEFAULT snowflake_nextval().  Every column that references it
-- through a foreign key, directly or through further foreign keys, becomes
-- bigint too.  Existing values stay as they are, and must all lie below the
-- IDs snowflake_nextval() issues now.  An identity is dropped with its
-- sequence; a serial's sequence is dropped when the column owned it and
-- nothing else uses it.  Everything is checked before anything changes,
-- and everything happens in the caller's transaction.
--
-- Returns one row per column it made bigint or found referencing the key:
-- the key first, then the referencing columns.
--
-- It runs its statements with the caller's rights, but a caller may be a
-- superuser working in a database whose schemas others can create in.  So
-- nothing but pg_catalog is on its path, and it names the extension's own
-- objects with their schema.  A change from smallint or integer to bigint
-- rewrites the table, and PostgreSQL parses the CHECK and exclusion
-- constraints, indexes and extended statistics that use the column again,
-- for the new type, and checks those CHECK constraints over every row with
-- the caller's rights: it refuses such a definition when it names a
-- function, operator or type that is not built in (another role's
-- function would run with the caller's rights, and a look-alike of the
-- same name that takes a bigint could take its place), and it changes
-- only tables that the calling role owns itself: a superuser or a member
-- of the owning role passes every ownership check, but a CHECK constraint
-- that calls only built-ins (query_to_xml(), set_config()) would still run
-- the owner's code with its rights.  It finds the extension's schema and
-- functions by OID before its first lock, refuses if that schema was
-- renamed or replaced while it waited, and names them in its statements
-- from their OIDs.  The rewrite fires no trigger and evaluates no default.
-- It runs at READ COMMITTED only, so that its checks, made after its
-- locks, see everything committed before them.
CREATE OR REPLACE FUNCTION @extschema@.snowflake_convert_column(table_name regclass, column_name name)
RETURNS TABLE (affected_table regclass,
               affected_column name,
               old_type regtype,
               action text)
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $convert$
DECLARE
    integer_types constant oid[] :=
        ARRAY['smallint'::regtype, 'integer'::regtype, 'bigint'::regtype];
    rel_name      name;       -- table_name's own name, for messages
    rel_kind      "char";
    key_attnum    int2;
    key_type      oid;
    key_identity  "char";
    key_generated "char";
    key_inherited boolean;
    default_oid   oid;
    default_expr  text;
    seq_oid       oid;
    seq_name      text;
    seq_owned     boolean := false;
    is_nextval    boolean;
    key_action    text;
    roots         text;
    max_value     bigint;
    floor_id      bigint;
    max_ts        text;
    ref           record;
    blocker       record;
    -- The tables locked so far, and those to lock next.
    locked        oid[] := '{}';
    new_rels      oid[];
    -- The columns that become bigint (the key first, unless it is bigint
    -- already) and, for a referencing column, why: its foreign key.
    w_rel         oid[];
    w_att         name[];
    w_via         text[];
    -- The report.
    r_rel         regclass[];
    r_att         name[];
    r_type        regtype[];
    r_action      text[];
    i             integer;
    via           text;
    statement     text;
    -- The calling role, which must own every table the function changes.
    caller        oid;
    -- The extension's schema and the objects of the extension that the
    -- function runs or writes into its statements, found by OID before any
    -- lock and named from their OIDs just before each statement runs.
    ext_oid       oid;
    ext_schema    oid;
    ext_schema_name name;
    nextval_fn    oid;        -- snowflake_nextval()
    status_fn     oid;        -- snowflake_status()
    decode_fn     oid;        -- snowflake_decode(bigint)
    max_value_ts  timestamptz;
BEGIN
    -- At REPEATABLE READ or SERIALIZABLE the checks below would read the
    -- catalog as it was before the locks, and miss a constraint or index
    -- committed while this function waited for them.
    IF current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE EXCEPTION 'snowflake_convert_column() must run at isolation level READ COMMITTED'
              USING ERRCODE = 'invalid_transaction_state',
                    DETAIL = format('This transaction runs at %s, so its checks would read the catalog as it was before the conversion locked the tables.',
                                    upper(current_setting('transaction_isolation'))),
                    HINT = 'Run it in a READ COMMITTED transaction, the default.';
    END IF;

    -- Every table it changes must belong to the calling role itself: ALTER
    -- TABLE checks their CHECK constraints again with the caller's rights,
    -- and a superuser, or a member of the owning role, passes every
    -- ownership check while the owner's code would run as that caller.
    SELECT r.oid INTO caller FROM pg_roles AS r WHERE r.rolname = current_user;

    -- The extension's schema, by OID, before any lock: it must be the one
    -- this function was created in.
    SELECT e.oid, e.extnamespace, n.nspname INTO ext_oid, ext_schema, ext_schema_name
      FROM pg_extension AS e JOIN pg_namespace AS n ON n.oid = e.extnamespace
     WHERE e.extname = 'snowflake';
    IF ext_schema IS DISTINCT FROM '@extschema@'::regnamespace::oid THEN
        RAISE EXCEPTION 'the schema of extension snowflake is not the one %() was created in', 'snowflake_convert_column'
              USING ERRCODE = 'object_not_in_prerequisite_state',
                    HINT = 'Only a role you trust should own the schema of extension snowflake; look at what changed, then call it again.';
    END IF;
    -- Its functions that this one calls or writes into a default.
    SELECT o.oid INTO nextval_fn
      FROM pg_proc AS o
           JOIN pg_depend AS dep
             ON dep.classid = 'pg_proc'::regclass AND dep.objid = o.oid
            AND dep.refclassid = 'pg_extension'::regclass AND dep.refobjid = ext_oid AND dep.deptype = 'e'
     WHERE o.pronamespace = ext_schema AND o.proname = 'snowflake_nextval' AND o.pronargs = 0;
    IF nextval_fn IS NULL THEN
        RAISE EXCEPTION 'extension snowflake has no function snowflake_nextval() in schema "%"', ext_schema_name
              USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    SELECT o.oid INTO status_fn
      FROM pg_proc AS o
           JOIN pg_depend AS dep
             ON dep.classid = 'pg_proc'::regclass AND dep.objid = o.oid
            AND dep.refclassid = 'pg_extension'::regclass AND dep.refobjid = ext_oid AND dep.deptype = 'e'
     WHERE o.pronamespace = ext_schema AND o.proname = 'snowflake_status' AND o.pronargs = 0;
    IF status_fn IS NULL THEN
        RAISE EXCEPTION 'extension snowflake has no function snowflake_status() in schema "%"', ext_schema_name
              USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    SELECT o.oid INTO decode_fn
      FROM pg_proc AS o
           JOIN pg_depend AS dep
             ON dep.classid = 'pg_proc'::regclass AND dep.objid = o.oid
            AND dep.refclassid = 'pg_extension'::regclass AND dep.refobjid = ext_oid AND dep.deptype = 'e'
     WHERE o.pronamespace = ext_schema AND o.proname = 'snowflake_decode' AND o.pronargs = 1
       AND o.proargtypes[0] = 'bigint'::regtype;
    IF decode_fn IS NULL THEN
        RAISE EXCEPTION 'extension snowflake has no function snowflake_decode(bigint) in schema "%"', ext_schema_name
              USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;

    -- The table.
    SELECT c.relname, c.relkind INTO rel_name, rel_kind
      FROM pg_class AS c
     WHERE c.oid = table_name;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'relation with OID % does not exist', table_name::oid
              USING ERRCODE = 'undefined_table';
    END IF;
    IF rel_kind NOT IN ('r', 'p') THEN
        RAISE EXCEPTION '"%" is not a table', rel_name
              USING ERRCODE = 'wrong_object_type',
                    HINT = CASE rel_kind
                           WHEN 'S' THEN 'Pass the table and its serial or identity column, not the sequence.'
                           ELSE 'snowflake_convert_column() converts a column of a table or partitioned table.'
                           END;
    END IF;

    -- Lock the key's table, then each table found to have a column that
    -- must become bigint, and look again for references until no new
    -- table turns up: no row can arrive between the check of the existing
    -- values and the new default, and no foreign key, constraint or index
    -- can appear on a locked table while the checks run.  LOCK TABLE
    -- reaches partitions and child tables, and so does ALTER TABLE, which
    -- only their owner may run: say which table before LOCK TABLE takes
    -- another role's table.
    new_rels := ARRAY[table_name::oid];
    LOOP
      FOR pass IN 1 .. 2 LOOP
        -- LOCK TABLE looks the names up again after a wait: a table renamed
        -- or replaced meanwhile would leave this one unlocked.
        FOR ref IN
            SELECT n.relid FROM unnest(new_rels) AS n(relid)
             WHERE pass = 2
               AND NOT EXISTS (SELECT FROM pg_locks AS l
                                WHERE l.locktype = 'relation' AND l.relation = n.relid
                                  AND l.pid = pg_backend_pid() AND l.mode = 'AccessExclusiveLock'
                                  AND l.granted)
             LIMIT 1
        LOOP
            RAISE EXCEPTION 'table % was renamed or replaced while snowflake_convert_column() waited for its lock', ref.relid::regclass
                  USING ERRCODE = 'object_not_in_prerequisite_state',
                        HINT = 'Call it again.';
        END LOOP;
        FOR ref IN
            WITH RECURSIVE tree(relid, top) AS (
                SELECT n.relid, n.relid FROM unnest(new_rels) AS n(relid)
                UNION
                SELECT inh.inhrelid, t.top
                  FROM tree AS t JOIN pg_inherits AS inh ON inh.inhparent = t.relid
            )
            SELECT c.relname, pg_get_userbyid(c.relowner) AS owner_name,
                   t.relid = t.top AS is_top, tc.relname AS top_name, t.top
              FROM tree AS t
                   JOIN pg_class AS c ON c.oid = t.relid
                   JOIN pg_class AS tc ON tc.oid = t.top
             WHERE c.relowner IS DISTINCT FROM caller
             ORDER BY array_position(new_rels, t.top), t.relid <> t.top, c.relname
             LIMIT 1
        LOOP
            via := (SELECT w.via FROM unnest(w_rel, w_via) AS w(relid, via)
                     WHERE w.relid = ref.top AND w.via IS NOT NULL LIMIT 1);
            RAISE EXCEPTION 'table "%" is owned by role "%", not by the calling role',
                            ref.relname, ref.owner_name
                  USING ERRCODE = 'insufficient_privilege',
                        DETAIL = CASE WHEN NOT ref.is_top
                                      THEN format('It is a partition or child table of table "%s", whose columns change with it.', ref.top_name)
                                      WHEN via IS NOT NULL
                                      THEN via || '.'
                                      WHEN ref.top <> table_name::oid
                                      THEN 'It is at the other end of a foreign key on a column that changes, which ALTER TABLE drops, creates again and checks.'
                                      ELSE format('Column "%s" of table "%s" is to take snowflake IDs.', column_name, rel_name)
                                 END
                                 || ' ALTER TABLE checks the CHECK constraints and foreign keys of the tables it changes again with the rights of the role that runs it, so code of the table''s owner would run with yours.',
                        HINT = format('Run snowflake_convert_column() in a session of the role that owns every table it changes, logged in as %I (SET ROLE from a more privileged session is no boundary: the owner''s code could RESET ROLE), or change the owner of the table, then call it again. A key that tables of several owners reference needs their foreign keys dropped, and created again after the conversion.', ref.owner_name);
        END LOOP;
        EXIT WHEN pass = 2;
        EXECUTE format('LOCK TABLE %s IN ACCESS EXCLUSIVE MODE',
                       (SELECT string_agg(n.relid::regclass::text, ', ' ORDER BY n.k)
                          FROM unnest(new_rels) WITH ORDINALITY AS n(relid, k)));
        -- Checked again now that the tables are locked: their owner may
        -- have changed while this function waited.
      END LOOP;
        locked := locked || new_rels;

        IF key_attnum IS NULL THEN
            -- The column, now that its table is locked.
            SELECT a.attnum, a.atttypid, a.attidentity, a.attgenerated, a.attinhcount > 0
              INTO key_attnum, key_type, key_identity, key_generated, key_inherited
              FROM pg_attribute AS a
             WHERE a.attrelid = table_name AND a.attname = column_name AND NOT a.attisdropped;
            IF NOT FOUND THEN
                RAISE EXCEPTION 'column "%" of table "%" does not exist', column_name, rel_name
                      USING ERRCODE = 'undefined_column';
            END IF;
            IF key_attnum < 0 THEN
                RAISE EXCEPTION 'cannot convert system column "%"', column_name
                      USING ERRCODE = 'feature_not_supported';
            END IF;
            IF key_generated <> '' THEN
                RAISE EXCEPTION 'cannot convert generated column "%" of table "%"', column_name, rel_name
                      USING ERRCODE = 'feature_not_supported',
                            DETAIL = 'A generated column computes its values; it has no serial default or identity to replace.';
            END IF;
            IF key_inherited THEN
                WITH RECURSIVE ancestors(relid) AS (
                    SELECT inh.inhparent FROM pg_inherits AS inh WHERE inh.inhrelid = table_name
                    UNION
                    SELECT inh.inhparent
                      FROM ancestors AS an JOIN pg_inherits AS inh ON inh.inhrelid = an.relid
                )
                SELECT string_agg(format('"%s"', c.relname), ', ' ORDER BY c.relname) INTO roots
                  FROM ancestors AS an JOIN pg_class AS c ON c.oid = an.relid
                 WHERE NOT EXISTS (SELECT FROM pg_inherits AS inh WHERE inh.inhrelid = an.relid);
                RAISE EXCEPTION 'cannot convert inherited column "%" of table "%"', column_name, rel_name
                      USING ERRCODE = 'invalid_table_definition',
                            DETAIL = 'Partitions and child tables share the column of the table they inherit it from.',
                            HINT = format('Convert the column of %s; the conversion reaches every partition and child table.', roots);
            END IF;
            IF key_type <> ALL (integer_types) THEN
                RAISE EXCEPTION 'column "%" of table "%" is of type %, not smallint, integer or bigint',
                                column_name, rel_name, format_type(key_type, NULL)
                      USING ERRCODE = 'datatype_mismatch',
                            HINT = 'snowflake_convert_column() converts smallserial, serial, bigserial and identity columns.';
            END IF;

            -- Its IDs: an identity, or a default of nextval() of a sequence.
            IF key_identity <> '' THEN
                key_action := format('GENERATED %s AS IDENTITY',
                                     CASE key_identity WHEN 'a' THEN 'ALWAYS' ELSE 'BY DEFAULT' END);
            ELSE
                SELECT d.oid, pg_get_expr(d.adbin, d.adrelid) INTO default_oid, default_expr
                  FROM pg_attrdef AS d
                 WHERE d.adrelid = table_name AND d.adnum = key_attnum;
                IF default_oid IS NULL THEN
                    RAISE EXCEPTION 'column "%" of table "%" is neither a serial nor an identity column', column_name, rel_name
                          USING ERRCODE = 'object_not_in_prerequisite_state',
                                DETAIL = 'It has no default.',
                                HINT = 'To give it snowflake IDs anyway, make it bigint and set its default with ALTER TABLE: ALTER COLUMN ... TYPE bigint, ALTER COLUMN ... SET DEFAULT snowflake_nextval().';
                END IF;
                IF EXISTS (SELECT FROM pg_depend AS dep
                            WHERE dep.classid = 'pg_attrdef'::regclass AND dep.objid = default_oid
                              AND dep.refclassid = 'pg_proc'::regclass
                              AND dep.refobjid = nextval_fn) THEN
                    RAISE EXCEPTION 'column "%" of table "%" already takes snowflake IDs', column_name, rel_name
                          USING ERRCODE = 'object_not_in_prerequisite_state',
                                DETAIL = format('Its default is %s.', default_expr);
                END IF;
                SELECT min(dep.refobjid), count(*) = 1 AND default_expr ~ '^nextval\(''.*''::regclass\)$'
                  INTO seq_oid, is_nextval
                  FROM pg_depend AS dep
                       JOIN pg_class AS s ON s.oid = dep.refobjid AND s.relkind = 'S'
                 WHERE dep.classid = 'pg_attrdef'::regclass AND dep.objid = default_oid
                   AND dep.refclassid = 'pg_class'::regclass;
                IF NOT is_nextval THEN
                    RAISE EXCEPTION 'column "%" of table "%" is neither a serial nor an identity column', column_name, rel_name
                          USING ERRCODE = 'object_not_in_prerequisite_state',
                                DETAIL = format('Its default is %s, not nextval() of a sequence.', default_expr),
                                HINT = 'To give it snowflake IDs anyway, make it bigint and set its default with ALTER TABLE: ALTER COLUMN ... TYPE bigint, ALTER COLUMN ... SET DEFAULT snowflake_nextval().';
                END IF;
                -- Dropped below only if the column owns it (serial, or OWNED BY).
                seq_owned := EXISTS (
                    SELECT FROM pg_depend AS dep
                     WHERE dep.classid = 'pg_class'::regclass AND dep.objid = seq_oid
                       AND dep.refclassid = 'pg_class'::regclass AND dep.refobjid = table_name
                       AND dep.refobjsubid = key_attnum AND dep.deptype = 'a');
                seq_name := seq_oid::regclass::text;
                key_action := default_expr;
            END IF;
        END IF;

        -- The key, and the columns that reference it, directly or through
        -- other foreign keys.  A foreign key on a partitioned table, or to
        -- one, has clones on the partitions (conparentid <> 0); ALTER TABLE
        -- on the top reaches them.
        r_rel := ARRAY[table_name];
        r_att := ARRAY[column_name];
        r_type := ARRAY[key_type::regtype];
        r_action := '{}';
        w_rel := '{}';
        w_att := '{}';
        w_via := '{}';
        IF key_type <> 'bigint'::regtype THEN
            w_rel := ARRAY[table_name::oid];
            w_att := ARRAY[column_name];
            w_via := ARRAY[NULL::text];
        END IF;
        FOR ref IN
            WITH RECURSIVE fam(top, relid) AS (
                -- Each table with partitions or children, and its descendants:
                -- ALTER TABLE changes their column too, and the foreign keys
                -- to it.
                SELECT DISTINCT inh.inhparent, inh.inhparent FROM pg_inherits AS inh
                UNION
                SELECT f.top, inh.inhrelid
                  FROM fam AS f JOIN pg_inherits AS inh ON inh.inhparent = f.relid
            ),
            famcol(top, topatt, relid, attnum) AS (
                SELECT f.top, ta.attnum, f.relid, a.attnum
                  FROM fam AS f
                       JOIN pg_attribute AS ta ON ta.attrelid = f.top AND ta.attnum > 0 AND NOT ta.attisdropped
                       JOIN pg_attribute AS a
                         ON a.attrelid = f.relid AND a.attname = ta.attname AND NOT a.attisdropped
            ),
            refs(relid, attnum, conname, ref_relid, ref_attnum) AS (
                SELECT c.conrelid, c.conkey[k.n], c.conname, c.confrelid, c.confkey[k.n]
                  FROM pg_constraint AS c,
                       generate_subscripts(c.confkey, 1) AS k(n)
                 WHERE c.contype = 'f' AND c.conparentid = 0
                   AND ((c.confrelid = table_name AND c.confkey[k.n] = key_attnum)
                        OR EXISTS (SELECT FROM famcol AS fc
                                    WHERE fc.top = table_name AND fc.topatt = key_attnum
                                      AND fc.relid = c.confrelid AND fc.attnum = c.confkey[k.n]))
                UNION
                SELECT c.conrelid, c.conkey[k.n], c.conname, c.confrelid, c.confkey[k.n]
                  FROM refs AS r
                       LEFT JOIN famcol AS fc ON fc.top = r.relid AND fc.topatt = r.attnum
                       JOIN pg_constraint AS c
                         ON c.contype = 'f' AND c.conparentid = 0
                        AND (c.confrelid = r.relid OR c.confrelid = fc.relid),
                       generate_subscripts(c.confkey, 1) AS k(n)
                 WHERE c.confkey[k.n] = CASE WHEN c.confrelid = r.relid THEN r.attnum ELSE fc.attnum END
            )
            SELECT r.relid, a.attname, a.atttypid, a.attinhcount > 0 AS inherited,
                   rc.relname, r.conname, ra.attname AS ref_attname, rrc.relname AS ref_relname
              FROM refs AS r
                   JOIN pg_class AS rc ON rc.oid = r.relid
                   JOIN pg_attribute AS a ON a.attrelid = r.relid AND a.attnum = r.attnum
                   JOIN pg_class AS rrc ON rrc.oid = r.ref_relid
                   JOIN pg_attribute AS ra ON ra.attrelid = r.ref_relid AND ra.attnum = r.ref_attnum
             WHERE (r.relid, r.attnum) <> (table_name::oid, key_attnum)
             ORDER BY rc.relname, r.relid, a.attname, r.conname
        LOOP
            via := format('It references column "%s" of table "%s" through foreign key "%s", so it must become bigint too',
                          ref.ref_attname, ref.ref_relname, ref.conname);
            IF ref.atttypid <> ALL (integer_types) THEN
                RAISE EXCEPTION 'column "%" of table "%" is of type %, not smallint, integer or bigint',
                                ref.attname, ref.relname, format_type(ref.atttypid, NULL)
                      USING ERRCODE = 'datatype_mismatch',
                            DETAIL = via || '.';
            END IF;
            r_rel := r_rel || ref.relid::regclass;
            r_att := r_att || ref.attname;
            r_type := r_type || ref.atttypid::regtype;
            r_action := r_action || format('references %I(%I) through %I',
                                           ref.ref_relname, ref.ref_attname, ref.conname);
            IF ref.atttypid <> 'bigint'::regtype
               AND NOT EXISTS (SELECT FROM unnest(w_rel, w_att) AS w(relid, attname)
                                WHERE (w.relid, w.attname) = (ref.relid, ref.attname)) THEN
                IF ref.inherited THEN
                    RAISE EXCEPTION 'cannot convert inherited column "%" of table "%"', ref.attname, ref.relname
                          USING ERRCODE = 'invalid_table_definition',
                                DETAIL = via || ', and only the table it is inherited from can change its type.',
                                HINT = 'Make the column bigint in the table it is inherited from first.';
                END IF;
                w_rel := w_rel || ref.relid;
                w_att := w_att || ref.attname;
                w_via := w_via || via;
            END IF;
        END LOOP;

        -- Besides the tables whose columns change, every table at the other
        -- end of a foreign key on a column that changes: those that
        -- reference the key, whatever their column's type, and those the
        -- changing columns reference.  ALTER TABLE drops such a foreign key
        -- and creates it again, locking that table, and checking the key
        -- plans a query over it, which evaluates its index expressions with
        -- the caller's rights.  They are locked and their owner checked too.
        SELECT array_agg(w.relid ORDER BY w.n) INTO new_rels
          FROM (SELECT u.relid, min(u.n) AS n
                  FROM (SELECT t.relid, t.n
                          FROM unnest(w_rel) WITH ORDINALITY AS t(relid, n)
                        UNION ALL
                        SELECT t.relid::oid, 1000000 + t.n
                          FROM unnest(r_rel) WITH ORDINALITY AS t(relid, n)
                        UNION ALL
                        SELECT c.confrelid, 2000000 + t.n
                          FROM unnest(w_rel, w_att) WITH ORDINALITY AS t(relid, attname, n)
                               CROSS JOIN LATERAL (
                                   WITH RECURSIVE d(relid) AS (
                                       SELECT t.relid
                                       UNION
                                       SELECT inh.inhrelid FROM d JOIN pg_inherits AS inh ON inh.inhparent = d.relid
                                   )
                                   SELECT d.relid FROM d) AS d
                               JOIN pg_attribute AS a
                                 ON a.attrelid = d.relid AND a.attname = t.attname
                               JOIN pg_constraint AS c
                                 ON c.contype = 'f' AND c.conrelid = d.relid
                                AND a.attnum = ANY (c.conkey)) AS u
                 WHERE u.relid <> ALL (locked)
                 GROUP BY u.relid) AS w;
        EXIT WHEN new_rels IS NULL;
    END LOOP;

    -- Every table is locked now.  The extension's schema must still be the
    -- one found before the first lock, under the same name: its owner could
    -- have renamed it and put another of the same name in its place while
    -- this function waited.
    IF NOT EXISTS (SELECT FROM pg_extension AS e
                          JOIN pg_namespace AS n ON n.oid = e.extnamespace
                    WHERE e.oid = ext_oid AND n.oid = ext_schema AND n.nspname = ext_schema_name) THEN
        RAISE EXCEPTION 'the schema of extension snowflake changed during the call'
              USING ERRCODE = 'object_not_in_prerequisite_state',
                    DETAIL = format('Schema "%s" was renamed, or extension snowflake moved, while %s() waited for its locks.', ext_schema_name, 'snowflake_convert_column'),
                    HINT = 'Only a role you trust should own the schema of extension snowflake; look at what changed, then call it again.';
    END IF;

    -- ALTER COLUMN ... TYPE fails on a column that a view, rule, trigger,
    -- policy or generated column uses, or that is part of a partition key,
    -- in the table itself or in any of its partitions and child tables.  It
    -- parses the CHECK and exclusion constraints, indexes and extended
    -- statistics that use the column again, for the new type, and checks
    -- the CHECK constraints over the rewritten rows: refused when they name
    -- objects that are not built in (those have entries in pg_depend;
    -- built-in, pinned ones have none).
    FOR i IN 1 .. cardinality(w_rel) LOOP
        via := coalesce(w_via[i], 'The column must become bigint');
        FOR blocker IN
            WITH RECURSIVE tree(relid) AS (
                SELECT w_rel[i]
                UNION
                SELECT inh.inhrelid FROM tree AS t JOIN pg_inherits AS inh ON inh.inhparent = t.relid
            ),
            cols AS (
                SELECT a.attrelid AS relid, a.attnum, c.relname
                  FROM tree AS t
                       JOIN pg_attribute AS a
                         ON a.attrelid = t.relid AND a.attname = w_att[i] AND NOT a.attisdropped
                       JOIN pg_class AS c ON c.oid = a.attrelid
            ),
            deps AS (
                SELECT col.relname, dep.classid, dep.objid
                  FROM cols AS col
                       JOIN pg_depend AS dep
                         ON dep.refclassid = 'pg_class'::regclass AND dep.refobjid = col.relid
                        AND dep.refobjsubid = col.attnum
            ),
            users(what, relname, rank) AS (
                SELECT CASE WHEN rw.rulename = '_RETURN' AND rc.relkind = 'm'
                                 THEN format('materialized view "%s"', rc.relname)
                            WHEN rw.rulename = '_RETURN'
                                 THEN format('view "%s"', rc.relname)
                            ELSE format('rule "%s" on table "%s"', rw.rulename, rc.relname)
                       END,
                       d.relname, 1
                  FROM deps AS d
                       JOIN pg_rewrite AS rw ON d.classid = 'pg_rewrite'::regclass AND rw.oid = d.objid
                       JOIN pg_class AS rc ON rc.oid = rw.ev_class
                UNION ALL
                SELECT format('trigger "%s"', tg.tgname), d.relname, 2
                  FROM deps AS d
                       JOIN pg_trigger AS tg ON d.classid = 'pg_trigger'::regclass AND tg.oid = d.objid
                UNION ALL
                SELECT format('policy "%s"', po.polname), d.relname, 3
                  FROM deps AS d
                       JOIN pg_policy AS po ON d.classid = 'pg_policy'::regclass AND po.oid = d.objid
                UNION ALL
                SELECT format('generated column "%s"', ga.attname), d.relname, 4
                  FROM deps AS d
                       JOIN pg_attrdef AS ad ON d.classid = 'pg_attrdef'::regclass AND ad.oid = d.objid
                       JOIN pg_attribute AS ga
                         ON ga.attrelid = ad.adrelid AND ga.attnum = ad.adnum AND ga.attgenerated <> ''
                UNION ALL
                SELECT 'partition key', col.relname, 0
                  FROM cols AS col
                       JOIN pg_partitioned_table AS pt ON pt.partrelid = col.relid
                 WHERE col.attnum = ANY (pt.partattrs::int2[])
                    OR EXISTS (SELECT FROM pg_depend AS dep
                                WHERE dep.classid = 'pg_class'::regclass AND dep.objid = col.relid
                                  AND dep.objsubid = col.attnum AND dep.refclassid = 'pg_class'::regclass
                                  AND dep.refobjid = col.relid AND dep.refobjsubid = 0
                                  AND dep.deptype = 'i')
                UNION ALL
                SELECT CASE WHEN d.classid = 'pg_class'::regclass
                                 THEN format('index "%s"', ic.relname)
                            WHEN d.classid = 'pg_statistic_ext'::regclass
                                 THEN format('statistics object "%s"', st.stxname)
                            WHEN co.contype = 'x'
                                 THEN format('exclusion constraint "%s"', co.conname)
                            ELSE format('check constraint "%s"', co.conname)
                       END,
                       d.relname, 7
                  FROM deps AS d
                       LEFT JOIN pg_class AS ic ON d.classid = 'pg_class'::regclass AND ic.oid = d.objid
                       LEFT JOIN pg_statistic_ext AS st ON d.classid = 'pg_statistic_ext'::regclass AND st.oid = d.objid
                       LEFT JOIN pg_constraint AS co ON d.classid = 'pg_constraint'::regclass AND co.oid = d.objid
                 WHERE (ic.relkind IN ('i', 'I') OR st.oid IS NOT NULL OR co.contype IN ('c', 'x'))
                   AND EXISTS (SELECT FROM pg_depend AS code
                                WHERE code.classid = d.classid AND code.objid = d.objid
                                  AND code.refclassid IN ('pg_proc'::regclass, 'pg_operator'::regclass,
                                                         'pg_type'::regclass, 'pg_cast'::regclass))
            )
            SELECT u.what, u.relname, u.rank FROM users AS u ORDER BY u.rank, u.relname, u.what LIMIT 1
        LOOP
            IF blocker.rank = 0 THEN
                RAISE EXCEPTION 'column "%" is part of the partition key of table "%"', w_att[i], blocker.relname
                      USING ERRCODE = 'invalid_table_definition',
                            DETAIL = via || ', and PostgreSQL cannot change the type of a partition key column.',
                            HINT = 'Only a partition key that is bigint already can be converted.';
            END IF;
            IF blocker.rank = 7 THEN
                RAISE EXCEPTION 'column "%" of table "%" is used by %, which names functions, operators or types that are not built in',
                                w_att[i], blocker.relname, blocker.what
                      USING ERRCODE = 'feature_not_supported',
                            DETAIL = via || ', and a change of type makes PostgreSQL parse that definition again and evaluate it over the rewritten rows, where a function or operator that another role made, or a look-alike of the same name that takes a bigint, could run with your rights.',
                            HINT = format('Drop %s, convert the column, then create it again.', blocker.what);
            END IF;
            RAISE EXCEPTION 'column "%" of table "%" is used by %', w_att[i], blocker.relname, blocker.what
                  USING ERRCODE = 'feature_not_supported',
                        DETAIL = via || ', and PostgreSQL cannot change the type of a column that a view, rule, trigger, policy or generated column uses.',
                        HINT = format('Drop %s, convert the column, then create it again.', blocker.what);
        END LOOP;
    END LOOP;

    -- Every existing value must lie below every ID issued from now on: below
    -- the smallest ID of the current millisecond.  The call to
    -- snowflake_nextval() first makes sure IDs can be issued here at all.
    EXECUTE format('SELECT max(%I)::bigint FROM %s', column_name, table_name) INTO max_value;
    -- The extension's functions are named from their OIDs, just before the
    -- statement runs.
    EXECUTE format('SELECT %s()', nextval_fn::regproc);
    EXECUTE format('SELECT floor((extract(epoch FROM clock_timestamp()) - extract(epoch FROM s.epoch)) * 1000)::bigint
                           << (s.node_bits + s.worker_bits + s.sequence_bits)
                      FROM %s() AS s', status_fn::regproc)
       INTO floor_id;
    IF max_value >= floor_id THEN
        BEGIN
            EXECUTE format('SELECT d.ts FROM %s($1) AS d', decode_fn::regproc)
               INTO max_value_ts USING max_value;
            max_ts := format('is the snowflake ID of %s', max_value_ts);
        EXCEPTION WHEN numeric_value_out_of_range THEN
            max_ts := 'lies beyond the timestamps of the snowflake layout';
        END;
        RAISE EXCEPTION 'column "%" of table "%" has values at or above the snowflake IDs issued now', column_name, rel_name
              USING ERRCODE = 'object_not_in_prerequisite_state',
                    DETAIL = format('Its largest value, %s, %s.', max_value, max_ts),
                    HINT = 'New IDs must be larger than every existing value: renumber the rows below the snowflake ID range, or convert the column after that time.';
    END IF;

    -- The changes.  An identity goes first, with its sequence.
    IF key_identity <> '' THEN
        EXECUTE format('ALTER TABLE %s ALTER COLUMN %I DROP IDENTITY', table_name, column_name);
    END IF;
    -- One ALTER TABLE per table, so that each table is rewritten once; the
    -- key's table first, with the new default.
    FOR ref IN
        SELECT w.relid
          FROM (SELECT table_name::oid AS relid, 0::bigint AS n
                UNION ALL
                SELECT u.relid, u.n FROM unnest(w_rel) WITH ORDINALITY AS u(relid, n)) AS w
         GROUP BY w.relid
         ORDER BY min(w.n)
    LOOP
        SELECT string_agg(format('ALTER COLUMN %I TYPE bigint', w.attname), ', ' ORDER BY w.n)
          INTO statement
          FROM unnest(w_rel, w_att) WITH ORDINALITY AS w(relid, attname, n)
         WHERE w.relid = ref.relid;
        IF ref.relid = table_name THEN
            statement := concat_ws(', ', statement,
                                   format('ALTER COLUMN %I SET DEFAULT %s()', column_name, nextval_fn::regproc));
        END IF;
        EXECUTE format('ALTER TABLE %s %s', ref.relid::regclass, statement);
    END LOOP;
    -- The new default must call the extension's snowflake_nextval() and no
    -- other function.
    IF NOT EXISTS (SELECT FROM pg_attrdef AS d
                          JOIN pg_depend AS dep
                            ON dep.classid = 'pg_attrdef'::regclass AND dep.objid = d.oid
                           AND dep.refclassid = 'pg_proc'::regclass AND dep.refobjid = nextval_fn
                    WHERE d.adrelid = table_name AND d.adnum = key_attnum)
       OR EXISTS (SELECT FROM pg_attrdef AS d
                         JOIN pg_depend AS dep
                           ON dep.classid = 'pg_attrdef'::regclass AND dep.objid = d.oid
                          AND dep.refclassid = 'pg_proc'::regclass AND dep.refobjid <> nextval_fn
                   WHERE d.adrelid = table_name AND d.adnum = key_attnum) THEN
        RAISE EXCEPTION 'the new default of column "%" of table "%" does not call snowflake_nextval() of extension snowflake', column_name, rel_name
              USING ERRCODE = 'object_not_in_prerequisite_state',
                    DETAIL = 'The schema of extension snowflake changed during the call; nothing was converted.',
                    HINT = 'Only a role you trust should own the schema of extension snowflake; look at what changed, then call it again.';
    END IF;

    -- The serial's sequence, now unused unless other objects use it too.
    IF seq_oid IS NOT NULL THEN
        IF NOT seq_owned THEN
            key_action := key_action || format('; sequence %s kept: the column does not own it', seq_name);
        ELSIF EXISTS (SELECT FROM pg_depend AS dep
                       WHERE dep.refclassid = 'pg_class'::regclass AND dep.refobjid = seq_oid
                         AND dep.deptype = 'n') THEN
            key_action := key_action || format('; sequence %s kept: other objects use it', seq_name);
        ELSE
            -- By OID, named just before the statement: the sequence's schema
            -- may have been renamed, and another put in its place, since
            -- its name was read.
            seq_name := seq_oid::regclass::text;
            EXECUTE format('DROP SEQUENCE %s', seq_name);
            key_action := key_action || format('; sequence %s dropped', seq_name);
        END IF;
    END IF;

    r_action := ARRAY['DEFAULT snowflake_nextval() replaces ' || key_action] || r_action;
    RETURN QUERY
        SELECT r.relid, r.attname, r.typid, r.act
          FROM unnest(r_rel, r_att, r_type, r_action) AS r(relid, attname, typid, act);
END
$convert$;
