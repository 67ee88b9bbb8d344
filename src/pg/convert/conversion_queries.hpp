/*
 * conversion_queries.hpp
 *	  The catalog queries of the conversions.  They read pg_catalog only,
 *	  take OIDs as parameters, and run with only pg_catalog (and pg_temp,
 *	  last) on the path.
 */
#ifndef SNOWFLAKE_PG_CONVERT_CONVERSION_QUERIES_HPP
#define SNOWFLAKE_PG_CONVERT_CONVERSION_QUERIES_HPP

/* $1 table: the tables at the top of its inheritance, as "a", "b". */
constexpr const char *kRootsQuery = R"SQL(
WITH RECURSIVE ancestors(relid) AS (
    SELECT inh.inhparent FROM pg_inherits AS inh WHERE inh.inhrelid = $1
    UNION
    SELECT inh.inhparent FROM ancestors AS an JOIN pg_inherits AS inh ON inh.inhrelid = an.relid
)
SELECT string_agg(format('"%s"', c.relname), ', ' ORDER BY c.relname)
  FROM ancestors AS an JOIN pg_class AS c ON c.oid = an.relid
 WHERE NOT EXISTS (SELECT FROM pg_inherits AS inh WHERE inh.inhrelid = an.relid)
)SQL";

/* Whether Citus's catalog of distributed tables exists (in pg_catalog). */
constexpr const char *kCitusCatalogQuery = R"SQL(
SELECT FROM pg_class AS c
 WHERE c.relname = 'pg_dist_partition' AND c.relnamespace = 'pg_catalog'::regnamespace
)SQL";

/* $1 table: whether Citus distributes it (its rows lie in shards). */
constexpr const char *kCitusTableQuery = R"SQL(
SELECT FROM pg_catalog.pg_dist_partition AS p WHERE p.logicalrelid = $1
)SQL";

/* $1 table, $2 attnum, $3 snowflake_nextval(): the default's text, whether
 * it calls snowflake_nextval() already, its sequence, whether it is
 * nextval() of that one sequence, and whether the column owns it. */
constexpr const char *kDefaultQuery = R"SQL(
SELECT pg_get_expr(d.adbin, d.adrelid),
       EXISTS (SELECT FROM pg_depend AS dep
                WHERE dep.classid = 'pg_attrdef'::regclass AND dep.objid = d.oid
                  AND dep.refclassid = 'pg_proc'::regclass AND dep.refobjid = $3),
       s.seq,
       s.n = 1 AND pg_get_expr(d.adbin, d.adrelid) ~ '^nextval\(''.*''::regclass\)$',
       EXISTS (SELECT FROM pg_depend AS dep
                WHERE dep.classid = 'pg_class'::regclass AND dep.objid = s.seq
                  AND dep.refclassid = 'pg_class'::regclass AND dep.refobjid = $1
                  AND dep.refobjsubid = $2 AND dep.deptype = 'a')
  FROM pg_attrdef AS d,
       LATERAL (SELECT min(dep.refobjid) AS seq, count(*) AS n
                  FROM pg_depend AS dep
                       JOIN pg_class AS s ON s.oid = dep.refobjid AND s.relkind = 'S'
                 WHERE dep.classid = 'pg_attrdef'::regclass AND dep.objid = d.oid
                   AND dep.refclassid = 'pg_class'::regclass) AS s
 WHERE d.adrelid = $1 AND d.adnum = $2
)SQL";

/* $1 sequence: the objects that use it besides its owning column. */
constexpr const char *kSequenceUsersQuery = R"SQL(
SELECT FROM pg_depend AS dep
 WHERE dep.refclassid = 'pg_class'::regclass AND dep.refobjid = $1 AND dep.deptype = 'n'
)SQL";

/*
 * $1 table, $2 attnum: the columns that reference the key through foreign
 * keys, directly or through further ones.  A foreign key on a partitioned
 * table, or to one, has clones on the partitions (conparentid <> 0); ALTER
 * TABLE on the top reaches them.
 */
constexpr const char *kReferencesQuery = R"SQL(
WITH RECURSIVE fam(top, relid) AS (
    SELECT DISTINCT inh.inhparent, inh.inhparent FROM pg_inherits AS inh
    UNION
    SELECT f.top, inh.inhrelid FROM fam AS f JOIN pg_inherits AS inh ON inh.inhparent = f.relid
),
famcol(top, topatt, relid, attnum) AS (
    SELECT f.top, ta.attnum, f.relid, a.attnum
      FROM fam AS f
           JOIN pg_attribute AS ta ON ta.attrelid = f.top AND ta.attnum > 0 AND NOT ta.attisdropped
           JOIN pg_attribute AS a ON a.attrelid = f.relid AND a.attname = ta.attname AND NOT a.attisdropped
),
refs(relid, attnum, conname, ref_relid, ref_attnum) AS (
    SELECT c.conrelid, c.conkey[k.n], c.conname, c.confrelid, c.confkey[k.n]
      FROM pg_constraint AS c, generate_subscripts(c.confkey, 1) AS k(n)
     WHERE c.contype = 'f' AND c.conparentid = 0
       AND ((c.confrelid = $1 AND c.confkey[k.n] = $2)
            OR EXISTS (SELECT FROM famcol AS fc
                        WHERE fc.top = $1 AND fc.topatt = $2
                          AND fc.relid = c.confrelid AND fc.attnum = c.confkey[k.n]))
    UNION
    SELECT c.conrelid, c.conkey[k.n], c.conname, c.confrelid, c.confkey[k.n]
      FROM refs AS r
           LEFT JOIN famcol AS fc ON fc.top = r.relid AND fc.topatt = r.attnum
           JOIN pg_constraint AS c
             ON c.contype = 'f' AND c.conparentid = 0
            AND (c.confrelid = r.relid OR c.confrelid = fc.relid),
           generate_subscripts(c.confkey, 1) AS k(n)
     WHERE c.confkey[k.n] = CASE WHEN c.confrelid = r.relid THEN r.attnum ELSE fc.attnum END
)
SELECT r.relid, a.attname, a.atttypid, a.attidentity::text, a.attinhcount > 0,
       rc.relname, r.conname, ra.attname, rrc.relname
  FROM refs AS r
       JOIN pg_class AS rc ON rc.oid = r.relid
       JOIN pg_attribute AS a ON a.attrelid = r.relid AND a.attnum = r.attnum
       JOIN pg_class AS rrc ON rrc.oid = r.ref_relid
       JOIN pg_attribute AS ra ON ra.attrelid = r.ref_relid AND ra.attnum = r.ref_attnum
 WHERE (r.relid, r.attnum) <> ($1, $2)
 ORDER BY rc.relname, r.relid, a.attname, r.conname
)SQL";

/*
 * $1 changing tables, $2 their changing columns, $3 the reported tables,
 * $4 the tables locked already: the tables still to lock, which change, or
 * are at the other end of a foreign key on a changing column (ALTER TABLE
 * drops, creates again and checks it, planning a query over that table).
 */
constexpr const char *kTablesToLockQuery = R"SQL(
SELECT w.relid
  FROM (SELECT u.relid, min(u.n) AS n
          FROM (SELECT t.relid, t.n FROM unnest($1::oid[]) WITH ORDINALITY AS t(relid, n)
                UNION ALL
                SELECT t.relid, 1000000 + t.n FROM unnest($3::oid[]) WITH ORDINALITY AS t(relid, n)
                UNION ALL
                SELECT c.confrelid, 2000000 + t.n
                  FROM unnest($1::oid[], $2::name[]) WITH ORDINALITY AS t(relid, attname, n)
                       CROSS JOIN LATERAL (
                           WITH RECURSIVE d(relid) AS (
                               SELECT t.relid
                               UNION
                               SELECT inh.inhrelid FROM d JOIN pg_inherits AS inh ON inh.inhparent = d.relid
                           )
                           SELECT d.relid FROM d) AS d
                       JOIN pg_attribute AS a ON a.attrelid = d.relid AND a.attname = t.attname
                       JOIN pg_constraint AS c
                         ON c.contype = 'f' AND c.conrelid = d.relid AND a.attnum = ANY (c.conkey)) AS u
         WHERE u.relid <> ALL ($4::oid[])
         GROUP BY u.relid) AS w
 ORDER BY w.n
)SQL";

/*
 * $1 table, $2 column: the first use of the column, in the table or its
 * descendants, that ALTER COLUMN ... TYPE refuses (rank 0 partition key,
 * 1-6 view, rule, trigger, policy, generated column, SQL function body,
 * publication) or parses again for
 * the new type while it names objects that are not built in (rank 7:
 * built-in, pinned objects have no pg_depend entries).
 */
constexpr const char *kBlockerQuery = R"SQL(
WITH RECURSIVE tree(relid) AS (
    SELECT $1::oid
    UNION
    SELECT inh.inhrelid FROM tree AS t JOIN pg_inherits AS inh ON inh.inhparent = t.relid
),
cols AS (
    SELECT a.attrelid AS relid, a.attnum, c.relname
      FROM tree AS t
           JOIN pg_attribute AS a ON a.attrelid = t.relid AND a.attname = $2 AND NOT a.attisdropped
           JOIN pg_class AS c ON c.oid = a.attrelid
),
deps AS (
    SELECT col.relname, dep.classid, dep.objid
      FROM cols AS col
           JOIN pg_depend AS dep
             ON dep.refclassid = 'pg_class'::regclass AND dep.refobjid = col.relid
            AND dep.refobjsubid = col.attnum
),
users(what, relname, rank) AS (
    SELECT CASE WHEN rw.rulename = '_RETURN' AND rc.relkind = 'm' THEN format('materialized view "%s"', rc.relname)
                WHEN rw.rulename = '_RETURN' THEN format('view "%s"', rc.relname)
                ELSE format('rule "%s" on table "%s"', rw.rulename, rc.relname)
           END,
           d.relname, 1
      FROM deps AS d
           JOIN pg_rewrite AS rw ON d.classid = 'pg_rewrite'::regclass AND rw.oid = d.objid
           JOIN pg_class AS rc ON rc.oid = rw.ev_class
    UNION ALL
    SELECT format('trigger "%s"', tg.tgname), d.relname, 2
      FROM deps AS d JOIN pg_trigger AS tg ON d.classid = 'pg_trigger'::regclass AND tg.oid = d.objid
    UNION ALL
    SELECT format('policy "%s"', po.polname), d.relname, 3
      FROM deps AS d JOIN pg_policy AS po ON d.classid = 'pg_policy'::regclass AND po.oid = d.objid
    UNION ALL
    SELECT format('generated column "%s"', ga.attname), d.relname, 4
      FROM deps AS d
           JOIN pg_attrdef AS ad ON d.classid = 'pg_attrdef'::regclass AND ad.oid = d.objid
           JOIN pg_attribute AS ga ON ga.attrelid = ad.adrelid AND ga.attnum = ad.adnum AND ga.attgenerated <> ''
    UNION ALL
    SELECT format('function %s', d.objid::regprocedure), d.relname, 5
      FROM deps AS d WHERE d.classid = 'pg_proc'::regclass
    UNION ALL
    SELECT format('publication "%s"', pub.pubname), d.relname, 6
      FROM deps AS d
           JOIN pg_publication_rel AS pr ON d.classid = 'pg_publication_rel'::regclass AND pr.oid = d.objid
           JOIN pg_publication AS pub ON pub.oid = pr.prpubid
    UNION ALL
    SELECT 'partition key', col.relname, 0
      FROM cols AS col JOIN pg_partitioned_table AS pt ON pt.partrelid = col.relid
     WHERE col.attnum = ANY (pt.partattrs::int2[])
        OR EXISTS (SELECT FROM pg_depend AS dep
                    WHERE dep.classid = 'pg_class'::regclass AND dep.objid = col.relid
                      AND dep.objsubid = col.attnum AND dep.refclassid = 'pg_class'::regclass
                      AND dep.refobjid = col.relid AND dep.refobjsubid = 0 AND dep.deptype = 'i')
    UNION ALL
    SELECT CASE WHEN d.classid = 'pg_class'::regclass THEN format('index "%s"', ic.relname)
                WHEN d.classid = 'pg_statistic_ext'::regclass THEN format('statistics object "%s"', st.stxname)
                WHEN co.contype = 'x' THEN format('exclusion constraint "%s"', co.conname)
                ELSE format('check constraint "%s"', co.conname)
           END,
           d.relname, 7
      FROM deps AS d
           LEFT JOIN pg_class AS ic ON d.classid = 'pg_class'::regclass AND ic.oid = d.objid
           LEFT JOIN pg_statistic_ext AS st ON d.classid = 'pg_statistic_ext'::regclass AND st.oid = d.objid
           LEFT JOIN pg_constraint AS co ON d.classid = 'pg_constraint'::regclass AND co.oid = d.objid
     WHERE (ic.relkind IN ('i', 'I') OR st.oid IS NOT NULL OR co.contype IN ('c', 'x'))
       AND EXISTS (SELECT FROM pg_depend AS code
                    WHERE code.classid = d.classid AND code.objid = d.objid
                      AND code.refclassid IN ('pg_proc'::regclass, 'pg_operator'::regclass,
                                             'pg_type'::regclass, 'pg_cast'::regclass))
)
SELECT u.what, u.relname, u.rank FROM users AS u ORDER BY u.rank, u.relname, u.what LIMIT 1
)SQL";

#endif /* SNOWFLAKE_PG_CONVERT_CONVERSION_QUERIES_HPP */
