-- Privileges: the grants on every object of the extension are pinned here.

CREATE TEMP VIEW extension_grants AS
WITH members AS (
    SELECT d.classid, d.objid,
           pg_describe_object(d.classid, d.objid, 0) AS object,
           coalesce(c.relacl, acldefault('r', c.relowner),
                    p.proacl, acldefault('f', p.proowner)) AS acl,
           coalesce(c.relowner, p.proowner) AS owner
      FROM pg_depend AS d
           JOIN pg_extension AS e ON e.oid = d.refobjid
           LEFT JOIN pg_class AS c
             ON d.classid = 'pg_class'::regclass AND c.oid = d.objid
           LEFT JOIN pg_proc AS p
             ON d.classid = 'pg_proc'::regclass AND p.oid = d.objid
     WHERE d.refclassid = 'pg_extension'::regclass AND e.extname = 'snowflake'
       AND d.deptype = 'e'
)
SELECT m.object, a.privilege_type,
       CASE WHEN a.grantee = 0 THEN 'PUBLIC'
            WHEN a.grantee = m.owner THEN 'owner'
            ELSE a.grantee::regrole::text END AS grantee
  FROM members AS m, aclexplode(m.acl) AS a
UNION ALL
SELECT m.object || ' column ' || att.attname, a.privilege_type,
       CASE WHEN a.grantee = 0 THEN 'PUBLIC'
            ELSE a.grantee::regrole::text END
  FROM members AS m
       JOIN pg_attribute AS att
         ON m.classid = 'pg_class'::regclass AND att.attrelid = m.objid
        AND att.attacl IS NOT NULL,
       aclexplode(att.attacl) AS a;

-- An owner's MAINTAIN (PostgreSQL 17) is not shown, only a grant of it to others.
SELECT object, privilege_type, grantee
  FROM extension_grants
 WHERE NOT (privilege_type = 'MAINTAIN' AND grantee = 'owner')
 ORDER BY object, grantee, privilege_type;

CREATE ROLE regress_snowflake_user;
CREATE ROLE regress_snowflake_monitor IN ROLE pg_monitor;

-- Any role may generate and decode IDs, and read the layout history.
SET ROLE regress_snowflake_user;
-- It sees which node ids run and when they beat, not where they run.
SELECT snowflake_nextval() > 0 AS generates, d.node_id, d.worker_id >= 0 AS has_worker,
       (SELECT count(*) > 0 FROM snowflake_layout) AS reads_layouts,
       (SELECT count(*) >= 0 FROM snowflake_workers) AS reads_workers,
       (SELECT count(node_id) >= 0 AND count(last_seen) >= 0 FROM snowflake_nodes)
           AS reads_liveness_and_last_seen
  FROM snowflake_decode(snowflake_nextval()) AS d;
\set VERBOSITY sqlstate
SELECT host FROM snowflake_nodes;
SELECT data_directory FROM snowflake_nodes;
SELECT system_identifier FROM snowflake_nodes;
SELECT port FROM snowflake_nodes;
SELECT * FROM snowflake_nodes;
-- Only the extension writes its tables.
INSERT INTO snowflake_layout (first_id, epoch, node_bits, worker_bits, sequence_bits)
    VALUES (1, now(), 3, 7, 12);
DELETE FROM snowflake_nodes;
-- Leasing is never granted to PUBLIC, nor is the view; its function shows none here.
SELECT * FROM snowflake_lease_worker('regress', interval '1 minute');
SELECT * FROM snowflake_renew_lease(1, NULL);
SELECT snowflake_release_lease(1, NULL);
SELECT * FROM snowflake_leases;
\set VERBOSITY default
SELECT count(*) AS leases_public_sees FROM snowflake_lease_list();
RESET ROLE;

-- A role granted the three lease functions leases, renews and releases.
GRANT EXECUTE ON FUNCTION snowflake_lease_worker(text, interval, timestamptz),
                          snowflake_renew_lease(bigint, bigint, timestamptz),
                          snowflake_release_lease(bigint, bigint)
   TO regress_snowflake_user;
SET ROLE regress_snowflake_user;
SELECT token AS granted_token FROM snowflake_lease_worker('regress', interval '1 minute') \gset
-- Granted SELECT on the view, it reads its own leases and no other role's.
RESET ROLE;
SELECT token AS hidden_token FROM snowflake_lease_worker('hidden', interval '1 minute') \gset
GRANT SELECT ON snowflake_leases TO regress_snowflake_user;
SET ROLE regress_snowflake_user;
SELECT state, holder FROM snowflake_leases WHERE token IN (:granted_token, :hidden_token);
SELECT expires_at IS NOT NULL AS renewed FROM snowflake_renew_lease(:granted_token, NULL);
SELECT snowflake_release_lease(:granted_token, NULL) AS released;
RESET ROLE;
SELECT snowflake_release_lease(:hidden_token, NULL) AS released;
-- Only the role that took a lease, or a superuser, may renew or release it.
SELECT token AS admins_token FROM snowflake_lease_worker('admin''s', interval '1 minute') \gset
SET SESSION AUTHORIZATION regress_snowflake_user;
\set VERBOSITY sqlstate
SELECT * FROM snowflake_renew_lease(:admins_token, NULL);
SELECT snowflake_release_lease(:admins_token, NULL);
\set VERBOSITY default
RESET SESSION AUTHORIZATION;
SELECT snowflake_release_lease(:admins_token, NULL) AS released_by_its_role;
-- A superuser's revocation: the next holder starts above the lease's whole window.
SET SESSION AUTHORIZATION regress_snowflake_user;
SELECT token AS users_token FROM snowflake_lease_worker('user''s', interval '1 minute') \gset
RESET SESSION AUTHORIZATION;
SELECT snowflake_release_lease(:users_token, NULL) AS revoked;
SELECT last_timestamp = not_after - interval '1 ms' AS above_whole_window
  FROM snowflake_leases WHERE token = :users_token;
REVOKE EXECUTE ON FUNCTION snowflake_lease_worker(text, interval, timestamptz),
                           snowflake_renew_lease(bigint, bigint, timestamptz),
                           snowflake_release_lease(bigint, bigint)
   FROM regress_snowflake_user;
REVOKE SELECT ON snowflake_leases FROM regress_snowflake_user;

-- Monitoring roles see all of the registry, and every lease.
SET ROLE regress_snowflake_monitor;
SELECT (SELECT count(host) >= 0 AND count(data_directory) >= 0
                 AND count(system_identifier) >= 0 FROM snowflake_nodes) AS monitor_reads_all,
       count(*) = (SELECT count(*) FROM snowflake_lease_list() WHERE true) AS monitor_reads_leases,
       count(*) FILTER (WHERE token IN (:admins_token, :users_token)) AS others_leases
  FROM snowflake_leases;
RESET ROLE;

DROP ROLE regress_snowflake_user;
DROP ROLE regress_snowflake_monitor;
