-- snowflake_decode() of hand-computed IDs (default layout: 41 | 3 | 7 | 12 bits).
SET timezone = 'UTC';

-- The epoch itself; 1000 ms after it, node 5, worker 17, sequence 42; each field at its
-- maximum (the layout's last millisecond); one field at a time; NULL (STRICT).
SELECT v.id, d.*
  FROM unnest(ARRAY[0, (1000::bigint << 22) | (5 << 19) | (17 << 12) | 42, 9223372036854775807,
                    1, 4096, 524288, 4194304, NULL]) WITH ORDINALITY AS v(id, n),
       LATERAL snowflake_decode(v.id) AS d
 ORDER BY v.n;

-- Generated IDs re-compose from their decoded fields.
SELECT count(*) AS mismatches
  FROM (SELECT snowflake_nextval() AS id FROM generate_series(1, 1000)) AS s,
       snowflake_decode(s.id) AS d
 WHERE s.id <> ((((extract(epoch FROM d.ts) * 1000)::bigint - 1735689600000) << 22)
                | (d.node_id::bigint << 19) | (d.worker_id::bigint << 12) | d.seq);

-- PARALLEL SAFE: decode runs inside parallel workers too.
CREATE TABLE parallel_ids AS SELECT g::bigint << 22 AS id FROM generate_series(1, 50000) AS g;
ALTER TABLE parallel_ids SET (parallel_workers = 2);
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
EXPLAIN (COSTS OFF)
SELECT count(*) FROM parallel_ids WHERE (snowflake_decode(id)).seq = 0;
SELECT count(*) FROM parallel_ids WHERE (snowflake_decode(id)).seq = 0;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET max_parallel_workers_per_gather;
DROP TABLE parallel_ids;
