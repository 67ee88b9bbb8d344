-- snowflake_nextval() as a default, per-session order, the worker view, the slot's lock.
CREATE TABLE orders (
    id   bigint PRIMARY KEY DEFAULT snowflake_nextval(),
    n    integer NOT NULL,
    item text
);
INSERT INTO orders (n, item) SELECT g, 'item ' || g FROM generate_series(1, 20000) AS g;
INSERT INTO orders (n, item) VALUES (20001, 'tea') RETURNING id > 0 AS positive;

-- Unique, and strictly increasing in the order the session issued them.
SELECT count(*) AS ids, count(DISTINCT id) AS distinct_ids,
       count(*) FILTER (WHERE id <= previous) AS out_of_order
  FROM (SELECT id, lag(id) OVER (ORDER BY n) AS previous FROM orders) AS s;

-- One node, one worker for the whole session, timestamps of today.
SELECT count(DISTINCT d.worker_id) AS workers,
       min(d.node_id) AS min_node, max(d.node_id) AS max_node,
       bool_and(d.ts BETWEEN now() - interval '1 minute'
                         AND clock_timestamp() + interval '1 second') AS ts_now
  FROM orders, snowflake_decode(orders.id) AS d;

-- The worker view shows this session, and its slot matches its IDs.
SELECT w.worker_id = (SELECT (snowflake_decode(max(id))).worker_id FROM orders) AS same_worker,
       w.datname = current_database() AS same_db,
       w.usename = current_user AS same_user,
       w.ids_issued = 20001 AS counted,
       w.claimed_at <= clock_timestamp() AS claimed_before_now,
       w.last_timestamp = (SELECT (snowflake_decode(max(id))).ts FROM orders) AS last_ts
  FROM snowflake_workers AS w
 WHERE w.pid = pg_backend_pid();

-- The attachment is a shared session-level advisory lock in database 0.
SELECT l.database, l.classid, l.objid = w.worker_id AS objid_is_worker, l.objsubid,
       l.mode, l.granted
  FROM pg_locks AS l
       JOIN snowflake_workers AS w ON w.pid = l.pid
 WHERE l.locktype = 'advisory' AND l.pid = pg_backend_pid();

-- Released, the next call attaches again and returns a larger ID than any before.
SELECT max(id) AS last_before_release FROM orders \gset
SELECT snowflake_release_worker() AS released;
SELECT snowflake_release_worker() AS released_again,
       (SELECT count(*) FROM snowflake_workers WHERE pid = pg_backend_pid()) AS my_slots,
       (SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid())
           AS my_locks;
SELECT snowflake_nextval() > :last_before_release AS still_increasing;
SELECT count(*) AS my_slots FROM snowflake_workers WHERE pid = pg_backend_pid();

-- pg_advisory_unlock_all() drops the lock, not the attachment: IDs go on growing.
SELECT pg_advisory_unlock_all();
SELECT count(*) AS my_slots FROM snowflake_workers WHERE pid = pg_backend_pid();
SELECT snowflake_nextval() > :last_before_release AS still_increasing;

-- Function labels.
SELECT p.proname, p.provolatile, p.proisstrict, p.proparallel, p.prosecdef
  FROM pg_proc AS p
 WHERE p.proname LIKE 'snowflake%'
 ORDER BY p.proname;
