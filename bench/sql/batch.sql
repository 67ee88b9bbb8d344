-- Objects bench/batch.sh adds to the "bench" database, after setup.sql.

-- The statement that yields n values of "expr", one call per row, and
-- counts them: "n single calls in one statement".
CREATE FUNCTION bench_single(expr text, n int) RETURNS text
LANGUAGE sql IMMUTABLE
RETURN format('SELECT count(x) FROM (SELECT %s AS x FROM generate_series(1, %s)) AS s',
              expr, n);

-- Each form of the statement once per run, interleaved so that a slow
-- patch of the machine hits all of them; run 0 is a warm-up (it also
-- attaches the session to a worker slot).  Milliseconds per statement.
CREATE FUNCTION bench_batch(n int, runs int)
RETURNS TABLE (form text, run int, ms float8)
LANGUAGE plpgsql AS $$
DECLARE
    forms text[] := ARRAY[
        'baseline 1',
        'single snowflake_nextval()',
        'batch, select list',
        'batch, FROM',
        'single nextval(''bench_seq'')',
        'single gen_random_uuid()',
        'single snowflake_bench_noop()'];
    queries text[] := ARRAY[
        bench_single('1', n),
        bench_single('snowflake_nextval()', n),
        format('SELECT count(x) FROM (SELECT snowflake_nextval(%s) AS x) AS s', n),
        format('SELECT count(x) FROM snowflake_nextval(%s) AS x', n),
        bench_single('nextval(''bench_seq'')', n),
        bench_single('gen_random_uuid()', n),
        bench_single('snowflake_bench_noop()', n)];
BEGIN
    FOR r IN 0..runs LOOP
        FOR i IN 1..array_length(forms, 1) LOOP
            form := forms[i];
            run := r;
            ms := bench_ms(queries[i]);
            RETURN NEXT;
        END LOOP;
    END LOOP;
END $$;
