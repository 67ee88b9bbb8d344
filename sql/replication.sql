-- snowflake_publication_tables(): what a multi-primary setup must replicate.

CREATE SCHEMA replication_app;
CREATE TABLE replication_app.orders (id bigint PRIMARY KEY DEFAULT snowflake_nextval());
CREATE TABLE replication_app.events (id bigint PRIMARY KEY) PARTITION BY RANGE (id);
CREATE TABLE replication_app.events_2026 PARTITION OF replication_app.events
    FOR VALUES FROM (snowflake_min_id('2026-01-01')) TO (snowflake_min_id('2027-01-01'));
CREATE UNLOGGED TABLE replication_app.scratch (id bigint);
CREATE TEMP TABLE replication_temp (id bigint);
CREATE VIEW replication_app.order_ids AS SELECT id FROM replication_app.orders;

-- Earlier tests' tables are listed too: only these schemas are shown.
SELECT t AS table_name
  FROM snowflake_publication_tables() AS t
 WHERE t::text LIKE 'replication_app.%' OR t::text LIKE 'snowflake%'
 ORDER BY t::text;

-- Never the layout history, a partition, an unlogged or temporary table, a view or a catalog.
SELECT count(*) FILTER (WHERE t = 'snowflake_layout'::regclass) AS layout,
       count(*) FILTER (WHERE t = 'replication_app.events_2026'::regclass) AS partition,
       count(*) FILTER (WHERE t = 'replication_app.scratch'::regclass) AS unlogged,
       count(*) FILTER (WHERE t = 'replication_temp'::regclass) AS temporary,
       count(*) FILTER (WHERE t = 'replication_app.order_ids'::regclass) AS view,
       count(*) FILTER (WHERE t::text LIKE 'pg_%' OR t::text LIKE 'information_schema.%') AS catalogs
  FROM snowflake_publication_tables() AS t;

-- The list makes a publication (which warns under wal_level replica).
SET client_min_messages = error;
DO $$
BEGIN
    EXECUTE 'CREATE PUBLICATION replication_pub FOR TABLE '
            || (SELECT string_agg(t::text, ', ') FROM snowflake_publication_tables() AS t);
END
$$;
RESET client_min_messages;
SELECT count(*) = (SELECT count(*) FROM snowflake_publication_tables()) AS all_published,
       bool_or(r.prrelid = 'snowflake_nodes'::regclass) AS registry,
       bool_or(r.prrelid = 'snowflake_layout'::regclass) AS layout
  FROM pg_publication_rel AS r JOIN pg_publication AS p ON p.oid = r.prpubid
 WHERE p.pubname = 'replication_pub';
DROP PUBLICATION replication_pub;

-- It runs with the caller's rights: a role sees the same list.
CREATE ROLE regress_replication_reader;
SET ROLE regress_replication_reader;
SELECT count(*) > 0 AS listed FROM snowflake_publication_tables();
RESET ROLE;
DROP ROLE regress_replication_reader;

DROP SCHEMA replication_app CASCADE;
