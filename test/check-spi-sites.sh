#!/usr/bin/env bash
# Nothing that runs with more rights than its caller parses SQL text: a
# background worker (connected as the bootstrap superuser) or code under
# SetUserIdAndSecContext would resolve names that a schema owner controls.
# The extension's tables are touched by
# OID instead (src/pg/extension_table.hpp).
#
# This lists every SPI call site under src/ (SPI_connect, SPI_execute*,
# SPI_prepare*, SPI_cursor*), and every call that resolves a name (the
# parser's entry points, RangeVarGetRelid, the reg*in functions, the
# catalog lookups of functions, types, operators, relations and schemas by
# name, and the syscaches keyed by a name), and fails unless each is in
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
spi='SPI_(connect|execute|prepare|cursor)[A-Za-z_]*'
lookups='RangeVarGetRelid[A-Za-z]*|RangeVarGetCreationNamespace|get_namespace_oid|LookupFuncName|LookupFuncWithArgs|LookupTypeName[A-Za-z]*|typenameTypeId|raw_parser|pg_parse_query|pg_analyze_and_rewrite[A-Za-z_]*|parse_analyze[A-Za-z_]*|regclassin|regprocin|regprocedurein|regoperin|regoperatorin|regtypein|regnamespacein|to_regclass|to_regproc|to_regtype|get_relname_relid|OpernameGetOprid|FuncnameGetCandidates|OpernameGetCandidates|TypenameGetTypid[A-Za-z]*|RelnameGetRelid|stringToQualifiedNameList|makeRangeVarFromNameList|get_func_oid'
namecaches='RELNAMENSP|PROCNAMEARGSNSP|TYPENAMENSP|NAMESPACENAME|OPERNAMENSP|COLLNAMEENCNSP|CONNAMENSP'
sites_pattern="\\b(($spi|$lookups)[[:space:]]*\\(|$namecaches)"

# file:line of each call, then the function it is in: the nearest line
# above that starts a definition ("Name(" at the start of a line).
while IFS=: read -r file line _; do
	sites=$((sites + 1))
	function=$(head -n "$line" "$file" | grep -E '^[A-Za-z_][A-Za-z0-9_]*\(' | tail -n 1 | sed 's/(.*//' || true)
	function=${function:-?}
	if grep -qE "$privileged" "$file"; then
		echo "check-spi-sites: $file:$line ($function) calls SPI or resolves a name in a file that runs privileged code" >&2
		problems=$((problems + 1))
	elif ! grep -qxP "$file\t$function\tcaller" "$allowlist"; then
		echo "check-spi-sites: $file:$line ($function) calls SPI or resolves a name and is not in $allowlist" >&2
		problems=$((problems + 1))
	fi
done < <(grep -rnE --include='*.cpp' --include='*.hpp' "$sites_pattern" src/ || true)

[ "$problems" -eq 0 ] && echo "spi and name-lookup sites: $sites, each running as its caller"
