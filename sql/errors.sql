-- Error messages and their SQLSTATEs.
\set SHOW_CONTEXT never

\i test/fixtures/refusal.sql
\pset format unaligned
SELECT * FROM pg_temp.refusals(ARRAY[
    -- Negative IDs are not snowflake IDs.
    $$SELECT * FROM snowflake_decode(-1)$$,
    $$SELECT * FROM snowflake_decode(-9223372036854775808)$$,
    -- Layout settings are fixed at server start.
    $$SET snowflake.node_id = 3$$,
    $$SET snowflake.sequence_bits = 13$$,
    $$SET snowflake.max_drift = 0$$,
    -- The prefix is reserved: a misspelt setting is an error, not a
    -- placeholder.
    $$SET snowflake.nodeid = 3$$,
    -- claim_timeout is gone (sessions share worker slots and never wait
    -- for one): setting it is an error like any unknown snowflake.* setting.
    $$SET snowflake.claim_timeout = '2s'$$]);
\pset format aligned

-- The settings in force.
SELECT name, setting, unit, context
  FROM pg_settings
 WHERE name LIKE 'snowflake.%'
 ORDER BY name;
