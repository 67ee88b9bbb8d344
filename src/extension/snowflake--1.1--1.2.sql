/* snowflake--1.1--1.2.sql: converting serial and identity keys, and the node registry */

\echo Use "ALTER EXTENSION snowflake UPDATE TO '1.2'" to load this file. \quit

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
CREATE FUNCTION snowflake_convert_column(table_name regclass, column_name name)
RETURNS TABLE (affected_table regclass,
               affected_column name,
               old_type regtype,
               action text)
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, @extschema@, pg_temp
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
    -- The columns that become bigint (the key first, unless it is bigint
    -- already) and, for a referencing column, why: its foreign key.
    w_rel         oid[] := '{}';
    w_att         name[] := '{}';
    w_via         text[] := '{}';
    -- The report.
    r_rel         regclass[] := '{}';
    r_att         name[] := '{}';
    r_type        regtype[] := '{}';
    r_action      text[] := '{}';
    i             integer;
    via           text;
    statement     text;
BEGIN
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

    -- No row may arrive between the check of the existing values and the
    -- new default; the ALTER TABLEs below would take this lock anyway.
    EXECUTE format('LOCK TABLE %s IN ACCESS EXCLUSIVE MODE', table_name);

    -- The column.
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
                      AND dep.refobjid = '@extschema@.snowflake_nextval()'::regprocedure) THEN
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

    r_rel := r_rel || table_name;
    r_att := r_att || column_name;
    r_type := r_type || key_type::regtype;
    IF key_type <> 'bigint'::regtype THEN
        w_rel := w_rel || table_name::oid;
        w_att := w_att || column_name;
        w_via := w_via || NULL::text;
    END IF;

    -- The columns that reference it, directly or through other foreign
    -- keys.  A foreign key on a partitioned table, or to one, has clones on
    -- the partitions (conparentid <> 0); ALTER TABLE on the top reaches them.
    FOR ref IN
        WITH RECURSIVE refs(relid, attnum, conname, ref_relid, ref_attnum) AS (
            SELECT c.conrelid, c.conkey[k.n], c.conname, c.confrelid, c.confkey[k.n]
              FROM pg_constraint AS c,
                   generate_subscripts(c.confkey, 1) AS k(n)
             WHERE c.contype = 'f' AND c.conparentid = 0
               AND c.confrelid = table_name AND c.confkey[k.n] = key_attnum
            UNION
            SELECT c.conrelid, c.conkey[k.n], c.conname, c.confrelid, c.confkey[k.n]
              FROM refs AS r
                   JOIN pg_constraint AS c
                     ON c.contype = 'f' AND c.conparentid = 0 AND c.confrelid = r.relid,
                   generate_subscripts(c.confkey, 1) AS k(n)
             WHERE c.confkey[k.n] = r.attnum
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

    -- ALTER COLUMN ... TYPE fails on a column that a view, rule, trigger,
    -- policy or generated column uses, or that is part of a partition key,
    -- in the table itself or in any of its partitions and child tables.
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
            users(what, relname, rank) AS (
                SELECT CASE WHEN rw.rulename = '_RETURN' AND rc.relkind = 'm'
                                 THEN format('materialized view "%s"', rc.relname)
                            WHEN rw.rulename = '_RETURN'
                                 THEN format('view "%s"', rc.relname)
                            ELSE format('rule "%s" on table "%s"', rw.rulename, rc.relname)
                       END,
                       col.relname, 1
                  FROM cols AS col
                       JOIN pg_depend AS dep
                         ON dep.refclassid = 'pg_class'::regclass AND dep.refobjid = col.relid
                        AND dep.refobjsubid = col.attnum AND dep.classid = 'pg_rewrite'::regclass
                       JOIN pg_rewrite AS rw ON rw.oid = dep.objid
                       JOIN pg_class AS rc ON rc.oid = rw.ev_class
                UNION ALL
                SELECT format('trigger "%s"', tg.tgname), col.relname, 2
                  FROM cols AS col
                       JOIN pg_depend AS dep
                         ON dep.refclassid = 'pg_class'::regclass AND dep.refobjid = col.relid
                        AND dep.refobjsubid = col.attnum AND dep.classid = 'pg_trigger'::regclass
                       JOIN pg_trigger AS tg ON tg.oid = dep.objid
                UNION ALL
                SELECT format('policy "%s"', po.polname), col.relname, 3
                  FROM cols AS col
                       JOIN pg_depend AS dep
                         ON dep.refclassid = 'pg_class'::regclass AND dep.refobjid = col.relid
                        AND dep.refobjsubid = col.attnum AND dep.classid = 'pg_policy'::regclass
                       JOIN pg_policy AS po ON po.oid = dep.objid
                UNION ALL
                SELECT format('generated column "%s"', ga.attname), col.relname, 4
                  FROM cols AS col
                       JOIN pg_depend AS dep
                         ON dep.refclassid = 'pg_class'::regclass AND dep.refobjid = col.relid
                        AND dep.refobjsubid = col.attnum AND dep.classid = 'pg_attrdef'::regclass
                       JOIN pg_attrdef AS ad ON ad.oid = dep.objid
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
            )
            SELECT u.what, u.relname FROM users AS u ORDER BY u.rank, u.relname, u.what LIMIT 1
        LOOP
            IF blocker.what = 'partition key' THEN
                RAISE EXCEPTION 'column "%" is part of the partition key of table "%"', w_att[i], blocker.relname
                      USING ERRCODE = 'invalid_table_definition',
                            DETAIL = via || ', and PostgreSQL cannot change the type of a partition key column.',
                            HINT = 'Only a partition key that is bigint already can be converted.';
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
    PERFORM @extschema@.snowflake_nextval();
    SELECT floor((extract(epoch FROM clock_timestamp()) - extract(epoch FROM s.epoch)) * 1000)::bigint
               << (s.node_bits + s.worker_bits + s.sequence_bits)
      INTO floor_id
      FROM @extschema@.snowflake_status() AS s;
    IF max_value >= floor_id THEN
        BEGIN
            SELECT format('is the snowflake ID of %s', d.ts) INTO max_ts
              FROM @extschema@.snowflake_decode(max_value) AS d;
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
                                   format('ALTER COLUMN %I SET DEFAULT @extschema@.snowflake_nextval()', column_name));
        END IF;
        EXECUTE format('ALTER TABLE %s %s', ref.relid::regclass, statement);
    END LOOP;

    -- The serial's sequence, now unused unless other objects use it too.
    IF seq_oid IS NOT NULL THEN
        IF NOT seq_owned THEN
            key_action := key_action || format('; sequence %s kept: the column does not own it', seq_name);
        ELSIF EXISTS (SELECT FROM pg_depend AS dep
                       WHERE dep.refclassid = 'pg_class'::regclass AND dep.refobjid = seq_oid
                         AND dep.deptype = 'n') THEN
            key_action := key_action || format('; sequence %s kept: other objects use it', seq_name);
        ELSE
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

COMMENT ON FUNCTION snowflake_convert_column(regclass, name) IS
    'Converts a serial or identity column, and the columns that reference it, to bigint DEFAULT snowflake_nextval()';

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
    PRIMARY KEY (node_id, instance_id)
);

COMMENT ON TABLE snowflake_nodes IS
    'Running and past instances of each snowflake node; maintained by the extension';

GRANT SELECT ON snowflake_nodes TO PUBLIC;

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
                                 OUT largest_step_back_ms bigint,
                                 OUT instance_id uuid,
                                 OUT node_collision boolean)
RETURNS record
AS 'MODULE_PATHNAME', 'snowflake_status'
LANGUAGE C VOLATILE PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_status() IS
    'Reports the layout, worker slots, the reservation, clock steps and node collisions';
