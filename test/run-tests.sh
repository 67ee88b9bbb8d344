#!/usr/bin/env bash
# The whole snowflake test suite, from a fresh machine: installs the
# dependencies, builds with -Wall -Wextra -Werror, installs, and runs
#   1. the C++ unit tests of the core (no server),
#   2. pg_regress, 3. isolation specs, 4. TAP tests (each on its own
#      throwaway clusters, as an unprivileged user),
#   5. the clients tier: psycopg 3, SQLAlchemy, Django, node-postgres and
#      JDBC against a throwaway cluster (test/clients/run.sh).
# Run as root.  Prints regression diffs when a suite fails.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)

"$top/test/install-deps.sh"
# shellcheck source=test/tester-env.sh
. "$top/test/tester-env.sh"
prepare_and_install "$top"

passed=0
failed=0
# Runs one tier as the tester; $2 extracts its count of passed tests from
# the output, the rest is the command.
run_tier() {
	local name=$1 count=$2
	shift 2
	local log="$SNOWFLAKE_WORKDIR/tier.log"
	echo "=== $name"
	# pipefail: the status is make's, not tee's.
	if as_tester "$@" 2>&1 | tee "$log"; then
		# A tier may run its tool more than once (isolation: two instances).
		passed=$((passed + $(eval "$count" <"$log" | awk '{ s += $1 } END { print s + 0 }')))
	else
		failed=$((failed + 1))
		echo "=== $name FAILED"
	fi
}

run_tier "C++ unit tests" "sed -n 's/^\[  PASSED  \] \([0-9]*\) tests\?\./\1/p'" \
	make -s unittest
run_tier "pg_regress" "sed -n 's/^ *All \([0-9]*\) tests passed.*/\1/p'" \
	make installcheck ISOLATION= TAP_TESTS=
run_tier "isolation" "sed -n 's/^ *All \([0-9]*\) tests passed.*/\1/p'" \
	make installcheck REGRESS= TAP_TESTS=
run_tier "TAP" "sed -n 's/^Files=[0-9]*, Tests=\([0-9]*\),.*/\1/p'" \
	make installcheck REGRESS= ISOLATION=
run_tier "clients" "sed -n 's/^clients: \([0-9]*\) checks passed.*/\1/p'" \
	bash test/clients/run.sh

if [ "$failed" -ne 0 ]; then
	find "$SNOWFLAKE_WORKDIR" -name regression.diffs -print -exec cat {} \;
	echo "TAP logs: $SNOWFLAKE_WORKDIR/tmp_check/log"
fi
echo "snowflake: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
