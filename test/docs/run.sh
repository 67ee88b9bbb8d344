#!/usr/bin/env bash
# The docs tier (test/docs/README.md): the runner's self-test, the blocks
# marked <!-- tested: NAME --> against the client tests
# (test/clients/docs_sync.py), the links (check_links.py) and the code
# blocks of README.md and docs/*.md (run_blocks.py), on a throwaway cluster
# (the pg_ctl on PATH) reachable only through a Unix socket.  Prints one
# line per failure, the links' count and last the blocks' count (see
# run_blocks.py); exits non-zero if anything failed, keeping the temporary
# directory (blocks/docs_<page>/: each block's script and output; the
# server log).  Run as the unprivileged tester with the extension installed.
#
#   DOCS_PORT           the cluster's port, on a Unix socket only (default: a free
#                       one)
#   DOCS_BLOCK_TIMEOUT  the most seconds one block may take (default 60)
#   DOCS_KEEP           1: keep the temporary directory even when all passed
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
python=${SNOWFLAKE_PYTHON:-/usr/bin/python3}

if [ "$(id -u)" -eq 0 ]; then
	echo "docs: run as the unprivileged tester, not root (the blocks run as this user)" >&2
	exit 1
fi
# shellcheck source=test/lib/cluster.sh
. "$here/../lib/cluster.sh"
cluster_init /tmp/snowflake-docs.XXXXXX
tmp=$CLUSTER_ROOT
status=0
# After the cluster's stop (test/lib/cluster.sh).
keep_if_failed() {
	if [ "$status" -ne 0 ] || [ "${DOCS_KEEP:-0}" = 1 ]; then
		cluster_keep=dir
		echo "docs: kept $tmp (blocks/: each block's script and output; server.log)"
	fi
}
cluster_on_exit keep_if_failed
trap 'status=1; exit 1' INT TERM

start_cluster ${DOCS_PORT:+-p "$DOCS_PORT"} server \
	"shared_preload_libraries = 'snowflake'" \
	"snowflake.node_id = 1" \
	"snowflake.lease_workers = 8" \
	"fsync = off" ||
	{ status=1; exit 1; }
port=$(cluster_port server)

export PGHOST=$tmp PGPORT=$port PGUSER=postgres PGDATABASE=postgres
export HOME=$tmp
# The self-test's own lines only when it failed; its count always.
if "$python" "$here/run_blocks.py" --self-test --workdir "$tmp/self-test" >"$tmp/self-test.log" 2>&1; then
	tail -n 1 "$tmp/self-test.log"
else
	status=1
	cat "$tmp/self-test.log"
fi
# The blocks marked <!-- tested: NAME --> on every page, not only the two
# pages the clients tier gives it, equal the client tests' regions.
if "$python" "$top/test/clients/docs_sync.py" "$top/README.md" "$top"/docs/*.md "$top/test/clients" \
	>"$tmp/tested.log" 2>&1; then
	sed -n 's/^docs: \(.*\)/tested blocks (test\/clients\/docs_sync.py): \1/p' "$tmp/tested.log"
else
	status=1
	grep -v '^ok ' "$tmp/tested.log"
fi
"$python" "$here/check_links.py" --root "$top" || status=1
"$python" "$here/run_blocks.py" --root "$top" --workdir "$tmp/blocks" || status=1
[ "$status" -eq 0 ]
