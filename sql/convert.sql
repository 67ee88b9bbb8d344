-- snowflake_convert_column(): serial and identity keys, and their foreign keys, become bigint.
\set SHOW_CONTEXT never
SET TimeZone = 'UTC';
CREATE SCHEMA convert_test;
SET search_path = convert_test, public;

-- What a column looks like: type, default, identity.
CREATE VIEW columns_now AS
SELECT c.relname, a.attname, format_type(a.atttypid, a.atttypmod) AS type,
       pg_get_expr(d.adbin, d.adrelid) AS default_expr, a.attidentity
  FROM pg_attribute AS a
       JOIN pg_class AS c ON c.oid = a.attrelid
       LEFT JOIN pg_attrdef AS d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
 WHERE c.relnamespace = 'convert_test'::regnamespace AND c.relkind IN ('r', 'p')
   AND a.attnum > 0 AND NOT a.attisdropped AND c.relname NOT LIKE 'before%';
CREATE VIEW sequences_now AS
SELECT c.relname FROM pg_class AS c
 WHERE c.relnamespace = 'convert_test'::regnamespace AND c.relkind = 'S';
CREATE VIEW foreign_keys_now AS
SELECT conrelid::regclass AS table_name, conname, convalidated,
       pg_get_constraintdef(oid) AS definition
  FROM pg_constraint
 WHERE contype = 'f' AND connamespace = 'convert_test'::regnamespace AND conparentid = 0;

-- serial and identity keys, self-, two-column and second-hand references, a bigint one.
CREATE TABLE parent (
    id     serial PRIMARY KEY,
    region integer NOT NULL DEFAULT 1,
    name   text,
    UNIQUE (region, id)
);
CREATE TABLE child (
    id        integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    parent_id integer NOT NULL REFERENCES parent ON DELETE CASCADE,
    region    integer NOT NULL,
    same_id   integer,
    up        integer REFERENCES child,
    UNIQUE (parent_id, id),
    FOREIGN KEY (region, same_id) REFERENCES parent (region, id)
);
CREATE TABLE grandchild (
    parent_id integer,
    child_id  smallint,
    FOREIGN KEY (parent_id, child_id) REFERENCES child (parent_id, id)
);
CREATE TABLE audit (parent_id bigint REFERENCES parent);
INSERT INTO parent (name) SELECT 'p' || g FROM generate_series(1, 100) AS g;
INSERT INTO child (parent_id, region, same_id) SELECT g % 10 + 1, 1, g FROM generate_series(1, 50) AS g;
UPDATE child SET up = id - 1 WHERE id > 1;
INSERT INTO grandchild SELECT parent_id, id FROM child;
INSERT INTO audit SELECT id FROM parent WHERE id % 7 = 0;
CREATE TABLE before_parent AS SELECT * FROM parent;
CREATE TABLE before_child AS SELECT * FROM child;
CREATE TABLE before_grandchild AS SELECT * FROM grandchild;
SELECT * FROM columns_now WHERE attname IN ('id', 'parent_id', 'same_id', 'up', 'child_id') ORDER BY 1, 2;

-- A conversion that rolls back leaves everything as it was.
BEGIN;
SELECT count(*) AS columns FROM snowflake_convert_column('parent', 'id');
ROLLBACK;
SELECT * FROM columns_now WHERE relname = 'parent' AND attname = 'id';
SELECT * FROM sequences_now ORDER BY 1;

-- The serial key, with the columns that reference it directly or through child.
SELECT * FROM snowflake_convert_column('parent', 'id');
SELECT * FROM columns_now WHERE attname IN ('id', 'parent_id', 'same_id', 'up', 'child_id') ORDER BY 1, 2;
SELECT * FROM sequences_now ORDER BY 1;

-- The identity key, with its self-reference and the grandchild's column.
SELECT * FROM snowflake_convert_column('child', 'id');
SELECT * FROM columns_now WHERE attname IN ('id', 'parent_id', 'same_id', 'up', 'child_id') ORDER BY 1, 2;
SELECT * FROM sequences_now ORDER BY 1;

-- Every foreign key is still there, validated.
SELECT * FROM foreign_keys_now ORDER BY 1, 2;

-- Existing rows are unchanged.
SELECT (SELECT count(*) FROM parent) AS parents,
       (SELECT count(*) FROM (SELECT * FROM parent EXCEPT SELECT * FROM before_parent) AS p) AS parents_changed,
       (SELECT count(*) FROM (SELECT * FROM child EXCEPT SELECT * FROM before_child) AS c) AS children_changed,
       (SELECT count(*) FROM (SELECT * FROM grandchild EXCEPT SELECT * FROM before_grandchild) AS g) AS grandchildren_changed;

-- New rows get snowflake IDs, above every existing one, and the foreign keys hold them.
SELECT max(id) AS max_parent FROM parent \gset
INSERT INTO parent (name) VALUES ('new') RETURNING id > :max_parent AS above_existing,
    (snowflake_decode(id)).ts BETWEEN now() - interval '1 minute'
                                  AND clock_timestamp() + interval '2 seconds' AS decodes_to_now;
INSERT INTO child (parent_id, region, same_id)
    SELECT id, region, id FROM parent WHERE name = 'new'
    RETURNING id > 50 AS above_existing;
INSERT INTO grandchild SELECT parent_id, id FROM child WHERE id > 50;
INSERT INTO audit SELECT id FROM parent WHERE name = 'new';
UPDATE child SET up = (SELECT max(id) FROM child) WHERE id = 1;
SELECT count(*) AS grandchildren, count(*) FILTER (WHERE child_id > 50) AS new_ones FROM grandchild;
-- The constraints still bite.
INSERT INTO child (parent_id, region) VALUES (-1, 1);
\echo :LAST_ERROR_SQLSTATE
INSERT INTO parent (id) VALUES (1);
\echo :LAST_ERROR_SQLSTATE

-- smallserial widens too; a view on a bigint key is no obstacle.
CREATE TABLE tiny (id smallserial PRIMARY KEY);
INSERT INTO tiny DEFAULT VALUES;
SELECT * FROM snowflake_convert_column('tiny', 'id');
CREATE TABLE wide (id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY);
CREATE VIEW wide_view AS SELECT id FROM wide;
SELECT * FROM snowflake_convert_column('wide', 'id');
INSERT INTO wide DEFAULT VALUES;
SELECT count(*) AS snowflake_ids FROM wide_view WHERE id > 1000000000;

-- A sequence the column does not own stays; so does an owned one another default uses.
CREATE SEQUENCE shared_seq;
CREATE TABLE shares1 (id integer DEFAULT nextval('shared_seq'));
CREATE TABLE shares2 (id integer DEFAULT nextval('shared_seq'));
SELECT * FROM snowflake_convert_column('shares1', 'id');
CREATE TABLE lends (id serial);
CREATE TABLE borrows (id integer DEFAULT nextval('lends_id_seq'));
SELECT * FROM snowflake_convert_column('lends', 'id');
SELECT * FROM sequences_now ORDER BY 1;

-- A partitioned table converts whole, with tables that reference it; a partition alone is refused.
CREATE TABLE events (id serial, region integer, PRIMARY KEY (id, region)) PARTITION BY LIST (region);
CREATE TABLE events_1 PARTITION OF events FOR VALUES IN (1);
CREATE TABLE events_2 PARTITION OF events FOR VALUES IN (2);
CREATE TABLE event_notes (event_id integer, region integer,
                          FOREIGN KEY (event_id, region) REFERENCES events) PARTITION BY LIST (region);
CREATE TABLE event_notes_1 PARTITION OF event_notes FOR VALUES IN (1);
INSERT INTO events (region) VALUES (1), (2), (1);
INSERT INTO event_notes VALUES (1, 1), (3, 1);
SELECT * FROM snowflake_convert_column('events_2', 'id');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM snowflake_convert_column('events', 'id');
SELECT * FROM columns_now WHERE relname LIKE 'event%' AND attname IN ('id', 'event_id') ORDER BY 1, 2;
INSERT INTO events (region) VALUES (2) RETURNING id > 3 AS snowflake_id;
INSERT INTO event_notes SELECT id, region FROM events WHERE region = 1 AND id > 3;

-- Refusals, one row each: SQLSTATE|message|detail|hint.  Each leaves everything as it was.
\i test/fixtures/refusal.sql
CREATE FUNCTION pg_temp.convert_refusal(tab text, col text, OUT state text, OUT message text,
                                        OUT detail text, OUT hint text) LANGUAGE sql AS $f$
    SELECT * FROM pg_temp.refusal(format('SELECT * FROM snowflake_convert_column(%L, %L)', tab, col))
$f$;
\pset format unaligned
\pset tuples_only on
CREATE TABLE legacy (
    id        serial PRIMARY KEY,
    plain     integer,
    answer    integer DEFAULT 42,
    offset_id integer DEFAULT nextval('shared_seq') + 1000,
    label     text,
    amount    numeric DEFAULT 0,
    twice     integer GENERATED ALWAYS AS (plain * 2) STORED,
    taken     bigint DEFAULT snowflake_nextval()
);
CREATE VIEW legacy_view AS SELECT * FROM legacy;

-- Not a table, no such relation or column, a system column.
SELECT * FROM pg_temp.convert_refusal('legacy_view', 'id');
SELECT * FROM pg_temp.convert_refusal('legacy_id_seq', 'id');
SELECT * FROM pg_temp.convert_refusal('legacy_pkey', 'id');
SELECT * FROM pg_temp.convert_refusal('no_such_table', 'id');
SELECT * FROM pg_temp.convert_refusal('0', 'id');
SELECT * FROM pg_temp.convert_refusal('legacy', 'no_such_column');
SELECT * FROM pg_temp.convert_refusal('legacy', 'ctid');

-- Not an integer, generated, no serial default or identity, already snowflake.
SELECT * FROM pg_temp.convert_refusal('legacy', 'label');
SELECT * FROM pg_temp.convert_refusal('legacy', 'amount');
SELECT * FROM pg_temp.convert_refusal('legacy', 'twice');
SELECT * FROM pg_temp.convert_refusal('legacy', 'plain');
SELECT * FROM pg_temp.convert_refusal('legacy', 'answer');
SELECT * FROM pg_temp.convert_refusal('legacy', 'offset_id');
SELECT * FROM pg_temp.convert_refusal('legacy', 'taken');
SELECT * FROM pg_temp.convert_refusal('parent', 'id');

-- The key cannot become bigint while a view, rule, trigger, policy or generated column uses it.
SELECT * FROM pg_temp.convert_refusal('legacy', 'id');
DROP VIEW legacy_view;
CREATE MATERIALIZED VIEW legacy_ids AS SELECT id FROM legacy;
SELECT * FROM pg_temp.convert_refusal('legacy', 'id');
DROP MATERIALIZED VIEW legacy_ids;
CREATE TABLE legacy_log (id integer);
CREATE RULE log_insert AS ON INSERT TO legacy DO ALSO INSERT INTO legacy_log VALUES (NEW.id);
SELECT * FROM pg_temp.convert_refusal('legacy', 'id');
DROP RULE log_insert ON legacy;
CREATE FUNCTION keep_row() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN RETURN NEW; END$$;
CREATE TRIGGER no_renumbering BEFORE UPDATE OF id ON legacy
    FOR EACH ROW EXECUTE FUNCTION keep_row();
SELECT * FROM pg_temp.convert_refusal('legacy', 'id');
DROP TRIGGER no_renumbering ON legacy;
CREATE POLICY positive_ids ON legacy USING (id > 0);
SELECT * FROM pg_temp.convert_refusal('legacy', 'id');
DROP POLICY positive_ids ON legacy;
ALTER TABLE legacy ADD COLUMN code text GENERATED ALWAYS AS ('L-' || id) STORED;
SELECT * FROM pg_temp.convert_refusal('legacy', 'id');
ALTER TABLE legacy DROP COLUMN code;

-- The same for a column that references the key, and for one that is inherited.
CREATE TABLE legacy_items (legacy_id integer REFERENCES legacy);
CREATE VIEW legacy_items_view AS SELECT legacy_id FROM legacy_items;
SELECT * FROM pg_temp.convert_refusal('legacy', 'id');
DROP VIEW legacy_items_view;
CREATE TABLE legacy_items_base (legacy_ref integer);
CREATE TABLE legacy_items_more (FOREIGN KEY (legacy_ref) REFERENCES legacy) INHERITS (legacy_items_base);
SELECT * FROM pg_temp.convert_refusal('legacy', 'id');
DROP TABLE legacy_items_more, legacy_items_base;

-- A partition key column cannot change its type; a bigint one needs no change.
CREATE TABLE by_id (id serial) PARTITION BY RANGE (id);
SELECT * FROM pg_temp.convert_refusal('by_id', 'id');
CREATE TABLE by_big_id (id bigserial) PARTITION BY RANGE (id);
SELECT * FROM snowflake_convert_column('by_big_id', 'id');

-- An inherited column converts only with its parent.
CREATE TABLE legacy_archive () INHERITS (legacy);
SELECT * FROM pg_temp.convert_refusal('legacy_archive', 'id');
DROP TABLE legacy_archive;

-- Existing values at or above the IDs issued now.
CREATE TABLE imported (id bigserial PRIMARY KEY);
INSERT INTO imported VALUES (1), (9223372036854775807);
SELECT * FROM pg_temp.convert_refusal('imported', 'id');
-- Values just below the current millisecond's IDs are fine.
UPDATE imported SET id = snowflake_nextval() - (2000::bigint << 22) WHERE id > 1;
SELECT * FROM snowflake_convert_column('imported', 'id');

-- A foreign child table's values cannot be read to lie below the IDs issued now.
CREATE FOREIGN DATA WRAPPER convert_wrapper;
CREATE SERVER convert_server FOREIGN DATA WRAPPER convert_wrapper;
CREATE TABLE with_foreign (id bigint GENERATED BY DEFAULT AS IDENTITY);
CREATE FOREIGN TABLE with_foreign_remote () INHERITS (with_foreign) SERVER convert_server;
SELECT * FROM pg_temp.convert_refusal('with_foreign', 'id');
SELECT * FROM columns_now WHERE relname = 'with_foreign';
ALTER TABLE with_foreign_remote NO INHERIT with_foreign;
SELECT * FROM snowflake_convert_column('with_foreign', 'id');
DROP TABLE with_foreign;
DROP SERVER convert_server CASCADE;
DROP FOREIGN DATA WRAPPER convert_wrapper;

-- Nothing changed by the refusals.
SELECT * FROM columns_now WHERE relname IN ('legacy', 'legacy_items') ORDER BY 1, 2;
SELECT * FROM sequences_now ORDER BY 1;

-- Another role's CHECK constraint on a widened column would run its function with our rights.
CREATE ROLE regress_convert_planter;
CREATE SCHEMA convert_planter AUTHORIZATION regress_convert_planter;
CREATE TABLE accounts (id serial PRIMARY KEY);
INSERT INTO accounts DEFAULT VALUES;
CREATE TABLE members (id serial PRIMARY KEY);
INSERT INTO members DEFAULT VALUES;
GRANT USAGE ON SCHEMA convert_test TO regress_convert_planter;
GRANT REFERENCES ON accounts, members TO regress_convert_planter;
SET ROLE regress_convert_planter;
CREATE TABLE convert_planter.ran (what text, as_superuser boolean);
CREATE FUNCTION convert_planter.spy(what text, id bigint) RETURNS boolean
    LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO convert_planter.ran
        SELECT what, r.rolsuper FROM pg_catalog.pg_roles AS r WHERE r.rolname = current_user;
    RETURN true;
END$$;
CREATE FUNCTION convert_planter.spy_trigger() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    PERFORM convert_planter.spy('trigger', 0);
    RETURN NEW;
END$$;
CREATE TABLE convert_planter.orders (
    account_id integer REFERENCES convert_test.accounts
               CONSTRAINT spied CHECK (convert_planter.spy('check on the key', account_id)),
    note       integer CHECK (convert_planter.spy('check on another column', note)),
    made       boolean DEFAULT convert_planter.spy('default', 0)
);
CREATE TRIGGER spy BEFORE INSERT OR UPDATE OR DELETE ON convert_planter.orders
    FOR EACH ROW EXECUTE FUNCTION convert_planter.spy_trigger();
INSERT INTO convert_planter.orders (account_id, note) VALUES (1, 1);
DELETE FROM convert_planter.ran;
-- Built-in functions that run SQL (ts_rewrite()) or change the session (set_config()).
CREATE TABLE convert_planter.notes (
    member_id integer REFERENCES convert_test.members
               CONSTRAINT via_query CHECK (member_id > 0 AND ts_rewrite('a'::tsquery, 'SELECT ''a''::tsquery, ''b''::tsquery WHERE convert_planter.spy(''ts_rewrite'', 0)') IS NOT NULL)
               CONSTRAINT via_config CHECK (member_id > 0 AND set_config('search_path', 'convert_planter, pg_catalog', false) IS NOT NULL)
);
CREATE TABLE convert_planter.direct (
    id serial PRIMARY KEY
       CONSTRAINT via_query CHECK (id > 0 AND ts_rewrite('a'::tsquery, 'SELECT ''a''::tsquery, ''b''::tsquery WHERE convert_planter.spy(''ts_rewrite'', 0)') IS NOT NULL)
       CONSTRAINT via_config CHECK (id > 0 AND set_config('search_path', 'convert_planter, pg_catalog', false) IS NOT NULL)
);
INSERT INTO convert_planter.notes VALUES (1);
INSERT INTO convert_planter.direct DEFAULT VALUES;
DELETE FROM convert_planter.ran;
RESET ROLE;
SET search_path = convert_test, public;
-- Only tables the calling role owns itself (not as superuser) change; none of that code runs.
SELECT * FROM pg_temp.convert_refusal('accounts', 'id');
SELECT * FROM pg_temp.convert_refusal('members', 'id');
SELECT * FROM pg_temp.convert_refusal('convert_planter.direct', 'id');
SELECT * FROM convert_planter.ran;
SHOW search_path;
SELECT r.rolsuper FROM pg_roles AS r WHERE r.rolname = 'regress_convert_planter';
SELECT * FROM columns_now WHERE relname IN ('accounts', 'members') ORDER BY 1;
SELECT format_type(atttypid, atttypmod) AS direct_id_type FROM pg_attribute
 WHERE attrelid = 'convert_planter.direct'::regclass AND attname = 'id';
-- Even the owner of every table is refused a CHECK that calls a function not built in.
DROP TABLE convert_planter.notes, convert_planter.direct;
ALTER TABLE accounts OWNER TO regress_convert_planter;
SET ROLE regress_convert_planter;
SELECT * FROM pg_temp.convert_refusal('accounts', 'id');
SELECT * FROM convert_planter.ran;
-- Without it the table is rewritten, and no other CHECK constraint, trigger or default runs.
ALTER TABLE convert_planter.orders DROP CONSTRAINT spied;
SELECT * FROM snowflake_convert_column('accounts', 'id');
RESET ROLE;
SELECT * FROM convert_planter.ran;
SELECT format_type(atttypid, atttypmod) AS account_id_type FROM pg_attribute
 WHERE attrelid = 'convert_planter.orders'::regclass AND attname = 'account_id';

-- An index on a widened column is parsed again: refused when it calls a non-built-in function.
CREATE FUNCTION own_bucket(id bigint) RETURNS bigint
    LANGUAGE sql IMMUTABLE RETURN id / 1000;
CREATE TABLE bucketed (id serial PRIMARY KEY);
CREATE INDEX bucketed_bucket ON bucketed (own_bucket(id));
SELECT * FROM pg_temp.convert_refusal('bucketed', 'id');
DROP TABLE bucketed;
-- The extension's own functions are not built in either.
CREATE TABLE stamped (id serial PRIMARY KEY CONSTRAINT recent CHECK (snowflake_timestamp(id) > '2000-01-01'));
SELECT * FROM pg_temp.convert_refusal('stamped', 'id');
DROP TABLE stamped;

-- A role that owns the key but not a table that references it is told which.
CREATE ROLE regress_convert_owner;
GRANT USAGE ON SCHEMA convert_test TO regress_convert_owner;
CREATE TABLE owned (id serial PRIMARY KEY);
CREATE TABLE owned_refs (owned_id integer REFERENCES owned);
ALTER TABLE owned OWNER TO regress_convert_owner;
ALTER TABLE owned_refs OWNER TO regress_convert_planter;
SET ROLE regress_convert_owner;
SELECT * FROM pg_temp.convert_refusal('owned', 'id');
RESET ROLE;
ALTER TABLE owned_refs OWNER TO regress_convert_owner;
CREATE TABLE owned_parts (owned_id integer REFERENCES owned, n integer) PARTITION BY LIST (n);
CREATE TABLE owned_parts_1 PARTITION OF owned_parts FOR VALUES IN (1);
ALTER TABLE owned_parts OWNER TO regress_convert_owner;
ALTER TABLE owned_parts_1 OWNER TO regress_convert_planter;
SET ROLE regress_convert_owner;
SELECT * FROM pg_temp.convert_refusal('owned', 'id');
RESET ROLE;
ALTER TABLE owned_parts_1 OWNER TO regress_convert_owner;
-- A member of the owning role is refused: the owner's CHECKs would run with its rights.
CREATE ROLE regress_convert_member IN ROLE regress_convert_owner;
SET ROLE regress_convert_member;
SELECT * FROM pg_temp.convert_refusal('owned', 'id');
RESET ROLE;
SELECT * FROM pg_temp.convert_refusal('owned', 'id');
SET ROLE regress_convert_owner;
SELECT * FROM snowflake_convert_column('owned', 'id');
RESET ROLE;

-- READ COMMITTED only: a snapshot taken before its locks would read an old catalog.
CREATE TABLE isolated (id serial PRIMARY KEY);
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT * FROM pg_temp.convert_refusal('isolated', 'id');
ROLLBACK;
BEGIN ISOLATION LEVEL SERIALIZABLE;
SELECT * FROM pg_temp.convert_refusal('isolated', 'id');
ROLLBACK;
SELECT * FROM columns_now WHERE relname = 'isolated';

-- Another role's table at either end of a foreign key on the key: re-checking the key would
-- evaluate its index expressions with our rights.
CREATE TABLE fk_in_key (id serial PRIMARY KEY);
INSERT INTO fk_in_key DEFAULT VALUES;
GRANT REFERENCES ON fk_in_key TO regress_convert_planter;
SET ROLE regress_convert_planter;
CREATE FUNCTION convert_planter.spy_now() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO convert_planter.ran
        SELECT 'index expression', r.rolsuper FROM pg_catalog.pg_roles AS r
         WHERE r.rolname = current_user;
END $$;
CREATE FUNCTION convert_planter.spy_index(x integer) RETURNS integer
    LANGUAGE plpgsql IMMUTABLE AS $$ BEGIN PERFORM convert_planter.spy_now(); RETURN x; END $$;
CREATE TABLE convert_planter.fk_in (ref bigint REFERENCES convert_test.fk_in_key (id), x integer);
CREATE INDEX ON convert_planter.fk_in ((x + convert_planter.spy_index(1)));
CREATE TABLE convert_planter.fk_target (id integer PRIMARY KEY, x integer);
CREATE INDEX ON convert_planter.fk_target ((x + convert_planter.spy_index(1)));
INSERT INTO convert_planter.fk_in VALUES (1, 1);
INSERT INTO convert_planter.fk_target VALUES (1, 1);
GRANT REFERENCES ON convert_planter.fk_target TO PUBLIC;
DELETE FROM convert_planter.ran;
RESET ROLE;
SET search_path = convert_test, public;
CREATE TABLE fk_out_key (id serial PRIMARY KEY REFERENCES convert_planter.fk_target (id));
INSERT INTO fk_out_key DEFAULT VALUES;
SELECT * FROM pg_temp.convert_refusal('fk_in_key', 'id');
SELECT * FROM pg_temp.convert_refusal('fk_out_key', 'id');
SELECT * FROM convert_planter.ran;
SELECT r.rolsuper FROM pg_roles AS r WHERE r.rolname = 'regress_convert_planter';
SELECT * FROM columns_now WHERE relname IN ('fk_in_key', 'fk_out_key') ORDER BY 1;
DROP TABLE fk_out_key, convert_planter.fk_in, convert_planter.fk_target, fk_in_key;

-- The same through foreign keys of the key's partitions, at either end.
CREATE TABLE part_key (id serial, k integer, PRIMARY KEY (id, k)) PARTITION BY LIST (k);
CREATE TABLE part_key_1 PARTITION OF part_key FOR VALUES IN (1);
ALTER TABLE part_key_1 ADD UNIQUE (id);
INSERT INTO part_key (k) VALUES (1);
GRANT REFERENCES ON part_key_1 TO regress_convert_planter;
SET ROLE regress_convert_planter;
CREATE TABLE convert_planter.fk_part (ref bigint REFERENCES convert_test.part_key_1 (id), x integer);
CREATE INDEX ON convert_planter.fk_part ((x + convert_planter.spy_index(1)));
INSERT INTO convert_planter.fk_part VALUES (1, 1);
CREATE TABLE convert_planter.fk_part_target (id integer PRIMARY KEY, x integer);
CREATE INDEX ON convert_planter.fk_part_target ((x + convert_planter.spy_index(1)));
INSERT INTO convert_planter.fk_part_target VALUES (1, 1);
GRANT REFERENCES ON convert_planter.fk_part_target TO PUBLIC;
DELETE FROM convert_planter.ran;
RESET ROLE;
SET search_path = convert_test, public;
SELECT * FROM pg_temp.convert_refusal('part_key', 'id');
DROP TABLE convert_planter.fk_part;
CREATE TABLE part_out_key (id serial, k integer, PRIMARY KEY (id, k)) PARTITION BY LIST (k);
CREATE TABLE part_out_key_1 PARTITION OF part_out_key FOR VALUES IN (1);
ALTER TABLE part_out_key_1 ADD FOREIGN KEY (id) REFERENCES convert_planter.fk_part_target (id);
INSERT INTO part_out_key (k) VALUES (1);
DELETE FROM convert_planter.ran;
SELECT * FROM pg_temp.convert_refusal('part_out_key', 'id');
SELECT * FROM convert_planter.ran;
SELECT r.rolsuper FROM pg_roles AS r WHERE r.rolname = 'regress_convert_planter';
SELECT * FROM columns_now WHERE relname IN ('part_key', 'part_out_key') ORDER BY 1;
DROP TABLE part_out_key, part_key, convert_planter.fk_part_target;

-- A NULL argument: no conversion, no rows (STRICT).
SELECT * FROM snowflake_convert_column('legacy', NULL);
SELECT * FROM snowflake_convert_column(NULL, 'id');

-- VOLATILE, STRICT, PARALLEL UNSAFE, not SECURITY DEFINER, search_path pinned.
SELECT p.provolatile, p.proisstrict, p.proparallel, p.prosecdef, p.proconfig,
       pg_get_function_result(p.oid) AS result
  FROM pg_proc AS p
 WHERE p.oid = 'snowflake_convert_column(regclass, name)'::regprocedure;

RESET search_path;
SET client_min_messages = warning;
DROP SCHEMA convert_test CASCADE;
DROP SCHEMA convert_planter CASCADE;
DROP OWNED BY regress_convert_planter, regress_convert_owner, regress_convert_member;
DROP ROLE regress_convert_planter, regress_convert_owner, regress_convert_member;
RESET client_min_messages;
