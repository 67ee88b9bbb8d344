#!/usr/bin/env bash
# Builds and installs snowflake, starts a throwaway cluster with it
# preloaded, and shows the main job: a table keyed by snowflake_nextval(),
# a decode query, the worker view and the status.  Run as root on a fresh
# machine; the cluster runs as an unprivileged user and stays up so you can
# try it (the last lines say how to connect and how to stop it).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)

"$top/test/install-deps.sh"
# shellcheck source=test/tester-env.sh
. "$top/test/tester-env.sh"
prepare_and_install "$top"

# shellcheck source=test/lib/cluster.sh
. "$top/test/lib/cluster.sh"
demo=${SNOWFLAKE_DEMO_DIR:-/tmp/snowflake-demo}
# The last demo's cluster, if it still runs, stops; its directory goes.
if [ -f "$demo/data/postmaster.pid" ]; then
	cluster_as_owner pg_ctl -D "$demo/data" -m fast stop >/dev/null || true
fi
cluster_init "$demo"
# A demo that fails stops its cluster and keeps its log (data.log); one
# that succeeds leaves it running.
cluster_keep=dir
# A round of the node registry every second instead of every 10 s, so that
# the status below shows the round that follows CREATE EXTENSION.  Worker
# ids 124 to 127 are leased to application-side generators
# (docs/leases.md); sessions attach to 0 to 123.
start_cluster ${SNOWFLAKE_DEMO_PORT:+-p "$SNOWFLAKE_DEMO_PORT"} data \
	"shared_preload_libraries = 'snowflake'" \
	"snowflake.registry_interval = '1s'" \
	"snowflake.lease_workers = 4"
port=$(cluster_port data)

# In a database of its own, as the README's quick start: the node registry
# follows the extension there.
as_tester psql -X -h "$demo" -p "$port" -U postgres -d postgres -q -c 'CREATE DATABASE app'
as_tester psql -X -h "$demo" -p "$port" -U postgres -d app -v ON_ERROR_STOP=1 -e <<'SQL'
CREATE EXTENSION snowflake;
CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), item text);
INSERT INTO orders (item) VALUES ('tea'), ('cake'), ('scone') RETURNING id;
SELECT o.id, o.item, d.* FROM orders AS o, snowflake_decode(o.id) AS d ORDER BY o.id;
INSERT INTO orders (item) SELECT 'bulk ' || g FROM generate_series(1, 100000) AS g;
SELECT count(*) AS rows, count(DISTINCT id) AS distinct_ids FROM orders;
SELECT worker_id, pid = pg_backend_pid() AS this_session, datname, usename, ids_issued
  FROM snowflake_workers;
-- A batch of IDs in one call, and the rows of the last minute: the
-- planner turns the comparison into a range of the primary key.
SELECT snowflake_nextval(3);
SELECT count(*) AS rows_last_minute
  FROM orders
 WHERE snowflake_timestamp(id) >= now() - interval '1 minute';
-- A worker id leased to an application-side generator for 30 s: it issues
-- IDs whose timestamps lie between not_before and not_after, renews with
-- the last one, and releases (docs/leases.md).
SELECT worker_id, node_id, token, not_before, not_after, renew_interval
  FROM snowflake_lease_worker('demo-app:4242', interval '30 seconds');
SELECT worker_id, state, holder, expires_at FROM snowflake_leases;
SELECT snowflake_release_lease(token, NULL) AS released FROM snowflake_leases;
-- Wait for the registry's first round since CREATE EXTENSION.
DO $$
BEGIN
    FOR i IN 1..50 LOOP
        EXIT WHEN (SELECT registry_last_round IS NOT NULL AND registry_problem IS NULL
                     FROM snowflake_status());
        PERFORM pg_sleep(0.2);
    END LOOP;
END
$$;
\x on
SELECT * FROM snowflake_status();
SQL
cluster_keep=running

cat <<EOF

The demo cluster is running.  As root (runuser comes with Debian; sudo may not):
  connect: runuser -u $SNOWFLAKE_TEST_USER -- psql -h $demo -p $port -U postgres -d app
  stop:    runuser -u $SNOWFLAKE_TEST_USER -- $PG_BINDIR/pg_ctl -D $demo/data stop
EOF
