#!/usr/bin/env bash
# Sourced by the test and demo scripts.  PostgreSQL refuses to run as root,
# so clusters run as an unprivileged OS user, in a copy of the source tree
# that user owns.
#
#   SNOWFLAKE_TEST_USER  the OS user (created if missing; default sftest)
#   SNOWFLAKE_WORKDIR    where the copy lives (default /tmp/snowflake-work)
#   PG_CONFIG            the pg_config of the PostgreSQL to build against,
#                        install into and run (default: the one on PATH)

SNOWFLAKE_TEST_USER=${SNOWFLAKE_TEST_USER:-sftest}
SNOWFLAKE_WORKDIR=${SNOWFLAKE_WORKDIR:-/tmp/snowflake-work}
PG_BINDIR=$("${PG_CONFIG:-pg_config}" --bindir 2>/dev/null || echo /usr/lib/postgresql/15/bin)

# Creates the tester user if needed and refreshes its copy of the tree.
prepare_tester_copy() {
	local src=$1
	if ! id "$SNOWFLAKE_TEST_USER" >/dev/null 2>&1; then
		useradd --create-home --shell /bin/bash "$SNOWFLAKE_TEST_USER"
	fi
	rm -rf "$SNOWFLAKE_WORKDIR"
	mkdir -p "$SNOWFLAKE_WORKDIR"
	(cd "$src" && tar --exclude=./.git -cf - .) | tar -C "$SNOWFLAKE_WORKDIR" -xf -
	chown -R "$SNOWFLAKE_TEST_USER" "$SNOWFLAKE_WORKDIR"
}

# Runs a command as the tester, in the copy.
as_tester() {
	(cd "$SNOWFLAKE_WORKDIR" && runuser -u "$SNOWFLAKE_TEST_USER" -- env PATH="$PG_BINDIR:$PATH" "$@")
}

# Builds as the tester and installs as root.  make takes its options
# (ERROR_ON_WARNING, ASSERTS) from the environment.
build_and_install() {
	as_tester make -s clean >/dev/null
	as_tester make -s
	(cd "$SNOWFLAKE_WORKDIR" && make -s install >/dev/null)
}

# The common start of the demo and the test runner: the tester's copy of
# the tree at "$1", built and installed.
prepare_and_install() {
	prepare_tester_copy "$1"
	build_and_install
}
