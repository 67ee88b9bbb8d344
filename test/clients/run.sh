#!/usr/bin/env bash
# The clients tier: real client libraries (psycopg 3, SQLAlchemy, Django,
# node-postgres, JDBC, and Go's pgx for worker-id leases) against snowflake
# IDs, each also with a key of type snowflake, and the check that
# docs/clients.md and docs/leases.md show their marked snippets exactly
# (docs_sync.py).  Two throwaway clusters, reachable only through a Unix
# socket: the default layout, and the JavaScript-safe one (IDs below 2^53)
# for node-postgres's Number checks.  Each client gets its own database and
# prints "<client>: N passed, M failed"; the last line is "clients: N
# checks passed, M clients failed", and any failed client fails the tier.
# Run as the unprivileged tester with the extension installed
# (test/run-tests.sh does; test/install-deps.sh installs the clients).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
python=${SNOWFLAKE_PYTHON:-/usr/bin/python3}
jdbc_jar=${SNOWFLAKE_JDBC_JAR:-/usr/share/java/postgresql.jar}

# shellcheck source=test/lib/cluster.sh
. "$here/../lib/cluster.sh"
cluster_init /tmp/snowflake-clients.XXXXXX
tmp=$CLUSTER_ROOT

# Starts a cluster with the extension preloaded and created: $1 its name,
# the rest extra postgresql.conf lines.
start_with_extension() {
	local name=$1
	shift
	start_cluster "$name" "shared_preload_libraries = 'snowflake'" "fsync = off" "$@" &&
		psql -X -q -h "$tmp" -p "$(cluster_port "$name")" -U postgres -d postgres -v ON_ERROR_STOP=1 \
			-c 'CREATE EXTENSION snowflake'
}

# A database with the extension, for one client.
create_db() {
	local port=$1 db=$2
	psql -X -q -h "$tmp" -p "$port" -U postgres -d postgres -v ON_ERROR_STOP=1 \
		-c "CREATE DATABASE $db" >/dev/null
	psql -X -q -h "$tmp" -p "$port" -U postgres -d "$db" -v ON_ERROR_STOP=1 \
		-c 'CREATE EXTENSION snowflake' >/dev/null
}

# Worker ids 124 to 127 are leased to applications (psycopg's pipeline test).
start_with_extension default "snowflake.lease_workers = 4" &
start_default=$!
# The JavaScript-safe layout: 2 node, 2 worker and 8 sequence bits.
# (4 worker slots: the server warns that max_connections is larger.)
start_with_extension jssafe \
	"snowflake.node_bits = 2" "snowflake.worker_bits = 2" "snowflake.sequence_bits = 8" &
start_jssafe=$!
wait "$start_default"
wait "$start_jssafe"
default_port=$(cluster_port default)
jssafe_port=$(cluster_port jssafe)

export PGHOST=$tmp PGPORT=$default_port PGUSER=postgres
export HOME=$tmp
export SNOWFLAKE_JS_SAFE_PORT=$jssafe_port
create_db "$jssafe_port" node

total=0
failed=0
failed_names=()
# Runs one client: $1 its name (also its database), the rest the command.
run_client() {
	local name=$1 out status start
	shift
	echo "--- $name"
	start=$SECONDS
	create_db "$default_port" "$name"
	set +e
	PGDATABASE=$name "$@" 2>&1 | tee "$tmp/$name.out"
	status=${PIPESTATUS[0]}
	set -e
	# The client's own count; a client that died before printing it failed.
	out=$(sed -n "s/^$name: \([0-9]*\) passed, \([0-9]*\) failed\$/\1 \2/p" "$tmp/$name.out" | tail -1)
	if [ "$status" -eq 0 ] && [ -n "$out" ] && [ "${out#* }" = 0 ]; then
		total=$((total + ${out% *}))
		echo "--- $name: ok ($((SECONDS - start)) s)"
	else
		failed=$((failed + 1))
		failed_names+=("$name")
		echo "--- $name: FAILED (exit status $status; ${out:-no count printed})"
	fi
}

run_client docs "$python" "$here/docs_sync.py" "$top/docs/clients.md" "$top/docs/leases.md" "$here"
run_client psycopg "$python" "$here/psycopg/test_psycopg.py"
run_client sqlalchemy "$python" "$here/sqlalchemy/test_sqlalchemy.py"
run_client django env PYTHONPATH="$here/django" DJANGO_SETTINGS_MODULE=snowflake_site.settings \
	"$python" "$here/django/test_django.py"
run_client node node "$here/node/test_pg.js"
# JDBC: compiled here, against Debian's driver.  The driver cannot reach a
# Unix socket by itself, so the test hands it a socket factory
# (test/clients/jdbc/UnixSocketFactory.java).
jdbc_test() {
	mkdir -p "$tmp/classes"
	javac -J-XX:TieredStopAtLevel=1 -J-XX:-UsePerfData -d "$tmp/classes" -cp "$jdbc_jar" "$here"/jdbc/*.java &&
		java -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -XX:-UsePerfData -cp "$tmp/classes:$jdbc_jar" \
			SnowflakeJdbcTest "$tmp/.s.PGSQL.$default_port"
}
run_client jdbc jdbc_test
# Go: the lease recipe of docs/leases.md (in database "postgres") and the
# snowflake type's checks, built here in GOPATH mode against Debian's pgx v4
# (no module proxy).
go_test() {
	command -v go >/dev/null || { echo "go: not installed (test/install-deps.sh installs golang-go)"; return 1; }
	GO111MODULE=off GOFLAGS='' GOPROXY=off GOPATH=/usr/share/gocode GOCACHE="$tmp/gocache" \
		go build -o "$tmp/go-client" "$here/go/lease_test_main.go" "$here/go/snowflake_type.go" && "$tmp/go-client"
}
run_client go go_test

if [ "$failed" -ne 0 ]; then
	echo "server logs: $tmp/default.log, $tmp/jssafe.log" >&2
	tail -n 20 "$tmp/default.log" "$tmp/jssafe.log" >&2 || true
fi
echo "clients: $total checks passed, $failed clients failed${failed_names[*]:+ (${failed_names[*]})}"
[ "$failed" -eq 0 ]
