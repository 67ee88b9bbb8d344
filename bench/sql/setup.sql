-- Objects bench/run.sh creates in the throwaway "bench" database of each
-- cluster, after the snowflake functions themselves (CREATE EXTENSION on
-- clusters A and B; on cluster C, the base commit's install script, run by
-- hand against the renamed library).  Every timing here is taken inside the
-- server: clock_timestamp() just before and just after EXECUTE of one
-- statement, so neither psql, the socket nor the output of a result set is
-- part of it.  Nothing here needs more than the first release's
-- snowflake_status() columns, so it loads on cluster C too.

CREATE SEQUENCE bench_seq;

-- The cost floor of any C function: returns a constant int8 (bench/noop/).
CREATE FUNCTION snowflake_bench_noop() RETURNS int8
    AS '$libdir/snowflake_bench_noop', 'snowflake_bench_noop'
    LANGUAGE C VOLATILE;

-- The statement that evaluates "expr" n times.  A cross join of two small
-- series: the inner one is read back from a tuplestore on every rescan,
-- which costs far less per row than one big generate_series.
CREATE FUNCTION bench_query(expr text, n bigint) RETURNS text
LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    IF n % 4000 <> 0 THEN
        RAISE EXCEPTION 'n must be a multiple of 4000, not %', n;
    END IF;
    RETURN format('SELECT count(%s) FROM generate_series(1, %s) a, '
                  'generate_series(1, 4000) b', expr, n / 4000);
END $$;

-- Milliseconds (microsecond resolution) one statement takes to execute.
CREATE FUNCTION bench_ms(query text) RETURNS float8
LANGUAGE plpgsql AS $$
DECLARE
    t0 timestamptz;
    t1 timestamptz;
BEGIN
    t0 := clock_timestamp();
    EXECUTE query;
    t1 := clock_timestamp();
    RETURN extract(epoch FROM t1 - t0) * 1000;
END $$;

-- Sleeps until the generator may borrow enough future milliseconds to
-- issue "ids" IDs without waiting for the clock; NULL (or more than
-- max_drift holds) waits for the full headroom, i.e. drift 0.
-- Headroom is max_drift minus the current drift; right after a server
-- start the drift is max_drift, so the headroom grows 1 ms per ms.
-- Returns the seconds waited.
CREATE FUNCTION bench_wait_for_headroom(ids bigint, timeout_s float8 DEFAULT 120)
RETURNS float8
LANGUAGE plpgsql AS $$
DECLARE
    t0 timestamptz := clock_timestamp();
    headroom_ids bigint;
    full_ids bigint;
BEGIN
    LOOP
        SELECT (max_drift_ms - drift_ms) * (1::bigint << sequence_bits),
               max_drift_ms * (1::bigint << sequence_bits)
          INTO headroom_ids, full_ids
          FROM snowflake_status();
        EXIT WHEN headroom_ids >= least(ids, full_ids);
        IF clock_timestamp() - t0 > make_interval(secs => timeout_s) THEN
            RAISE EXCEPTION 'no headroom for % IDs after % s', ids, timeout_s;
        END IF;
        PERFORM pg_sleep(0.02);
    END LOOP;
    RETURN extract(epoch FROM clock_timestamp() - t0);
END $$;

CREATE FUNCTION bench_overflow_waits() RETURNS bigint
LANGUAGE sql AS $$ SELECT overflow_waits FROM snowflake_status() $$;

CREATE FUNCTION bench_drift_ms() RETURNS bigint
LANGUAGE sql AS $$ SELECT drift_ms FROM snowflake_status() $$;

-- Part 1: each expression n times per run, the expressions interleaved
-- within a run so that a slow patch of the machine hits all of them.
-- Run 0 is a warm-up (it also claims the snowflake worker slot).
CREATE FUNCTION bench_percall(n bigint, runs int)
RETURNS TABLE (expr text, run int, ms float8)
LANGUAGE plpgsql AS $$
DECLARE
    exprs text[] := ARRAY['1', 'snowflake_bench_noop()', 'clock_timestamp()',
                          'snowflake_nextval()', 'nextval(''bench_seq'')',
                          'gen_random_uuid()'];
BEGIN
    -- PostgreSQL 18 has a built-in UUID v7.
    IF current_setting('server_version_num')::int >= 180000 THEN
        exprs := exprs || 'uuidv7()'::text;
    END IF;
    FOR r IN 0..runs LOOP
        FOREACH expr IN ARRAY exprs LOOP
            run := r;
            ms := bench_ms(bench_query(expr, n));
            RETURN NEXT;
        END LOOP;
    END LOOP;
END $$;

-- Part 2: one backend at the bit limit.  First uses up the drift headroom
-- (issues IDs until the generator has had to wait for the clock), then
-- times runs of n IDs back to back.
CREATE FUNCTION bench_sustained(n bigint, runs int)
RETURNS TABLE (run int, ms float8, waits bigint, drift_after bigint)
LANGUAGE plpgsql AS $$
DECLARE
    w0 bigint := bench_overflow_waits();
    i int := 0;
BEGIN
    WHILE bench_overflow_waits() = w0 LOOP
        PERFORM bench_ms(bench_query('snowflake_nextval()', 1000000));
        i := i + 1;
        IF i > 100 THEN
            RAISE EXCEPTION 'the drift headroom never ran out';
        END IF;
    END LOOP;
    FOR r IN 1..runs LOOP
        run := r;
        w0 := bench_overflow_waits();
        ms := bench_ms(bench_query('snowflake_nextval()', n));
        waits := bench_overflow_waits() - w0;
        drift_after := bench_drift_ms();
        RETURN NEXT;
    END LOOP;
END $$;

-- Part 3: a burst of n snowflake IDs in one statement, each started with
-- the full drift headroom (drift 0), against the same burst of nextval().  Run 0 is a
-- warm-up.
CREATE FUNCTION bench_burst(n bigint, runs int)
RETURNS TABLE (run int, expr text, ms float8, waits bigint, drift_after bigint)
LANGUAGE plpgsql AS $$
DECLARE
    w0 bigint;
BEGIN
    FOR r IN 0..runs LOOP
        run := r;
        PERFORM bench_wait_for_headroom(NULL);
        expr := 'snowflake_nextval()';
        w0 := bench_overflow_waits();
        ms := bench_ms(bench_query(expr, n));
        waits := bench_overflow_waits() - w0;
        drift_after := bench_drift_ms();
        RETURN NEXT;
        expr := 'nextval(''bench_seq'')';
        ms := bench_ms(bench_query(expr, n));
        waits := NULL;
        drift_after := NULL;
        RETURN NEXT;
    END LOOP;
END $$;

-- Part 5, paced: n IDs of "expr" in statements of "batch" IDs with a
-- pg_sleep of pause_s between them, all in one transaction, so that the
-- IDs are spread over seconds instead of issued at full speed.  Returns
-- the seconds it took.
CREATE FUNCTION bench_paced(expr text, n bigint, batch bigint, pause_s float8)
RETURNS float8
LANGUAGE plpgsql AS $$
DECLARE
    t0 timestamptz := clock_timestamp();
BEGIN
    IF n % batch <> 0 THEN
        RAISE EXCEPTION 'n must be a multiple of batch';
    END IF;
    FOR i IN 1..n / batch LOOP
        IF i > 1 THEN
            PERFORM pg_sleep(pause_s);
        END IF;
        PERFORM bench_ms(bench_query(expr, batch));
    END LOOP;
    RETURN extract(epoch FROM clock_timestamp() - t0);
END $$;

-- Part 6: one round of the before/after comparison on one cluster, in a
-- fresh session right after a server restart: waits for the drift headroom
-- the round needs, runs a warm-up statement (it claims the worker slot,
-- checks the layout and, on the new code, makes the first reservation),
-- then "reps" times the part 1 baseline followed by the same statement with
-- snowflake_nextval().  A last row counts the clock waits of the round.
-- The warning a restart of the new code may log (the clock behind the
-- reservation it resumes from) is expected here and kept out of the output.
CREATE FUNCTION bench_pair(n bigint, reps int)
RETURNS TABLE (rep int, expr text, ms float8)
LANGUAGE plpgsql SET client_min_messages = error AS $$
DECLARE
    w0 bigint;
BEGIN
    PERFORM bench_wait_for_headroom(n * reps + 400000);
    w0 := bench_overflow_waits();
    PERFORM bench_ms(bench_query('snowflake_nextval()', 400000));
    FOR r IN 1..reps LOOP
        rep := r;
        FOREACH expr IN ARRAY ARRAY['1', 'snowflake_nextval()'] LOOP
            ms := bench_ms(bench_query(expr, n));
            RETURN NEXT;
        END LOOP;
    END LOOP;
    rep := 0;
    expr := 'overflow_waits';
    ms := bench_overflow_waits() - w0;
    RETURN NEXT;
END $$;

-- Part 6: the time of single snowflake_nextval() calls, each after a pause
-- of one of "idles" seconds in which this server issued no ID (the pauses
-- alternate).  Timed around the call alone (a PL/pgSQL expression with a
-- cached plan), in microseconds.
CREATE FUNCTION bench_after_idle(idles float8[], samples int)
RETURNS TABLE (sample int, idle_s float8, us float8)
LANGUAGE plpgsql AS $$
DECLARE
    t0 timestamptz;
    t1 timestamptz;
    id bigint;
BEGIN
    id := snowflake_nextval();
    FOR s IN 1..samples LOOP
        FOREACH idle_s IN ARRAY idles LOOP
            PERFORM pg_sleep(idle_s);
            t0 := clock_timestamp();
            id := snowflake_nextval();
            t1 := clock_timestamp();
            sample := s;
            us := extract(epoch FROM t1 - t0) * 1e6;
            RETURN NEXT;
        END LOOP;
    END LOOP;
END $$;
