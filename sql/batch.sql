-- snowflake_nextval(n): n IDs in one call.

-- N IDs, strictly increasing, above the session's earlier IDs and below its later ones.
CREATE TEMP TABLE batch AS
SELECT 0 AS n, snowflake_nextval() AS id;
INSERT INTO batch SELECT g.n, g.id FROM snowflake_nextval(5) WITH ORDINALITY AS g(id, n);
INSERT INTO batch SELECT 6, snowflake_nextval();
SELECT count(*) AS ids, count(DISTINCT id) AS distinct_ids,
       count(*) FILTER (WHERE id <= prev) AS out_of_order
  FROM (SELECT id, lag(id) OVER (ORDER BY n) AS prev FROM batch) AS b;

-- A batch above 4096 IDs borrows later milliseconds, under the same drift bound, in order.
SELECT count(*) AS ids, count(DISTINCT id) AS distinct_ids,
       count(DISTINCT snowflake_timestamp(id)) > 1 AS several_ms,
       max(snowflake_timestamp(id)) - clock_timestamp()
           <= (SELECT max_drift_ms FROM snowflake_status()) * interval '1 ms' AS within_drift,
       count(*) FILTER (WHERE id <= prev) AS out_of_order
  FROM (SELECT id, lag(id) OVER (ORDER BY n) AS prev
          FROM snowflake_nextval(100000) WITH ORDINALITY AS g(id, n)) AS b;

-- In the select list too.
SELECT count(*) AS ids FROM (SELECT snowflake_nextval(3)) AS s;

-- 0 and NULL give no rows; a negative or too large size is an error, the latter with a hint.
SELECT (SELECT count(*) FROM snowflake_nextval(0)) AS zero,
       (SELECT count(*) FROM snowflake_nextval(NULL)) AS null_size;
SELECT * FROM snowflake_nextval(-1);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM snowflake_nextval(1000001);
\echo :LAST_ERROR_SQLSTATE
\set VERBOSITY sqlstate
SELECT * FROM snowflake_nextval(2147483647);
\set VERBOSITY default

-- Labels: like snowflake_nextval(), and STRICT.
SELECT p.provolatile, p.proisstrict, p.proparallel, p.proretset, p.prorows
  FROM pg_proc AS p
 WHERE p.oid = 'snowflake_nextval(integer)'::regprocedure;

-- Single calls in the same select list come out in between, in order.
SELECT count(*) FILTER (WHERE NOT (b > a AND a > coalesce(prev_b, 0))) AS out_of_order,
       count(*) AS rows
  FROM (SELECT a, b, lag(b) OVER (ORDER BY n) AS prev_b
          FROM (SELECT a, b, row_number() OVER () AS n
                  FROM (SELECT snowflake_nextval(5) AS a, snowflake_nextval() AS b) AS p
               ) AS r) AS s;
