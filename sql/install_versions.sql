-- Only the current version installs (1.4 and 1.5 were never released); the update chain is
-- in test/t/039_install_versions.pl.
DROP EXTENSION snowflake CASCADE;

SELECT version FROM pg_available_extension_versions
 WHERE name = 'snowflake' ORDER BY version;
SELECT source, target, path FROM pg_extension_update_paths('snowflake')
 WHERE path IS NOT NULL ORDER BY source, target;

CREATE EXTENSION snowflake VERSION '1.3';
\echo :LAST_ERROR_SQLSTATE
CREATE EXTENSION snowflake VERSION '1.4';
\echo :LAST_ERROR_SQLSTATE
CREATE EXTENSION snowflake VERSION '1.5';
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) AS installed FROM pg_extension WHERE extname = 'snowflake';

-- The type's name must be free: a table named snowflake has a row type of that name.
CREATE TABLE snowflake (x integer);
\set SHOW_CONTEXT never
CREATE EXTENSION snowflake;
\echo :LAST_ERROR_SQLSTATE
\set SHOW_CONTEXT errors
DROP TABLE snowflake;

-- The current version installs from its own script.
CREATE EXTENSION snowflake;
SELECT extversion = (SELECT default_version FROM pg_available_extensions
                      WHERE name = 'snowflake') AS at_default_version
  FROM pg_extension WHERE extname = 'snowflake';

-- No SECURITY DEFINER; only snowflake_publication_tables() pins its search_path.
SELECT p.proname, p.prosecdef, p.proconfig
  FROM pg_proc AS p
       JOIN pg_depend AS d
         ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
       JOIN pg_extension AS e ON e.oid = d.refobjid AND e.extname = 'snowflake'
 WHERE p.prosecdef OR p.proconfig IS NOT NULL ORDER BY 1;

-- No state in a sequence, for a publication FOR ALL SEQUENCES (PostgreSQL 19) to carry.
SELECT count(*) AS sequences
  FROM pg_class AS c
       JOIN pg_depend AS d
         ON d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype = 'e'
       JOIN pg_extension AS e ON e.oid = d.refobjid AND e.extname = 'snowflake'
 WHERE c.relkind = 'S';

-- A database at the library's version is not warned.
SELECT snowflake_nextval() > 0 AS works;

-- The recorded layouts accept only what the settings accept.
\set VERBOSITY terse
INSERT INTO snowflake_layout (first_id, epoch, node_bits, worker_bits, sequence_bits)
    VALUES (1, 'infinity', 3, 7, 12);
INSERT INTO snowflake_layout (first_id, epoch, node_bits, worker_bits, sequence_bits)
    VALUES (1, '-infinity', 3, 7, 12);
INSERT INTO snowflake_layout (first_id, epoch, node_bits, worker_bits, sequence_bits)
    VALUES (1, '2025-01-01', 0, 0, 32);
INSERT INTO snowflake_layout (first_id, epoch, node_bits, worker_bits, sequence_bits)
    VALUES (1, '2025-01-01', 17, 0, 12);
\set VERBOSITY default
