-- SQL/JSON constructors write a snowflake as a string (PostgreSQL 16; 15: the _1.out).
SELECT current_setting('server_version_num')::integer < 160000 AS no_sql_json \gset
\if :no_sql_json
\echo 'no SQL/JSON constructors before PostgreSQL 16'
\quit
\endif
CREATE SCHEMA type_sqljson;
SET search_path = type_sqljson, public;

CREATE TABLE accounts (
    id   snowflake PRIMARY KEY,
    name text NOT NULL,
    refs snowflake[] NOT NULL,
    big  bigint NOT NULL
);
INSERT INTO accounts VALUES
    (9007199254740993, 'first', ARRAY[9007199254740993, 9223372036854775807], 9007199254740993),
    (9223372036854775807, 'last', ARRAY[9223372036854775807], 9223372036854775807);

SELECT JSON_OBJECT('id': id, 'big': big) AS json_object,
       JSON_OBJECT('id': id, 'big': big RETURNING jsonb) AS json_object_jsonb
  FROM accounts ORDER BY id;
SELECT JSON_ARRAY(id, big) AS json_array,
       JSON_ARRAY(id, big RETURNING jsonb) AS json_array_jsonb
  FROM accounts ORDER BY id;
SELECT JSON_OBJECT('id': id, 'refs': refs) AS with_array FROM accounts ORDER BY id;
SELECT JSON_ARRAYAGG(id ORDER BY id) AS json_arrayagg,
       JSON_ARRAYAGG(id ORDER BY id RETURNING jsonb) AS json_arrayagg_jsonb
  FROM accounts;
SELECT JSON_OBJECTAGG(name: id) AS json_objectagg,
       JSON_OBJECTAGG(name: id RETURNING jsonb) AS json_objectagg_jsonb
  FROM accounts;
SELECT JSON_ARRAYAGG(big ORDER BY big) AS bigint_arrayagg FROM accounts;
-- Each string is id::text, and reads back as the ID.
SELECT id,
       JSON_OBJECT('id': id RETURNING jsonb) ->> 'id' = id::text AS object_text,
       (JSON_ARRAY(id RETURNING jsonb) ->> 0)::snowflake = id AS array_back
  FROM accounts ORDER BY id;

RESET search_path;
SET client_min_messages = warning;
DROP SCHEMA type_sqljson CASCADE;
RESET client_min_messages;
