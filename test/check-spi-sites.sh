#!/usr/bin/env bash
# Nothing that runs with more rights than its caller parses SQL text: a
# background worker (connected as the bootstrap superuser) or code under
# SetUserIdAndSecContext would resolve names that a schema owner controls
# (security audit 2026-11-27, H1).  The extension's tables are touched by
# OID instead (src/pg/extension_table.hpp).
#
# This lists every SPI call site under src/ (SPI_connect, SPI_execute*,
# SPI_prepare*, SPI_cursor*) and fails unless each is in
# test/spi-sites.txt, as "file<TAB>function<TAB>caller": it runs with its
# caller's rights.  A file that starts a background worker or switches the
# user may have none at all.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

allowlist=test/spi-sites.txt
privileged='BackgroundWorkerInitializeConnection|SetUserIdAndSecContext|SetSessionUserId'
problems=0
sites=0

# file:line of each call, then the function it is in: the nearest line
# above that starts a definition ("Name(" at the start of a line).
while IFS=: read -r file line _; do
	sites=$((sites + 1))
	function=$(head -n "$line" "$file" | grep -E '^[A-Za-z_][A-Za-z0-9_]*\(' | tail -n 1 | sed 's/(.*//' || true)
	function=${function:-?}
	if grep -qE "$privileged" "$file"; then
		echo "check-spi-sites: $file:$line ($function) calls SPI in a file that runs privileged code" >&2
		problems=$((problems + 1))
	elif ! grep -qxP "$file\t$function\tcaller" "$allowlist"; then
		echo "check-spi-sites: $file:$line ($function) calls SPI and is not in $allowlist" >&2
		problems=$((problems + 1))
	fi
done < <(grep -rnE '\bSPI_(connect|execute|prepare|cursor)[A-Za-z_]*[[:space:]]*\(' src/ || true)

[ "$problems" -eq 0 ] && echo "spi sites: $sites, each running as its caller"
