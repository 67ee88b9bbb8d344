#!/usr/bin/env bash
# The extension's version is written in four places; they must agree:
# snowflake.control (default_version, the source of truth), META.json (the
# distribution's and the provided extension's version, as PGXN's semantic
# version X.Y.0), debian/changelog (the package version), and CHANGELOG.md
# (a section for it).  META.json's provided file is the version's install
# script, src/extension/snowflake--VERSION.sql, which must exist, and is the only
# install script there.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

version=$(sed -n "s/^default_version = '\(.*\)'/\1/p" snowflake.control)
problems=0
expect() {
	local what=$1 got=$2 want=$3
	if [ "$got" != "$want" ]; then
		echo "check-versions: $what is \"$got\", not \"$want\" (snowflake.control says $version)" >&2
		problems=$((problems + 1))
	fi
}
expect "META.json version" "$(python3 -c 'import json; print(json.load(open("META.json"))["version"])')" "$version.0"
expect "META.json provides.snowflake.version" \
	"$(python3 -c 'import json; print(json.load(open("META.json"))["provides"]["snowflake"]["version"])')" "$version.0"
expect "META.json provides.snowflake.file" \
	"$(python3 -c 'import json; print(json.load(open("META.json"))["provides"]["snowflake"]["file"])')" \
	"src/extension/snowflake--$version.sql"
[ -f "src/extension/snowflake--$version.sql" ] ||
	{ echo "check-versions: no install script src/extension/snowflake--$version.sql" >&2; problems=$((problems + 1)); }
# One SQL version per release (src/extension/README.md): no install script but
# the current version's, and one update script that ends at it.
expect "src/extension's install scripts" \
	"$(cd src/extension && find . -maxdepth 1 -name 'snowflake--*.sql' ! -name 'snowflake--*--*' -printf '%f\n')" \
	"snowflake--$version.sql"
expect "the number of src/extension's update scripts to $version" \
	"$(cd src/extension && find . -maxdepth 1 -name "snowflake--*--$version.sql" | wc -l)" 1
expect "debian/changelog version" "$(sed -n '1s/^snowflake (\([^)]*\)).*/\1/p' debian/changelog)" "$version"
grep -q "^## $version\b" CHANGELOG.md ||
	{ echo "check-versions: CHANGELOG.md has no section \"## $version\"" >&2; problems=$((problems + 1)); }
[ "$problems" -eq 0 ] && echo "versions: $version everywhere"
