-- Functions that act for a session, taken into a parallel worker by a wrapper labelled
-- PARALLEL SAFE, raise an error there before they change anything.
CREATE TABLE worker_rows AS SELECT g FROM generate_series(1, 1000) AS g;
ALTER TABLE worker_rows SET (parallel_workers = 2);
ANALYZE worker_rows;

CREATE FUNCTION mislabelled_nextval() RETURNS bigint
    LANGUAGE plpgsql VOLATILE PARALLEL SAFE
    AS $$ BEGIN RETURN snowflake_nextval(); END $$;
CREATE FUNCTION mislabelled_lease() RETURNS bigint
    LANGUAGE plpgsql VOLATILE PARALLEL SAFE
    AS $$ BEGIN
        RETURN (SELECT token FROM snowflake_lease_worker('parallel', interval '1 minute'));
    END $$;
CREATE FUNCTION mislabelled_renew() RETURNS timestamptz
    LANGUAGE plpgsql VOLATILE PARALLEL SAFE
    AS $$ BEGIN RETURN (SELECT not_after FROM snowflake_renew_lease(1, NULL)); END $$;
CREATE FUNCTION mislabelled_release() RETURNS boolean
    LANGUAGE plpgsql VOLATILE PARALLEL SAFE
    AS $$ BEGIN RETURN snowflake_release_lease(1, NULL); END $$;

-- Only the workers scan, so each call in the filter runs in a worker.
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SET parallel_leader_participation = off;
EXPLAIN (COSTS OFF)
SELECT count(*) FROM worker_rows WHERE mislabelled_nextval() > 0;

SELECT count(*) AS leases_before FROM snowflake_leases \gset
\set VERBOSITY terse
SELECT count(*) FROM worker_rows WHERE mislabelled_nextval() > 0;
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) FROM worker_rows WHERE mislabelled_lease() > 0;
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) FROM worker_rows WHERE mislabelled_renew() IS NOT NULL;
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) FROM worker_rows WHERE mislabelled_release();
\echo :LAST_ERROR_SQLSTATE
\set VERBOSITY default
SELECT count(*) = :leases_before AS no_lease_granted FROM snowflake_leases;

-- In the leader they work.
RESET parallel_leader_participation;
RESET max_parallel_workers_per_gather;
SELECT mislabelled_nextval() > 0 AS issued_in_the_leader;

RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
DROP FUNCTION mislabelled_nextval(), mislabelled_lease(), mislabelled_renew(), mislabelled_release();
DROP TABLE worker_rows;
