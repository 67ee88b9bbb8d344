/* snowflake--1.3--1.4.sql: worker-id leases for application-side generators */

\echo Use "ALTER EXTENSION snowflake UPDATE TO '1.4'" to load this file. \quit

-- An application instance that makes its own Snowflake IDs leases a worker
-- id of this node's lease space (the top snowflake.lease_workers ids) and
-- issues IDs whose timestamps lie strictly between the lease's not_before
-- and not_after.  Consecutive holders of one worker id get windows that do
-- not overlap, whatever their clocks say, because the next holder's
-- not_before is at least
--   - the last timestamp the previous holder reported (renew or release),
--   - the previous not_after - 1, unless the holder released the lease
--     (a TTL lease that expired, or a connection that vanished: either may
--     have issued IDs up to there),
--   - the previous not_before,
--   - this run's generation floor - 1 (a worker id that sessions used
--     before this start, when the lease space grew).
-- See docs/leases.md.
--
-- The lease functions run as the extension's owner (SECURITY DEFINER)
-- under search_path = pg_catalog, pg_temp, and name every function and
-- operator with its schema (pg_catalog, or the extension's), so that no
-- object another role creates can take part in them.  (Syntax such as
-- extract(), coalesce(), greatest(), IS NULL and casts to built-in types
-- resolves in pg_catalog by itself.)  OPERATOR() binds left to right at
-- one precedence: compound expressions are parenthesised.
-- Every change is serialised by a SHARE ROW EXCLUSIVE lock on the lease
-- table, taken for the transaction with a bounded wait (lock_timeout): a
-- lock that only roles who may write the table can take, and that readers
-- of the view do not wait for.

CREATE FUNCTION snowflake_lease_context(caller text,
                                        OUT node_id integer,
                                        OUT first_worker_id integer,
                                        OUT lease_workers integer,
                                        OUT sessions_floor timestamptz,
                                        OUT instance_id uuid,
                                        OUT connection_window_ms integer,
                                        OUT epoch timestamptz,
                                        OUT timestamp_bits integer,
                                        OUT node_bits integer,
                                        OUT worker_bits integer,
                                        OUT sequence_bits integer)
RETURNS record
AS 'MODULE_PATHNAME', 'snowflake_lease_context'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

REVOKE ALL ON FUNCTION snowflake_lease_context(text) FROM PUBLIC;

COMMENT ON FUNCTION snowflake_lease_context(text) IS
    'Internal: refuses an unsafe lease call and returns what the lease functions need from the server';

-- One row per worker id of a node's lease space that was ever leased.  The
-- row outlives its leases: it carries the worker id's history (the last
-- not_before, not_after and reported timestamp) to the next holder.
CREATE TABLE snowflake_worker_leases (
    node_id           integer NOT NULL,
    worker_id         integer NOT NULL,
    token             bigint NOT NULL,    -- of the last grant; grows per node
    holder            text NOT NULL,      -- as the client described itself
    holder_role       name NOT NULL,      -- session_user of the grant
    client_addr       inet,               -- of the leasing connection
    application_name  text,               -- of the leasing connection
    backend_pid       integer,            -- connection-scoped: the holding connection ...
    backend_start     timestamptz,        -- ... when it started ...
    instance_id       uuid,               -- ... and in which run of the server
    ttl               interval,           -- NULL: connection-scoped
    window_ms         bigint NOT NULL,    -- the ttl, or the connection window, in ms
    layout            text NOT NULL,      -- "epoch_ms/node_bits/worker_bits/sequence_bits" of the grant
    granted_at        timestamptz NOT NULL,
    renewed_at        timestamptz NOT NULL,
    not_before_ms     bigint NOT NULL,    -- Unix ms: the holder's IDs lie above ...
    not_after_ms      bigint NOT NULL,    -- ... and below
    last_timestamp_ms bigint,             -- the last reported, Unix ms; NULL: none
    released_at       timestamptz,
    PRIMARY KEY (node_id, worker_id),
    UNIQUE (node_id, token)
);

-- pg_dump carries the history, so a restored cluster hands out no window
-- that overlaps one already used.
SELECT pg_catalog.pg_extension_config_dump('snowflake_worker_leases', '');

COMMENT ON TABLE snowflake_worker_leases IS
    'Worker ids leased to application-side generators, one row per worker id ever leased; read snowflake_leases';

-- Whether the connection that holds a connection-scoped lease still runs:
-- the same pid, started at the same moment.  (Callers also compare the
-- row's instance_id with this run of the server's.)  SECURITY DEFINER
-- because pg_stat_activity shows backend_start only to the session's own
-- role and to pg_read_all_stats; it tells no more than whether a guessed
-- pid and start time, to the microsecond, belong to a running session.
-- PUBLIC keeps EXECUTE: snowflake_leases calls it with its reader's rights,
-- and a role granted SELECT on the view needs it.
CREATE FUNCTION snowflake_lease_connection_alive(pid integer, started timestamptz)
RETURNS boolean
LANGUAGE sql STABLE STRICT PARALLEL RESTRICTED SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_stat_get_activity(pid) AS a
                WHERE a.backend_start OPERATOR(pg_catalog.=) started)
$$;

COMMENT ON FUNCTION snowflake_lease_connection_alive(integer, timestamptz) IS
    'Internal: whether the connection holding a connection-scoped lease still runs';

-- Unix milliseconds to timestamptz and back, exactly (the millisecond of a
-- timestamptz rounded down).
CREATE FUNCTION snowflake_lease_time(unix_ms bigint)
RETURNS timestamptz
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT pg_catalog.to_timestamp(unix_ms OPERATOR(pg_catalog./) 1000.0) $$;

REVOKE ALL ON FUNCTION snowflake_lease_time(bigint) FROM PUBLIC;

COMMENT ON FUNCTION snowflake_lease_time(bigint) IS
    'Internal: converts Unix milliseconds to timestamptz';

CREATE FUNCTION snowflake_lease_ms(ts timestamptz)
RETURNS bigint
LANGUAGE sql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT pg_catalog.floor(extract(epoch FROM ts) OPERATOR(pg_catalog.*) 1000)::bigint $$;

REVOKE ALL ON FUNCTION snowflake_lease_ms(timestamptz) FROM PUBLIC;

COMMENT ON FUNCTION snowflake_lease_ms(timestamptz) IS
    'Internal: converts a timestamptz to Unix milliseconds, rounding down';

-- A layout as a lease records it, "epoch_ms/node_bits/worker_bits/sequence_bits".
CREATE FUNCTION snowflake_lease_layout(epoch timestamptz, node_bits integer, worker_bits integer,
                                       sequence_bits integer)
RETURNS text
LANGUAGE sql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
SELECT pg_catalog.format('%s/%s/%s/%s', @extschema@.snowflake_lease_ms(epoch), node_bits, worker_bits,
                         sequence_bits)
$$;

REVOKE ALL ON FUNCTION snowflake_lease_layout(timestamptz, integer, integer, integer) FROM PUBLIC;

COMMENT ON FUNCTION snowflake_lease_layout(timestamptz, integer, integer, integer) IS
    'Internal: a layout as a worker-id lease records it';

-- The clock checks of a lease and a renewal: the client's clock against the
-- database's, and against the last timestamp the worker id's previous
-- holder reported (a new holder with a clock behind it would have to wait).
CREATE FUNCTION snowflake_lease_check_clock(client_time timestamptz, db_now_ms bigint,
                                            reported_ms bigint)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    client_ms bigint;
    tolerance_ms bigint;
BEGIN
    IF client_time IS NULL THEN
        RETURN;
    END IF;
    -- snowflake.lease_clock_tolerance, shown with its unit ("1s").
    tolerance_ms := pg_catalog.floor(extract(epoch FROM pg_catalog.current_setting('snowflake.lease_clock_tolerance')::interval)
                                     OPERATOR(pg_catalog.*) 1000)::bigint;
    client_ms := @extschema@.snowflake_lease_ms(client_time);
    IF client_ms OPERATOR(pg_catalog.<) (db_now_ms OPERATOR(pg_catalog.-) tolerance_ms) THEN
        RAISE EXCEPTION 'the client''s clock is behind the database''s by more than % ms', tolerance_ms
              USING ERRCODE = 'invalid_parameter_value',
                    DETAIL = pg_catalog.format('The client reported %s, %s ms before the database''s clock.',
                                               client_time, db_now_ms OPERATOR(pg_catalog.-) client_ms),
                    HINT = 'Synchronise the client''s clock (NTP), or raise snowflake.lease_clock_tolerance.';
    ELSIF client_ms OPERATOR(pg_catalog.>) (db_now_ms OPERATOR(pg_catalog.+) tolerance_ms) THEN
        RAISE EXCEPTION 'the client''s clock is ahead of the database''s by more than % ms', tolerance_ms
              USING ERRCODE = 'invalid_parameter_value',
                    DETAIL = pg_catalog.format('The client reported %s, %s ms after the database''s clock.',
                                               client_time, client_ms OPERATOR(pg_catalog.-) db_now_ms),
                    HINT = 'Synchronise the client''s clock (NTP), or raise snowflake.lease_clock_tolerance.';
    ELSIF client_ms OPERATOR(pg_catalog.<) (reported_ms OPERATOR(pg_catalog.-) tolerance_ms) THEN
        RAISE EXCEPTION 'the client''s clock is behind the last timestamp of the worker id''s previous holder by more than % ms',
                        tolerance_ms
              USING ERRCODE = 'invalid_parameter_value',
                    DETAIL = pg_catalog.format('The client reported %s; the previous holder reported an ID of %s.',
                                               client_time, @extschema@.snowflake_lease_time(reported_ms)),
                    HINT = 'Synchronise the client''s clock (NTP), then lease again.';
    END IF;
END
$$;

REVOKE ALL ON FUNCTION snowflake_lease_check_clock(timestamptz, bigint, bigint) FROM PUBLIC;

COMMENT ON FUNCTION snowflake_lease_check_clock(timestamptz, bigint, bigint) IS
    'Internal: refuses a client whose clock is too far from the database''s or behind a worker id''s last timestamp';

-- The timestamp of a reported ID, checked against the lease it was issued
-- under: the lease's node and worker id, strictly inside its window.
CREATE FUNCTION snowflake_lease_reported_ms(lease @extschema@.snowflake_worker_leases,
                                            last_id bigint)
RETURNS bigint
LANGUAGE plpgsql STABLE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    d record;
    ms bigint;
BEGIN
    IF last_id IS NULL THEN
        RETURN NULL;
    END IF;
    -- It refuses a negative ID (22003).
    SELECT * INTO d FROM @extschema@.snowflake_decode(last_id);
    IF d.node_id OPERATOR(pg_catalog.<>) lease.node_id
       OR d.worker_id OPERATOR(pg_catalog.<>) lease.worker_id THEN
        RAISE EXCEPTION 'snowflake ID % was not issued under lease %', last_id, lease.token
              USING ERRCODE = 'invalid_parameter_value',
                    DETAIL = pg_catalog.format('It carries node id %s and worker id %s; the lease is worker id %s of node %s.',
                                               d.node_id, d.worker_id, lease.worker_id, lease.node_id);
    END IF;
    ms := @extschema@.snowflake_lease_ms(d.ts);
    IF ms OPERATOR(pg_catalog.<=) lease.not_before_ms OR ms OPERATOR(pg_catalog.>=) lease.not_after_ms THEN
        RAISE EXCEPTION 'snowflake ID % lies outside the window of lease %', last_id, lease.token
              USING ERRCODE = 'invalid_parameter_value',
                    DETAIL = pg_catalog.format('Its timestamp is %s; the lease''s IDs lie after %s and before %s.',
                                               d.ts, @extschema@.snowflake_lease_time(lease.not_before_ms),
                                               @extschema@.snowflake_lease_time(lease.not_after_ms));
    END IF;
    RETURN ms;
END
$$;

REVOKE ALL ON FUNCTION snowflake_lease_reported_ms(snowflake_worker_leases, bigint) FROM PUBLIC;

COMMENT ON FUNCTION snowflake_lease_reported_ms(snowflake_worker_leases, bigint) IS
    'Internal: the timestamp of an ID reported for a lease, which must lie in the lease''s window';

-- The start of a renewal or release ("caller"): the refusals of
-- snowflake_lease_context(), the table lock, and the lease the token names,
-- which must be held by this node, in this node's lease space and layout
-- (both may have changed at a restart), by the calling role (or a
-- superuser), and for a connection-scoped lease by this connection.
CREATE FUNCTION snowflake_lease_held(token bigint, caller text)
RETURNS @extschema@.snowflake_worker_leases
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    ctx record;
    node integer;
    lease @extschema@.snowflake_worker_leases;
BEGIN
    IF token IS NULL THEN
        RAISE EXCEPTION '% needs a lease token', caller
              USING ERRCODE = 'null_value_not_allowed';
    END IF;
    ctx := @extschema@.snowflake_lease_context(caller);
    node := ctx.node_id;
    LOCK TABLE @extschema@.snowflake_worker_leases IN SHARE ROW EXCLUSIVE MODE;
    SELECT * INTO lease FROM @extschema@.snowflake_worker_leases AS l
     WHERE l.node_id OPERATOR(pg_catalog.=) node
       AND l.token OPERATOR(pg_catalog.=) snowflake_lease_held.token;
    IF FOUND AND (lease.worker_id OPERATOR(pg_catalog.<) ctx.first_worker_id
                  OR lease.layout OPERATOR(pg_catalog.<>)
                     @extschema@.snowflake_lease_layout(ctx.epoch, ctx.node_bits, ctx.worker_bits,
                                                        ctx.sequence_bits)) THEN
        RAISE EXCEPTION 'snowflake lease % is not held', token
              USING ERRCODE = 'object_not_in_prerequisite_state',
                    DETAIL = pg_catalog.format('Its worker id %s was leased under another layout or lease space than this server''s (snowflake.worker_bits, snowflake.lease_workers and the others changed at a restart).',
                                               lease.worker_id),
                    HINT = 'Stop issuing IDs under this lease, and lease a worker id again.';
    END IF;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'snowflake lease % is not held', token
              USING ERRCODE = 'object_not_in_prerequisite_state',
                    DETAIL = pg_catalog.format('Node %s holds no lease with this token: the lease expired or its connection ended, and its worker id was leased again, or the token was never granted here.',
                                               node),
                    HINT = 'Stop issuing IDs under this lease, and lease a worker id again.';
    END IF;
    IF lease.holder_role OPERATOR(pg_catalog.<>) session_user
       AND NOT (SELECT r.rolsuper FROM pg_catalog.pg_roles AS r
                 WHERE r.rolname OPERATOR(pg_catalog.=) session_user) THEN
        RAISE EXCEPTION 'snowflake lease % belongs to another role', token
              USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF lease.ttl IS NULL AND lease.released_at IS NULL
       AND NOT (lease.backend_pid OPERATOR(pg_catalog.=) pg_catalog.pg_backend_pid()
                AND lease.instance_id OPERATOR(pg_catalog.=) ctx.instance_id) THEN
        RAISE EXCEPTION 'snowflake lease % belongs to another connection', token
              USING ERRCODE = 'object_not_in_prerequisite_state',
                    DETAIL = 'A connection-scoped lease is held by the connection that took it, and ends with it.',
                    HINT = pg_catalog.format('Call %s on that connection.', caller);
    END IF;
    RETURN lease;
END
$$;

REVOKE ALL ON FUNCTION snowflake_lease_held(bigint, text) FROM PUBLIC;

COMMENT ON FUNCTION snowflake_lease_held(bigint, text) IS
    'Internal: the lease a token names, if the caller holds it';

CREATE FUNCTION snowflake_lease_worker(holder text,
                                       ttl interval DEFAULT NULL,
                                       client_time timestamptz DEFAULT NULL,
                                       OUT worker_id integer,
                                       OUT node_id integer,
                                       OUT token bigint,
                                       OUT not_before timestamptz,
                                       OUT not_after timestamptz,
                                       OUT expires_at timestamptz,
                                       OUT granted_at timestamptz,
                                       OUT renew_interval interval,
                                       OUT epoch timestamptz,
                                       OUT timestamp_bits integer,
                                       OUT node_bits integer,
                                       OUT worker_bits integer,
                                       OUT sequence_bits integer)
RETURNS record
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '10s'
AS $$
DECLARE
    ctx record;
    chosen record;
    now_ms bigint;
    floor_ms bigint;
    window_ms bigint;
    nb_ms bigint;
    next_free timestamptz;
BEGIN
    ctx := @extschema@.snowflake_lease_context('snowflake_lease_worker()');
    IF holder IS NULL OR holder OPERATOR(pg_catalog.=) '' THEN
        RAISE EXCEPTION 'snowflake_lease_worker() needs a holder'
              USING ERRCODE = 'invalid_parameter_value',
                    HINT = 'Describe the instance that leases, such as its host, process id and name.';
    END IF;
    -- One conversion of the ttl, stored with the lease and used by every
    -- renewal: months (of no fixed length) are refused, days are 24 h.
    IF ttl IS NOT NULL THEN
        window_ms := pg_catalog.floor(extract(epoch FROM ttl) OPERATOR(pg_catalog.*) 1000)::bigint;
        IF extract(year FROM ttl) OPERATOR(pg_catalog.<>) 0
           OR extract(month FROM ttl) OPERATOR(pg_catalog.<>) 0
           OR window_ms OPERATOR(pg_catalog.<) 1000
           OR window_ms OPERATOR(pg_catalog.>) 86400000 THEN
            RAISE EXCEPTION 'a snowflake lease''s ttl must lie between 1 second and 24 hours, not %', ttl
                  USING ERRCODE = 'invalid_parameter_value',
                        HINT = 'Pass NULL for a lease held as long as the connection.';
        END IF;
    ELSE
        window_ms := ctx.connection_window_ms;
    END IF;
    IF ctx.lease_workers OPERATOR(pg_catalog.=) 0 THEN
        RAISE EXCEPTION 'no snowflake worker ids are set aside for leases'
              USING ERRCODE = 'object_not_in_prerequisite_state',
                    HINT = 'Set snowflake.lease_workers in postgresql.conf and restart the server.';
    END IF;
    LOCK TABLE @extschema@.snowflake_worker_leases IN SHARE ROW EXCLUSIVE MODE;

    now_ms := @extschema@.snowflake_lease_ms(pg_catalog.clock_timestamp());
    floor_ms := @extschema@.snowflake_lease_ms(ctx.sessions_floor);
    -- The free worker id freed longest ago (released, expired, or whose
    -- connection ended); never leased ones first.
    SELECT w.id AS worker_id, l.*,
           coalesce(@extschema@.snowflake_lease_ms(l.released_at), l.not_after_ms) AS free_since_ms
      INTO chosen
      FROM pg_catalog.generate_series(ctx.first_worker_id,
                                      (ctx.first_worker_id OPERATOR(pg_catalog.+) ctx.lease_workers)
                                      OPERATOR(pg_catalog.-) 1) AS w(id)
           LEFT JOIN @extschema@.snowflake_worker_leases AS l
             ON l.node_id OPERATOR(pg_catalog.=) ctx.node_id
            AND l.worker_id OPERATOR(pg_catalog.=) w.id
     WHERE l.worker_id IS NULL
        OR l.released_at IS NOT NULL
        OR (l.ttl IS NOT NULL AND l.not_after_ms OPERATOR(pg_catalog.<=) now_ms)
        OR (l.ttl IS NULL
            AND NOT (l.instance_id OPERATOR(pg_catalog.=) ctx.instance_id
                     AND coalesce(@extschema@.snowflake_lease_connection_alive(l.backend_pid,
                                                                               l.backend_start), false)))
     ORDER BY free_since_ms NULLS FIRST, w.id
     LIMIT 1;
    IF NOT FOUND THEN
        SELECT pg_catalog.min(@extschema@.snowflake_lease_time(l.not_after_ms)) INTO next_free
          FROM @extschema@.snowflake_worker_leases AS l
         WHERE l.node_id OPERATOR(pg_catalog.=) ctx.node_id AND l.ttl IS NOT NULL
           AND l.worker_id OPERATOR(pg_catalog.>=) ctx.first_worker_id;
        RAISE EXCEPTION 'all % snowflake worker ids set aside for leases are leased', ctx.lease_workers
              USING ERRCODE = 'configuration_limit_exceeded',
                    DETAIL = pg_catalog.format('Node %s sets aside %s worker ids (snowflake.lease_workers). %s',
                                               ctx.node_id, ctx.lease_workers,
                                               CASE WHEN next_free IS NULL
                                                    THEN 'Every lease is held by a connection.'
                                                    ELSE pg_catalog.format('The first time-scoped lease runs out at %s unless renewed.',
                                                                           next_free) END),
                    HINT = 'Release leases that are no longer used, or raise snowflake.lease_workers and restart the server.';
    END IF;

    PERFORM @extschema@.snowflake_lease_check_clock(client_time, now_ms, chosen.last_timestamp_ms);

    -- Above the sessions that used the worker id before this start, and
    -- above the previous holder: its last report, its not_before, and the
    -- end of its window unless it released.
    nb_ms := greatest(floor_ms,
                      chosen.not_before_ms,
                      chosen.last_timestamp_ms,
                      CASE WHEN chosen.released_at IS NULL
                           THEN chosen.not_after_ms OPERATOR(pg_catalog.-) 1 END);
    -- A worker id whose holders vanished one after another, each just after
    -- its grant, would push not_before ever further ahead: refuse a wait
    -- longer than one connection window rather than hand it out.
    IF nb_ms OPERATOR(pg_catalog.>) (greatest(now_ms, floor_ms)
                                     OPERATOR(pg_catalog.+) ctx.connection_window_ms) THEN
        RAISE EXCEPTION 'no snowflake worker id can be leased before %',
                        @extschema@.snowflake_lease_time(nb_ms OPERATOR(pg_catalog.+) 1)
              USING ERRCODE = 'configuration_limit_exceeded',
                    DETAIL = pg_catalog.format('Worker id %s, the free one freed longest ago, was held until then by holders that vanished.',
                                               chosen.worker_id),
                    HINT = 'Lease again after that time, or raise snowflake.lease_workers and restart the server.';
    END IF;

    INSERT INTO @extschema@.snowflake_worker_leases AS l
           (node_id, worker_id, token, holder, holder_role, client_addr, application_name,
            backend_pid, backend_start, instance_id, ttl, window_ms, layout, granted_at, renewed_at,
            not_before_ms, not_after_ms, last_timestamp_ms, released_at)
    SELECT ctx.node_id, chosen.worker_id,
           coalesce((SELECT pg_catalog.max(o.token) FROM @extschema@.snowflake_worker_leases AS o
                      WHERE o.node_id OPERATOR(pg_catalog.=) ctx.node_id), 0) OPERATOR(pg_catalog.+) 1,
           holder, session_user, pg_catalog.inet_client_addr(),
           pg_catalog.current_setting('application_name'),
           CASE WHEN ttl IS NULL THEN pg_catalog.pg_backend_pid() END,
           CASE WHEN ttl IS NULL THEN (SELECT a.backend_start
                                         FROM pg_catalog.pg_stat_get_activity(pg_catalog.pg_backend_pid()) AS a) END,
           CASE WHEN ttl IS NULL THEN ctx.instance_id END,
           ttl, window_ms,
           @extschema@.snowflake_lease_layout(ctx.epoch, ctx.node_bits, ctx.worker_bits, ctx.sequence_bits),
           pg_catalog.clock_timestamp(), pg_catalog.clock_timestamp(), nb_ms,
           greatest(now_ms, nb_ms) OPERATOR(pg_catalog.+) window_ms, NULL, NULL
    ON CONFLICT ON CONSTRAINT snowflake_worker_leases_pkey DO UPDATE
       SET token = excluded.token, holder = excluded.holder, holder_role = excluded.holder_role,
           client_addr = excluded.client_addr, application_name = excluded.application_name,
           backend_pid = excluded.backend_pid, backend_start = excluded.backend_start,
           instance_id = excluded.instance_id, ttl = excluded.ttl,
           window_ms = excluded.window_ms, layout = excluded.layout,
           granted_at = excluded.granted_at, renewed_at = excluded.renewed_at,
           not_before_ms = excluded.not_before_ms, not_after_ms = excluded.not_after_ms,
           last_timestamp_ms = NULL, released_at = NULL
    RETURNING l.worker_id, l.node_id, l.token, @extschema@.snowflake_lease_time(l.not_before_ms),
              @extschema@.snowflake_lease_time(l.not_after_ms),
              CASE WHEN l.ttl IS NOT NULL THEN @extschema@.snowflake_lease_time(l.not_after_ms) END,
              l.granted_at
         INTO worker_id, node_id, token, not_before, not_after, expires_at, granted_at;

    renew_interval := (window_ms OPERATOR(pg_catalog./) 3) OPERATOR(pg_catalog.*) interval '1 millisecond';
    epoch := ctx.epoch;
    timestamp_bits := ctx.timestamp_bits;
    node_bits := ctx.node_bits;
    worker_bits := ctx.worker_bits;
    sequence_bits := ctx.sequence_bits;
END
$$;

REVOKE ALL ON FUNCTION snowflake_lease_worker(text, interval, timestamptz) FROM PUBLIC;

COMMENT ON FUNCTION snowflake_lease_worker(text, interval, timestamptz) IS
    'Leases a worker id to an application-side generator, for the connection''s life (ttl NULL) or for ttl';

CREATE FUNCTION snowflake_renew_lease(token bigint,
                                      last_id bigint,
                                      client_time timestamptz DEFAULT NULL,
                                      OUT not_after timestamptz,
                                      OUT expires_at timestamptz,
                                      OUT renewed_at timestamptz)
RETURNS record
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '10s'
AS $$
DECLARE
    lease @extschema@.snowflake_worker_leases;
    reported_ms bigint;
    now_ms bigint;
BEGIN
    lease := @extschema@.snowflake_lease_held(token, 'snowflake_renew_lease()');
    IF lease.released_at IS NOT NULL THEN
        RAISE EXCEPTION 'snowflake lease % was released', token
              USING ERRCODE = 'object_not_in_prerequisite_state',
                    HINT = 'Lease a worker id again.';
    END IF;
    reported_ms := @extschema@.snowflake_lease_reported_ms(lease, last_id);
    now_ms := @extschema@.snowflake_lease_ms(pg_catalog.clock_timestamp());
    PERFORM @extschema@.snowflake_lease_check_clock(client_time, now_ms, NULL);

    UPDATE @extschema@.snowflake_worker_leases AS l
       SET renewed_at = pg_catalog.clock_timestamp(),
           not_after_ms = greatest(l.not_after_ms, now_ms OPERATOR(pg_catalog.+) l.window_ms),
           last_timestamp_ms = greatest(l.last_timestamp_ms, reported_ms)
     WHERE l.node_id OPERATOR(pg_catalog.=) lease.node_id
       AND l.worker_id OPERATOR(pg_catalog.=) lease.worker_id
    RETURNING @extschema@.snowflake_lease_time(l.not_after_ms),
              CASE WHEN l.ttl IS NOT NULL THEN @extschema@.snowflake_lease_time(l.not_after_ms) END,
              l.renewed_at
         INTO not_after, expires_at, renewed_at;
END
$$;

REVOKE ALL ON FUNCTION snowflake_renew_lease(bigint, bigint, timestamptz) FROM PUBLIC;

COMMENT ON FUNCTION snowflake_renew_lease(bigint, bigint, timestamptz) IS
    'Extends a worker-id lease and records the last ID its holder issued';

CREATE FUNCTION snowflake_release_lease(token bigint, last_id bigint)
RETURNS boolean
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '10s'
AS $$
DECLARE
    lease @extschema@.snowflake_worker_leases;
    reported_ms bigint;
BEGIN
    lease := @extschema@.snowflake_lease_held(token, 'snowflake_release_lease()');
    IF lease.released_at IS NOT NULL THEN
        RETURN false;
    END IF;
    reported_ms := @extschema@.snowflake_lease_reported_ms(lease, last_id);
    -- Another role (a superuser) revokes the lease: it cannot know what
    -- the holder issued, so the next holder starts above the whole window.
    IF lease.holder_role OPERATOR(pg_catalog.<>) session_user THEN
        reported_ms := greatest(reported_ms, lease.not_after_ms OPERATOR(pg_catalog.-) 1);
    END IF;
    UPDATE @extschema@.snowflake_worker_leases AS l
       SET released_at = pg_catalog.clock_timestamp(),
           last_timestamp_ms = greatest(l.last_timestamp_ms, reported_ms)
     WHERE l.node_id OPERATOR(pg_catalog.=) lease.node_id
       AND l.worker_id OPERATOR(pg_catalog.=) lease.worker_id;
    RETURN true;
END
$$;

REVOKE ALL ON FUNCTION snowflake_release_lease(bigint, bigint) FROM PUBLIC;

COMMENT ON FUNCTION snowflake_release_lease(bigint, bigint) IS
    'Ends a worker-id lease at once, recording the last ID its holder issued';

-- The leases, one row per worker id ever leased.  state is that of this
-- node's rows; rows another node replicated here show NULL.  Its readers
-- run its functions: it calls only built-ins and
-- snowflake_lease_connection_alive().
CREATE VIEW snowflake_leases AS
SELECT l.node_id, l.worker_id, l.token,
       CASE WHEN l.node_id <> s.node_id THEN NULL
            WHEN l.released_at IS NOT NULL THEN 'released'
            WHEN l.ttl IS NULL THEN
                 CASE WHEN l.instance_id = s.instance_id
                           AND coalesce(snowflake_lease_connection_alive(l.backend_pid, l.backend_start), false)
                      THEN 'held' ELSE 'disconnected' END
            WHEN l.not_after_ms > floor(extract(epoch FROM clock_timestamp()) * 1000) THEN 'held'
            ELSE 'expired' END AS state,
       l.holder, l.holder_role, l.client_addr, l.application_name, l.backend_pid,
       l.ttl, l.granted_at AS since, l.renewed_at,
       CASE WHEN l.ttl IS NOT NULL THEN to_timestamp(l.not_after_ms / 1000.0) END AS expires_at,
       to_timestamp(l.not_before_ms / 1000.0) AS not_before,
       to_timestamp(l.not_after_ms / 1000.0) AS not_after,
       to_timestamp(l.last_timestamp_ms / 1000.0) AS last_timestamp,
       l.released_at
  FROM snowflake_worker_leases AS l,
       LATERAL (SELECT st.node_id, st.instance_id FROM snowflake_status() AS st) AS s;

COMMENT ON VIEW snowflake_leases IS
    'Worker ids leased to application-side generators: holder, state, window and last reported timestamp';

-- Who may lease is granted explicitly (see "Privileges" in the README);
-- the view names hosts and processes, as pg_stat_activity does for
-- monitoring roles.
REVOKE ALL ON snowflake_worker_leases FROM PUBLIC;
REVOKE ALL ON snowflake_leases FROM PUBLIC;
GRANT SELECT ON snowflake_leases TO pg_monitor;
