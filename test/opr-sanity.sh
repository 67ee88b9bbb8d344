#!/usr/bin/env bash
# PostgreSQL's own core regression test opr_sanity, unmodified (its sql and
# its expected output, of the server's major version), against a throwaway
# cluster that preloads snowflake and has run CREATE EXTENSION snowflake.
# opr_sanity lists, among other catalog anomalies, every SECURITY DEFINER
# function, so it passes only while the extension adds none of them.
#
# Runs as the unprivileged user that owns the current directory (the
# tester's work copy, in test/run-tests.sh), with the extension installed
# into PG_CONFIG's server.  opr_sanity.sql, opr_sanity.out and regress.c
# (for binary_coercible()) are kept by test/install-pg-versions.sh in
# $SNOWFLAKE_PG_CACHE/regress/<major>.
#
#   PG_CONFIG            the server's pg_config (default: the one on PATH)
#   SNOWFLAKE_PG_CACHE   default /var/cache/snowflake-pg
#   $1                   the directory of those files, instead
#
# Works in ./tmp_check_opr_sanity.  Prints pg_regress's output ("All 2
# tests passed." last), and on a failure its regression.diffs after it.
set -euo pipefail

pg_config=${PG_CONFIG:-pg_config}
major=$("$pg_config" --version | sed -n 's/^PostgreSQL \([0-9]*\).*/\1/p')
src=${1:-${SNOWFLAKE_PG_CACHE:-/var/cache/snowflake-pg}/regress/$major}
for f in opr_sanity.sql opr_sanity.out regress.c; do
	if [ ! -f "$src/$f" ]; then
		echo "opr-sanity: no $src/$f (test/install-pg-versions.sh $major fetches it, as root)" >&2
		exit 1
	fi
done
source_version=$(cat "$src/SOURCE_VERSION" 2>/dev/null || echo unknown)
if [ "$source_version" != unknown ] && [ "${source_version%%.*}" != "$major" ]; then
	echo "opr-sanity: $src is opr_sanity of PostgreSQL $source_version, the server is $major" >&2
	exit 1
fi
echo "opr-sanity: $("$pg_config" --version), opr_sanity of the source $source_version"

work=$PWD/tmp_check_opr_sanity
rm -rf "$work"
mkdir -p "$work/sql" "$work/expected" "$work/lib"
cp "$src/opr_sanity.sql" "$work/sql/"
cp "$src/opr_sanity.out" "$work/expected/"

# regress.so, built against this server with PGXS, for binary_coercible().
cp "$src/regress.c" "$work/lib/"
cat >"$work/lib/Makefile" <<'EOF'
MODULES = regress
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)
EOF
make -s -C "$work/lib" PG_CONFIG="$pg_config" with_llvm=no >"$work/lib/build.log" 2>&1 || {
	cat "$work/lib/build.log" >&2
	exit 1
}

# What opr_sanity needs of the tests that PostgreSQL runs before it: its
# binary_coercible(), as test_setup creates it, and an enum type, as the
# enum test leaves one (else opr_sanity finds enum_in and enum_out to be
# functions of cstring that no type uses).  Then a check that the extension
# is there, so that a pass is not a pass without it.
# The expected output is the script with each query's result after it.
setup_head=$(
	cat <<'EOF'
\getenv libdir PG_LIBDIR
\getenv dlsuffix PG_DLSUFFIX
\set regresslib :libdir '/regress' :dlsuffix
CREATE FUNCTION binary_coercible(oid, oid)
    RETURNS bool
    AS :'regresslib', 'binary_coercible'
    LANGUAGE C STRICT STABLE PARALLEL SAFE;
CREATE TYPE planets AS ENUM ( 'venus', 'earth', 'mars' );
EOF
)
extension_query="SELECT extname FROM pg_extension WHERE extname = 'snowflake';"
preload_query='SHOW shared_preload_libraries;'
printf '%s\n' "$setup_head" "$extension_query" "$preload_query" >"$work/sql/opr_sanity_setup.sql"
{
	printf '%s\n' "$setup_head" "$extension_query"
	cat <<'EOF'
  extname  
-----------
 snowflake
(1 row)

EOF
	printf '%s\n' "$preload_query"
	cat <<'EOF'
 shared_preload_libraries 
--------------------------
 snowflake
(1 row)

EOF
} >"$work/expected/opr_sanity_setup.out"
echo "shared_preload_libraries = 'snowflake'" >"$work/preload.conf"

status=0
"$("$pg_config" --pkglibdir)/pgxs/src/test/regress/pg_regress" \
	--bindir="$("$pg_config" --bindir)" \
	--inputdir="$work" --outputdir="$work" --dlpath="$work/lib" \
	--temp-instance="$work/instance" --temp-config="$work/preload.conf" \
	--load-extension=snowflake \
	opr_sanity_setup opr_sanity || status=$?
if [ "$status" -ne 0 ] && [ -f "$work/regression.diffs" ]; then
	cat "$work/regression.diffs"
fi
exit "$status"
