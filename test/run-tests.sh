#!/usr/bin/env bash
# The whole snowflake test suite, from a fresh machine, as root: installs
# the dependencies, builds with -Wall -Wextra -Werror (ERROR_ON_WARNING=1),
# installs, and runs once the tiers that need no server (lint, the C++ unit
# tests, the same under ASan+UBSan, the Debian package), then against each
# PostgreSQL version in turn pg_regress, opr_sanity, isolation, TAP,
# clients, docs (15 only) and fuzz, and again with the extension's
# Assert()s compiled in; docs/testing.md describes each tier.  Prints
# regression diffs when a suite fails, the time of each tier and of each
# version, and last one line:
#   snowflake: N passed, N failed
#
#   SNOWFLAKE_PG_VERSIONS  the major versions to run against, in order
#                          (default "15 17 18 19"): 15 is PG_CONFIG's
#                          server, the others are built once and cached by
#                          test/install-pg-versions.sh, and each run uses a
#                          fresh copy, $SNOWFLAKE_WORKDIR-pgNN-server, with a
#                          work copy $SNOWFLAKE_WORKDIR-pgNN.  A version only
#                          tried (19) and not served is skipped in one line
#                          that says why, counting neither as passed nor
#                          as failed.
#   SNOWFLAKE_SERVER_TIERS_ONLY  1: skip the tiers that need no server
#                          (test/run-under-load.sh).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)

SNOWFLAKE_PG_VERSIONS=${SNOWFLAKE_PG_VERSIONS:-15 17 18 19}
export SNOWFLAKE_PG_VERSIONS
"$top/test/install-deps.sh"
# shellcheck source=test/tester-env.sh
. "$top/test/tester-env.sh"
# Warnings are errors here (make reads this from the environment).
export ERROR_ON_WARNING=1
base_workdir=$SNOWFLAKE_WORKDIR
system_pg_config=${PG_CONFIG:-pg_config}
pg_cache=${SNOWFLAKE_PG_CACHE:-/var/cache/snowflake-pg}

passed=0
failed=0
timings=()
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
		# Named again at the end, with the TAP files and pg_regress tests
		# that failed, for a reader who sees only the last lines.
		failures+=("$name: $(failed_tests <"$log")")
	fi
	timings+=("$name: $((SECONDS - start)) s")
}
failures=()
# The failed tests in a tier's log: prove's "t/NNN_x.pl (Wstat: …)" lines
# and pg_regress's "not ok … name" or "name … FAILED" lines.
failed_tests() {
	sed -n -e 's/^\([^ ]*\.pl\) *(Wstat.*/\1/p' \
		-e 's/^not ok [0-9]* *[-+] *\([^ ]*\) .*/\1/p' \
		-e 's/^test \([^ ]*\) *\.\.\. FAILED.*/\1/p' | sort -u | tr '\n' ' '
}
regress_count="sed -n 's/^[# ]*All \([0-9]*\) tests passed.*/\1/p'"
tap_count="sed -n 's/^Files=[0-9]*, Tests=\([0-9]*\),.*/\1/p'"
# TAP files wait on servers more than they compute: three at a time halve
# the tier's time on 2 cores.
export TAP_JOBS=${TAP_JOBS:-3}
gtest_count="sed -n 's/^\[  PASSED  \] \([0-9]*\) tests\?\./\1/p'"
fuzz_count="sed -n 's/^fuzz: \([0-9]*\) checks passed$/\1/p'"
# The docs tier counts the blocks it ran and the links it checked.
docs_count="sed -n -e 's/^docs: \([0-9]*\) blocks run .*/\1/p' -e 's/^links: \([0-9]*\) checked.*/\1/p'"

# Lint, in the source tree (check-format reads its git history).
lint() {
	local n=0
	(cd "$top" && shellcheck -x test/*.sh test/lib/*.sh test/clients/run.sh test/fuzz/run.sh test/docs/run.sh bench/*.sh .ci/run) &&
		n=$((n + 1)) && echo "shellcheck: ok"
	bash "$top/test/check-format.sh" && n=$((n + 1))
	as_tester make -s corefence && n=$((n + 1))
	bash "$top/test/check-versions.sh" && n=$((n + 1))
	bash "$top/test/check-spi-sites.sh" && n=$((n + 1))
	bash "$top/test/check-test-map.sh" && n=$((n + 1))
	bash "$top/test/check-include-graph.sh" && n=$((n + 1))
	# The Debian package's pg_upgradecluster hook is Perl, as postgresql-common is.
	perl -cw "$top/debian/pg_upgradecluster-hook" && n=$((n + 1))
	echo "lint: $n of 8 checks passed"
	[ "$n" -eq 8 ]
}
# Points PG_CONFIG, PG_BINDIR (the tester's PATH) and SNOWFLAKE_WORKDIR at
# major version $1: 15 is PG_CONFIG's server, in the work copy as before;
# another version is a fresh copy of its cached build, so that nothing
# installed by an earlier run or by another checkout's run remains.
use_version() {
	local v=$1
	if [ "$v" = 15 ]; then
		export PG_CONFIG=$system_pg_config
		SNOWFLAKE_WORKDIR=$base_workdir
	else
		local server=$base_workdir-pg$v-server
		rm -rf "$server"
		cp -a "$(readlink -f "$pg_cache/$v")/pg" "$server"
		export PG_CONFIG=$server/bin/pg_config
		SNOWFLAKE_WORKDIR=$base_workdir-pg$v
	fi
	PG_BINDIR=$("$PG_CONFIG" --bindir)
	local major
	major=$("$PG_CONFIG" --version | sed -n 's/^PostgreSQL \([0-9]*\).*/\1/p')
	if [ "$major" != "$v" ]; then
		echo "run-tests: PG_CONFIG for version $v is PostgreSQL $major ($PG_CONFIG)" >&2
		exit 1
	fi
}

# The Debian package: README.md's package block (<!-- run by:
# test/run-tests.sh package -->), run line by line from a copy of the tree,
# so that a stale command or file name in the README fails here: a line
# with sudo as root without it, the others as the tester (the package
# builds as one: Rules-Requires-Root: no).  Then the installed files are
# tested as autopkgtest does (no build in the tree), and purged, which also
# removes an earlier "make install"; the version tiers install theirs again.
package_check() {
	local dir=$base_workdir-package
	SNOWFLAKE_WORKDIR=$dir/src
	rm -rf "$dir"
	prepare_tester_copy "$top"
	chown "$SNOWFLAKE_TEST_USER" "$dir"
	local block line
	block=$(as_tester python3 test/docs/run_blocks.py --block README.md package) || return 1
	while IFS= read -r line; do
		case $line in
		'' | '#'*) continue ;;
		'sudo '*)
			echo "package: as root: ${line#sudo }"
			(cd "$SNOWFLAKE_WORKDIR" && DEBIAN_FRONTEND=noninteractive \
				bash -euo pipefail -c "${line#sudo }" </dev/null >>"$dir/build.log" 2>&1)
			;;
		*)
			echo "package: as the tester: $line"
			as_tester bash -euo pipefail -c "$line" </dev/null >>"$dir/build.log" 2>&1
			;;
		esac || {
			tail -n 40 "$dir/build.log"
			echo "package: README.md's package block failed at: $line"
			return 1
		}
	done <<<"$block"
	local debs=("$dir"/postgresql-15-snowflake_*.deb)
	echo "package: built and installed ${debs[*]##*/}"
	# docs/operations.md names where the package puts the exporter's queries,
	# and that it ships the pg_upgradecluster hook.
	local hook=/etc/postgresql-common/pg_upgradecluster.d/snowflake-15 status=0
	if ! [ -f /usr/share/doc/postgresql-15-snowflake/snowflake_queries.yaml ]; then
		echo "package: no /usr/share/doc/postgresql-15-snowflake/snowflake_queries.yaml"
		status=1
	elif ! [ -x "$hook" ] || ! cmp -s "$hook" "$SNOWFLAKE_WORKDIR/debian/pg_upgradecluster-hook"; then
		echo "package: no executable $hook, or not debian/pg_upgradecluster-hook"
		status=1
	else
		as_tester make -s clean >/dev/null
		as_tester debian/tests/installcheck || status=$?
	fi
	dpkg --purge postgresql-15-snowflake >/dev/null
	return "$status"
}

# The TAP tier, named $1.  027_pg_upgrade_state.pl runs pg_upgrade from the
# version run before this one, if that is a source build too (15's, a
# Debian binary, writes a column option that 17 and 18 cannot restore), and
# else from this version to itself.
tap_tier() {
	run_tier "$1" "$tap_count" as_tester env SNOWFLAKE_PG_UPGRADE_FROM="$upgrade_from" make installcheck REGRESS= ISOLATION=
}

# The server-dependent tiers against version $1: build and install,
# pg_regress, opr_sanity, isolation, TAP, clients, and the Assert() build.
run_version() {
	local v=$1 start=$SECONDS build_start
	use_version "$v"
	echo "=== PostgreSQL $v: $("$PG_CONFIG" --version), work copy $SNOWFLAKE_WORKDIR"
	build_start=$SECONDS
	if ! prepare_and_install "$top"; then
		failed=$((failed + 1))
		echo "=== PG $v: build and install FAILED"
		timings+=("PG $v: build and install failed after $((SECONDS - build_start)) s")
		version_times+=("PG $v: $((SECONDS - start)) s, build failed")
		return
	fi
	timings+=("PG $v: build and install: $((SECONDS - build_start)) s")
	local release_dir=$SNOWFLAKE_WORKDIR
	run_tier "PG $v: pg_regress" "$regress_count" as_tester make installcheck ISOLATION= TAP_TESTS=
	# opr_sanity's sql and expected output are kept by install-pg-versions.sh.
	run_tier "PG $v: opr_sanity" "$regress_count" as_tester bash test/opr-sanity.sh "$pg_cache/regress/$v"
	run_tier "PG $v: isolation" "$regress_count" as_tester make installcheck REGRESS= TAP_TESTS=
	# On the last version TAP runs once, on the build with Assert()s (below):
	# the same code with its checks compiled in, for the longest tier's time.
	[ "$v" = "$last_version" ] || tap_tier "PG $v: TAP"
	run_tier "PG $v: clients" "sed -n 's/^clients: \([0-9]*\) checks passed.*/\1/p'" \
		as_tester bash test/clients/run.sh
	# The docs' blocks once, against the server a reader of the docs
	# most likely has (Debian 12's).
	if [ "$v" = 15 ]; then
		run_tier "PG $v: docs" "$docs_count" as_tester bash test/docs/run.sh
	fi
	run_tier "PG $v: fuzz" "$fuzz_count" as_tester bash test/fuzz/run.sh

	# The server-side suites again, with the extension's Assert()s compiled
	# in, from a copy of its own; then the build without them goes back in.
	local asserts_start=$SECONDS
	SNOWFLAKE_WORKDIR=$release_dir-asserts
	prepare_tester_copy "$top"
	ASSERTS=1 build_and_install
	timings+=("PG $v: build and install with asserts: $((SECONDS - asserts_start)) s")
	run_tier "PG $v: pg_regress, asserts" "$regress_count" as_tester make installcheck ISOLATION= TAP_TESTS=
	run_tier "PG $v: isolation, asserts" "$regress_count" as_tester make installcheck REGRESS= TAP_TESTS=
	# TAP and the fuzz tier with asserts once, against the last version: TAP
	# is the longest tier, and the Assert()s are the extension's, not the
	# server's.
	if [ "$v" = "$last_version" ]; then
		tap_tier "PG $v: TAP, asserts"
		run_tier "PG $v: fuzz, asserts" "$fuzz_count" as_tester bash test/fuzz/run.sh
	fi
	(cd "$release_dir" && make -s install >/dev/null)
	SNOWFLAKE_WORKDIR=$release_dir
	work_dirs+=("$release_dir" "$release_dir-asserts")
	version_times+=("PG $v: $((SECONDS - start)) s")
	if [ "$v" = 15 ]; then
		upgrade_from=
	else
		upgrade_from=$base_workdir-pg$v-server
	fi
}

# The versions to run against: those test/install-pg-versions.sh built or
# found, less those it only tried and could not build (19 while the
# archive serves no source of it), each named with the reason it left.
versions=()
skipped=()
for v in $SNOWFLAKE_PG_VERSIONS; do
	if [ "$v" != 15 ] && [ -f "$pg_cache/$v.unavailable" ] && [ ! -e "$pg_cache/$v" ]; then
		skipped+=("PG $v: skipped, not tested: $(cat "$pg_cache/$v.unavailable")")
		echo "=== ${skipped[-1]}"
	else
		versions+=("$v")
	fi
done
if [ ${#versions[@]} -eq 0 ]; then
	echo "run-tests: no PostgreSQL version to run against (SNOWFLAKE_PG_VERSIONS=$SNOWFLAKE_PG_VERSIONS)" >&2
	exit 1
fi

# The tiers that need no server, once, in the first version's work copy
# (they build what they test themselves).
use_version "${versions[0]}"
prepare_tester_copy "$top"
if [ "${SNOWFLAKE_SERVER_TIERS_ONLY:-0}" != 1 ]; then
	run_tier "lint" "sed -n 's/^lint: \([0-9]*\) of .*/\1/p'" lint
	run_tier "C++ unit tests" "$gtest_count" as_tester make -s unittest lease-client-test
	run_tier "C++ unit tests, ASan+UBSan" "$gtest_count" as_tester make -s unittest-sanitize
	run_tier "Debian package" "$regress_count" package_check
fi

last_version=${versions[-1]}
work_dirs=()
version_times=()
upgrade_from=
for v in "${versions[@]}"; do
	run_version "$v"
done

if [ "$failed" -ne 0 ]; then
	for d in "${work_dirs[@]}"; do
		find "$d" -name regression.diffs -print -exec cat {} \;
	done
	printf 'TAP logs: %s/tmp_check/log\n' "${work_dirs[@]}"
fi
echo "=== tier timings"
printf '  %s\n' "${timings[@]}"
echo "=== per version"
printf '  %s\n' "${version_times[@]}" "${skipped[@]}" "total: $SECONDS s"
if [ "$failed" -ne 0 ]; then
	echo "=== failed tiers"
	printf '  %s\n' "${failures[@]}"
fi
echo "snowflake: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
