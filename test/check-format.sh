#!/usr/bin/env bash
# Checks the C++ lines changed since a base commit against .clang-format,
# as `git clang-format --diff BASE` does, but following renames.  Differences of spacing inside a line are
# ignored: pgindent, whose style the code follows, aligns declarations and
# trailing comments on tab stops, which clang-format cannot.  Line breaks,
# braces, wrapping and indentation are checked.
#
#   test/check-format.sh [BASE]
#
# BASE defaults to $FORMAT_BASE, else HEAD~1 (on main, the commit before a
# merge, so the whole merged branch is checked).  Prints the differences
# and fails if there are any.  Changes nothing in the tree.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
git() { command git -c safe.directory="$top" "$@"; }

base=${1:-${FORMAT_BASE:-HEAD~1}}
if ! git rev-parse -q --verify "$base^{commit}" >/dev/null; then
	echo "check-format: no commit $base (a shallow clone?); nothing to check"
	exit 0
fi

# The lines changed since BASE, per file, following renames (git
# clang-format does not, so a moved file would count as all new).
ranges=$(git diff -M -U0 --no-color "$base" -- 'src/*.cpp' 'src/*.hpp' 'test/unit/*.cpp' |
	awk '/^\+\+\+ b\// { file = substr($0, 7) }
		/^@@/ {
			split($3, r, ",")
			start = substr(r[1], 2); count = (r[2] == "" ? 1 : r[2])
			if (count > 0 && file != "") print file, start, start + count - 1
		}')
if [ -z "$ranges" ]; then
	echo "check-format: no C++ line changed since $base"
	exit 0
fi

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
bad=0
for f in $(printf '%s\n' "$ranges" | awk '{ print $1 }' | sort -u); do
	[ -f "$f" ] || continue
	lines=$(printf '%s\n' "$ranges" | awk -v f="$f" '$1 == f { printf " --lines=%d:%d", $2, $3 }')
	mkdir -p "$scratch/$(dirname "$f")"
	# shellcheck disable=SC2086  # one --lines=A:B word per range
	clang-format --style=file $lines "$f" >"$scratch/$f"
	if ! diff -u -b --label "$f" --label "$f (clang-format)" "$f" "$scratch/$f"; then
		bad=$((bad + 1))
	fi
done
if [ "$bad" -ne 0 ]; then
	echo "check-format: $bad file(s) have changed lines that .clang-format lays out" \
		"differently (above: the file as it is, then as clang-format would write it)."
	echo "Fix them by hand, or run: clang-format -i --lines=A:B FILE"
	exit 1
fi
echo "check-format: the C++ lines changed since $base are formatted (spacing inside lines aside)"
