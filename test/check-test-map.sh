#!/usr/bin/env bash
# test/README.md is the map from a claim to its test, so it must name every
# test file, and nothing that is gone.  Fails (exit 1), naming the files,
# when
#   - a test file is not named in test/README.md as `path` (in backquotes,
#     from the repository root), or
#   - test/README.md names a path under test/, bench/, sql/ or expected/ that does not exist:
#     as `path` (globs such as `test/check-*.sh` aside), or as the target of
#     a link relative to test/ (links to the docs are the link checker's).
#
#   bash test/check-test-map.sh
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
map=test/README.md
if [ ! -f "$map" ]; then
	echo "check-test-map: $map is missing" >&2
	exit 1
fi

shopt -s nullglob
test_files=()
for f in test/t/*.pl sql/*.sql test/isolation/specs/*.spec test/old_versions/sql/*.sql \
	test/unit/*.cpp test/clients/*.sh test/clients/*.py \
	test/clients/*/*.py test/clients/*/*.js test/clients/*/*.go test/clients/*/*.java \
	test/fuzz/* test/docs/*.sh test/docs/*.py test/docs/fixtures/* bench/*.sh; do
	[ -f "$f" ] && test_files+=("$f")
done

# Every `path` of the map, one a line.
# shellcheck disable=SC2016 # backquotes in the pattern, not an expansion
named=$(grep -o '`[^`]*`' "$map" | tr -d '`' | sort -u)
status=0
missing=0
for f in "${test_files[@]}"; do
	if ! grep -qxF -- "$f" <<<"$named"; then
		echo "check-test-map: $f is not in $map" >&2
		missing=$((missing + 1))
		status=1
	fi
done

# Paths the map names that do not exist.
gone=0
# must_exist PATH HOW: a PATH under test/, bench/, sql/ or expected/ that the map names
# (HOW: "names PATH", "links to ...") exists.
must_exist() {
	case $1 in
	test/* | bench/* | sql/* | expected/*) ;;
	*) return 0 ;;
	esac
	if [ ! -e "$1" ]; then
		echo "check-test-map: $map $2, which does not exist" >&2
		gone=$((gone + 1))
		status=1
	fi
}
while IFS= read -r path; do
	case $path in
	*[*?[\ ]*) continue ;;
	esac
	must_exist "$path" "names $path"
done <<<"$named"
while IFS= read -r target; do
	path=$(realpath -m --relative-to="$top" "test/${target%%#*}")
	must_exist "$path" "links to $target ($path)"
done < <(grep -o '](\([^)#:]*\)' "$map" | sed 's/^](//' | sort -u)

if [ "$status" -eq 0 ]; then
	echo "check-test-map: ok, $map names all ${#test_files[@]} test files"
else
	echo "check-test-map: $missing test files missing from $map, $gone paths in it that do not exist" >&2
fi
exit "$status"
