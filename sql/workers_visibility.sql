-- snowflake_workers shows a session's details only to whom pg_stat_activity shows its times.

SELECT current_user AS superuser \gset
CREATE ROLE regress_workers_alice LOGIN;
CREATE ROLE regress_workers_bob;
CREATE ROLE regress_workers_stats IN ROLE pg_read_all_stats;
GRANT regress_workers_bob TO regress_workers_alice;

-- A superuser's session attaches and issues three IDs.
SELECT count(snowflake_nextval()) AS issued FROM generate_series(1, 3);
SELECT usename = session_user AS its_role,
       claimed_at IS NOT NULL AS sees_claimed_at,
       ids_issued
  FROM snowflake_workers WHERE pid = pg_backend_pid();

-- A role without its privileges sees the session, not its details, as pg_stat_activity
-- hides the session's times from it.
SET ROLE regress_workers_alice;
SELECT w.datname = current_database() AS sees_datname,
       w.usename = session_user AS sees_usename,
       w.claimed_at IS NULL AS no_claimed_at,
       w.ids_issued IS NULL AS no_ids_issued,
       w.last_timestamp IS NOT NULL AS sees_last_timestamp,
       a.usename = session_user AS activity_sees_usename,
       a.backend_start IS NULL AS no_backend_start
  FROM snowflake_workers AS w JOIN pg_stat_activity AS a USING (pid)
 WHERE pid = pg_backend_pid();
RESET ROLE;

-- A member of pg_read_all_stats sees everything.
SET ROLE regress_workers_stats;
SELECT w.claimed_at IS NOT NULL AS sees_claimed_at, w.ids_issued,
       a.backend_start IS NOT NULL AS sees_backend_start
  FROM snowflake_workers AS w JOIN pg_stat_activity AS a USING (pid)
 WHERE pid = pg_backend_pid();
RESET ROLE;

-- An unprivileged role's session sees its own details.
\c - regress_workers_alice
SELECT count(snowflake_nextval()) AS issued FROM generate_series(1, 2);
SELECT usename = current_user AS its_role,
       claimed_at IS NOT NULL AS sees_claimed_at,
       ids_issued
  FROM snowflake_workers WHERE pid = pg_backend_pid();

-- The session's role decides, not the role it attached under with SET ROLE.
SET ROLE regress_workers_bob;
SELECT snowflake_release_worker() AS released;
SELECT snowflake_nextval() > 0 AS issued;
SELECT w.usename = current_user AS attached_as_bob,
       w.claimed_at IS NULL AS no_claimed_at,
       w.ids_issued IS NULL AS no_ids_issued,
       a.backend_start IS NULL AS no_backend_start
  FROM snowflake_workers AS w JOIN pg_stat_activity AS a USING (pid)
 WHERE pid = pg_backend_pid();
RESET ROLE;
SELECT usename = 'regress_workers_bob' AS attached_as_bob,
       claimed_at IS NOT NULL AS sees_claimed_at,
       ids_issued
  FROM snowflake_workers WHERE pid = pg_backend_pid();

\c - :superuser
DROP ROLE regress_workers_alice;
DROP ROLE regress_workers_bob;
DROP ROLE regress_workers_stats;
