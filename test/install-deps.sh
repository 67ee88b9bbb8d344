#!/usr/bin/env bash
# Installs what building and testing snowflake needs, from Debian packages,
# and node-postgres from npm (pinned by test/clients/node/package-lock.json)
# for the clients tier.  Must run as root (apt-get); does nothing a second
# time.
#
# SNOWFLAKE_PG_VERSIONS (e.g. "15 17 18", default "15"): the PostgreSQL
# major versions to test; those other than 15, the Debian 12 binary, are
# built from source by test/install-pg-versions.sh, once (it caches them),
# which also keeps, of each, the sources of PostgreSQL's opr_sanity test
# (test/opr-sanity.sh).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)

packages=(
	build-essential           # g++ 12 and make
	postgresql-15             # the server the tests start
	postgresql-client-15      # psql and pgbench
	postgresql-server-dev-15  # PGXS, headers, pg_regress, isolationtester
	postgresql-server-dev-all # pg_buildext, for the Debian package (debian/)
	debhelper                 # dpkg-buildpackage's dh, for the same
	libipc-run-perl           # PostgreSQL::Test::Cluster for TAP tests
	libgtest-dev              # the C++ unit tests
	clang-format              # the format check of changed lines (test/check-format.sh)
	shellcheck                # the lint of the shell scripts
	faketime                  # libfaketime, for clock-fault TAP tests
	postgresql-15-pglogical   # multi-primary TAP tests on 15 (012, 014, 031)
	postgresql-15-partman     # pg_partman 4.7, the partman recipe of 034_partitioning.pl
	postgresql-15-auto-failover # pg_auto_failover 2.0 and pg_autoctl, for 037_pg_auto_failover.pl
	pgbouncer                 # 036_pgbouncer.pl starts its own, in transaction mode
	patroni                   # Patroni 3.0 and patronictl, for 068_patroni.pl
	etcd-server               # etcd 3.4, the DCS 068_patroni.pl starts on loopback
	etcd-client               # etcdctl, to look into that DCS when 068 fails
	sqlsmith                  # the fuzz tier's random queries (test/fuzz/run.sh)
	prometheus-postgres-exporter # postgres_exporter 0.11, which 056_metrics_exporter.pl runs
	# The clients tier (test/clients/):
	python3-psycopg           # psycopg 3
	python3-psycopg2          # the driver SQLAlchemy 1.4 and Django 3.2 use
	python3-sqlalchemy
	python3-django
	default-jdk-headless      # javac and java, for the JDBC test
	libpostgresql-jdbc-java   # the JDBC driver, /usr/share/java/postgresql.jar
	golang-go                 # go build, for the Go lease test (GOPATH mode)
	golang-github-jackc-pgx-v4-dev # pgx v4 and its deps, in /usr/share/gocode
)
# node-postgres needs Node and npm; a machine may have them from elsewhere.
command -v node >/dev/null 2>&1 || packages+=(nodejs)
command -v npm >/dev/null 2>&1 || packages+=(npm)

missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	if [ "$(id -u)" -ne 0 ]; then
		echo "install-deps: run as root to install: ${missing[*]}" >&2
		exit 1
	fi
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
	# Where services start, Debian's pgbouncer (port 6432),
	# prometheus-postgres-exporter (port 9187, on every interface), etcd
	# (2379) and patroni start one and enable it; the tests start their own,
	# so stop them and keep them from starting.  (systemctl disables offline too, the unit's and the
	# init script's links.)
	for service in pgbouncer prometheus-postgres-exporter etcd patroni; do
		package=$service
		[ "$service" = etcd ] && package=etcd-server
		[[ " ${missing[*]} " == *" $package "* ]] || continue
		if [ -d /run/systemd/system ]; then
			systemctl stop "$service.service" >/dev/null 2>&1 || true
		elif [ -x "/etc/init.d/$service" ]; then
			"/etc/init.d/$service" stop >/dev/null 2>&1 || true
		fi
		if command -v systemctl >/dev/null 2>&1; then
			systemctl disable "$service.service" >/dev/null 2>&1 || true
		else
			update-rc.d "$service" disable >/dev/null 2>&1 || true
		fi
	done
fi

# node-postgres, into the tree (test/clients/node/node_modules), exactly as
# the lock file says; again only when the lock file changed.
node_dir=$top/test/clients/node
if ! cmp -s "$node_dir/package-lock.json" "$node_dir/node_modules/.snowflake-lock.json"; then
	(cd "$node_dir" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
	cp "$node_dir/package-lock.json" "$node_dir/node_modules/.snowflake-lock.json"
fi

# The other server versions, and opr_sanity's sources of each (of 15 only
# those).
read -ra versions <<<"${SNOWFLAKE_PG_VERSIONS:-15}"
"$top/test/install-pg-versions.sh" "${versions[@]}"
