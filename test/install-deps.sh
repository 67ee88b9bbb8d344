#!/usr/bin/env bash
# Installs what building and testing snowflake needs, from Debian packages.
# Must run as root (apt-get); does nothing a second time.
set -euo pipefail

packages=(
	build-essential           # g++ 12 and make
	postgresql-15             # the server the tests start
	postgresql-client-15      # psql and pgbench
	postgresql-server-dev-15  # PGXS, headers, pg_regress, isolationtester
	libipc-run-perl           # PostgreSQL::Test::Cluster for TAP tests
	libgtest-dev              # the C++ unit tests
	faketime                  # libfaketime, for clock-fault TAP tests
	postgresql-15-pglogical   # two-node multi-primary TAP tests (012, 014)
)

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
fi
