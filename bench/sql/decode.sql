-- Objects bench/decode.sh adds to the "bench" database, after setup.sql:
-- the load of the events tables and the timed statements.  Every timing is
-- bench_ms() of setup.sql (clock_timestamp() around EXECUTE, inside the
-- server).  The plan of each statement is planned anew by every EXECUTE,
-- so the setting snowflake.rewrite_timestamp_comparisons, set just before,
-- decides the plan: off gives the plan of the code before the rewrite.

-- Loads events (id bigint PRIMARY KEY, payload text) with n snowflake IDs
-- spread evenly over the "days" days before now, in ID order, as an
-- application appending rows would leave them: row i gets millisecond
-- floor(i * step) plus a random offset below step (so the milliseconds
-- increase and never repeat), and random low bits (node, worker,
-- sequence).  The millisecond's smallest ID is snowflake_min_id() of the
-- first millisecond plus whole milliseconds of IDs.  Then events_brin:
-- the same rows in the same order, with a BRIN index on id and no B-tree
-- (synchronize_seqscans off: the copy's scan starts at the first block, not
-- where the primary key's build left off).  Returns each step's
-- milliseconds.
CREATE FUNCTION bench_decode_load(n bigint, days int)
RETURNS TABLE (step text, ms float8)
LANGUAGE plpgsql SET maintenance_work_mem = '512MB' SET synchronize_seqscans = off AS $$
DECLARE
    base bigint := snowflake_min_id(now() - make_interval(days => days));
    per_ms bigint;
    step_ms float8 := days * 86400000.0 / n;
BEGIN
    SELECT 1::bigint << (node_bits + worker_bits + sequence_bits) INTO per_ms
      FROM snowflake_status();
    IF step_ms < 1 THEN
        RAISE EXCEPTION 'more than one row per millisecond: % rows in % days', n, days;
    END IF;
    EXECUTE 'CREATE TABLE events (id bigint NOT NULL, payload text NOT NULL)';
    step := 'INSERT';
    ms := bench_ms(format(
        'INSERT INTO events
         SELECT %s + (floor(i * %s)::bigint + floor(random() * %s)::bigint) * %s
                   + floor(random() * %s)::bigint,
                md5(i::text)
           FROM generate_series(0, %s - 1) AS i',
        base, step_ms, floor(step_ms), per_ms, per_ms, n));
    RETURN NEXT;
    step := 'PRIMARY KEY';
    ms := bench_ms('ALTER TABLE events ADD PRIMARY KEY (id)');
    RETURN NEXT;
    step := 'copy to events_brin';
    ms := bench_ms('CREATE TABLE events_brin AS SELECT * FROM events');
    RETURN NEXT;
    step := 'BRIN index';
    ms := bench_ms('CREATE INDEX events_brin_id ON events_brin USING brin (id)');
    RETURN NEXT;
END $$;

-- The statements of the before/after comparison: a label, the table the
-- statement scans and the statement.
CREATE FUNCTION bench_decode_queries()
RETURNS TABLE (label text, tab text, query text)
LANGUAGE sql IMMUTABLE AS $$
    VALUES
    ('count', 'events',
     'SELECT count(*) FROM events WHERE snowflake_timestamp(id) >= now() - interval ''1 hour'''),
    ('select *', 'events',
     'SELECT * FROM events WHERE snowflake_timestamp(id) >= now() - interval ''1 hour'''),
    ('decode count', 'events',
     'SELECT count(*) FROM events WHERE (snowflake_decode(id)).ts >= now() - interval ''1 hour'''),
    ('brin count', 'events_brin',
     'SELECT count(*) FROM events_brin WHERE snowflake_timestamp(id) >= now() - interval ''1 hour''')
$$;

-- Each statement with the rewrite off ("before") and on ("after"), runs
-- times, interleaved within a run (so a slow patch of the machine hits
-- every variant), run 0 a warm-up.  EXECUTE without INTO runs a SELECT to
-- the end and keeps its rows in memory, so "select *" builds its result
-- without sending it anywhere.
CREATE FUNCTION bench_decode_runs(runs int)
RETURNS TABLE (label text, rewrite boolean, run int, ms float8)
LANGUAGE plpgsql AS $$
DECLARE
    q record;
BEGIN
    FOR r IN 0..runs LOOP
        FOR q IN SELECT * FROM bench_decode_queries() LOOP
            FOREACH rewrite IN ARRAY ARRAY[false, true] LOOP
                PERFORM set_config('snowflake.rewrite_timestamp_comparisons',
                                   rewrite::text, false);
                label := q.label;
                run := r;
                ms := bench_ms(q.query);
                RETURN NEXT;
            END LOOP;
        END LOOP;
    END LOOP;
    PERFORM set_config('snowflake.rewrite_timestamp_comparisons', 'on', false);
END $$;

-- The plan of each statement, before and after, from EXPLAIN (ANALYZE,
-- FORMAT JSON): the scan of the table (its node type, the index it reads,
-- directly or through a Bitmap Index Scan below it), the planner's row
-- estimate of that scan and the rows it returned, and what it read and
-- threw away.  Not timed: EXPLAIN ANALYZE instruments every row.
CREATE FUNCTION bench_decode_plans()
RETURNS TABLE (label text, rewrite boolean, node text, index_name text,
               est_rows float8, actual_rows float8, removed float8, blocks text)
LANGUAGE plpgsql AS $$
DECLARE
    q record;
    plan jsonb;
    scan jsonb;
BEGIN
    FOR q IN SELECT * FROM bench_decode_queries() LOOP
        FOREACH rewrite IN ARRAY ARRAY[false, true] LOOP
            PERFORM set_config('snowflake.rewrite_timestamp_comparisons',
                               rewrite::text, false);
            EXECUTE 'EXPLAIN (ANALYZE, FORMAT JSON) ' || q.query INTO plan;
            scan := jsonb_path_query_first(plan,
                        'lax $[0].Plan.** ? (@."Relation Name" == $t)',
                        jsonb_build_object('t', q.tab));
            label := q.label;
            node := CASE WHEN (scan ->> 'Parallel Aware')::boolean THEN 'Parallel ' ELSE '' END
                    || (scan ->> 'Node Type');
            index_name := coalesce(scan ->> 'Index Name',
                                   jsonb_path_query_first(scan,
                                       'lax $.Plans[*] ? (exists(@."Index Name"))."Index Name"') #>> '{}',
                                   '-');
            est_rows := (scan ->> 'Plan Rows')::float8;
            actual_rows := (scan ->> 'Actual Rows')::float8 * (scan ->> 'Actual Loops')::float8;
            removed := coalesce((scan ->> 'Rows Removed by Filter')::float8, 0)
                     + coalesce((scan ->> 'Rows Removed by Index Recheck')::float8, 0);
            blocks := CASE
                WHEN scan ? 'Lossy Heap Blocks' THEN
                    format('%s exact, %s lossy heap blocks',
                           scan ->> 'Exact Heap Blocks', scan ->> 'Lossy Heap Blocks')
                WHEN scan ? 'Heap Fetches' THEN
                    format('%s heap fetches', scan ->> 'Heap Fetches')
                ELSE '-' END;
            RETURN NEXT;
        END LOOP;
    END LOOP;
    PERFORM set_config('snowflake.rewrite_timestamp_comparisons', 'on', false);
END $$;

-- What the functions cost per row over the rows of events: count(EXPR) of
-- the whole table, a sequential scan, EXPR one of the baselines * (reads
-- no column) and id (reads id), the no-op C function (reads no column) and
-- the functions the two plans call per row (read id).  Run 0 is a warm-up.
CREATE FUNCTION bench_decode_perrow(runs int)
RETURNS TABLE (expr text, run int, ms float8)
LANGUAGE plpgsql AS $$
DECLARE
    exprs text[] := ARRAY['*', 'id', 'snowflake_bench_noop()', 'snowflake_timestamp(id)',
                          'snowflake_timestamp_ge(id, now())'];
BEGIN
    FOR r IN 0..runs LOOP
        FOREACH expr IN ARRAY exprs LOOP
            run := r;
            ms := bench_ms(format('SELECT count(%s) FROM events', expr));
            RETURN NEXT;
        END LOOP;
    END LOOP;
END $$;

-- Per call, as part 1 of bench/run.sh: bench_query()'s cross join of two
-- series, n calls of each expression per run, interleaved, run 0 a
-- warm-up.  The snowflake functions get constant arguments: they are
-- STABLE, so the planner does not fold them and each row calls them.
CREATE FUNCTION bench_decode_percall(n bigint, runs int)
RETURNS TABLE (expr text, run int, ms float8)
LANGUAGE plpgsql AS $$
DECLARE
    id text := (snowflake_min_id(now()) + 12345)::text || '::bigint';
    ts text := quote_literal(now()::text) || '::timestamptz';
    labels text[] := ARRAY['1', 'snowflake_bench_noop()', 'nextval(''bench_seq'')',
                           'gen_random_uuid()', 'snowflake_timestamp(id)',
                           'snowflake_timestamp_ge(id, ts)',
                           'snowflake_timestamp_lower_id(ts, true)',
                           '(snowflake_decode(id)).ts'];
    exprs text[];
BEGIN
    exprs := ARRAY['1', 'snowflake_bench_noop()', 'nextval(''bench_seq'')',
                   'gen_random_uuid()',
                   format('snowflake_timestamp(%s)', id),
                   format('snowflake_timestamp_ge(%s, %s)', id, ts),
                   format('snowflake_timestamp_lower_id(%s, true)', ts),
                   format('(snowflake_decode(%s)).ts', id)];
    FOR r IN 0..runs LOOP
        FOR i IN 1..array_length(exprs, 1) LOOP
            expr := labels[i];
            run := r;
            ms := bench_ms(bench_query(exprs[i], n));
            RETURN NEXT;
        END LOOP;
    END LOOP;
END $$;
