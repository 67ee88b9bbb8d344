-- snowflake_convert_column() resolves no name through the caller's search_path.
\set SHOW_CONTEXT never
CREATE SCHEMA names_test;
CREATE SCHEMA names_trap;
CREATE TABLE names_test.ran (what text);
CREATE TABLE names_test.orders (id serial PRIMARY KEY);
CREATE TABLE names_test.lines (order_id integer REFERENCES names_test.orders (id));
INSERT INTO names_test.orders DEFAULT VALUES;
INSERT INTO names_test.lines VALUES (1);
-- Look-alikes first on the path: the function, a catalog table and an oid = oid operator.
CREATE FUNCTION names_trap.snowflake_nextval() RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN INSERT INTO names_test.ran VALUES ('snowflake_nextval'); RETURN 1; END$$;
CREATE TABLE names_trap.pg_depend (LIKE pg_catalog.pg_depend);
CREATE FUNCTION names_trap.oid_eq(oid, oid) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN INSERT INTO names_test.ran VALUES ('='); RETURN $1 OPERATOR(pg_catalog.=) $2; END$$;
CREATE OPERATOR names_trap.= (LEFTARG = oid, RIGHTARG = oid, FUNCTION = names_trap.oid_eq);
CREATE TEMP TABLE pg_class (oid oid);
SET search_path = names_trap, pg_temp, names_test, public, pg_catalog;
SELECT affected_table, affected_column, old_type FROM snowflake_convert_column('names_test.orders', 'id');
RESET search_path;
-- The default calls the extension's function, the columns are bigint, no look-alike ran.
SELECT d.refobjid = (SELECT p.oid FROM pg_proc AS p JOIN pg_depend AS e
                       ON e.classid = 'pg_proc'::regclass AND e.objid = p.oid AND e.deptype = 'e'
                    WHERE p.proname = 'snowflake_nextval' AND p.pronargs = 0) AS extension_nextval
  FROM pg_attrdef AS ad
       JOIN pg_depend AS d ON d.classid = 'pg_attrdef'::regclass AND d.objid = ad.oid
        AND d.refclassid = 'pg_proc'::regclass
 WHERE ad.adrelid = 'names_test.orders'::regclass;
SELECT a.attrelid::regclass, a.attname, format_type(a.atttypid, a.atttypmod)
  FROM pg_attribute AS a
 WHERE a.attrelid IN ('names_test.orders'::regclass, 'names_test.lines'::regclass) AND a.attnum > 0
 ORDER BY 1, 2;
SELECT count(*) AS look_alike_runs FROM names_test.ran;
-- The caller's search_path is its own again, after a success and after a refusal.
SET search_path = names_trap, public;
CREATE TABLE names_test.more (id serial PRIMARY KEY);
SELECT affected_table FROM snowflake_convert_column('names_test.more', 'id');
SHOW search_path;
SELECT affected_table FROM snowflake_convert_column('names_test.more', 'id');
SHOW search_path;
RESET search_path;

-- Event triggers (and Citus's utility hook: 049) see the conversion's statements.
CREATE TABLE names_test.seen (tag text, object text);
CREATE FUNCTION names_test.log_ddl() RETURNS event_trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO names_test.seen
    SELECT c.command_tag, c.object_identity FROM pg_event_trigger_ddl_commands() AS c;
END$$;
CREATE EVENT TRIGGER names_log_ddl ON ddl_command_end EXECUTE FUNCTION names_test.log_ddl();
CREATE TABLE names_test.watched (id serial PRIMARY KEY);
CREATE TABLE names_test.watched_ref (watched_id integer REFERENCES names_test.watched (id));
TRUNCATE names_test.seen;
SELECT affected_table, affected_column FROM snowflake_convert_column('names_test.watched', 'id');
SELECT DISTINCT tag, object FROM names_test.seen ORDER BY 1, 2;
DROP EVENT TRIGGER names_log_ddl;

-- A schema swapped for a look-alike before ALTER TABLE resolves its names (by an event
-- trigger at ddl_command_start) is refused by OID; everything rolls back.
CREATE SCHEMA names_swap;
CREATE TABLE names_swap.victim (id serial PRIMARY KEY);
CREATE FUNCTION names_test.swap_schema() RETURNS event_trigger LANGUAGE plpgsql AS $$
BEGIN
    IF to_regclass('names_swap.victim') IS NOT NULL
       AND to_regnamespace('names_swap_old') IS NULL THEN
        ALTER SCHEMA names_swap RENAME TO names_swap_old;
        CREATE SCHEMA names_swap;
        CREATE TABLE names_swap.victim (id bigint, note text);
    END IF;
END$$;
CREATE EVENT TRIGGER names_swap_schema ON ddl_command_start WHEN TAG IN ('ALTER TABLE')
    EXECUTE FUNCTION names_test.swap_schema();
SELECT * FROM snowflake_convert_column('names_swap.victim', 'id');
\echo :LAST_ERROR_SQLSTATE
DROP EVENT TRIGGER names_swap_schema;
SELECT n.nspname, c.relname, format_type(a.atttypid, a.atttypmod), pg_get_expr(d.adbin, d.adrelid)
  FROM pg_catalog.pg_class AS c
       JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
       JOIN pg_catalog.pg_attribute AS a ON a.attrelid = c.oid AND a.attname = 'id'
       LEFT JOIN pg_catalog.pg_attrdef AS d ON d.adrelid = c.oid AND d.adnum = a.attnum
 WHERE n.nspname LIKE 'names_swap%' AND c.relkind = 'r' ORDER BY 1;
DROP SCHEMA names_swap CASCADE;
DROP SCHEMA names_trap CASCADE;
DROP SCHEMA names_test CASCADE;
DROP TABLE pg_temp.pg_class;
