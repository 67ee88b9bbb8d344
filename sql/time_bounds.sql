-- snowflake_min_id(), snowflake_max_id() and snowflake_timestamp() under the default layout.
SET TimeZone = 'UTC';

-- A millisecond's IDs: its timestamp shifted up, then all lower bits set.
SELECT snowflake_min_id('2025-01-01 00:00:00+00') AS epoch_min,
       snowflake_max_id('2025-01-01 00:00:00+00') AS epoch_max,
       (1 << 22) - 1 AS expected_max,
       snowflake_min_id('2025-01-01 00:00:01+00') = 1000::bigint << 22 AS one_second;
-- Every microsecond of a millisecond gives the same bounds.
SELECT snowflake_min_id('2026-11-01 00:00:00.123+00') = snowflake_min_id('2026-11-01 00:00:00.123999+00') AS same_ms_min,
       snowflake_max_id('2026-11-01 00:00:00.123+00') = snowflake_max_id('2026-11-01 00:00:00.123999+00') AS same_ms_max,
       snowflake_max_id('2026-11-01 00:00:00.123+00') + 1 = snowflake_min_id('2026-11-01 00:00:00.124+00') AS adjacent,
       snowflake_max_id('2026-11-01 00:00:00.999+00') + 1 = snowflake_min_id('2026-11-01 00:00:01+00') AS adjacent_seconds;
-- Bounds decode back to their millisecond.  Before the epoch there are no IDs: min clamps to
-- 0, max to -1.
SELECT snowflake_timestamp(snowflake_min_id('2026-11-01 12:34:56.789+00')) AS min_ts,
       snowflake_timestamp(snowflake_max_id('2026-11-01 12:34:56.789+00')) AS max_ts,
       (snowflake_decode(snowflake_max_id('2026-11-01 12:34:56.789+00'))).*,
       snowflake_min_id('2024-12-31 23:59:59.999+00') AS before_min,
       snowflake_max_id('2024-12-31 23:59:59.999+00') AS before_max,
       snowflake_min_id('-infinity') AS ninf_min,
       snowflake_max_id('-infinity') AS ninf_max;
-- The layout's last millisecond (41 bits: 2094-09-07 15:47:35.551), and past it.
SELECT snowflake_max_id('2094-09-07 15:47:35.551+00') = 9223372036854775807 AS last_max,
       snowflake_min_id('2094-09-07 15:47:35.551+00') = ((1::bigint << 41) - 1) << 22 AS last_min;
\set VERBOSITY default
SELECT snowflake_min_id('2094-09-07 15:47:35.552+00');
SELECT snowflake_max_id('infinity');
\set VERBOSITY sqlstate
SELECT snowflake_min_id('2100-01-01');
\set VERBOSITY default
-- NULL in, NULL out.
SELECT snowflake_min_id(NULL) IS NULL AS min_null, snowflake_max_id(NULL) IS NULL AS max_null,
       snowflake_timestamp(NULL) IS NULL AS ts_null;
SELECT snowflake_timestamp(-1);
-- snowflake_timestamp() agrees with snowflake_decode().
SELECT count(*) AS disagreements
  FROM generate_series(1, 1000) AS g,
       LATERAL (SELECT snowflake_nextval() AS id) AS n
 WHERE snowflake_timestamp(n.id) <> (snowflake_decode(n.id)).ts;

-- A time range is a key range: rows made at known times, three months.
CREATE TABLE events (id bigint PRIMARY KEY, note text);
INSERT INTO events
SELECT snowflake_min_id(t) + (g % 4096), 'e' || g
  FROM generate_series(1, 3000) AS g,
       LATERAL (SELECT timestamptz '2026-10-01' + g * interval '43 minutes 7.3 seconds') AS x(t);
INSERT INTO events VALUES
    (snowflake_min_id('2026-11-01 00:00:00+00'), 'first of November'),
    (snowflake_max_id('2026-10-31 23:59:59.999+00'), 'last of October'),
    (snowflake_max_id('2026-11-30 23:59:59.999+00'), 'last of November'),
    (snowflake_min_id('2026-12-01 00:00:00+00'), 'first of December');
ANALYZE events;
SELECT count(*) AS november,
       count(*) FILTER (WHERE note LIKE '%November') AS edges
  FROM events
 WHERE id >= snowflake_min_id('2026-11-01') AND id < snowflake_min_id('2026-12-01');
-- The same rows as filtering on the decoded timestamp.
SELECT count(*) AS differences
  FROM ((SELECT id FROM events
          WHERE id >= snowflake_min_id('2026-11-01') AND id < snowflake_min_id('2026-12-01')
         EXCEPT
         SELECT id FROM events
          WHERE (snowflake_decode(id)).ts >= '2026-11-01' AND (snowflake_decode(id)).ts < '2026-12-01')
        UNION ALL
        (SELECT id FROM events
          WHERE (snowflake_decode(id)).ts >= '2026-11-01' AND (snowflake_decode(id)).ts < '2026-12-01'
         EXCEPT
         SELECT id FROM events
          WHERE id >= snowflake_min_id('2026-11-01') AND id < snowflake_min_id('2026-12-01'))) AS d;
-- The planner takes the bounds as index conditions on the primary key.
EXPLAIN (COSTS OFF)
SELECT * FROM events
 WHERE id >= snowflake_min_id('2026-11-01') AND id < snowflake_min_id('2026-11-02');
DROP TABLE events;
