-- snowflake_to_text() and snowflake_from_text(): base32hex, crockford, base62 and decimal.
\set SHOW_CONTEXT never

-- The edge IDs (0, 1, 2^53 - 1, 2^53, 2^53 + 1, 2^63 - 1) in every form.
SELECT id,
       snowflake_to_text(id, 'base32hex') AS base32hex,
       snowflake_to_text(id, 'crockford') AS crockford,
       snowflake_to_text(id, 'base62') AS base62,
       snowflake_to_text(id, 'decimal') AS decimal
  FROM unnest(ARRAY[0, 1, 9007199254740991, 9007199254740992, 9007199254740993,
                    9223372036854775807]::bigint[]) AS id;

-- Each text reads back as its ID, a snowflake.
SELECT f, t, snowflake_from_text(t, f) AS id, pg_typeof(snowflake_from_text(t, f))
  FROM (VALUES ('base32hex', '0000000000000'), ('base32hex', '007VVVVVVVVVV'),
               ('base32hex', '0080000000001'), ('base32hex', '7VVVVVVVVVVVV'),
               ('crockford', '0000000000001'), ('crockford', '007ZZZZZZZZZZ'),
               ('crockford', '0080000000000'), ('crockford', '7ZZZZZZZZZZZZ'),
               ('base62', '00000000000'), ('base62', '00fFgnDxSe7'),
               ('base62', '00fFgnDxSe9'), ('base62', 'AzL8n0Y58m7'),
               ('decimal', '0'), ('decimal', '9007199254740992'),
               ('decimal', '9223372036854775807')) AS v(f, t);

-- Reading: base32 forms in either case (crockford's I, L and O too); base62 case-sensitive;
-- decimal up to 19 digits; format names in either case.
SELECT snowflake_from_text('007vvvvvvvvvv', 'base32hex') AS base32hex_lower,
       snowflake_from_text('oo7zzzzzzzzzz', 'crockford') AS crockford_lower_o,
       snowflake_from_text('00000000000IL', 'crockford') AS crockford_i_l,
       snowflake_from_text('00000000000il', 'crockford') AS crockford_lower_i_l,
       snowflake_from_text('0000000000a', 'base62') AS base62_a,
       snowflake_from_text('0000000000A', 'base62') AS base62_upper_a,
       snowflake_from_text('0000000000000000042', 'decimal') AS decimal_zeros,
       snowflake_to_text(42, 'Base62') AS format_mixed_case;

-- NULL in, NULL out (STRICT); a snowflake argument is its bigint.
SELECT snowflake_to_text(NULL, 'base62') IS NULL AS null_id,
       snowflake_to_text(1, NULL) IS NULL AS null_format,
       snowflake_from_text(NULL, 'base62') IS NULL AS null_input,
       snowflake_to_text('9007199254740993'::snowflake, 'crockford') AS of_snowflake;

-- Round trips over random IDs of every magnitude and the edge IDs; base32 in lower case too.
SELECT setseed(0.30);
CREATE TEMP TABLE forms_ids AS
SELECT DISTINCT ((floor(random() * 2147483648)::bigint << 32)
                 | floor(random() * 4294967296)::bigint)
                >> CASE WHEN random() < 0.5 THEN 0 ELSE floor(random() * 63)::integer END AS id
  FROM generate_series(1, 4000);
INSERT INTO forms_ids
SELECT id FROM unnest(ARRAY[0, 1, 9007199254740991, 9007199254740992, 9007199254740993,
                            9223372036854775807]::bigint[]) AS id
EXCEPT SELECT id FROM forms_ids;
SELECT count(*) > 3500 AS enough_ids, min(id) AS smallest, max(id) AS largest,
       count(*) FILTER (WHERE id < 4294967296) > 200 AS small_ones,
       count(*) FILTER (WHERE id >= 4611686018427387904) > 200 AS large_ones
  FROM forms_ids;
CREATE TEMP TABLE forms AS
SELECT f FROM unnest(ARRAY['base32hex', 'crockford', 'base62', 'decimal']) AS f;
SELECT f, count(*) FILTER (WHERE snowflake_from_text(snowflake_to_text(id, f), f) <> id) AS mismatches,
       count(*) FILTER (WHERE f <> 'base62'
                          AND snowflake_from_text(lower(snowflake_to_text(id, f)), f) <> id)
         AS lower_case_mismatches,
       min(length(snowflake_to_text(id, f))) AS shortest,
       max(length(snowflake_to_text(id, f))) AS longest
  FROM forms_ids, forms
 GROUP BY f
 ORDER BY f;

-- The fixed-width forms sort as the IDs do under the C collation; decimal does not.
SELECT f,
       count(*) FILTER (WHERE by_text <> by_id) AS mismatches
  FROM (SELECT f,
               row_number() OVER (PARTITION BY f ORDER BY snowflake_to_text(id, f) COLLATE "C") AS by_text,
               row_number() OVER (PARTITION BY f ORDER BY id) AS by_id
          FROM forms_ids, forms
         WHERE f <> 'decimal') AS s
 GROUP BY f
 ORDER BY f;
SELECT count(*) FILTER (WHERE by_text <> by_id) > 0 AS decimal_text_does_not_sort
  FROM (SELECT row_number() OVER (ORDER BY snowflake_to_text(id, 'decimal') COLLATE "C") AS by_text,
               row_number() OVER (ORDER BY id) AS by_id
          FROM forms_ids) AS s;
SELECT array_agg(t ORDER BY t COLLATE "C") = array_agg(t ORDER BY id) AS base62_sorts
  FROM (SELECT id, snowflake_to_text(id, 'base62') AS t
          FROM unnest(ARRAY[9, 10, 35, 36, 61, 62, 3843, 3844]::bigint[]) AS id) AS s;

-- IMMUTABLE: folded for constants, usable in a generated column and an expression index.
EXPLAIN (VERBOSE, COSTS OFF)
SELECT snowflake_from_text('00fFgnDxSe9', 'base62'), snowflake_to_text(9007199254740993, 'crockford');
CREATE TEMP TABLE forms_keyed (
    id snowflake PRIMARY KEY,
    code text GENERATED ALWAYS AS (snowflake_to_text(id, 'base62')) STORED);
CREATE INDEX forms_keyed_crockford ON forms_keyed (snowflake_to_text(id, 'crockford'));
INSERT INTO forms_keyed (id) VALUES (9007199254740993), (0), (9223372036854775807);
SELECT id, code FROM forms_keyed ORDER BY code COLLATE "C";
SET enable_seqscan = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF)
SELECT id FROM forms_keyed WHERE snowflake_to_text(id, 'crockford') = '0080000000001';
SELECT id FROM forms_keyed WHERE snowflake_to_text(id, 'crockford') = '0080000000001';
RESET enable_seqscan;
RESET enable_bitmapscan;

-- Refusals: each statement's SQLSTATE, message, detail and hint.
\i test/fixtures/refusal.sql
\pset format unaligned
SELECT * FROM pg_temp.refusals(ARRAY[
    -- A character that is none of the form's, named with its position.
    $$SELECT snowflake_from_text('0000U00000000', 'crockford')$$,
    $$SELECT snowflake_from_text('0000W00000000', 'base32hex')$$,
    $$SELECT snowflake_from_text('0Z0Y000000000', 'base32hex')$$,
    -- Crockford's optional hyphens are not read: one spelling per ID.
    $$SELECT snowflake_from_text('000000-0000000', 'crockford')$$,
    $$SELECT snowflake_from_text(' 0000000000', 'base62')$$,
    $$SELECT snowflake_from_text('-1', 'decimal')$$,
    -- The character is named first, even in a text that is too long.
    $$SELECT snowflake_from_text('00000000000000000000!', 'base32hex')$$,
    -- Empty: 22P02.
    $$SELECT snowflake_from_text('', 'base62')$$,
    -- Not the full width (leading zeros may not be left out), or more: 22P02.
    $$SELECT snowflake_from_text('1', 'base32hex')$$,
    $$SELECT snowflake_from_text('007ZZZZZZZZZ', 'crockford')$$,
    $$SELECT snowflake_from_text('0AzL8n0Y58m7', 'base62')$$,
    $$SELECT snowflake_from_text('00000000000000000001', 'decimal')$$,
    -- Above 2^63 - 1: 22003.
    $$SELECT snowflake_from_text('8000000000000', 'base32hex')$$,
    $$SELECT snowflake_from_text('zzzzzzzzzzzzz', 'crockford')$$,
    $$SELECT snowflake_from_text('AzL8n0Y58m8', 'base62')$$,
    $$SELECT snowflake_from_text('9223372036854775808', 'decimal')$$,
    -- A negative ID has no text form: 22003.
    $$SELECT snowflake_to_text(-1, 'base62')$$,
    $$SELECT snowflake_to_text('-9223372036854775808'::bigint, 'decimal')$$,
    -- An unknown format: 22023, with the formats in the hint.
    $$SELECT snowflake_to_text(1, 'base64')$$,
    $$SELECT snowflake_from_text('1', 'base32')$$,
    $$SELECT snowflake_from_text('1', ' decimal')$$]);
\pset format aligned
-- Crockford's hyphens, removed first, are no problem.
SELECT snowflake_from_text(replace('0000-0000-0000-1', '-', ''), 'crockford');
-- A character of several bytes is named whole, at its position in characters.
DO $$
DECLARE
    input text := '00' || chr(233) || '00000000';
BEGIN
    PERFORM snowflake_from_text(input, 'base62');
EXCEPTION WHEN invalid_text_representation THEN
    RAISE NOTICE 'named whole: %', SQLERRM = format(
        'invalid character "%s" at position 3 in base62 snowflake ID "%s"', chr(233), input);
END $$;
