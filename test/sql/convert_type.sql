--
-- snowflake_convert_type(): a bigint key and the columns that reference it
-- become the type snowflake, without rewriting a table or a plain index;
-- values, defaults and constraints stay; every refusal has its message and
-- SQLSTATE and changes nothing; a planted look-alike never runs.
--
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS snowflake;
RESET client_min_messages;
\set SHOW_CONTEXT never
SET TimeZone = 'UTC';
CREATE SCHEMA convert_type_test;
SET search_path = convert_type_test, public;

-- What a column looks like: type and default.
CREATE VIEW columns_now AS
SELECT c.relname, a.attname, format_type(a.atttypid, a.atttypmod) AS type,
       pg_get_expr(d.adbin, d.adrelid) AS default_expr
  FROM pg_attribute AS a
       JOIN pg_class AS c ON c.oid = a.attrelid
       LEFT JOIN pg_attrdef AS d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
 WHERE c.relnamespace = 'convert_type_test'::regnamespace AND c.relkind IN ('r', 'p')
   AND a.attnum > 0 AND NOT a.attisdropped AND c.relname NOT LIKE 'before%';
-- The storage of every table and index of the schema.
CREATE VIEW files_now AS
SELECT c.relname, c.relkind, c.relfilenode
  FROM pg_class AS c
 WHERE c.relnamespace = 'convert_type_test'::regnamespace AND c.relkind IN ('r', 'i');
CREATE VIEW foreign_keys_now AS
SELECT conrelid::regclass AS table_name, conname, convalidated,
       pg_get_constraintdef(oid) AS definition
  FROM pg_constraint
 WHERE contype = 'f' AND connamespace = 'convert_type_test'::regnamespace AND conparentid = 0;

-- A parent; a child that references it twice (once through a two-column
-- foreign key) and itself; a grandchild that references the child's
-- reference, so it must follow too; a column that is snowflake already.
-- Plain, unique, expression and partial indexes; a CHECK constraint.
CREATE TABLE parent (
    id     bigint PRIMARY KEY DEFAULT snowflake_nextval(),
    region integer NOT NULL DEFAULT 1,
    name   text,
    UNIQUE (region, id),
    CHECK (id > 0)
);
CREATE INDEX parent_bucket ON parent ((id % 16));
CREATE TABLE child (
    id        bigint PRIMARY KEY DEFAULT snowflake_nextval(),
    parent_id bigint NOT NULL REFERENCES parent ON DELETE CASCADE,
    region    integer NOT NULL,
    same_id   bigint,
    up        bigint REFERENCES child,
    UNIQUE (parent_id, id),
    FOREIGN KEY (region, same_id) REFERENCES parent (region, id)
);
CREATE INDEX child_parent ON child (parent_id);
CREATE INDEX child_up ON child (up) WHERE up IS NOT NULL;
CREATE TABLE grandchild (
    parent_id bigint,
    child_id  bigint,
    FOREIGN KEY (parent_id, child_id) REFERENCES child (parent_id, id) ON DELETE CASCADE
);
CREATE TABLE audit (parent_id snowflake REFERENCES parent);
-- Small old keys and snowflake IDs.
INSERT INTO parent (id, name) SELECT g, 'p' || g FROM generate_series(1, 50) AS g;
INSERT INTO parent (name) SELECT 'p' FROM generate_series(1, 50);
INSERT INTO child (parent_id, region, same_id) SELECT id, 1, id FROM parent;
UPDATE child SET up = (SELECT min(id) FROM child) WHERE parent_id > 25;
INSERT INTO grandchild SELECT parent_id, id FROM child;
INSERT INTO audit SELECT id FROM parent WHERE id % 7 = 0;
CREATE TABLE before_parent AS SELECT * FROM parent;
CREATE TABLE before_child AS SELECT * FROM child;
CREATE TABLE before_grandchild AS SELECT * FROM grandchild;
CREATE TABLE before_files AS SELECT * FROM files_now;
ANALYZE parent;
SELECT * FROM columns_now
 WHERE attname IN ('id', 'parent_id', 'same_id', 'up', 'child_id') ORDER BY 1, 2;
SELECT count(*) AS id_statistics FROM pg_stats
 WHERE schemaname = 'convert_type_test' AND tablename = 'parent' AND attname = 'id';

-- A conversion holds ACCESS EXCLUSIVE locks on the tables it changes and
-- on those whose foreign keys reference them (audit: PostgreSQL rebuilds
-- its foreign key) until the transaction ends; one that rolls back leaves
-- everything as it was.
BEGIN;
SELECT count(*) AS columns FROM snowflake_convert_type('parent', 'id');
SELECT c.relname, l.mode
  FROM pg_locks AS l JOIN pg_class AS c ON c.oid = l.relation
 WHERE l.pid = pg_backend_pid() AND l.locktype = 'relation'
   AND c.relname IN ('parent', 'child', 'grandchild', 'audit') AND l.mode = 'AccessExclusiveLock'
 ORDER BY 1, 2;
ROLLBACK;
SELECT * FROM columns_now WHERE relname = 'parent' AND attname = 'id';

-- The key and the columns that reference it directly (child.parent_id,
-- child.same_id, audit.parent_id, snowflake already) or through child
-- (grandchild.parent_id).
SELECT * FROM snowflake_convert_type('parent', 'id');
SELECT * FROM columns_now
 WHERE attname IN ('id', 'parent_id', 'same_id', 'up', 'child_id') ORDER BY 1, 2;

-- No table and no plain index was rewritten; the indexes whose expression
-- or WHERE clause uses a converted column were built again.
SELECT b.relname, b.relkind, f.relfilenode = b.relfilenode AS same_file
  FROM before_files AS b JOIN files_now AS f USING (relname)
 WHERE b.relname NOT LIKE 'before%'
 ORDER BY 1;

-- The column's statistics are gone until the next ANALYZE.
SELECT count(*) AS id_statistics FROM pg_stats
 WHERE schemaname = 'convert_type_test' AND tablename = 'parent' AND attname = 'id';

-- Converted again: the same rows, each already snowflake, and no change.
TRUNCATE before_files;
INSERT INTO before_files SELECT * FROM files_now;
SELECT * FROM snowflake_convert_type('parent', 'id');
SELECT count(*) AS files_changed
  FROM before_files AS b JOIN files_now AS f USING (relname)
 WHERE f.relfilenode <> b.relfilenode;

-- The child's key, with its self-reference and the grandchild's column.
SELECT * FROM snowflake_convert_type('child', 'id');
SELECT * FROM columns_now
 WHERE attname IN ('id', 'parent_id', 'same_id', 'up', 'child_id') ORDER BY 1, 2;
SELECT count(*) AS files_changed
  FROM before_files AS b JOIN files_now AS f USING (relname)
 WHERE f.relfilenode <> b.relfilenode AND b.relname <> 'child_up';

-- Every foreign key is still there, validated.
SELECT * FROM foreign_keys_now ORDER BY 1, 2;

-- Existing rows are unchanged.
SELECT (SELECT count(*) FROM parent) AS parents,
       (SELECT count(*) FROM (SELECT * FROM parent EXCEPT SELECT * FROM before_parent) AS p) AS parents_changed,
       (SELECT count(*) FROM (SELECT * FROM child EXCEPT SELECT * FROM before_child) AS c) AS children_changed,
       (SELECT count(*) FROM (SELECT * FROM grandchild EXCEPT SELECT * FROM before_grandchild) AS g) AS grandchildren_changed;

-- JSON writes the keys as strings, equal to their text.
SELECT to_json(id) #>> '{}' = id::text AS same_text, json_typeof(to_json(id)) AS json_type
  FROM parent WHERE id = 7;
SELECT json_typeof(to_json(g) -> 'child_id') AS child_id, json_typeof(to_json(g) -> 'parent_id') AS parent_id
  FROM grandchild AS g WHERE parent_id = 7;

-- DEFAULT snowflake_nextval() still issues the keys, above every existing
-- one, of the new type; the foreign keys accept them.
SELECT max(id) AS max_parent FROM parent \gset
INSERT INTO parent (name) VALUES ('new')
    RETURNING id > :max_parent AS above_existing, pg_typeof(id) AS type,
              json_typeof(to_json(id)) AS json_type,
              (snowflake_decode(id)).ts BETWEEN now() - interval '1 minute'
                                            AND clock_timestamp() + interval '2 seconds' AS decodes_to_now;
INSERT INTO child (parent_id, region, same_id)
    SELECT id, region, id FROM parent WHERE name = 'new'
    RETURNING pg_typeof(id) AS type, parent_id = same_id AS same;
INSERT INTO grandchild SELECT parent_id, id FROM child WHERE parent_id = (SELECT id FROM parent WHERE name = 'new');
SELECT count(*) AS grandchildren FROM grandchild;
SELECT count(*) AS children FROM parent AS p JOIN child AS c ON c.parent_id = p.id;
-- The constraints still bite.
INSERT INTO child (parent_id, region) VALUES (-1, 1);
\echo :LAST_ERROR_SQLSTATE
INSERT INTO grandchild VALUES (1, 2);
\echo :LAST_ERROR_SQLSTATE
INSERT INTO audit VALUES (123456789);
\echo :LAST_ERROR_SQLSTATE
INSERT INTO parent (id) VALUES (1);
\echo :LAST_ERROR_SQLSTATE
INSERT INTO parent (id) VALUES (-5);
\echo :LAST_ERROR_SQLSTATE
DELETE FROM parent WHERE id = 3;
SELECT (SELECT count(*) FROM child WHERE parent_id = 3) AS children,
       (SELECT count(*) FROM grandchild WHERE parent_id = 3) AS grandchildren;

-- A CHECK constraint on a converted column is checked again: one scan of
-- its table; the foreign key of a referencing table is not (no scan).
CREATE TABLE checked (id bigint PRIMARY KEY, CHECK (id > 0));
CREATE TABLE checked_refs (checked_id bigint REFERENCES checked);
INSERT INTO checked SELECT generate_series(1, 10);
INSERT INTO checked_refs SELECT id FROM checked;
SELECT pg_stat_force_next_flush();
SELECT seq_scan AS checked_before FROM pg_stat_user_tables WHERE relid = 'checked'::regclass \gset
SELECT seq_scan AS refs_before FROM pg_stat_user_tables WHERE relid = 'checked_refs'::regclass \gset
SELECT count(*) AS columns FROM snowflake_convert_type('checked', 'id');
SELECT pg_stat_force_next_flush();
SELECT seq_scan - :checked_before AS checked_scans FROM pg_stat_user_tables WHERE relid = 'checked'::regclass;
SELECT seq_scan - :refs_before AS refs_scans FROM pg_stat_user_tables WHERE relid = 'checked_refs'::regclass;
-- The primary key's index serves = and ranges of the converted key.
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SET enable_indexonlyscan = off;
EXPLAIN (COSTS OFF) SELECT * FROM checked WHERE id = 7;
EXPLAIN (COSTS OFF) SELECT * FROM checked WHERE id BETWEEN 5 AND 9;
RESET enable_seqscan;
RESET enable_bitmapscan;
RESET enable_indexonlyscan;

-- A partitioned table converts as a whole, partitions included, with a
-- partitioned table that references it.  No partition is rewritten, but
-- PostgreSQL builds the partitions' indexes again.
CREATE TABLE events (id bigint DEFAULT snowflake_nextval(), region integer,
                     PRIMARY KEY (id, region)) PARTITION BY LIST (region);
CREATE TABLE events_1 PARTITION OF events FOR VALUES IN (1);
CREATE TABLE events_2 PARTITION OF events FOR VALUES IN (2);
CREATE TABLE event_notes (event_id bigint, region integer, note text,
                          FOREIGN KEY (event_id, region) REFERENCES events) PARTITION BY LIST (region);
CREATE TABLE event_notes_1 PARTITION OF event_notes FOR VALUES IN (1);
CREATE TABLE event_notes_2 PARTITION OF event_notes FOR VALUES IN (2);
CREATE INDEX event_notes_event ON event_notes (event_id);
INSERT INTO events (region) SELECT 1 + g % 2 FROM generate_series(1, 20) AS g;
INSERT INTO event_notes SELECT id, region, 'n' FROM events;
TRUNCATE before_files;
INSERT INTO before_files SELECT * FROM files_now;
SELECT * FROM snowflake_convert_type('events_2', 'id');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM snowflake_convert_type('events', 'id');
SELECT * FROM columns_now WHERE relname LIKE 'event%' AND attname IN ('id', 'event_id') ORDER BY 1, 2;
SELECT b.relname, f.relfilenode = b.relfilenode AS same_file
  FROM before_files AS b JOIN files_now AS f USING (relname)
 WHERE b.relname LIKE 'event%' ORDER BY 1;
INSERT INTO events (region) VALUES (2) RETURNING pg_typeof(id) AS type, json_typeof(to_json(id)) AS json_type;
INSERT INTO event_notes SELECT id, region, 'new' FROM events WHERE id = (SELECT max(id) FROM events);
INSERT INTO event_notes VALUES (1, 2, 'no such event');
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) AS notes FROM event_notes AS n JOIN events AS e ON (e.id, e.region) = (n.event_id, n.region);

--
-- Refusals.  Each leaves everything as it was.
--
CREATE TABLE legacy (
    id     bigint PRIMARY KEY DEFAULT snowflake_nextval(),
    small  integer,
    code   serial,
    label  text,
    ident  bigint GENERATED ALWAYS AS IDENTITY
);
CREATE VIEW legacy_view AS SELECT * FROM legacy;

-- Not a table, no such relation or column, a system column.
SELECT * FROM snowflake_convert_type('legacy_view', 'id');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM snowflake_convert_type('legacy_code_seq', 'id');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM snowflake_convert_type('legacy_pkey', 'id');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM snowflake_convert_type('no_such_table', 'id');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM snowflake_convert_type(0, 'id');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM snowflake_convert_type('legacy', 'no_such_column');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM snowflake_convert_type('legacy', 'ctid');
\echo :LAST_ERROR_SQLSTATE

-- Not bigint: an integer or serial column (make it bigint first), a text
-- column; a bigint identity, which PostgreSQL keeps to integer types.
SELECT * FROM snowflake_convert_type('legacy', 'small');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM snowflake_convert_type('legacy', 'code');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM snowflake_convert_type('legacy', 'label');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM snowflake_convert_type('legacy', 'ident');
\echo :LAST_ERROR_SQLSTATE

-- A serial key takes two steps: snowflake_convert_column() makes it and
-- its references bigint DEFAULT snowflake_nextval(), then the type.
CREATE TABLE tickets (id serial PRIMARY KEY);
CREATE TABLE ticket_notes (ticket_id integer REFERENCES tickets);
INSERT INTO tickets DEFAULT VALUES;
INSERT INTO ticket_notes VALUES (1);
SELECT * FROM snowflake_convert_type('tickets', 'id');
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) AS columns FROM snowflake_convert_column('tickets', 'id');
SELECT * FROM snowflake_convert_type('tickets', 'id');
SELECT * FROM columns_now WHERE relname LIKE 'ticket%' ORDER BY 1, 2;
INSERT INTO tickets DEFAULT VALUES RETURNING id > 1 AS snowflake_id, pg_typeof(id) AS type;
DROP TABLE ticket_notes, tickets;

-- Only at READ COMMITTED.
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT * FROM snowflake_convert_type('legacy', 'id');
ROLLBACK;
\echo :LAST_ERROR_SQLSTATE
BEGIN ISOLATION LEVEL SERIALIZABLE;
SELECT * FROM snowflake_convert_type('legacy', 'id');
ROLLBACK;
\echo :LAST_ERROR_SQLSTATE

-- The key changes type, which PostgreSQL refuses while a view, rule,
-- trigger, policy, generated column, SQL function body or publication
-- uses it.
SELECT * FROM snowflake_convert_type('legacy', 'id');
\echo :LAST_ERROR_SQLSTATE
DROP VIEW legacy_view;
CREATE MATERIALIZED VIEW legacy_ids AS SELECT id FROM legacy;
SELECT * FROM snowflake_convert_type('legacy', 'id');
\echo :LAST_ERROR_SQLSTATE
DROP MATERIALIZED VIEW legacy_ids;
CREATE TABLE legacy_log (id bigint);
CREATE RULE log_insert AS ON INSERT TO legacy DO ALSO INSERT INTO legacy_log VALUES (NEW.id);
SELECT * FROM snowflake_convert_type('legacy', 'id');
\echo :LAST_ERROR_SQLSTATE
DROP RULE log_insert ON legacy;
CREATE FUNCTION keep_row() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN RETURN NEW; END$$;
CREATE TRIGGER no_renumbering BEFORE UPDATE OF id ON legacy
    FOR EACH ROW EXECUTE FUNCTION keep_row();
SELECT * FROM snowflake_convert_type('legacy', 'id');
\echo :LAST_ERROR_SQLSTATE
DROP TRIGGER no_renumbering ON legacy;
CREATE POLICY positive_ids ON legacy USING (id > 0);
SELECT * FROM snowflake_convert_type('legacy', 'id');
\echo :LAST_ERROR_SQLSTATE
DROP POLICY positive_ids ON legacy;
ALTER TABLE legacy ADD COLUMN tag text GENERATED ALWAYS AS ('L-' || id) STORED;
SELECT * FROM snowflake_convert_type('legacy', 'id');
\echo :LAST_ERROR_SQLSTATE
ALTER TABLE legacy DROP COLUMN tag;
CREATE FUNCTION legacy_max() RETURNS bigint LANGUAGE sql
BEGIN ATOMIC SELECT max(id) FROM legacy; END;
SELECT * FROM snowflake_convert_type('legacy', 'id');
\echo :LAST_ERROR_SQLSTATE
DROP FUNCTION legacy_max();
SET client_min_messages = error;
CREATE PUBLICATION legacy_positive FOR TABLE legacy WHERE (id > 0);
RESET client_min_messages;
SELECT * FROM snowflake_convert_type('legacy', 'id');
\echo :LAST_ERROR_SQLSTATE
DROP PUBLICATION legacy_positive;

-- An expression that PostgreSQL parses again for the new type and that
-- names a function, operator or type that is not built in: a CHECK
-- constraint, an index, extended statistics.
ALTER TABLE legacy ADD CONSTRAINT recent CHECK (snowflake_timestamp(id) > '2020-01-01');
SELECT * FROM snowflake_convert_type('legacy', 'id');
\echo :LAST_ERROR_SQLSTATE
ALTER TABLE legacy DROP CONSTRAINT recent;
CREATE FUNCTION bucket(bigint) RETURNS bigint LANGUAGE sql IMMUTABLE RETURN $1 % 10;
CREATE INDEX legacy_bucket ON legacy (bucket(id));
SELECT * FROM snowflake_convert_type('legacy', 'id');
\echo :LAST_ERROR_SQLSTATE
DROP INDEX legacy_bucket;
CREATE STATISTICS legacy_buckets ON (bucket(id)), small FROM legacy;
SELECT * FROM snowflake_convert_type('legacy', 'id');
\echo :LAST_ERROR_SQLSTATE
DROP STATISTICS legacy_buckets;
-- Built-in code only: no refusal (rolled back).
BEGIN;
ALTER TABLE legacy ADD CONSTRAINT positive CHECK (id > 0 AND id <> 42);
CREATE INDEX legacy_even ON legacy (id) WHERE id % 2 = 0;
SELECT affected_column, action FROM snowflake_convert_type('legacy', 'id');
ROLLBACK;

-- The same for a column that references the key: another type, an
-- integer, inherited, an identity, in use.
CREATE TABLE legacy_items (legacy_id bigint REFERENCES legacy);
CREATE VIEW legacy_items_view AS SELECT legacy_id FROM legacy_items;
SELECT * FROM snowflake_convert_type('legacy', 'id');
\echo :LAST_ERROR_SQLSTATE
DROP VIEW legacy_items_view;
CREATE TABLE legacy_small_items (legacy_id integer REFERENCES legacy);
SELECT * FROM snowflake_convert_type('legacy', 'id');
\echo :LAST_ERROR_SQLSTATE
DROP TABLE legacy_small_items;
CREATE TABLE legacy_items_base (legacy_ref bigint);
CREATE TABLE legacy_items_more (FOREIGN KEY (legacy_ref) REFERENCES legacy) INHERITS (legacy_items_base);
SELECT * FROM snowflake_convert_type('legacy', 'id');
\echo :LAST_ERROR_SQLSTATE
DROP TABLE legacy_items_more, legacy_items_base;
CREATE TABLE legacy_clones (legacy_id bigint GENERATED BY DEFAULT AS IDENTITY REFERENCES legacy);
SELECT * FROM snowflake_convert_type('legacy', 'id');
\echo :LAST_ERROR_SQLSTATE
DROP TABLE legacy_clones;

-- A partition key column cannot change its type, the key's or a
-- referencing one's; to_json() of a cast writes the value as a string.
CREATE TABLE by_id (id bigint PRIMARY KEY) PARTITION BY RANGE (id);
SELECT * FROM snowflake_convert_type('by_id', 'id');
\echo :LAST_ERROR_SQLSTATE
SELECT to_json(9007199254740993::bigint::snowflake) AS as_string;
CREATE TABLE legacy_by_ref (legacy_id bigint REFERENCES legacy) PARTITION BY HASH (legacy_id);
SELECT * FROM snowflake_convert_type('legacy', 'id');
\echo :LAST_ERROR_SQLSTATE
DROP TABLE legacy_by_ref;

-- An inheritance child converts only with its parent.
CREATE TABLE legacy_archive () INHERITS (legacy);
SELECT * FROM snowflake_convert_type('legacy_archive', 'id');
\echo :LAST_ERROR_SQLSTATE
DROP TABLE legacy_archive;

-- Only the owner of every table it changes may convert, partitions
-- included; the owner may, with its own rights.
CREATE ROLE regress_convert_type_owner;
CREATE ROLE regress_convert_type_other;
GRANT USAGE ON SCHEMA convert_type_test TO regress_convert_type_owner, regress_convert_type_other;
GRANT SELECT, UPDATE ON legacy TO regress_convert_type_other;
ALTER TABLE legacy OWNER TO regress_convert_type_owner;
SET ROLE regress_convert_type_other;
SELECT * FROM snowflake_convert_type('legacy', 'id');
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
ALTER TABLE legacy OWNER TO CURRENT_USER;
CREATE TABLE owned (id bigint PRIMARY KEY);
CREATE TABLE owned_refs (owned_id bigint REFERENCES owned);
CREATE TABLE owned_parts (owned_id bigint REFERENCES owned, n integer) PARTITION BY LIST (n);
CREATE TABLE owned_parts_1 PARTITION OF owned_parts FOR VALUES IN (1);
ALTER TABLE owned_refs OWNER TO regress_convert_type_other;
ALTER TABLE owned OWNER TO regress_convert_type_owner;
ALTER TABLE owned_parts OWNER TO regress_convert_type_owner;
ALTER TABLE owned_parts_1 OWNER TO regress_convert_type_owner;
SET ROLE regress_convert_type_owner;
SELECT * FROM snowflake_convert_type('owned', 'id');
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
ALTER TABLE owned_refs OWNER TO regress_convert_type_owner;
ALTER TABLE owned_parts_1 OWNER TO regress_convert_type_other;
SET ROLE regress_convert_type_owner;
SELECT * FROM snowflake_convert_type('owned', 'id');
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
ALTER TABLE owned_parts_1 OWNER TO regress_convert_type_owner;
SET ROLE regress_convert_type_owner;
SELECT * FROM snowflake_convert_type('owned', 'id');
RESET ROLE;

-- Nothing changed by the refusals.
SELECT * FROM columns_now WHERE relname IN ('legacy', 'legacy_items', 'by_id') ORDER BY 1, 2;

-- A superuser converting a table in a schema where another role can
-- create functions: that role's look-alike of a function the table's
-- CHECK constraint calls, taking a snowflake, would win the new parse.
-- The conversion refuses, and the look-alike never runs.
CREATE ROLE regress_convert_type_planter;
GRANT CREATE, USAGE ON SCHEMA convert_type_test TO regress_convert_type_planter;
CREATE FUNCTION older_than(id bigint, ts timestamptz) RETURNS boolean
    LANGUAGE sql IMMUTABLE RETURN snowflake_timestamp(id) < ts;
CREATE TABLE planted (id bigint PRIMARY KEY CHECK (older_than(id, '2100-01-01')));
INSERT INTO planted VALUES (snowflake_nextval());
SET ROLE regress_convert_type_planter;
CREATE FUNCTION convert_type_test.older_than(id public.snowflake, ts timestamptz) RETURNS boolean
    LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the planted function ran, as a superuser: %',
        (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user);
END$$;
RESET ROLE;
SELECT * FROM snowflake_convert_type('planted', 'id');
\echo :LAST_ERROR_SQLSTATE
-- What a plain ALTER TABLE under the same search_path would have run.
BEGIN;
SET LOCAL search_path = pg_catalog, pg_temp;
ALTER TABLE convert_type_test.planted ALTER COLUMN id TYPE public.snowflake;
ROLLBACK;
SELECT * FROM columns_now WHERE relname = 'planted';

-- CHECK constraints that call only built-in functions, but run SQL
-- (ts_rewrite() runs a query; query_to_xml() would too, where the server
-- has libxml) or change the caller's session (set_config()), on another
-- role's tables.  A superuser owns every table in the privilege
-- sense, but the conversion changes only tables that the calling role owns
-- itself: refused before any lock, naming the table and its owner, whether
-- the superuser converts the other role's key or its own key that the
-- other role's table references.  None of the other role's code runs.
CREATE SCHEMA convert_type_planter AUTHORIZATION regress_convert_type_planter;
CREATE TABLE users (id bigint PRIMARY KEY);
INSERT INTO users VALUES (1);
GRANT REFERENCES ON users TO regress_convert_type_planter;
SET ROLE regress_convert_type_planter;
CREATE TABLE convert_type_planter.ran (what text, as_superuser boolean);
CREATE FUNCTION convert_type_planter.spy(what text) RETURNS boolean
    LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO convert_type_planter.ran
        SELECT what, r.rolsuper FROM pg_catalog.pg_roles AS r WHERE r.rolname = current_user;
    RETURN true;
END$$;
CREATE TABLE convert_type_planter.user_notes (
    user_id bigint REFERENCES convert_type_test.users
            CONSTRAINT via_query CHECK (user_id > 0 AND ts_rewrite('a'::tsquery, 'SELECT ''a''::tsquery, ''b''::tsquery WHERE convert_type_planter.spy(''ts_rewrite'')') IS NOT NULL)
            CONSTRAINT via_config CHECK (user_id > 0 AND set_config('search_path', 'convert_type_planter, pg_catalog', false) IS NOT NULL)
);
CREATE TABLE convert_type_planter.orders (
    id bigint PRIMARY KEY
       CONSTRAINT via_query CHECK (id > 0 AND ts_rewrite('a'::tsquery, 'SELECT ''a''::tsquery, ''b''::tsquery WHERE convert_type_planter.spy(''ts_rewrite'')') IS NOT NULL)
       CONSTRAINT via_config CHECK (id > 0 AND set_config('search_path', 'convert_type_planter, pg_catalog', false) IS NOT NULL)
);
INSERT INTO convert_type_planter.user_notes VALUES (1);
INSERT INTO convert_type_planter.orders VALUES (1);
DELETE FROM convert_type_planter.ran;
RESET ROLE;
SET search_path = convert_type_test, public;
SELECT * FROM snowflake_convert_type('users', 'id');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM snowflake_convert_type('convert_type_planter.orders', 'id');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM convert_type_planter.ran;
SHOW search_path;
SELECT r.rolsuper FROM pg_roles AS r WHERE r.rolname = 'regress_convert_type_planter';
SELECT c.relname, format_type(a.atttypid, a.atttypmod) AS type
  FROM pg_attribute AS a JOIN pg_class AS c ON c.oid = a.attrelid
 WHERE a.attrelid IN ('users'::regclass, 'convert_type_planter.user_notes'::regclass,
                      'convert_type_planter.orders'::regclass)
   AND a.attname IN ('id', 'user_id')
 ORDER BY 1;
-- A member of the owning role is refused too; the owner converts its own
-- key (its code, its rights).
GRANT regress_convert_type_planter TO regress_convert_type_other;
SET ROLE regress_convert_type_other;
SELECT * FROM snowflake_convert_type('convert_type_planter.orders', 'id');
\echo :LAST_ERROR_SQLSTATE
SET ROLE regress_convert_type_planter;
SELECT * FROM snowflake_convert_type('convert_type_planter.orders', 'id');
RESET ROLE;
SET search_path = convert_type_test, public;
SELECT * FROM convert_type_planter.ran;

-- A NULL argument: no conversion, no rows (STRICT).
SELECT * FROM snowflake_convert_type('legacy', NULL);
SELECT * FROM snowflake_convert_type(NULL, 'id');

-- The function's labels: VOLATILE, STRICT, PARALLEL UNSAFE, not SECURITY
-- DEFINER, search_path pinned.
SELECT p.provolatile, p.proisstrict, p.proparallel, p.prosecdef, p.proconfig,
       pg_get_function_result(p.oid) AS result
  FROM pg_proc AS p
 WHERE p.oid = 'snowflake_convert_type(regclass, name)'::regprocedure;

RESET search_path;
SET client_min_messages = warning;
DROP SCHEMA convert_type_test CASCADE;
DROP SCHEMA convert_type_planter CASCADE;
DROP OWNED BY regress_convert_type_owner, regress_convert_type_other, regress_convert_type_planter;
DROP ROLE regress_convert_type_owner, regress_convert_type_other, regress_convert_type_planter;
RESET client_min_messages;
