--
-- The upgrade chain: install the first release, update step by step to the
-- default version, and pin the extension's objects at each step.
--
DROP EXTENSION snowflake CASCADE;

-- The extension's member objects, and what its functions look like.  The
-- row types of its tables and views (and their array types), which
-- PostgreSQL 17 and later list too, are left out: they come with the
-- relation.
CREATE TEMP VIEW extension_objects AS
SELECT pg_describe_object(d.classid, d.objid, 0) AS object
  FROM pg_depend AS d
       JOIN pg_extension AS e ON e.oid = d.refobjid
       LEFT JOIN pg_type AS t
         ON d.classid = 'pg_type'::regclass AND t.oid = d.objid
       LEFT JOIN pg_type AS elem ON elem.oid = t.typelem
 WHERE d.refclassid = 'pg_extension'::regclass AND e.extname = 'snowflake'
   AND coalesce(t.typrelid, 0) = 0 AND coalesce(elem.typrelid, 0) = 0;
CREATE TEMP VIEW extension_functions AS
SELECT p.proname, pg_get_function_arguments(p.oid) AS args,
       pg_get_function_result(p.oid) AS result, p.provolatile, p.proisstrict,
       p.proparallel, p.prosecdef, p.proconfig, md5(p.prosrc) AS source
  FROM pg_proc AS p
 WHERE p.proname LIKE 'snowflake%';

SELECT version FROM pg_available_extension_versions
 WHERE name = 'snowflake' ORDER BY version;
SELECT source, target, path FROM pg_extension_update_paths('snowflake')
 WHERE path IS NOT NULL ORDER BY source, target;

CREATE EXTENSION snowflake VERSION '1.0';
SELECT extversion FROM pg_extension WHERE extname = 'snowflake';
SELECT object FROM extension_objects ORDER BY 1;

SELECT pg_get_function_arguments('snowflake_status'::regproc) AS status_1_0;

ALTER EXTENSION snowflake UPDATE TO '1.1';
SELECT extversion FROM pg_extension WHERE extname = 'snowflake';
SELECT object FROM extension_objects ORDER BY 1;
SELECT pg_get_function_arguments('snowflake_status'::regproc) AS status_1_1;

ALTER EXTENSION snowflake UPDATE TO '1.2';
SELECT extversion FROM pg_extension WHERE extname = 'snowflake';
SELECT object FROM extension_objects ORDER BY 1;
SELECT pg_get_function_arguments(p.oid) AS convert_column_1_2,
       pg_get_function_result(p.oid) AS result, p.proconfig
  FROM pg_proc AS p
 WHERE p.oid = 'snowflake_convert_column'::regproc;

ALTER EXTENSION snowflake UPDATE TO '1.3';
SELECT extversion FROM pg_extension WHERE extname = 'snowflake';
SELECT object FROM extension_objects ORDER BY 1;
SELECT pg_get_function_arguments('snowflake_status'::regproc) AS status_1_3;
SELECT p.proconfig AS convert_column_1_3
  FROM pg_proc AS p
 WHERE p.oid = 'snowflake_convert_column'::regproc;

ALTER EXTENSION snowflake UPDATE TO '1.4';
SELECT extversion FROM pg_extension WHERE extname = 'snowflake';
SELECT object FROM extension_objects ORDER BY 1;

-- The upgraded extension matches a fresh install of the default version.
CREATE TEMP TABLE upgraded AS SELECT * FROM extension_functions;
CREATE TEMP TABLE upgraded_objects AS SELECT * FROM extension_objects;
DROP EXTENSION snowflake;
CREATE EXTENSION snowflake;
SELECT extversion = (SELECT default_version FROM pg_available_extensions
                      WHERE name = 'snowflake') AS at_default_version
  FROM pg_extension WHERE extname = 'snowflake';
SELECT count(*) AS differences
  FROM ((SELECT * FROM upgraded EXCEPT SELECT * FROM extension_functions)
        UNION ALL
        (SELECT * FROM extension_functions EXCEPT SELECT * FROM upgraded)) AS d;
SELECT count(*) AS object_differences
  FROM ((SELECT * FROM upgraded_objects EXCEPT SELECT * FROM extension_objects)
        UNION ALL
        (SELECT * FROM extension_objects EXCEPT SELECT * FROM upgraded_objects)) AS d;

-- Still working after the update.
SELECT snowflake_nextval() > 0 AS works;
