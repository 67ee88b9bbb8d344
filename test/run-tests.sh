#!/usr/bin/env bash
# The whole snowflake test suite, from a fresh machine: installs the
# dependencies, builds with -Wall -Wextra -Werror, installs, and runs
#   1. the C++ unit tests of the core (no server),
#   2. pg_regress, 3. isolation specs, 4. TAP tests (each on its own
#      throwaway clusters, as an unprivileged user).
# Run as root.  Prints regression diffs when a suite fails.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)

"$top/test/install-deps.sh"
# shellcheck source=tester-env.sh
. "$top/test/tester-env.sh"
prepare_tester_copy "$top"
build_and_install

passed=0
failed=0
run_suite() {
	local name=$1
	shift
	echo "=== $name"
	if as_tester "$@"; then
		passed=$((passed + 1))
	else
		failed=$((failed + 1))
		echo "=== $name FAILED"
	fi
}

run_suite "C++ unit tests" make -s unittest
run_suite "pg_regress, isolation and TAP" make installcheck

if [ "$failed" -ne 0 ]; then
	find "$SNOWFLAKE_WORKDIR" -name regression.diffs -print -exec cat {} \;
	find "$SNOWFLAKE_WORKDIR/tmp_check" -name '*.log' -newer "$SNOWFLAKE_WORKDIR/Makefile" \
		-path '*log*' -print 2>/dev/null | head -20
fi
echo "suites: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
