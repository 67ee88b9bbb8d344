-- snowflake_status(): the layout, slot use, counters, and the drift bound under overflow.
SET timezone = 'UTC';

-- The layout; the reservation covers the IDs issued, WAL-logged a handful of times, not per ID.
SELECT epoch, timestamp_bits, node_bits, worker_bits, sequence_bits, node_id,
       max_drift_ms, slots_total,
       reserved_until >= (SELECT max(w.last_timestamp) FROM snowflake_workers AS w)
           IS NOT FALSE AS covers_issued,
       reservations BETWEEN 1 AND 100 AS few_records,
       ids_issued > 20000 AS many_ids
  FROM snowflake_status();

-- The recorded layout matches the running one.
SELECT first_id, epoch, node_bits, worker_bits, sequence_bits FROM snowflake_layout;

-- Attaching to a slot uses one, alone; IDs are counted exactly.
SELECT slots_used AS used_before, sessions_attached AS attached_before,
       ids_issued AS issued_before
  FROM snowflake_status() \gset
SELECT count(snowflake_nextval()) FROM generate_series(1, 5000);
SELECT slots_used - :used_before AS newly_used,
       sessions_attached - :attached_before AS newly_attached,
       slots_shared,
       ids_issued - :issued_before AS newly_issued
  FROM snowflake_status();

-- Ten million IDs borrow milliseconds up to max_drift, then wait for the clock: they must
-- have waited unless the statement took 1441 ms or more (10,000,000 / 4096 - 1000).
SELECT overflow_waits AS waits_before, clock_timestamp() AS burst_start
  FROM snowflake_status() \gset
SELECT count(snowflake_nextval()) AS burst
  FROM generate_series(1, 2500) AS a, generate_series(1, 4000) AS b;
SELECT overflow_waits > :waits_before
           OR 4096 * (extract(epoch FROM clock_timestamp() - :'burst_start') * 1000
                      + max_drift_ms + 1) >= 10000000 AS waited_or_clock_kept_up,
       drift_ms BETWEEN 0 AND max_drift_ms AS drift_in_bounds
  FROM snowflake_status();

-- No ID is more than max_drift ahead of a clock read just before it; after a wait, the next
-- ID lay at the bound (within 100 ms).
SELECT overflow_waits AS waits_before FROM snowflake_status() \gset
SELECT max(timestamptz '2025-01-01 00:00:00+00' + (s.id >> 22) * interval '1 ms'
           - s.clock_before) < interval '1001 ms' AS within_max_drift,
       max(timestamptz '2025-01-01 00:00:00+00' + (s.id >> 22) * interval '1 ms'
           - s.clock_before) > interval '900 ms' AS near_bound,
       count(DISTINCT s.id) = 2000000 AS all_distinct
  FROM (SELECT clock_timestamp() AS clock_before, snowflake_nextval() AS id
          FROM generate_series(1, 500) AS a, generate_series(1, 4000) AS b) AS s \gset
SELECT :'within_max_drift' AS within_max_drift, :'all_distinct' AS all_distinct,
       overflow_waits = :waits_before OR :'near_bound' AS near_bound_if_it_waited
  FROM snowflake_status();

-- The reservation still covers every ID issued, after ten million more.
SELECT s.reserved_until >= (SELECT max(w.last_timestamp) FROM snowflake_workers AS w)
           AS covers_issued
  FROM snowflake_status() AS s;

-- The background worker keeps the reservation ahead with no ID issued; the loop waits up to
-- 10 s (its active window after the last new ID) for that.
CREATE TEMP TABLE before_wait AS
    SELECT reserved_until, ids_issued FROM snowflake_status();
DO $$
BEGIN
    FOR i IN 1..3000 LOOP
        EXIT WHEN (SELECT s.reserved_until > b.reserved_until
                     FROM snowflake_status() AS s, before_wait AS b);
        PERFORM pg_sleep(0.1);
    END LOOP;
END
$$;
SELECT s.reserved_until > b.reserved_until AS extended_by_the_worker,
       s.ids_issued = b.ids_issued AS no_id_issued_meanwhile
  FROM snowflake_status() AS s, before_wait AS b;
DROP TABLE before_wait;

-- This instance heartbeats in snowflake_nodes and finds no other with its node id.
DO $$
BEGIN
    FOR i IN 1..3000 LOOP
        EXIT WHEN EXISTS (SELECT FROM snowflake_nodes AS n, snowflake_status() AS s
                           WHERE n.instance_id = s.instance_id AND n.beats >= 2);
        PERFORM pg_sleep(0.1);
    END LOOP;
END
$$;
SELECT n.node_id,
       n.port = current_setting('port')::integer AS same_port,
       n.data_directory = current_setting('data_directory') AS same_directory,
       n.system_identifier = (SELECT system_identifier::text FROM pg_control_system())
           AS same_system,
       n.beats >= 2 AS beating,
       s.node_collision,
       n.clock BETWEEN date_trunc('milliseconds', n.last_seen) AND clock_timestamp()
           AS clock_at_writing,
       n.clocks_ahead = '{}' AND n.clocks_ahead_ms = '{}' AS none_ahead
  FROM snowflake_nodes AS n, snowflake_status() AS s
 WHERE n.instance_id = s.instance_id;

-- The layout's horizon (2^41 ms after the epoch) and the seconds left; the reservation runs at
-- most reserve_ahead past the newest ID, itself at most max_drift ahead.  No forward step of
-- the clock was seen or is pending; a node alone compares no other's clock.
SELECT horizon,
       horizon = epoch + 2199023255552 * interval '1 ms' AS two_to_the_41_ms,
       abs(horizon_seconds - extract(epoch FROM horizon - clock_timestamp())) <= 1
           AS seconds_left,
       reserved_ahead_ms BETWEEN 0 AND 2000 AS reserved_ahead,
       clock_steps_forward, largest_step_forward_ms, clock_step_pending_ms,
       clock_peers, clock_skewed_peers, clock_skew_ms
  FROM snowflake_status();
