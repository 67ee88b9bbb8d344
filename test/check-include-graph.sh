#!/usr/bin/env bash
# The include graph of src/pg is a tree of layers: every arrow points down
# or stays in its folder, and no circle closes.  Reads each
# `#include "pg/..."` line of src/pg/**.{cpp,hpp} and fails (exit 1),
# naming the arrows, on
#   - an arrow that points up: into a layer above the including file's,
#   - an arrow between two folders of one layer (there is none today),
#   - a circle of rooms: a room is a subsystem's folder, or one file of
#     the ground or the top (its .cpp and .hpp together), so two ground
#     files may not use each other; the files of one folder may (the
#     folder is the unit a README describes),
#   - a circle of headers including each other,
#   - a file in a folder no layer names.
# The layers, bottom to top (a layer may include any layer below it):
#   0 ground: the files directly in src/pg (settings, shared_state,
#     durable_file, data_directory, wal, clock.hpp, ...), which no
#     subsystem's header reaches; module.cpp and status.cpp aside.
#   1 reservation/  the floor and the reservation: the ground only.
#   2 layout/       reads the reservation file, and the floor when it records
#                   a layout.
#   3 registry/     the ground only; above layout so that slots/ and leases/
#                   may use both.
#   4 leases/       a lease's not_before is above the floor (reservation/),
#                   a grant refuses under a node collision (registry/).
#   5 slots/        the hot path: the floor, the running layout's record,
#                   the registry's collision flag.
#   6 planner/      decodes under the layout history.
#     convert/      the conversions: the running layout (ground) only.
#   7 top: module.cpp (wires every subsystem into PostgreSQL's hooks) and
#     status.cpp (reports across subsystems).
#
#   bash test/check-include-graph.sh [tree]   (default: this checkout)
set -euo pipefail
top=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$top"

# The layer of a node (a path under src/ without its extension).
layer_of() {
	case $1 in
	pg/module | pg/status) echo 7 ;;
	pg/planner/* | pg/convert/*) echo 6 ;;
	pg/slots/*) echo 5 ;;
	pg/leases/*) echo 4 ;;
	pg/registry/*) echo 3 ;;
	pg/layout/*) echo 2 ;;
	pg/reservation/*) echo 1 ;;
	pg/*/*) echo unknown ;;
	pg/*) echo 0 ;;
	esac
}

# The room of a node: pg/<subsystem>, or the node itself at the top level.
room_of() {
	case $1 in
	pg/*/*) dirname "$1" ;;
	*) echo "$1" ;;
	esac
}

problems=0
arrows=0
header_edges=$(mktemp)
room_edges=$(mktemp)
trap 'rm -f "$header_edges" "$room_edges"' EXIT

while IFS= read -r match; do
	file=${match%%:*}
	target=$(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\(pg\/[^"]*\)\.hpp".*/\1/p' <<<"${match#*:}")
	[ -n "$target" ] || continue
	from=${file#src/}
	from=${from%.*}
	[ "$from" = "$target" ] && continue
	arrows=$((arrows + 1))
	from_layer=$(layer_of "$from")
	to_layer=$(layer_of "$target")
	for node in "$from" "$target"; do
		if [ "$(layer_of "$node")" = unknown ]; then
			echo "check-include-graph: $node is in no layer: declare its folder in $0" >&2
			problems=$((problems + 1))
		fi
	done
	[ "$from_layer" = unknown ] || [ "$to_layer" = unknown ] && continue
	from_room=$(room_of "$from")
	to_room=$(room_of "$target")
	if [ "$to_layer" -gt "$from_layer" ]; then
		echo "check-include-graph: $file includes $target.hpp, which is above it (layer $to_layer over $from_layer)" >&2
		problems=$((problems + 1))
	elif [ "$to_layer" -eq "$from_layer" ] && [ "$from_layer" -ne 0 ] &&
		[ "$from_room" != "$to_room" ]; then
		echo "check-include-graph: $file includes $target.hpp, another folder of its layer" >&2
		problems=$((problems + 1))
	fi
	[[ $file == *.hpp ]] && echo "$file src/$target.hpp" >>"$header_edges"
	[ "$from_room" = "$to_room" ] || echo "$from_room $to_room" >>"$room_edges"
done < <(grep -rH --include='*.cpp' --include='*.hpp' '^[[:space:]]*#[[:space:]]*include[[:space:]]*"pg/' src/pg | sort)

# tsort names the nodes of a circle on stderr and fails.
for graph in headers rooms; do
	edges=$header_edges
	[ "$graph" = rooms ] && edges=$room_edges
	if ! loop=$(sort -u "$edges" | tsort 2>&1 >/dev/null); then
		echo "check-include-graph: $graph on a circle (as tsort finds them):" >&2
		grep -v 'input contains a loop' <<<"$loop" | sed 's/^tsort: /  /' | awk '!seen[$0]++' >&2
		problems=$((problems + 1))
	fi
done

if [ "$problems" -eq 0 ]; then
	echo "check-include-graph: ok, $arrows arrows of src/pg point down, no circle"
else
	echo "check-include-graph: $problems problems in the include graph of src/pg" >&2
	exit 1
fi
