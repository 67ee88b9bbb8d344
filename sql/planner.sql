-- Comparisons of snowflake_timestamp(id) become ranges of id: index scans, pruning, estimates,
-- and the same rows as without the rewrite at every edge.
SET TimeZone = 'UTC';

-- 100 days of IDs, one a minute, from 2026-01-01.
CREATE TABLE planner_events (
    id      bigint PRIMARY KEY,
    payload integer NOT NULL
);
INSERT INTO planner_events
SELECT snowflake_min_id('2026-01-01 00:00:00+00'::timestamptz + g * interval '1 minute') + g % 4096, g
  FROM generate_series(0, 144000 - 1) AS g;
ANALYZE planner_events;

-- Each comparison form becomes a range of the primary key, with the comparison as a recheck.
EXPLAIN (COSTS OFF)
SELECT * FROM planner_events WHERE snowflake_timestamp(id) >= '2026-04-10 12:00:00+00';
EXPLAIN (COSTS OFF)
SELECT * FROM planner_events WHERE snowflake_timestamp(id) > '2026-04-10 12:00:00+00';
EXPLAIN (COSTS OFF)
SELECT * FROM planner_events WHERE snowflake_timestamp(id) < '2026-01-01 06:00:00+00';
EXPLAIN (COSTS OFF)
SELECT * FROM planner_events WHERE snowflake_timestamp(id) <= '2026-01-01 06:00:00+00';
EXPLAIN (COSTS OFF)
SELECT * FROM planner_events WHERE snowflake_timestamp(id) = '2026-02-01 00:00:00+00';
EXPLAIN (COSTS OFF)
SELECT * FROM planner_events
 WHERE snowflake_timestamp(id) BETWEEN '2026-02-01 00:00:00+00' AND '2026-02-01 01:00:00+00';
-- The timestamp on the right.
EXPLAIN (COSTS OFF)
SELECT * FROM planner_events WHERE '2026-04-10 12:00:00+00' < snowflake_timestamp(id);
-- The field of snowflake_decode().
EXPLAIN (COSTS OFF)
SELECT * FROM planner_events
 WHERE (snowflake_decode(id)).ts BETWEEN '2026-02-01 00:00:00+00' AND '2026-02-01 01:00:00+00';
-- A stable expression: the bound is computed when the query runs.
EXPLAIN (COSTS OFF)
SELECT * FROM planner_events WHERE snowflake_timestamp(id) >= now() - interval '1 hour';
-- A parameter, in a generic plan (with no estimate, so the sequential scan is off).
PREPARE since(timestamptz) AS
SELECT count(*) FROM planner_events WHERE snowflake_timestamp(id) >= $1;
SET plan_cache_mode = force_generic_plan;
SET enable_seqscan = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) EXECUTE since('2026-04-10 12:00:00+00');
EXECUTE since('2026-04-10 12:00:00+00');
RESET enable_bitmapscan;
RESET enable_seqscan;
RESET plan_cache_mode;
-- A join: the other side's column bounds an index scan in a nested loop.
CREATE TABLE planner_marks (since timestamptz NOT NULL);
INSERT INTO planner_marks VALUES ('2026-04-10 22:00:00+00'), ('2026-04-10 23:00:00+00');
ANALYZE planner_marks;
EXPLAIN (COSTS OFF)
SELECT m.since, count(*)
  FROM planner_marks AS m
  JOIN planner_events AS e ON snowflake_timestamp(e.id) >= m.since
 GROUP BY m.since;
SELECT m.since, count(*)
  FROM planner_marks AS m
  JOIN planner_events AS e ON snowflake_timestamp(e.id) >= m.since
 GROUP BY m.since ORDER BY m.since;

-- Every query level: a CTE, a subquery and a sublink; planner_ranges() counts the ranges.
CREATE FUNCTION planner_ranges(query text) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    ranges integer := 0;
    line text;
BEGIN
    FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || query LOOP
        ranges := ranges + (length(line) - length(replace(line, 'snowflake_timestamp_lower_id', '')))
                           / length('snowflake_timestamp_lower_id');
    END LOOP;
    RETURN ranges;
END
$$;
SELECT planner_ranges($q$
WITH recent AS MATERIALIZED (
    SELECT id FROM planner_events WHERE snowflake_timestamp(id) >= '2026-04-10 23:00:00+00'
)
SELECT count(*) FROM recent,
       (SELECT max(id) AS top FROM planner_events
         WHERE snowflake_timestamp(id) >= '2026-04-10 23:50:00+00' OFFSET 0) AS t
 WHERE recent.id < t.top
   AND EXISTS (SELECT 1 FROM planner_marks AS m
                WHERE (SELECT min(id) FROM planner_events
                        WHERE snowflake_timestamp(id) > m.since) IS NOT NULL)
$q$) AS ranges;

-- A negative ID lies below every range: the rewritten >= skips it, the plain one fails.
CREATE TABLE planner_negative (id bigint PRIMARY KEY);
INSERT INTO planner_negative VALUES (-5), (snowflake_min_id('2026-04-10 12:00:00+00'));
SELECT count(*) FROM planner_negative WHERE snowflake_timestamp(id) >= '2026-01-01 00:00:00+00';
SET snowflake.rewrite_timestamp_comparisons = off;
SELECT count(*) FROM planner_negative WHERE snowflake_timestamp(id) >= '2026-01-01 00:00:00+00';
RESET snowflake.rewrite_timestamp_comparisons;
-- NOT (... >= x) is planned as < x, with no lower bound: the negative ID raises the error,
-- rewritten or not.  NOT (... = x) is left alone.
EXPLAIN (COSTS OFF)
SELECT id FROM planner_negative WHERE NOT (snowflake_timestamp(id) >= '2026-01-01 00:00:00+00');
SELECT id FROM planner_negative WHERE NOT (snowflake_timestamp(id) >= '2026-01-01 00:00:00+00');
SELECT id FROM planner_negative WHERE NOT (snowflake_timestamp(id) = '2026-01-01 00:00:00+00');
-- Before the epoch the upper bound is -1, not NULL: the negative ID still raises.
SELECT id FROM planner_negative WHERE NOT (snowflake_timestamp(id) >= '2020-01-01 00:00:00+00');
SELECT id FROM planner_negative WHERE snowflake_timestamp(id) < '2020-01-01 00:00:00+00';
SET snowflake.rewrite_timestamp_comparisons = off;
SELECT id FROM planner_negative WHERE NOT (snowflake_timestamp(id) >= '2026-01-01 00:00:00+00');
SELECT id FROM planner_negative WHERE NOT (snowflake_timestamp(id) = '2026-01-01 00:00:00+00');
RESET snowflake.rewrite_timestamp_comparisons;
-- Where the rewrite differs (README, "Negative IDs"): under OR the row is returned.
SELECT count(*) FROM planner_negative
 WHERE snowflake_timestamp(id) >= '2026-01-01 00:00:00+00' OR id < 0;
SET snowflake.rewrite_timestamp_comparisons = off;
SELECT count(*) FROM planner_negative
 WHERE snowflake_timestamp(id) >= '2026-01-01 00:00:00+00' OR id < 0;
RESET snowflake.rewrite_timestamp_comparisons;
DROP TABLE planner_negative;

-- The estimate is the range's: within 2x of the rows that match.
CREATE FUNCTION planner_estimate(query text) RETURNS TABLE (estimated bigint, actual bigint)
LANGUAGE plpgsql AS $$
DECLARE
    plan json;
BEGIN
    EXECUTE 'EXPLAIN (ANALYZE, COSTS, TIMING OFF, SUMMARY OFF, FORMAT JSON) ' || query INTO plan;
    -- PostgreSQL 18 shows actual rows with two decimals.
    estimated := (plan -> 0 -> 'Plan' ->> 'Plan Rows')::numeric;
    actual := (plan -> 0 -> 'Plan' ->> 'Actual Rows')::numeric;
    RETURN NEXT;
END
$$;
SELECT estimated BETWEEN actual / 2 AND actual * 2 AS within_2x, actual
  FROM unnest(ARRAY[$$snowflake_timestamp(id) >= '2026-04-09 00:00:00+00'$$,
                    $$snowflake_timestamp(id) BETWEEN '2026-02-01' AND '2026-02-03'$$]) AS w,
       LATERAL planner_estimate('SELECT * FROM planner_events WHERE ' || w);

-- Not rewritten: a volatile bound, the setting off, another schema's function of that name.
EXPLAIN (COSTS OFF)
SELECT * FROM planner_events WHERE snowflake_timestamp(id) >= clock_timestamp() - interval '1 hour';
SET snowflake.rewrite_timestamp_comparisons = off;
EXPLAIN (COSTS OFF)
SELECT * FROM planner_events WHERE snowflake_timestamp(id) >= '2026-04-10 12:00:00+00';
RESET snowflake.rewrite_timestamp_comparisons;
CREATE SCHEMA planner_other;
CREATE FUNCTION planner_other.snowflake_timestamp(bigint) RETURNS timestamptz
LANGUAGE plpgsql STABLE AS $$ BEGIN RETURN '2026-01-01 00:00:00+00'; END $$;
EXPLAIN (COSTS OFF)
SELECT * FROM planner_events WHERE planner_other.snowflake_timestamp(id) >= '2026-04-10 12:00:00+00';
DROP SCHEMA planner_other CASCADE;

-- Partition pruning: a day per partition; a one-hour predicate scans one.
CREATE TABLE planner_days (id bigint PRIMARY KEY, payload integer NOT NULL)
    PARTITION BY RANGE (id);
CREATE TABLE planner_days_0401 PARTITION OF planner_days
    FOR VALUES FROM (snowflake_min_id('2026-04-01')) TO (snowflake_min_id('2026-04-02'));
CREATE TABLE planner_days_0402 PARTITION OF planner_days
    FOR VALUES FROM (snowflake_min_id('2026-04-02')) TO (snowflake_min_id('2026-04-03'));
CREATE TABLE planner_days_0403 PARTITION OF planner_days
    FOR VALUES FROM (snowflake_min_id('2026-04-03')) TO (snowflake_min_id('2026-04-04'));
INSERT INTO planner_days
SELECT id, payload FROM planner_events
 WHERE id >= snowflake_min_id('2026-04-01') AND id < snowflake_min_id('2026-04-04');
EXPLAIN (COSTS OFF)
SELECT count(*) FROM planner_days
 WHERE snowflake_timestamp(id) >= '2026-04-02 10:00:00+00'
   AND snowflake_timestamp(id) < '2026-04-02 11:00:00+00';
SELECT tableoid::regclass AS partition, count(*)
  FROM planner_days
 WHERE snowflake_timestamp(id) >= '2026-04-02 10:00:00+00'
   AND snowflake_timestamp(id) < '2026-04-02 11:00:00+00'
 GROUP BY 1;

-- planner_same(): 'same' if the plan was rewritten (unless NULL) and both give the same IDs.
CREATE TABLE planner_edges (id bigint PRIMARY KEY);
CREATE FUNCTION planner_same(op text, ts timestamptz, form text DEFAULT 'snowflake_timestamp(id)')
RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    query text := format('SELECT coalesce(array_agg(id ORDER BY id), ''{}'') FROM planner_edges WHERE %s %s $1',
                         form, op);
    rewritten bigint[];
    plain bigint[];
    plan text := '';
    line text;
BEGIN
    PERFORM set_config('snowflake.rewrite_timestamp_comparisons', 'on', true);
    FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || query USING ts LOOP
        plan := plan || line;
    END LOOP;
    -- With NULL the planner folds the comparison away before any scan.
    IF ts IS NOT NULL AND position('snowflake_timestamp_' IN plan) = 0 THEN
        RETURN 'not rewritten: ' || plan;
    END IF;
    EXECUTE query INTO rewritten USING ts;
    PERFORM set_config('snowflake.rewrite_timestamp_comparisons', 'off', true);
    EXECUTE query INTO plain USING ts;
    PERFORM set_config('snowflake.rewrite_timestamp_comparisons', 'on', true);
    IF rewritten IS DISTINCT FROM plain THEN
        RETURN format('%s %s: rewritten %s, plain %s', op, ts, rewritten, plain);
    END IF;
    RETURN 'same';
END
$$;
-- Cuts, and the first and last ID of each one's millisecond with their neighbours.
CREATE TABLE planner_cuts (ts timestamptz);
INSERT INTO planner_cuts VALUES
    ('2025-01-01 00:00:00+00'),          -- the epoch
    ('2025-01-01 00:00:00.001+00'),
    ('2026-03-01 12:00:00.123+00'),      -- a millisecond's edges
    ('2026-03-01 12:00:00.124+00'),
    ('2094-09-07 15:47:35.550+00'),      -- the layout's last milliseconds
    ('2094-09-07 15:47:35.551+00');
INSERT INTO planner_edges
SELECT DISTINCT e FROM planner_cuts,
       LATERAL (VALUES (snowflake_min_id(ts) - 1), (snowflake_min_id(ts)),
                       (snowflake_min_id(ts) + 1), (snowflake_max_id(ts) - 1),
                       (snowflake_max_id(ts)), (snowflake_max_id(ts) + 1)) AS v(e)
 WHERE e >= 0 AND snowflake_max_id(ts) < 9223372036854775807
UNION
SELECT unnest(ARRAY[0, 1, 9223372036854775806, 9223372036854775807]::bigint[]);
-- Values: around each cut, before the epoch, past the layout, NULL and infinities.
CREATE TABLE planner_values (ts timestamptz);
INSERT INTO planner_values
SELECT ts + d FROM planner_cuts,
       unnest(ARRAY['-1 ms', '-1 us', '0', '1 us', '500 us', '1 ms']::interval[]) AS d
UNION ALL
VALUES ('2024-12-31 23:59:59.999+00'::timestamptz), ('2094-09-07 15:47:35.552+00'),
       ('3000-01-01 00:00:00+00'), ('1970-01-01 00:00:00+00'),
       (NULL), ('-infinity'), ('infinity');
SELECT count(*) AS cases, count(*) FILTER (WHERE r = 'same') AS same,
       array_agg(r) FILTER (WHERE r <> 'same') AS differences
  FROM planner_values, unnest(ARRAY['<', '<=', '=', '>=', '>']) AS op,
       LATERAL planner_same(op, ts) AS r;
-- The decode form, on the same values.
SELECT count(*) AS cases, count(*) FILTER (WHERE r = 'same') AS same
  FROM planner_values, unnest(ARRAY['<', '>=']) AS op,
       LATERAL planner_same(op, ts, '(snowflake_decode(id)).ts') AS r;

-- Across a layout change (rolled back), where the timestamp of an ID is not monotonic: the
-- recheck keeps the result exact.
BEGIN;
INSERT INTO snowflake_layout (first_id, epoch, node_bits, worker_bits, sequence_bits)
VALUES ((extract(epoch FROM timestamptz '2026-06-01 00:00:00+00' - timestamptz '2025-01-01 00:00:00+00') * 1000)::bigint << 25,
        '2025-01-01 00:00:00+00', 3, 10, 12);
CREATE TEMP TABLE change AS
SELECT first_id FROM snowflake_layout WHERE node_bits = 3 AND worker_bits = 10;
SELECT snowflake_timestamp(first_id) AS new_first,
       snowflake_timestamp(first_id - 1) AS old_last
  FROM change;
INSERT INTO planner_edges
SELECT first_id + d FROM change, unnest(ARRAY[-2, -1, 0, 1, 2, 33554431, 33554432]::bigint[]) AS d
ON CONFLICT DO NOTHING;
INSERT INTO planner_values
SELECT snowflake_timestamp(first_id + d) + s FROM change,
       unnest(ARRAY[-1, 0, 33554432]::bigint[]) AS d,
       unnest(ARRAY['-1 ms', '0', '1 us', '1 ms']::interval[]) AS s;
SELECT count(*) AS cases, count(*) FILTER (WHERE r = 'same') AS same,
       array_agg(r) FILTER (WHERE r <> 'same') AS differences
  FROM planner_values, unnest(ARRAY['<', '<=', '=', '>=', '>']) AS op,
       LATERAL planner_same(op, ts) AS r;
-- Here the range alone holds IDs that do not match; the recheck drops them.
SELECT (SELECT count(*) FROM planner_edges
         WHERE id <= snowflake_timestamp_upper_id(t, true)) AS in_range,
       (SELECT count(*) FROM planner_edges WHERE snowflake_timestamp(id) <= t) AS matching
  FROM (SELECT snowflake_timestamp(first_id - 1) - interval '1 ms' AS t FROM change) AS c;
ROLLBACK;

-- The bounds: no error at the ends; where no ID matches, NULL below and -1 above.
SELECT snowflake_timestamp_lower_id('-infinity', true) AS lower_ninf,
       snowflake_timestamp_lower_id('infinity', true) AS lower_inf,
       snowflake_timestamp_upper_id('-infinity', true) AS upper_ninf,
       snowflake_timestamp_upper_id('infinity', false) AS upper_inf,
       snowflake_timestamp_lower_id('2094-09-07 15:47:35.552+00', true) AS lower_past_layout,
       snowflake_timestamp_upper_id('2024-12-31 23:59:59.999+00', true) AS upper_before_epoch,
       snowflake_timestamp_lower_id('2026-03-01 12:00:00.1231+00', true)
           = snowflake_min_id('2026-03-01 12:00:00.124+00') AS lower_rounds_up,
       snowflake_timestamp_upper_id('2026-03-01 12:00:00.1231+00', false)
           = snowflake_max_id('2026-03-01 12:00:00.123+00') AS upper_strict_keeps_ms;

-- snowflake_id_interval(): a span of time in IDs under the running layout.
SELECT snowflake_id_interval('1 day') = 86400000::bigint << 22 AS one_day,
       snowflake_id_interval('1 ms') = 1::bigint << 22 AS one_ms,
       snowflake_id_interval('1 hour') * 24 = snowflake_id_interval('1 day') AS hours,
       snowflake_min_id('2026-04-02') - snowflake_min_id('2026-04-01')
           = snowflake_id_interval('1 day') AS partition_width;
SELECT snowflake_id_interval('1 month');
SELECT snowflake_id_interval('0');
SELECT snowflake_id_interval('-1 day');
SELECT snowflake_id_interval('1.5 ms');
SELECT snowflake_id_interval('30000 days');
\set VERBOSITY sqlstate
SELECT snowflake_id_interval('1 year');
SELECT snowflake_id_interval('30000 days');
\set VERBOSITY default
SELECT snowflake_id_interval(NULL) IS NULL AS null_span;

DROP TABLE planner_events, planner_marks, planner_days, planner_edges, planner_cuts, planner_values;
DROP FUNCTION planner_same(text, timestamptz, text);
DROP FUNCTION planner_estimate(text);
DROP FUNCTION planner_ranges(text);
