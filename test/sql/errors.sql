--
-- Error messages and their SQLSTATEs.
--
\set SHOW_CONTEXT never

-- Negative IDs are not snowflake IDs.
SELECT * FROM snowflake_decode(-1);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM snowflake_decode(-9223372036854775808);
\echo :LAST_ERROR_SQLSTATE

-- Layout settings are fixed at server start.
SET snowflake.node_id = 3;
\echo :LAST_ERROR_SQLSTATE
SET snowflake.sequence_bits = 13;
\echo :LAST_ERROR_SQLSTATE
SET snowflake.max_drift = 0;
\echo :LAST_ERROR_SQLSTATE

-- The prefix is reserved: a misspelt setting is an error, not a placeholder.
SET snowflake.nodeid = 3;
\echo :LAST_ERROR_SQLSTATE

-- claim_timeout is gone (sessions share worker slots and never wait for
-- one): setting it is an error like any unknown snowflake.* setting.
SET snowflake.claim_timeout = '2s';
\echo :LAST_ERROR_SQLSTATE

-- The settings in force.
SELECT name, setting, unit, context
  FROM pg_settings
 WHERE name LIKE 'snowflake.%'
 ORDER BY name;
