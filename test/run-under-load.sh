#!/usr/bin/env bash
# The whole test suite (test/run-tests.sh) with the machine kept busy beside
# it, to find tests that depend on how fast the machine is.  A tool for the
# developer, not part of CI.  Run as root:
#
#   bash test/run-under-load.sh
#
# Beside the suite runs stress-ng (installed here from Debian's packages):
# four CPU hogs, two sync() loops and one 1 GB memory churner, on a 2-core
# machine.  The load average is logged every 30 s.  Prints each run's
# result and time, and exits non-zero at the first run that fails.
#
#   SNOWFLAKE_LOAD_RUNS    how many suite runs in a row (default 1)
#   SNOWFLAKE_LOAD_ARGS    stress-ng's load options (default --cpu 4 --io 2
#                          --vm 1 --vm-bytes 1G)
#   SNOWFLAKE_PG_VERSIONS  as for run-tests.sh (default "15 17 18 19")
#   SNOWFLAKE_SERVER_TIERS_ONLY  as for run-tests.sh: 1 skips lint, the
#                          unit tests and the package, which compile rather
#                          than wait (13 of one version's 38 minutes here)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
runs=${SNOWFLAKE_LOAD_RUNS:-1}
read -ra load_args <<<"${SNOWFLAKE_LOAD_ARGS:---cpu 4 --io 2 --vm 1 --vm-bytes 1G}"
log_dir=${SNOWFLAKE_LOAD_LOG_DIR:-/tmp/snowflake-under-load}

if ! command -v stress-ng >/dev/null; then
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq stress-ng >/dev/null
fi
mkdir -p "$log_dir"

stress_pid=
sampler_pid=
stop_load() {
	[ -n "$stress_pid" ] && kill "$stress_pid" 2>/dev/null && wait "$stress_pid" 2>/dev/null
	[ -n "$sampler_pid" ] && kill "$sampler_pid" 2>/dev/null
	stress_pid=
	sampler_pid=
	return 0
}
trap stop_load EXIT

# stress-ng's own children are killed with it (it forwards SIGTERM).
stress-ng "${load_args[@]}" --timeout 0 --quiet &
stress_pid=$!
while sleep 30; do
	echo "$(date -u +%T) load average: $(cut -d' ' -f1-3 /proc/loadavg)"
done >"$log_dir/load.log" &
sampler_pid=$!
echo "run-under-load: stress-ng ${load_args[*]} (pid $stress_pid); load log $log_dir/load.log"

for run in $(seq 1 "$runs"); do
	start=$SECONDS
	status=0
	bash "$top/test/run-tests.sh" >"$log_dir/run-$run.log" 2>&1 || status=$?
	summary=$(tail -n 1 "$log_dir/run-$run.log")
	echo "run-under-load: run $run of $runs: $summary, $((SECONDS - start)) s" \
		"(log $log_dir/run-$run.log)"
	if [ "$status" -ne 0 ]; then
		grep -E '^=== .*FAILED|^not ok|^t/.*(Wstat|Failed)' "$log_dir/run-$run.log" || true
		exit "$status"
	fi
done
echo "run-under-load: load averages seen: $(awk '{ print $4 }' "$log_dir/load.log" |
	sort -n | sed -n '1p;$p' | paste -sd- -) (1-minute, lowest-highest)"
