-- Objects bench/type.sh (and part 8 of bench/run.sh) add to the "bench"
-- database, after setup.sql: two tables with the same IDs, one keyed by
-- bigint and one by the snowflake type, their children, and the timed
-- operations.  Every timing is bench_ms() of setup.sql (clock_timestamp()
-- around EXECUTE, inside the server).  A "kind" names the key's type and
-- the tables: t_bigint and t_snowflake (the parents), c_bigint and
-- c_snowflake (children whose parent column references them), ins_bigint and
-- ins_snowflake (INSERT targets, DEFAULT snowflake_nextval()), and, as
-- baselines for the INSERT, ins_bigserial and ins_uuid.

-- The windows of the range, timestamp and join statements (filled by
-- bench_type_data): ranks lo to hi of the IDs, their timestamps, children
-- c_lo to c_hi.
CREATE TABLE bench_type_windows (j int PRIMARY KEY, lo bigint, hi bigint, lo_ts timestamptz,
                                 hi_ts timestamptz, c_lo int, c_hi int);

-- The data both kinds share, made once: n IDs from snowflake_nextval(n)
-- (in batches of at most a million, its limit) with their rank, "children" children each with a random parent, the
-- probes of the point lookups (random IDs) and the windows of the range,
-- timestamp and join statements (spread evenly over the table).
CREATE FUNCTION bench_type_data(n int, children int, lookups int, windows int,
                                range_rows int, join_children int)
RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    IF range_rows >= n / windows OR join_children >= children / windows THEN
        RAISE EXCEPTION 'the % windows of % rows (% children) overlap in % rows (% children)',
            windows, range_rows, join_children, n, children;
    END IF;
    CREATE TABLE bench_type_ids AS
        SELECT row_number() OVER (ORDER BY id) AS rn, id
          FROM generate_series(0, (n - 1) / 1000000) AS b,
               LATERAL snowflake_nextval(least(1000000, n - b * 1000000)) AS id;
    CREATE UNIQUE INDEX ON bench_type_ids (rn);
    CREATE TABLE bench_type_children AS
        SELECT c.cid, i.id AS parent
          FROM (SELECT g AS cid, 1 + floor(random() * n)::bigint AS rn
                  FROM generate_series(1, children) AS g) AS c
          JOIN bench_type_ids AS i USING (rn);
    CREATE TABLE bench_type_probes AS
        SELECT p.i, ids.id
          FROM (SELECT g AS i, 1 + floor(random() * n)::bigint AS rn
                  FROM generate_series(1, lookups) AS g) AS p
          JOIN bench_type_ids AS ids USING (rn);
    -- Window j: ranks from its start to range_rows - 1 later; the timestamp
    -- window runs from the first ID's timestamp to the last one's
    -- (exclusive), at least 1 ms; the join window is join_children children.
    INSERT INTO bench_type_windows
        SELECT w.j, lo.id AS lo, hi.id AS hi,
               snowflake_timestamp(lo.id) AS lo_ts,
               greatest(snowflake_timestamp(hi.id),
                        snowflake_timestamp(lo.id) + interval '1 ms') AS hi_ts,
               w.c0 AS c_lo, w.c0 + join_children - 1 AS c_hi
          FROM (SELECT g AS j, 1 + (g - 1) * (n / windows) AS r0,
                       1 + (g - 1) * (children / windows) AS c0
                  FROM generate_series(1, windows) AS g) AS w
          JOIN bench_type_ids AS lo ON lo.rn = w.r0
          JOIN bench_type_ids AS hi ON hi.rn = w.r0 + range_rows - 1;
END $$;

-- Loads one kind's tables from the shared data, in ID order (the parents)
-- and child order (the children), as an application appending rows would
-- leave them; the keys and the children's index on parent are built after
-- the load.  No autovacuum: the rows insert_child adds during the rounds
-- would have it analyze one kind's children and not yet the other's, and
-- the two would be planned from different statistics; bench/type.sh runs
-- VACUUM ANALYZE once after the load.  Returns each step's milliseconds.
CREATE FUNCTION bench_type_load(kind text)
RETURNS TABLE (step text, ms float8)
LANGUAGE plpgsql SET maintenance_work_mem = '256MB' AS $$
DECLARE
    no_autovacuum text := 'WITH (autovacuum_enabled = off)';
BEGIN
    EXECUTE format('CREATE TABLE t_%1$s (id %1$s NOT NULL, v int NOT NULL) %2$s', kind, no_autovacuum);
    EXECUTE format('CREATE TABLE c_%1$s (cid int NOT NULL, parent %1$s NOT NULL) %2$s', kind, no_autovacuum);
    EXECUTE format('CREATE TABLE ins_%1$s (id %1$s PRIMARY KEY DEFAULT snowflake_nextval(), '
                   'v int NOT NULL) %2$s', kind, no_autovacuum);
    step := 'INSERT parents';
    ms := bench_ms(format('INSERT INTO t_%1$s SELECT id, rn %% 1000 FROM bench_type_ids ORDER BY rn',
                          kind));
    RETURN NEXT;
    step := 'primary key';
    ms := bench_ms(format('ALTER TABLE t_%1$s ADD PRIMARY KEY (id)', kind));
    RETURN NEXT;
    step := 'INSERT children';
    ms := bench_ms(format('INSERT INTO c_%1$s SELECT cid, parent FROM bench_type_children ORDER BY cid',
                          kind));
    RETURN NEXT;
    step := 'children''s key';
    ms := bench_ms(format('ALTER TABLE c_%1$s ADD PRIMARY KEY (cid)', kind));
    RETURN NEXT;
    step := 'foreign key';
    ms := bench_ms(format('ALTER TABLE c_%1$s ADD FOREIGN KEY (parent) REFERENCES t_%1$s', kind));
    RETURN NEXT;
    step := 'index on parent';
    ms := bench_ms(format('CREATE INDEX c_%1$s_parent ON c_%1$s (parent)', kind));
    RETURN NEXT;
END $$;

-- The INSERT baselines: a bigserial key and a uuid v4 key.
CREATE TABLE ins_bigserial (id bigserial PRIMARY KEY, v int NOT NULL)
    WITH (autovacuum_enabled = off);
CREATE TABLE ins_uuid (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), v int NOT NULL)
    WITH (autovacuum_enabled = off);

-- The operations, one function per kind and operation, made from one text
-- with the kind filled in, so that the two kinds run the same code.  Each
-- returns a check value (a sum or count), which bench/type.sh requires to
-- be the same for both kinds.
--
--   insert          reps single-row INSERTs, one statement each (PL/pgSQL's
--                   cached plan), the key from its DEFAULT
--   insert_child    reps single-row INSERTs into the children, each
--                   checked by the foreign key against the parents' key
--   lookup          the probes, one SELECT ... WHERE id = k each, k a
--                   variable of the key's type (a prepared statement: a
--                   cached plan with a parameter)
--   lookup_literal  the same, each statement sent as text with the ID as
--                   a literal (parsed and planned each time)
--   range, ts_range, ts_cast, join_window, join_all: the windows, each
--                   statement sent as text
--                   (bench_type_statement), so that bench_type_plans()
--                   explains exactly what ran
CREATE FUNCTION bench_type_make(kind text)
RETURNS void
LANGUAGE plpgsql AS $make$
BEGIN
    EXECUTE format($f$
        CREATE FUNCTION bench_type_insert_%1$s(reps int) RETURNS bigint
        LANGUAGE plpgsql AS $$
        BEGIN
            FOR i IN 1..reps LOOP
                INSERT INTO ins_%1$s (v) VALUES (i);
            END LOOP;
            RETURN reps;
        END $$;
    $f$, kind);
    IF kind NOT IN ('bigint', 'snowflake') THEN
        RETURN;
    END IF;
    EXECUTE format($f$
        CREATE FUNCTION bench_type_insert_child_%1$s(reps int) RETURNS bigint
        LANGUAGE plpgsql AS $$
        DECLARE
            probes %1$s[] := (SELECT array_agg(id ORDER BY i) FROM bench_type_probes)::%1$s[];
            c0 int := (SELECT min(cid) FROM c_%1$s) - 1;
        BEGIN
            FOR i IN 1..reps LOOP
                INSERT INTO c_%1$s (cid, parent) VALUES (c0 - i, probes[1 + (i - 1) %% array_length(probes, 1)]);
            END LOOP;
            RETURN reps;
        END $$;
    $f$, kind);
    EXECUTE format($f$
        CREATE FUNCTION bench_type_lookup_%1$s() RETURNS bigint
        LANGUAGE plpgsql AS $$
        DECLARE
            probes %1$s[] := (SELECT array_agg(id ORDER BY i) FROM bench_type_probes)::%1$s[];
            k %1$s;
            x int;
            s bigint := 0;
        BEGIN
            FOREACH k IN ARRAY probes LOOP
                SELECT v INTO STRICT x FROM t_%1$s WHERE id = k;
                s := s + x;
            END LOOP;
            RETURN s;
        END $$;
    $f$, kind);
    EXECUTE format($f$
        CREATE FUNCTION bench_type_lookup_literal_%1$s(reps int) RETURNS bigint
        LANGUAGE plpgsql AS $$
        DECLARE
            probes %1$s[] := (SELECT array_agg(id ORDER BY i) FROM bench_type_probes)::%1$s[];
            x int;
            s bigint := 0;
        BEGIN
            FOR i IN 1..least(reps, array_length(probes, 1)) LOOP
                EXECUTE 'SELECT v FROM t_%1$s WHERE id = ' || probes[i] INTO STRICT x;
                s := s + x;
            END LOOP;
            RETURN s;
        END $$;
    $f$, kind);
END $make$;

SELECT bench_type_make(k) FROM unnest(ARRAY['bigint', 'snowflake', 'bigserial', 'uuid']) AS k;

-- The statement of one window of range, ts_range, ts_cast, join_window or
-- join_all, for one kind, with its bounds as literals.
CREATE FUNCTION bench_type_statement(op text, kind text, w bench_type_windows)
RETURNS text
LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN CASE op
        WHEN 'range' THEN
            format('SELECT count(v) FROM t_%s WHERE id BETWEEN %s AND %s', kind, w.lo, w.hi)
        WHEN 'ts_range' THEN
            format('SELECT count(v) FROM t_%s WHERE snowflake_timestamp(id) >= %L '
                   'AND snowflake_timestamp(id) < %L', kind, w.lo_ts, w.hi_ts)
        -- The type's own cast; bigint has none, so its side is ts_range's.
        WHEN 'ts_cast' THEN
            CASE kind WHEN 'snowflake' THEN
                format('SELECT count(v) FROM t_%s WHERE id::timestamptz >= %L '
                       'AND id::timestamptz < %L', kind, w.lo_ts, w.hi_ts)
            ELSE bench_type_statement('ts_range', kind, w) END
        WHEN 'join_window' THEN
            format('SELECT count(p.v) FROM c_%1$s AS c JOIN t_%1$s AS p ON p.id = c.parent '
                   'WHERE c.cid BETWEEN %2$s AND %3$s', kind, w.c_lo, w.c_hi)
        WHEN 'join_all' THEN
            format('SELECT count(p.v) FROM c_%1$s AS c JOIN t_%1$s AS p ON p.id = c.parent '
                   'WHERE c.cid > 0', kind)
    END;
END $$;

-- Runs the statements of op over every window (join_all: once), returns
-- the sum of their counts.
CREATE FUNCTION bench_type_windows_run(op text, kind text)
RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    w bench_type_windows;
    x bigint;
    s bigint := 0;
BEGIN
    FOR w IN SELECT * FROM bench_type_windows ORDER BY j LOOP
        EXECUTE bench_type_statement(op, kind, w) INTO x;
        s := s + x;
        EXIT WHEN op = 'join_all';
    END LOOP;
    RETURN s;
END $$;

-- One operation on one kind, timed: its milliseconds and check value.
CREATE FUNCTION bench_type_op(op text, kind text, reps int, OUT ms float8, OUT check_value bigint)
LANGUAGE plpgsql AS $$
DECLARE
    q text := CASE
        WHEN op IN ('range', 'ts_range', 'ts_cast', 'join_window', 'join_all') THEN
            format('SELECT bench_type_windows_run(%L, %L)', op, kind)
        WHEN op = 'lookup' THEN format('SELECT bench_type_lookup_%s()', kind)
        ELSE format('SELECT bench_type_%s_%s(%s)', op, kind, reps) END;
    t0 timestamptz;
BEGIN
    t0 := clock_timestamp();
    EXECUTE q INTO check_value;
    ms := extract(epoch FROM clock_timestamp() - t0) * 1000;
END $$;

-- The rounds: run 0 a warm-up, then "runs" rounds; in each, every
-- operation on both kinds (the INSERT on the baselines' keys too) and the
-- per-call baselines of bench/run.sh's part 1 statement.  Each operation
-- runs "alternations" times in the order A B B A (with more variants
-- A B C D D C B A), the variant that is A turning each time, so that a load
-- that comes and goes on the machine weighs on every variant alike;
-- join_all and the per-call baselines, whose units are longer, once.
-- reps: the INSERTs per insert unit, literal_reps the literal lookups per
-- unit; percall_n: the calls of each per-call baseline.
CREATE FUNCTION bench_type_rounds(runs int, alternations int, reps int, literal_reps int,
                                  percall_n bigint)
RETURNS TABLE (op text, kind text, run int, ms float8, check_value bigint)
LANGUAGE plpgsql AS $$
DECLARE
    ops text[] := ARRAY['insert', 'insert_child', 'lookup', 'lookup_literal', 'range',
                        'ts_range', 'ts_cast', 'join_window', 'join_all', 'percall'];
    exprs text[] := ARRAY['1', 'snowflake_bench_noop()', 'snowflake_nextval()',
                          'nextval(''bench_seq'')', 'gen_random_uuid()'];
    kinds text[];
    turn text[];
    n int;
BEGIN
    FOR r IN 0..runs LOOP
        run := r;
        FOREACH op IN ARRAY ops LOOP
            kinds := CASE op WHEN 'insert' THEN ARRAY['bigint', 'snowflake', 'bigserial', 'uuid']
                             WHEN 'percall' THEN exprs
                             ELSE ARRAY['bigint', 'snowflake'] END;
            n := array_length(kinds, 1);
            FOR a IN 1..CASE WHEN op IN ('join_all', 'percall') THEN 1 ELSE alternations END LOOP
                turn := ARRAY(SELECT kinds[1 + (i + r + a) % n] FROM generate_series(0, n - 1) AS i);
                turn := turn || ARRAY(SELECT turn[i] FROM generate_series(n, 1, -1) AS i);
                FOREACH kind IN ARRAY turn LOOP
                    IF op = 'percall' THEN
                        ms := bench_ms(bench_query(kind, percall_n));
                        check_value := NULL;
                    ELSE
                        SELECT o.ms, o.check_value INTO ms, check_value
                          FROM bench_type_op(op, kind,
                                             CASE WHEN op = 'lookup_literal' THEN literal_reps
                                                  ELSE reps END) AS o;
                    END IF;
                    RETURN NEXT;
                END LOOP;
            END LOOP;
        END LOOP;
    END LOOP;
END $$;

-- The plan's shape: node types, the relation and index each scan reads,
-- children in brackets; the kind's name in table and index names written
-- as K, so that the shapes of the two kinds compare as text.
CREATE FUNCTION bench_type_shape(plan jsonb, kind text)
RETURNS text
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    s text := plan ->> 'Node Type';
    kids text;
BEGIN
    IF plan ? 'Index Name' THEN
        s := s || ' using ' || (plan ->> 'Index Name');
    ELSIF plan ? 'Relation Name' THEN
        s := s || ' on ' || (plan ->> 'Relation Name');
    END IF;
    SELECT string_agg(bench_type_shape(p, kind), ', ') INTO kids
      FROM jsonb_array_elements(coalesce(plan -> 'Plans', '[]')) AS p;
    IF kids IS NOT NULL THEN
        s := s || ' [' || kids || ']';
    END IF;
    RETURN replace(s, '_' || kind, '_K');
END $$;

-- The plan of each operation that reads the key, for each kind, from
-- EXPLAIN (FORMAT JSON): for lookup, the generic plan of the prepared
-- statement (what a cached plan with a parameter runs); for
-- lookup_literal, the first probe's statement; for the others, the
-- statement of every window (j) as it runs.  Also the index condition of
-- the first scan that has one.
CREATE FUNCTION bench_type_plans()
RETURNS TABLE (op text, kind text, j int, shape text, index_cond text)
LANGUAGE plpgsql AS $$
DECLARE
    w bench_type_windows;
    plan jsonb;
    probe bigint;
BEGIN
    SELECT id INTO probe FROM bench_type_probes ORDER BY i LIMIT 1;
    FOREACH kind IN ARRAY ARRAY['bigint', 'snowflake'] LOOP
        FOREACH op IN ARRAY ARRAY['lookup', 'lookup_literal', 'range', 'ts_range', 'ts_cast',
                                  'join_window', 'join_all'] LOOP
            FOR w IN SELECT * FROM bench_type_windows ORDER BY j LOOP
                j := w.j;
                IF op = 'lookup' THEN
                    EXECUTE format('PREPARE bench_type_q(%1$s) AS SELECT v FROM t_%1$s WHERE id = $1', kind);
                    SET LOCAL plan_cache_mode = force_generic_plan;
                    EXECUTE format('EXPLAIN (FORMAT JSON) EXECUTE bench_type_q(%s)', probe) INTO plan;
                    RESET plan_cache_mode;
                    DEALLOCATE bench_type_q;
                ELSIF op = 'lookup_literal' THEN
                    EXECUTE format('EXPLAIN (FORMAT JSON) SELECT v FROM t_%s WHERE id = %s', kind, probe)
                       INTO plan;
                ELSE
                    EXECUTE 'EXPLAIN (FORMAT JSON) ' || bench_type_statement(op, kind, w) INTO plan;
                END IF;
                shape := bench_type_shape(plan -> 0 -> 'Plan', kind);
                index_cond := jsonb_path_query_first(plan, 'strict $.**."Index Cond"') #>> '{}';
                RETURN NEXT;
                EXIT WHEN op IN ('lookup', 'lookup_literal', 'join_all');
            END LOOP;
        END LOOP;
    END LOOP;
END $$;
