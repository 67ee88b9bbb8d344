#!/usr/bin/env bash
# The whole snowflake test suite, from a fresh machine: installs the
# dependencies, builds with -Wall -Wextra -Werror (ERROR_ON_WARNING=1),
# installs, and runs
#   1. lint: shellcheck on the scripts, clang-format on the C++ lines
#      changed since FORMAT_BASE (default HEAD~1), the core fence,
#   2. the C++ unit tests of the core (no server), and 3. the same under
#      AddressSanitizer and UndefinedBehaviorSanitizer,
#   4. pg_regress, 5. isolation specs, 6. TAP tests (each on its own
#      throwaway clusters, as an unprivileged user),
#   7. the clients tier: psycopg 3, SQLAlchemy, Django, node-postgres and
#      JDBC against a throwaway cluster (test/clients/run.sh),
#   8. pg_regress, isolation and TAP again, with the extension built with
#      -DUSE_ASSERT_CHECKING (make ASSERTS=1), so its Assert()s run; the
#      build without them is installed again afterwards.
# Run as root.  It installs into the PostgreSQL of PG_CONFIG (default: the
# pg_config on PATH), so a private copy of PostgreSQL keeps the system's
# untouched.  Prints regression diffs when a suite fails, and the time of
# each tier.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)

"$top/test/install-deps.sh"
# shellcheck source=test/tester-env.sh
. "$top/test/tester-env.sh"
# Warnings are errors here (make reads this from the environment).
export ERROR_ON_WARNING=1
build_start=$SECONDS
prepare_and_install "$top"
release_dir=$SNOWFLAKE_WORKDIR

passed=0
failed=0
timings=("build and install: $((SECONDS - build_start)) s")
# Runs one tier; $2 extracts its count of passed tests from the output, the
# rest is the command (as_tester for what runs in the tester's copy).
run_tier() {
	local name=$1 count=$2 start=$SECONDS
	shift 2
	local log="$SNOWFLAKE_WORKDIR/tier.log"
	echo "=== $name"
	# pipefail: the status is the command's, not tee's.
	if "$@" 2>&1 | tee "$log"; then
		# A tier may run its tool more than once (isolation: two instances).
		passed=$((passed + $(eval "$count" <"$log" | awk '{ s += $1 } END { print s + 0 }')))
	else
		failed=$((failed + 1))
		echo "=== $name FAILED"
	fi
	timings+=("$name: $((SECONDS - start)) s")
}
regress_count="sed -n 's/^ *All \([0-9]*\) tests passed.*/\1/p'"
gtest_count="sed -n 's/^\[  PASSED  \] \([0-9]*\) tests\?\./\1/p'"
tap_count="sed -n 's/^Files=[0-9]*, Tests=\([0-9]*\),.*/\1/p'"

# Lint, in the source tree (check-format reads its git history).
lint() {
	local n=0
	(cd "$top" && shellcheck -x test/*.sh test/clients/run.sh bench/*.sh .ci/run) &&
		n=$((n + 1)) && echo "shellcheck: ok"
	bash "$top/test/check-format.sh" && n=$((n + 1))
	as_tester make -s corefence && n=$((n + 1))
	echo "lint: $n of 3 checks passed"
	[ "$n" -eq 3 ]
}
run_tier "lint" "sed -n 's/^lint: \([0-9]*\) of .*/\1/p'" lint
run_tier "C++ unit tests" "$gtest_count" as_tester make -s unittest
run_tier "C++ unit tests, ASan+UBSan" "$gtest_count" as_tester make -s unittest-sanitize
run_tier "pg_regress" "$regress_count" as_tester make installcheck ISOLATION= TAP_TESTS=
run_tier "isolation" "$regress_count" as_tester make installcheck REGRESS= TAP_TESTS=
run_tier "TAP" "$tap_count" as_tester make installcheck REGRESS= ISOLATION=
run_tier "clients" "sed -n 's/^clients: \([0-9]*\) checks passed.*/\1/p'" \
	as_tester bash test/clients/run.sh

# The server-side suites again, with the extension's Assert()s compiled in,
# from a copy of its own; then the build without them goes back in.
asserts_start=$SECONDS
SNOWFLAKE_WORKDIR=$release_dir-asserts
prepare_tester_copy "$top"
ASSERTS=1 build_and_install
timings+=("build and install with asserts: $((SECONDS - asserts_start)) s")
run_tier "pg_regress, asserts" "$regress_count" as_tester make installcheck ISOLATION= TAP_TESTS=
run_tier "isolation, asserts" "$regress_count" as_tester make installcheck REGRESS= TAP_TESTS=
run_tier "TAP, asserts" "$tap_count" as_tester make installcheck REGRESS= ISOLATION=
(cd "$release_dir" && make -s install >/dev/null)
SNOWFLAKE_WORKDIR=$release_dir

if [ "$failed" -ne 0 ]; then
	find "$release_dir" "$release_dir-asserts" -name regression.diffs -print -exec cat {} \;
	echo "TAP logs: $release_dir/tmp_check/log, $release_dir-asserts/tmp_check/log"
fi
echo "=== tier timings"
printf '  %s\n' "${timings[@]}" "total: $SECONDS s"
echo "snowflake: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
