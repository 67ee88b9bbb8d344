-- The snowflake type: a bigint that JSON writes as a string, with bigint's casts and operator
-- classes.  The SQL/JSON constructors (PostgreSQL 16 and later): snowflake_type_sqljson.sql.
SET TimeZone = 'UTC';
\set SHOW_CONTEXT never
-- One schema, dropped at the end: replication.sql lists the tables earlier files left.
CREATE SCHEMA type_test;
SET search_path = type_test, public;

-- bigint's storage and I/O functions under names of its own; numeric category, to mix with integers.
SELECT t.typname, t.typlen, t.typbyval, t.typalign, t.typstorage, t.typcategory,
       t.typispreferred, i.prosrc AS input, o.prosrc AS output,
       r.prosrc AS receive, s.prosrc AS send, t.typarray::regtype AS array_type
  FROM pg_type AS t
  JOIN pg_proc AS i ON i.oid = t.typinput
  JOIN pg_proc AS o ON o.oid = t.typoutput
  JOIN pg_proc AS r ON r.oid = t.typreceive
  JOIN pg_proc AS s ON s.oid = t.typsend
 WHERE t.oid IN ('snowflake'::regtype, 'bigint'::regtype)
 ORDER BY t.typname;
SELECT castsource::regtype AS source, casttarget::regtype AS target,
       castfunc::regprocedure AS function, castcontext AS context, castmethod AS method
  FROM pg_cast
 WHERE 'snowflake'::regtype IN (castsource, casttarget)
 ORDER BY castsource::regtype::text, casttarget::regtype::text;

-- JSON: 2^53 + 1 (the first integer a double rounds) and 2^63 - 1, as each type.
CREATE DOMAIN big_id AS bigint;
CREATE TABLE accounts (
    id   snowflake PRIMARY KEY,
    name text NOT NULL,
    refs snowflake[] NOT NULL,
    big  bigint NOT NULL,
    dom  big_id NOT NULL
);
INSERT INTO accounts VALUES
    (9007199254740993, 'first', ARRAY[9007199254740993, 9223372036854775807],
     9007199254740993, 9007199254740993),
    (9223372036854775807, 'last', ARRAY[9223372036854775807],
     9223372036854775807, 9223372036854775807);

-- A snowflake is a JSON string; a bigint, and a domain over bigint, are numbers.
SELECT to_json(id) AS snowflake, to_json(big) AS bigint, to_json(dom) AS domain
  FROM accounts ORDER BY id;
-- A client that reads the number as a double gets another ID; under the default layout every
-- ID issued since 2025-01-25 is above 2^53.
SELECT (to_json(big)::text)::float8::bigint AS read_as_a_double,
       snowflake_timestamp(9007199254740992) AS two_to_the_53
  FROM accounts WHERE name = 'first';
SELECT to_jsonb(id) AS snowflake, to_jsonb(big) AS bigint, to_jsonb(dom) AS domain,
       jsonb_typeof(to_jsonb(id)) AS snowflake_type, jsonb_typeof(to_jsonb(big)) AS bigint_type,
       jsonb_typeof(to_jsonb(dom)) AS domain_type
  FROM accounts ORDER BY id;
-- Each string is id::text, exactly.
SELECT id,
       to_json(id) #>> '{}' = id::text AS json,
       to_jsonb(id) #>> '{}' = id::text AS jsonb,
       to_json(id)::text = '"' || id::text || '"' AS quoted
  FROM accounts ORDER BY id;

-- Every JSON function: a value, a row and an array of snowflakes.
SELECT json_agg(id ORDER BY id) AS json_agg, jsonb_agg(id ORDER BY id) AS jsonb_agg,
       array_to_json(array_agg(id ORDER BY id)) AS array_to_json_agg,
       json_agg(a ORDER BY id) AS json_agg_rows, jsonb_agg(a ORDER BY id) AS jsonb_agg_rows
  FROM accounts AS a;
SELECT json_build_object('id', id, 'big', big) AS json_build_object,
       jsonb_build_object('id', id, 'big', big) AS jsonb_build_object,
       json_build_array(id, big, refs) AS json_build_array,
       jsonb_build_array(id, big, refs) AS jsonb_build_array
  FROM accounts ORDER BY id;
SELECT row_to_json(a) AS row_to_json, to_json(a) AS to_json_row, to_jsonb(a) AS to_jsonb_row,
       array_to_json(refs) AS array_to_json, to_json(refs) AS to_json_array,
       to_jsonb(refs) AS to_jsonb_array
  FROM accounts AS a ORDER BY id;
-- As a key, any value is a string; as a value, the snowflake is one too.
SELECT json_object_agg(name, id ORDER BY id) AS json_object_agg,
       jsonb_object_agg(name, id ORDER BY id) AS jsonb_object_agg,
       json_object_agg(id, big ORDER BY id) AS keyed_by_id
  FROM accounts;
SELECT jsonb_set('{"id": 0, "name": "x"}', '{id}', to_jsonb(id)) AS jsonb_set,
       jsonb_insert('{"ids": []}', '{ids, 0}', to_jsonb(id)) AS jsonb_insert,
       json_strip_nulls(json_build_object('id', id, 'none', NULL)) AS json_strip_nulls,
       jsonb_strip_nulls(jsonb_build_object('id', id, 'none', NULL)) AS jsonb_strip_nulls
  FROM accounts ORDER BY id;
SELECT jsonb_pretty(jsonb_build_object('id', id, 'refs', refs, 'big', big)) AS jsonb_pretty
  FROM accounts WHERE name = 'first';
-- A domain over snowflake is a string too: its base type is snowflake.
CREATE DOMAIN account_id AS snowflake;
SELECT to_json(id::account_id) AS domain_over_snowflake FROM accounts ORDER BY id;

-- The way back: a JSON string or number fills a snowflake exactly.
SELECT id, (to_jsonb(id) #>> '{}')::snowflake = id AS jsonb_back,
       (to_json(id) #>> '{}')::snowflake = id AS json_back,
       (to_json(id)::jsonb #>> '{}')::snowflake = id AS json_to_jsonb_back
  FROM accounts ORDER BY id;
SELECT r.id, pg_typeof(r.id), r.id = a.id AS same, b.id AS jsonb_id, b.id = a.id AS jsonb_same
  FROM accounts AS a,
       json_populate_record(NULL::accounts, json_build_object('id', a.id)) AS r,
       jsonb_populate_record(NULL::accounts, jsonb_build_object('id', a.id)) AS b
 ORDER BY a.id;
-- From JSON numbers, as an API client that sends numbers would, and from strings.
SELECT (json_populate_record(NULL::accounts, '{"id": 9223372036854775807}')).id AS json_number,
       (jsonb_populate_record(NULL::accounts, '{"id": 9007199254740993}')).id AS jsonb_number;
SELECT a.id AS json_string, pg_typeof(a.id), b.id AS json_number, pg_typeof(b.id),
       c.id AS jsonb_string, d.id AS jsonb_number
  FROM json_to_record('{"id": "9007199254740993"}') AS a(id snowflake),
       json_to_record('{"id": 9007199254740993}') AS b(id snowflake),
       jsonb_to_record('{"id": "9223372036854775807"}') AS c(id snowflake),
       jsonb_to_record('{"id": 9223372036854775807}') AS d(id snowflake);
SELECT id FROM jsonb_to_recordset('[{"id": 9007199254740993}, {"id": "9223372036854775807"}]')
    AS r(id snowflake) ORDER BY id;
SELECT r.refs FROM jsonb_populate_record(NULL::accounts,
                                         '{"refs": [9007199254740993, "9223372036854775807"]}') AS r;

-- Casts: a snowflake column takes snowflake_nextval(), bigint and integer values.
CREATE TABLE orders (
    id   snowflake PRIMARY KEY DEFAULT snowflake_nextval(),
    note text
);
SELECT pg_get_expr(d.adbin, d.adrelid) AS column_default
  FROM pg_attrdef AS d
 WHERE d.adrelid = 'orders'::regclass;
INSERT INTO orders (note) VALUES ('from the default');
SELECT pg_typeof(id), id > 0 AS positive,
       snowflake_timestamp(id) BETWEEN now() - interval '1 hour' AND now() + interval '1 hour' AS now_ish
  FROM orders WHERE note = 'from the default';
INSERT INTO orders VALUES (9007199254740993::bigint, 'a bigint');
INSERT INTO orders VALUES (42, 'an integer');
INSERT INTO orders VALUES ('9223372036854775807', 'a literal');
INSERT INTO orders SELECT big + 1, 'from a bigint column' FROM accounts WHERE name = 'first';
UPDATE orders SET id = id + 1 WHERE note = 'an integer';
SELECT id, note FROM orders WHERE note <> 'from the default' ORDER BY id;
-- In WHERE: an integer, a quoted literal and a bigint compare with no cast written.
SELECT (SELECT note FROM orders WHERE id = 43) AS integer,
       (SELECT note FROM orders WHERE id = '43') AS literal,
       (SELECT note FROM orders WHERE id = 9007199254740993) AS bigint,
       (SELECT string_agg(note, ', ' ORDER BY id) FROM orders
         WHERE id IN (43, 9007199254740994)) AS in_list;
-- With an integer a snowflake stays one; with a bigint, and through arithmetic and aggregates,
-- it is bigint (so JSON writes a number unless cast back).
SELECT pg_typeof(COALESCE(id, 0)) AS coalesce_0,
       pg_typeof(CASE WHEN id > 0 THEN id ELSE 0 END) AS case_0,
       pg_typeof(COALESCE(id, 0::bigint)) AS coalesce_bigint,
       pg_typeof(COALESCE(0::bigint, id)) AS bigint_coalesce,
       pg_typeof(id + 1) AS plus,
       pg_typeof(id - id) AS minus,
       pg_typeof(id >> 22) AS shift,
       pg_typeof(-id) AS negate,
       pg_typeof(abs(id)) AS abs,
       pg_typeof(greatest(id, 1)) AS greatest_1
  FROM orders WHERE note = 'an integer';
SELECT pg_typeof(max(id)) AS max, pg_typeof(min(id)) AS min, pg_typeof(sum(id)) AS sum,
       pg_typeof(count(id)) AS count, pg_typeof(array_agg(id)) AS array_agg,
       (SELECT DISTINCT pg_typeof(v) FROM (SELECT id FROM orders UNION ALL SELECT 1) AS u(v))
           AS union_with_integer,
       (SELECT DISTINCT pg_typeof(v) FROM (SELECT id FROM orders UNION ALL SELECT 1::bigint) AS u(v))
           AS union_with_bigint,
       (SELECT DISTINCT pg_typeof(v) FROM (SELECT 1::bigint UNION ALL SELECT id FROM orders) AS u(v))
           AS bigint_union
  FROM orders;
SELECT max(id) AS max_id, to_json(max(id)) AS max_as_json, to_json(max(id)::snowflake) AS cast_back,
       to_json(9007199254740993::snowflake + 0) AS arithmetic,
       to_json((9007199254740993::snowflake + 0)::snowflake) AS arithmetic_cast_back
  FROM orders;
-- Explicit: to bigint, text and back, timestamptz; to other numeric types through bigint.
SELECT id::bigint AS big, id::text AS text, id::text::snowflake = id AS text_back,
       id::timestamptz = snowflake_timestamp(id) AS timestamptz
  FROM orders WHERE note <> 'from the default' ORDER BY id;
-- bigint to snowflake is an assignment cast, not an implicit one.
CREATE FUNCTION takes_snowflake(id snowflake) RETURNS text
LANGUAGE sql IMMUTABLE AS $$ SELECT id::text $$;
SELECT ARRAY[1, 9007199254740993]::snowflake[]::bigint[] AS to_bigint_array,
       ARRAY[1, 9007199254740993]::bigint[]::snowflake[] AS to_snowflake_array,
       9007199254740993::snowflake::bigint::numeric AS via_bigint, takes_snowflake(42),
       takes_snowflake(9007199254740993::snowflake) AS takes_snowflake_cast,
       '-9223372036854775808'::snowflake AS smallest, '  +17 '::snowflake AS spaces_and_sign;
-- Refusals, one row each: bigint's input function and its messages; a negative ID is refused by
-- the functions, as the bigint is.
\i test/fixtures/refusal.sql
\pset format unaligned
SELECT * FROM pg_temp.refusals(ARRAY[
    $$SELECT 9007199254740993::snowflake::numeric$$,
    $$SELECT 5::snowflake::integer$$,
    $$SELECT takes_snowflake(9007199254740993::bigint)$$,
    $$SELECT 'abc'::snowflake$$,
    $$SELECT '9223372036854775808'::snowflake$$,
    $$SELECT ''::snowflake$$,
    $$SELECT snowflake_timestamp('-1'::snowflake)$$,
    $$SELECT snowflake_timestamp('-1'::bigint)$$,
    $$SELECT * FROM snowflake_decode('-1'::snowflake)$$,
    $$SELECT id FROM jsonb_to_record('{"id": 9223372036854775808}') AS r(id snowflake)$$]);
\pset format aligned
DROP FUNCTION takes_snowflake(snowflake);

-- Binary: int8send()'s bytes; a binary COPY of either type reads back into the other.
SELECT id, snowflake_send(id), snowflake_send(id) = int8send(id::bigint) AS same
  FROM accounts ORDER BY id;
\getenv abs_builddir PG_ABS_BUILDDIR
\set snowflake_file :abs_builddir '/results/snowflake_type_snowflake.copy'
\set bigint_file :abs_builddir '/results/snowflake_type_bigint.copy'
COPY (SELECT id FROM accounts ORDER BY id) TO :'snowflake_file' WITH (FORMAT binary);
COPY (SELECT big FROM accounts ORDER BY id) TO :'bigint_file' WITH (FORMAT binary);
SELECT pg_read_binary_file(:'snowflake_file') = pg_read_binary_file(:'bigint_file') AS same_bytes;
CREATE TABLE copied (big bigint, flake snowflake);
COPY copied (big) FROM :'snowflake_file' WITH (FORMAT binary);
COPY copied (flake) FROM :'bigint_file' WITH (FORMAT binary);
SELECT big, flake FROM copied ORDER BY big NULLS LAST, flake;

-- Plans: 100 days of IDs, one a minute, and a line for every seventh; no autovacuum.
CREATE TABLE events (
    id      snowflake PRIMARY KEY,
    payload integer NOT NULL
) WITH (autovacuum_enabled = off);
INSERT INTO events
SELECT snowflake_min_id('2026-01-01 00:00:00+00'::timestamptz + g * interval '1 minute') + g % 4096, g
  FROM generate_series(0, 144000 - 1) AS g;
CREATE TABLE lines (
    line_id   integer PRIMARY KEY,
    event_id  snowflake NOT NULL REFERENCES events,
    event_big bigint REFERENCES events
) WITH (autovacuum_enabled = off);
INSERT INTO lines
SELECT g, e.id, e.id FROM events AS e, LATERAL (VALUES (e.payload / 7)) AS v(g)
 WHERE e.payload % 7 = 0;
CREATE INDEX lines_event_id ON lines (event_id);
ANALYZE events, lines;
SET max_parallel_workers_per_gather = 0;

-- B-tree, hash and BRIN indexes take bigint's operator classes.
CREATE TABLE more_ids (id snowflake);
CREATE INDEX more_ids_brin ON more_ids USING brin (id);
CREATE INDEX more_ids_hash ON more_ids USING hash (id);
SELECT c.relname AS index, am.amname AS method, opc.opcname AS operator_class,
       opf.opfname AS family, opc.opcintype::regtype AS class_type,
       format_type(a.atttypid, NULL) AS column_type
  FROM pg_index AS i
  JOIN pg_class AS c ON c.oid = i.indexrelid
  JOIN pg_opclass AS opc ON opc.oid = i.indclass[0]
  JOIN pg_opfamily AS opf ON opf.oid = opc.opcfamily
  JOIN pg_am AS am ON am.oid = opc.opcmethod
  JOIN pg_attribute AS a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
 WHERE i.indrelid IN ('events'::regclass, 'lines'::regclass, 'more_ids'::regclass)
 ORDER BY 1;

-- =, a range, an IN list, with an integer, a literal or a bigint: an index scan.
EXPLAIN (COSTS OFF) SELECT * FROM events WHERE id = 123;
EXPLAIN (COSTS OFF) SELECT * FROM events WHERE id = '9007199254740993';
EXPLAIN (COSTS OFF) SELECT * FROM events WHERE id = 9007199254740993::snowflake;
EXPLAIN (COSTS OFF)
SELECT * FROM events
 WHERE id BETWEEN snowflake_min_id('2026-02-01') AND snowflake_max_id('2026-02-01 00:10');
EXPLAIN (COSTS OFF) SELECT * FROM events WHERE id >= 168495258009600000;
EXPLAIN (COSTS OFF) SELECT * FROM events WHERE id IN (1, 2, 9007199254740993);
SELECT (SELECT count(*) FROM events WHERE id >= 168495258009600000) AS above,
       (SELECT count(*) FROM events
         WHERE id BETWEEN snowflake_min_id('2026-02-01') AND snowflake_max_id('2026-02-01 00:10'))
           AS between;

-- The timestamp rewrite makes a range of the key, with the same rows as without it.
EXPLAIN (COSTS OFF)
SELECT * FROM events WHERE snowflake_timestamp(id) >= '2026-04-10 12:00:00+00';
EXPLAIN (COSTS OFF)
SELECT * FROM events WHERE id::timestamptz >= '2026-04-10 12:00:00+00';
EXPLAIN (COSTS OFF)
SELECT * FROM events
 WHERE (snowflake_decode(id)).ts BETWEEN '2026-02-01 00:00:00+00' AND '2026-02-01 01:00:00+00';
EXPLAIN (COSTS OFF)
SELECT * FROM events WHERE snowflake_timestamp(id) = '2026-02-01 00:00:00+00';
SELECT (SELECT count(*) FROM events WHERE snowflake_timestamp(id) >= '2026-04-10 12:00:00+00')
           AS by_function,
       (SELECT count(*) FROM events WHERE id::timestamptz >= '2026-04-10 12:00:00+00') AS by_cast;
SET snowflake.rewrite_timestamp_comparisons = off;
SELECT count(*) FROM events WHERE snowflake_timestamp(id) >= '2026-04-10 12:00:00+00';
RESET snowflake.rewrite_timestamp_comparisons;

-- Joins of the foreign key with the primary key: hash, and merge over both indexes.
SET enable_nestloop = off;
SET enable_mergejoin = off;
EXPLAIN (COSTS OFF)
SELECT count(*) FROM lines AS l JOIN events AS e ON e.id = l.event_id;
SELECT count(*) FROM lines AS l JOIN events AS e ON e.id = l.event_id;
-- A bigint column joins the snowflake key the same way.
EXPLAIN (COSTS OFF)
SELECT count(*) FROM lines AS l JOIN events AS e ON e.id = l.event_big;
RESET enable_mergejoin;
SET enable_hashjoin = off;
EXPLAIN (COSTS OFF)
SELECT count(*) FROM lines AS l JOIN events AS e ON e.id = l.event_id;
SELECT count(*) FROM lines AS l JOIN events AS e ON e.id = l.event_id;
RESET enable_hashjoin;
RESET enable_nestloop;

-- DISTINCT and GROUP BY: hashed, and sorted (here from the index).
EXPLAIN (COSTS OFF) SELECT DISTINCT event_id FROM lines;
EXPLAIN (COSTS OFF) SELECT event_id, count(*) FROM lines GROUP BY event_id;
SET enable_hashagg = off;
EXPLAIN (COSTS OFF) SELECT DISTINCT event_id FROM lines;
RESET enable_hashagg;
SELECT count(DISTINCT event_id) AS distinct_ids, count(*) AS lines FROM lines;

-- The foreign keys are enforced, of type snowflake and of type bigint.
SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint
 WHERE conrelid = 'lines'::regclass AND contype = 'f' ORDER BY conname;
\pset format unaligned
SELECT * FROM pg_temp.refusals(ARRAY[
    $$INSERT INTO lines VALUES (-1, 9007199254740993, NULL)$$,
    $$INSERT INTO lines VALUES (-1, (SELECT min(id) FROM events), 9007199254740993)$$,
    $$DELETE FROM events WHERE payload = 7$$]);
\pset format aligned
INSERT INTO lines VALUES (-1, (SELECT min(id) FROM events), (SELECT min(id) FROM events));
SELECT line_id, event_id = event_big AS same_event FROM lines WHERE line_id = -1;

-- Range partitions, a day each: rows routed by bigint bounds; pruning, also by the rewrite.
CREATE TABLE days (id snowflake PRIMARY KEY, payload integer NOT NULL)
    PARTITION BY RANGE (id);
DO $$
BEGIN
    FOR d IN 1..3 LOOP
        EXECUTE format('CREATE TABLE days_04%s PARTITION OF days FOR VALUES FROM (%s) TO (%s)',
                       to_char(d, 'FM00'),
                       snowflake_min_id(make_timestamptz(2026, 4, d, 0, 0, 0, 'UTC')),
                       snowflake_min_id(make_timestamptz(2026, 4, d + 1, 0, 0, 0, 'UTC')));
    END LOOP;
END
$$;
SELECT c.relname, pg_get_expr(c.relpartbound, c.oid) = format('FOR VALUES FROM (''%s'') TO (''%s'')',
           snowflake_min_id(b), snowflake_min_id(b + interval '1 day')) AS one_day
  FROM pg_class AS c,
       LATERAL (VALUES (make_timestamptz(2026, 4, right(c.relname, 2)::integer, 0, 0, 0, 'UTC'))) AS v(b)
 WHERE c.relname LIKE 'days\_04%' AND c.relkind = 'r'
 ORDER BY c.relname;
INSERT INTO days
SELECT id, payload FROM events
 WHERE id >= snowflake_min_id('2026-04-01') AND id < snowflake_min_id('2026-04-04');
SELECT pg_get_partkeydef('days'::regclass) AS partition_key;
SELECT tableoid::regclass AS partition, count(*) FROM days GROUP BY 1 ORDER BY 1;
EXPLAIN (COSTS OFF)
SELECT count(*) FROM days WHERE id >= snowflake_min_id('2026-04-03 12:00');
EXPLAIN (COSTS OFF)
SELECT * FROM days WHERE id = 165399861657600568;
SELECT tableoid::regclass AS partition, payload FROM days WHERE id = 165399861657600568;
EXPLAIN (COSTS OFF)
SELECT count(*) FROM days
 WHERE snowflake_timestamp(id) >= '2026-04-02 10:00:00+00'
   AND snowflake_timestamp(id) < '2026-04-02 11:00:00+00';
SELECT tableoid::regclass AS partition, count(*) FROM days
 WHERE snowflake_timestamp(id) >= '2026-04-02 10:00:00+00'
   AND snowflake_timestamp(id) < '2026-04-02 11:00:00+00'
 GROUP BY 1;

-- By hash: bigint's operator class, so each ID lands where the bigint does; = prunes.
CREATE TABLE buckets (id snowflake PRIMARY KEY) PARTITION BY HASH (id);
CREATE TABLE buckets_0 PARTITION OF buckets FOR VALUES WITH (MODULUS 3, REMAINDER 0);
CREATE TABLE buckets_1 PARTITION OF buckets FOR VALUES WITH (MODULUS 3, REMAINDER 1);
CREATE TABLE buckets_2 PARTITION OF buckets FOR VALUES WITH (MODULUS 3, REMAINDER 2);
CREATE TABLE big_buckets (id bigint PRIMARY KEY) PARTITION BY HASH (id);
CREATE TABLE big_buckets_0 PARTITION OF big_buckets FOR VALUES WITH (MODULUS 3, REMAINDER 0);
CREATE TABLE big_buckets_1 PARTITION OF big_buckets FOR VALUES WITH (MODULUS 3, REMAINDER 1);
CREATE TABLE big_buckets_2 PARTITION OF big_buckets FOR VALUES WITH (MODULUS 3, REMAINDER 2);
INSERT INTO buckets SELECT id FROM events;
INSERT INTO big_buckets SELECT id FROM events;
SELECT opc.opcname AS operator_class, am.amname AS method
  FROM pg_partitioned_table AS p
  JOIN pg_opclass AS opc ON opc.oid = p.partclass[0]
  JOIN pg_am AS am ON am.oid = opc.opcmethod
 WHERE p.partrelid = 'buckets'::regclass;
SELECT count(*) AS rows,
       count(*) FILTER (WHERE right(b.tableoid::regclass::text, 1)
                              = right(g.tableoid::regclass::text, 1)) AS same_partition
  FROM buckets AS b JOIN big_buckets AS g ON g.id = b.id;
SELECT tableoid::regclass AS partition, count(*) FROM buckets GROUP BY 1 ORDER BY 1;
EXPLAIN (COSTS OFF) SELECT * FROM buckets WHERE id = 9007199254740993;

-- Only the type's output and send functions take a snowflake: the others take it as a bigint.
SELECT p.oid::regprocedure AS function
  FROM pg_proc AS p
 WHERE 'snowflake'::regtype = ANY (p.proargtypes)
 ORDER BY p.oid::regprocedure::text;
SELECT p.oid::regprocedure AS function, p.provolatile, p.proparallel, p.proisstrict,
       p.prosupport
  FROM pg_proc AS p
  JOIN pg_depend AS d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid
                     AND d.refclassid = 'pg_extension'::regclass
  JOIN pg_extension AS x ON x.oid = d.refobjid AND x.extname = 'snowflake'
 WHERE p.proname IN ('snowflake_decode', 'snowflake_timestamp', 'snowflake_timestamp_lt',
                     'snowflake_timestamp_le', 'snowflake_timestamp_eq',
                     'snowflake_timestamp_ge', 'snowflake_timestamp_gt')
 ORDER BY p.oid::regprocedure::text;
-- The call resolves to the bigint function (EXPLAIN VERBOSE names it).
EXPLAIN (VERBOSE, COSTS OFF)
SELECT snowflake_timestamp(id), (snowflake_decode(id)).node_id FROM events WHERE payload = 0;
-- The same results, on generated IDs, the edges of the events and the largest ID.
CREATE TABLE ids AS
SELECT id::bigint AS big, id AS flake FROM events WHERE payload IN (0, 1, 143999)
UNION ALL
SELECT n, n::snowflake FROM (SELECT snowflake_nextval()) AS s(n)
UNION ALL
SELECT 9223372036854775807, 9223372036854775807::snowflake;
SELECT min(pg_typeof(flake)::text) AS flake_type, count(*) AS ids,
       count(*) FILTER (WHERE snowflake_decode(flake) = snowflake_decode(big)) AS decode,
       count(*) FILTER (WHERE snowflake_timestamp(flake) = snowflake_timestamp(big)) AS ts,
       count(*) FILTER (WHERE flake::timestamptz = snowflake_timestamp(big)) AS cast_ts,
       count(*) FILTER (WHERE snowflake_timestamp_lt(flake, t) = snowflake_timestamp_lt(big, t)
                          AND snowflake_timestamp_le(flake, t) = snowflake_timestamp_le(big, t)
                          AND snowflake_timestamp_eq(flake, t) = snowflake_timestamp_eq(big, t)
                          AND snowflake_timestamp_ge(flake, t) = snowflake_timestamp_ge(big, t)
                          AND snowflake_timestamp_gt(flake, t) = snowflake_timestamp_gt(big, t))
           AS comparisons,
       count(*) FILTER (WHERE (flake BETWEEN snowflake_min_id(t) AND snowflake_max_id(t))
                              = (big BETWEEN snowflake_min_id(t) AND snowflake_max_id(t))
                          AND (flake >= snowflake_timestamp_lower_id(t, true))
                              = (big >= snowflake_timestamp_lower_id(t, true))
                          AND (flake <= snowflake_timestamp_upper_id(t, false))
                              = (big <= snowflake_timestamp_upper_id(t, false)))
           AS bounds
  FROM ids, LATERAL (VALUES (snowflake_timestamp(big))) AS v(t);
SELECT 'snowflake' AS arg, d.* FROM snowflake_decode(9223372036854775807::snowflake) AS d
UNION ALL
SELECT 'bigint', d.* FROM snowflake_decode(9223372036854775807::bigint) AS d;

-- Nothing takes a snowflake exactly, so one that does wins from later on the search_path.
CREATE SCHEMA type_test_late;
CREATE FUNCTION type_test_late.snowflake_timestamp(id snowflake) RETURNS timestamptz
    LANGUAGE sql AS $$ SELECT timestamptz 'epoch' $$;
SET search_path = public, pg_catalog, type_test_late;
SELECT snowflake_timestamp(9007199254740993::snowflake) = 'epoch' AS late_one_wins,
       snowflake_timestamp(9007199254740993::bigint) = 'epoch' AS not_on_bigint;
SET search_path = type_test, public;
DROP SCHEMA type_test_late CASCADE;

RESET max_parallel_workers_per_gather;
RESET search_path;
SET client_min_messages = warning;
DROP SCHEMA type_test CASCADE;
RESET client_min_messages;

-- A table named snowflake holds the type's name: CREATE EXTENSION stops until it is renamed.
CREATE DATABASE regress_snowflake_type_name;
\c regress_snowflake_type_name
CREATE TABLE snowflake (id bigint);
SET client_min_messages = warning;
CREATE EXTENSION snowflake;
\echo :LAST_ERROR_SQLSTATE
ALTER TABLE snowflake RENAME TO snowflake_rows;
CREATE EXTENSION snowflake;
RESET client_min_messages;
SELECT to_json(9007199254740993::snowflake) AS created;
\c contrib_regression
DROP DATABASE regress_snowflake_type_name;
