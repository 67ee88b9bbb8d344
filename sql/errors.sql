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

-- claim_timeout is a session setting, with a range.
SET snowflake.claim_timeout = -1;
\echo :LAST_ERROR_SQLSTATE
SET snowflake.claim_timeout = '2s';
SHOW snowflake.claim_timeout;
RESET snowflake.claim_timeout;

-- The settings in force.
SELECT name, setting, unit, context
  FROM pg_settings
 WHERE name LIKE 'snowflake.%'
 ORDER BY name;
