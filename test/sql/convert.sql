--
-- snowflake_convert_column(): serial and identity keys become
-- bigint DEFAULT snowflake_nextval(), with the foreign keys that reference
-- them; existing values stay; every refusal has its message and SQLSTATE.
--
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS snowflake;
RESET client_min_messages;
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

-- A serial parent; an identity child that references it and itself; a
-- two-column foreign key; a grandchild that references the child's
-- reference (so it must widen too); and a column that is bigint already.
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

-- The serial key: its default, its sequence, and the columns that
-- reference it directly (child.parent_id, child.same_id, audit.parent_id)
-- or through child (grandchild.parent_id).
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

-- New rows get snowflake IDs, above every existing one, and the foreign
-- keys hold them.
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

-- smallserial widens too.  A bigint key needs no new type, so a view on it
-- is no obstacle.
CREATE TABLE tiny (id smallserial PRIMARY KEY);
INSERT INTO tiny DEFAULT VALUES;
SELECT * FROM snowflake_convert_column('tiny', 'id');
CREATE TABLE wide (id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY);
CREATE VIEW wide_view AS SELECT id FROM wide;
SELECT * FROM snowflake_convert_column('wide', 'id');
INSERT INTO wide DEFAULT VALUES;
SELECT count(*) AS snowflake_ids FROM wide_view WHERE id > 1000000000;

-- A sequence the column does not own stays; so does an owned one that
-- another default still uses.
CREATE SEQUENCE shared_seq;
CREATE TABLE shares1 (id integer DEFAULT nextval('shared_seq'));
CREATE TABLE shares2 (id integer DEFAULT nextval('shared_seq'));
SELECT * FROM snowflake_convert_column('shares1', 'id');
CREATE TABLE lends (id serial);
CREATE TABLE borrows (id integer DEFAULT nextval('lends_id_seq'));
SELECT * FROM snowflake_convert_column('lends', 'id');
SELECT * FROM sequences_now ORDER BY 1;

-- A partitioned table converts as a whole, partitions included, with a
-- partitioned table that references it; a partition alone is refused.
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

--
-- Refusals.  Each leaves everything as it was.
--
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
SELECT * FROM snowflake_convert_column('legacy_view', 'id');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM snowflake_convert_column('legacy_id_seq', 'id');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM snowflake_convert_column('legacy_pkey', 'id');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM snowflake_convert_column('no_such_table', 'id');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM snowflake_convert_column(0, 'id');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM snowflake_convert_column('legacy', 'no_such_column');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM snowflake_convert_column('legacy', 'ctid');
\echo :LAST_ERROR_SQLSTATE

-- Not an integer, generated, no serial default or identity, already
-- snowflake.
SELECT * FROM snowflake_convert_column('legacy', 'label');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM snowflake_convert_column('legacy', 'amount');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM snowflake_convert_column('legacy', 'twice');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM snowflake_convert_column('legacy', 'plain');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM snowflake_convert_column('legacy', 'answer');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM snowflake_convert_column('legacy', 'offset_id');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM snowflake_convert_column('legacy', 'taken');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM snowflake_convert_column('parent', 'id');
\echo :LAST_ERROR_SQLSTATE

-- The key becomes bigint, which PostgreSQL refuses while a view, rule,
-- trigger, policy or generated column uses it.
SELECT * FROM snowflake_convert_column('legacy', 'id');
\echo :LAST_ERROR_SQLSTATE
DROP VIEW legacy_view;
CREATE MATERIALIZED VIEW legacy_ids AS SELECT id FROM legacy;
SELECT * FROM snowflake_convert_column('legacy', 'id');
\echo :LAST_ERROR_SQLSTATE
DROP MATERIALIZED VIEW legacy_ids;
CREATE TABLE legacy_log (id integer);
CREATE RULE log_insert AS ON INSERT TO legacy DO ALSO INSERT INTO legacy_log VALUES (NEW.id);
SELECT * FROM snowflake_convert_column('legacy', 'id');
\echo :LAST_ERROR_SQLSTATE
DROP RULE log_insert ON legacy;
CREATE FUNCTION keep_row() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN RETURN NEW; END$$;
CREATE TRIGGER no_renumbering BEFORE UPDATE OF id ON legacy
    FOR EACH ROW EXECUTE FUNCTION keep_row();
SELECT * FROM snowflake_convert_column('legacy', 'id');
\echo :LAST_ERROR_SQLSTATE
DROP TRIGGER no_renumbering ON legacy;
CREATE POLICY positive_ids ON legacy USING (id > 0);
SELECT * FROM snowflake_convert_column('legacy', 'id');
\echo :LAST_ERROR_SQLSTATE
DROP POLICY positive_ids ON legacy;
ALTER TABLE legacy ADD COLUMN code text GENERATED ALWAYS AS ('L-' || id) STORED;
SELECT * FROM snowflake_convert_column('legacy', 'id');
\echo :LAST_ERROR_SQLSTATE
ALTER TABLE legacy DROP COLUMN code;

-- The same for a column that references the key, and for one that is not
-- an integer or is inherited.
CREATE TABLE legacy_items (legacy_id integer REFERENCES legacy);
CREATE VIEW legacy_items_view AS SELECT legacy_id FROM legacy_items;
SELECT * FROM snowflake_convert_column('legacy', 'id');
\echo :LAST_ERROR_SQLSTATE
DROP VIEW legacy_items_view;
CREATE TABLE legacy_items_base (legacy_ref integer);
CREATE TABLE legacy_items_more (FOREIGN KEY (legacy_ref) REFERENCES legacy) INHERITS (legacy_items_base);
SELECT * FROM snowflake_convert_column('legacy', 'id');
\echo :LAST_ERROR_SQLSTATE
DROP TABLE legacy_items_more, legacy_items_base;

-- A partition key column cannot change its type; a bigint one needs no
-- change.
CREATE TABLE by_id (id serial) PARTITION BY RANGE (id);
SELECT * FROM snowflake_convert_column('by_id', 'id');
\echo :LAST_ERROR_SQLSTATE
CREATE TABLE by_big_id (id bigserial) PARTITION BY RANGE (id);
SELECT * FROM snowflake_convert_column('by_big_id', 'id');

-- An inherited column converts only with its parent.
CREATE TABLE legacy_archive () INHERITS (legacy);
SELECT * FROM snowflake_convert_column('legacy_archive', 'id');
\echo :LAST_ERROR_SQLSTATE
DROP TABLE legacy_archive;

-- Existing values at or above the IDs issued now.
CREATE TABLE imported (id bigserial PRIMARY KEY);
INSERT INTO imported VALUES (1), (9223372036854775807);
SELECT * FROM snowflake_convert_column('imported', 'id');
\echo :LAST_ERROR_SQLSTATE
-- Values just below the current millisecond's IDs are fine.
UPDATE imported SET id = snowflake_nextval() - (2000::bigint << 22) WHERE id > 1;
SELECT * FROM snowflake_convert_column('imported', 'id');

-- Nothing changed by the refusals.
SELECT * FROM columns_now WHERE relname IN ('legacy', 'legacy_items') ORDER BY 1, 2;
SELECT * FROM sequences_now ORDER BY 1;

-- A superuser converting a key that another role's table references: the
-- rewrite of that table would check its CHECK constraint on the widened
-- column, calling that role's function with the superuser's rights.  The
-- conversion refuses such a definition, before any change; the function
-- never runs.
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
-- CHECK constraints that call only built-in functions, but run SQL
-- (ts_rewrite() runs a query; query_to_xml() would too, where the server
-- has libxml) or change the caller's session (set_config()): on a table of
-- the planter's that references a key, and on a key of its own.
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
-- A superuser owns every table in the privilege sense, but the conversion
-- changes only tables that the calling role owns itself: refused before
-- any lock, naming the table and its owner; none of the planter's code runs.
SELECT * FROM snowflake_convert_column('accounts', 'id');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM snowflake_convert_column('members', 'id');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM snowflake_convert_column('convert_planter.direct', 'id');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM convert_planter.ran;
SHOW search_path;
SELECT r.rolsuper FROM pg_roles AS r WHERE r.rolname = 'regress_convert_planter';
SELECT * FROM columns_now WHERE relname IN ('accounts', 'members') ORDER BY 1;
SELECT format_type(atttypid, atttypmod) AS direct_id_type FROM pg_attribute
 WHERE attrelid = 'convert_planter.direct'::regclass AND attname = 'id';
-- Run as the owner of every table, the conversion still refuses a CHECK
-- constraint that names a function that is not built in.
DROP TABLE convert_planter.notes, convert_planter.direct;
ALTER TABLE accounts OWNER TO regress_convert_planter;
SET ROLE regress_convert_planter;
SELECT * FROM snowflake_convert_column('accounts', 'id');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM convert_planter.ran;
-- Without that constraint the conversion rewrites the table, and none of
-- its code runs: no other CHECK constraint, no trigger, no default.
ALTER TABLE convert_planter.orders DROP CONSTRAINT spied;
SELECT * FROM snowflake_convert_column('accounts', 'id');
RESET ROLE;
SELECT * FROM convert_planter.ran;
SELECT format_type(atttypid, atttypmod) AS account_id_type FROM pg_attribute
 WHERE attrelid = 'convert_planter.orders'::regclass AND attname = 'account_id';

-- An index, exclusion constraint or statistics object on a column that
-- changes type is parsed again: refused too when it names a function that
-- is not built in, even the caller's own.
CREATE FUNCTION own_bucket(id bigint) RETURNS bigint
    LANGUAGE sql IMMUTABLE RETURN id / 1000;
CREATE TABLE bucketed (id serial PRIMARY KEY);
CREATE INDEX bucketed_bucket ON bucketed (own_bucket(id));
SELECT * FROM snowflake_convert_column('bucketed', 'id');
\echo :LAST_ERROR_SQLSTATE
DROP TABLE bucketed;
-- The extension's own functions are not built in either.
CREATE TABLE stamped (id serial PRIMARY KEY CONSTRAINT recent CHECK (snowflake_timestamp(id) > '2000-01-01'));
SELECT * FROM snowflake_convert_column('stamped', 'id');
\echo :LAST_ERROR_SQLSTATE
DROP TABLE stamped;

-- Only the owner of every table it changes may convert: a role that owns
-- the key, but not a table that references it, is told which and why.
CREATE ROLE regress_convert_owner;
GRANT USAGE ON SCHEMA convert_test TO regress_convert_owner;
CREATE TABLE owned (id serial PRIMARY KEY);
CREATE TABLE owned_refs (owned_id integer REFERENCES owned);
ALTER TABLE owned OWNER TO regress_convert_owner;
ALTER TABLE owned_refs OWNER TO regress_convert_planter;
SET ROLE regress_convert_owner;
SELECT * FROM snowflake_convert_column('owned', 'id');
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
ALTER TABLE owned_refs OWNER TO regress_convert_owner;
CREATE TABLE owned_parts (owned_id integer REFERENCES owned, n integer) PARTITION BY LIST (n);
CREATE TABLE owned_parts_1 PARTITION OF owned_parts FOR VALUES IN (1);
ALTER TABLE owned_parts OWNER TO regress_convert_owner;
ALTER TABLE owned_parts_1 OWNER TO regress_convert_planter;
SET ROLE regress_convert_owner;
SELECT * FROM snowflake_convert_column('owned', 'id');
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
ALTER TABLE owned_parts_1 OWNER TO regress_convert_owner;
-- A member of the owning role, superuser or not, is refused too: the
-- owner's CHECK constraints would run with the member's rights.
CREATE ROLE regress_convert_member IN ROLE regress_convert_owner;
SET ROLE regress_convert_member;
SELECT * FROM snowflake_convert_column('owned', 'id');
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
SELECT * FROM snowflake_convert_column('owned', 'id');
\echo :LAST_ERROR_SQLSTATE
SET ROLE regress_convert_owner;
SELECT * FROM snowflake_convert_column('owned', 'id');
RESET ROLE;

-- READ COMMITTED only: at REPEATABLE READ or SERIALIZABLE its checks would
-- read the catalog as it was before its locks.
CREATE TABLE isolated (id serial PRIMARY KEY);
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT * FROM snowflake_convert_column('isolated', 'id');
\echo :LAST_ERROR_SQLSTATE
ROLLBACK;
BEGIN ISOLATION LEVEL SERIALIZABLE;
SELECT * FROM snowflake_convert_column('isolated', 'id');
\echo :LAST_ERROR_SQLSTATE
ROLLBACK;
SELECT * FROM columns_now WHERE relname = 'isolated';

-- Another role's table at the other end of a foreign key on the key: one
-- whose own column does not change (already bigint) and references the key,
-- and one that the key references.  ALTER TABLE would create those foreign
-- keys again and check them, planning a query over that table, which
-- evaluates its index expressions with the caller's rights.  Refused
-- (42501), naming the table; the other role's function never runs.
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
SELECT * FROM snowflake_convert_column('fk_in_key', 'id');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM snowflake_convert_column('fk_out_key', 'id');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM convert_planter.ran;
SELECT r.rolsuper FROM pg_roles AS r WHERE r.rolname = 'regress_convert_planter';
SELECT * FROM columns_now WHERE relname IN ('fk_in_key', 'fk_out_key') ORDER BY 1;
DROP TABLE fk_out_key, convert_planter.fk_in, convert_planter.fk_target, fk_in_key;

-- The same through the key's partitions: ALTER TABLE goes down into them
-- and creates their own foreign keys again too.  Another role's table that
-- references a partition of the key's table (through the partition's own
-- unique key), and one that a partition's own foreign key references:
-- refused (42501); the other role's function never runs.
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
SELECT * FROM snowflake_convert_column('part_key', 'id');
\echo :LAST_ERROR_SQLSTATE
DROP TABLE convert_planter.fk_part;
CREATE TABLE part_out_key (id serial, k integer, PRIMARY KEY (id, k)) PARTITION BY LIST (k);
CREATE TABLE part_out_key_1 PARTITION OF part_out_key FOR VALUES IN (1);
ALTER TABLE part_out_key_1 ADD FOREIGN KEY (id) REFERENCES convert_planter.fk_part_target (id);
INSERT INTO part_out_key (k) VALUES (1);
DELETE FROM convert_planter.ran;
SELECT * FROM snowflake_convert_column('part_out_key', 'id');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM convert_planter.ran;
SELECT r.rolsuper FROM pg_roles AS r WHERE r.rolname = 'regress_convert_planter';
SELECT * FROM columns_now WHERE relname IN ('part_key', 'part_out_key') ORDER BY 1;
DROP TABLE part_out_key, part_key, convert_planter.fk_part_target;

-- A NULL argument: no conversion, no rows (STRICT).
SELECT * FROM snowflake_convert_column('legacy', NULL);
SELECT * FROM snowflake_convert_column(NULL, 'id');

-- The function's labels: VOLATILE, STRICT, PARALLEL UNSAFE, not SECURITY
-- DEFINER, search_path pinned.
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
