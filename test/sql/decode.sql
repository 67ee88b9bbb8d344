--
-- snowflake_decode(): exact fields of hand-computed IDs under the default
-- layout (epoch 2025-01-01 UTC | 41 timestamp bits | 3 node | 7 worker |
-- 12 sequence bits), and a round trip of generated IDs.
--
SET timezone = 'UTC';

-- The smallest ID: the epoch itself.
SELECT * FROM snowflake_decode(0);

-- 1000 ms after the epoch, node 5, worker 17, sequence 42:
-- 1000 << 22 | 5 << 19 | 17 << 12 | 42
SELECT (1000::bigint << 22) | (5 << 19) | (17 << 12) | 42 AS id;
SELECT * FROM snowflake_decode(4196995114);

-- Each field at its maximum: the last millisecond of the layout.
SELECT * FROM snowflake_decode(9223372036854775807);

-- One field at a time.
SELECT * FROM snowflake_decode(1);
SELECT * FROM snowflake_decode(4096);
SELECT * FROM snowflake_decode(524288);
SELECT * FROM snowflake_decode(4194304);

-- STRICT: NULL in, NULL out.
SELECT * FROM snowflake_decode(NULL);

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
