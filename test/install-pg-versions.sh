#!/usr/bin/env bash
# Builds the PostgreSQL major versions named as arguments (17, 18, 19)
# from Debian's source packages (Debian 12 ships only 15 as a binary, and
# the binaries of newer suites need a newer libc), each into a prefix of
# its own, and caches them (docs/testing.md, "PostgreSQL versions"):
#
#   /var/cache/snowflake-pg/<source version>.b<recipe>/pg   the installation
#   /var/cache/snowflake-pg/<major>               a link to the version in use
#   /var/cache/snowflake-pg/<major>.unavailable   instead, for a version only
#                          tried (19): one line saying why it was not built
#   /var/cache/snowflake-pg/regress/<server version>   what test/opr-sanity.sh
#                          runs (opr_sanity.sql, its expected output, and
#                          regress.c for binary_coercible())
#   /var/cache/snowflake-pg/regress/<major>            a link to the one in use
#
# A second run finds the cached build and does nothing.  A major version
# that Debian installed as a binary (15) gets only the regression files,
# from the source of the installed version or else the newest older one
# the archive serves.  Into each version built here go pglogical (from
# Debian's upstream tarball) and Citus (from ../shared/citus/).  Failing to
# get the regression files, pglogical or Citus is a warning only: the tier
# or the tests that need them then fail or skip.  Run as root.
#
#   SNOWFLAKE_PG_CACHE     the cache (default /var/cache/snowflake-pg)
#   SNOWFLAKE_DEBIAN_URI   the archive to fetch from (default: the first
#                          Debian archive of this machine's apt sources)
#   SNOWFLAKE_CITUS_TARBALL  Citus's source (default
#                          ../shared/citus/citus-14.0.1.tar.gz beside the
#                          repository, or beside the local repository a
#                          clone was made from)
set -euo pipefail

cache=${SNOWFLAKE_PG_CACHE:-/var/cache/snowflake-pg}

# Per major version: the suites that carry it, and a version whose files
# the archive was seen to serve (its index can name a newer version than
# it serves), with the SHA-256 of its .dsc, which authenticates a pinned
# version the signed index no longer names.  A version with no pin (19) is
# only tried, against a freshly read index at every run, newest version
# first; when none is served it is skipped, saying why.  Pin it once it
# builds, so that losing it fails the run.
declare -A suite=([17]=trixie [18]=sid [19]="sid experimental")
declare -A pinned=([17]=17.11-0+deb13u1 [18]=18.6-3)
declare -A pinned_dsc_sha256=(
	[17.11-0+deb13u1]=bf148ae423a982707c3f60672c3a072ef62b701bd9f5df847d9f4b8c9b3e3b18
	[18.6-3]=a4254c4548ebeea683832de193460ee8a9f1271418e884803b44ded1aead1776
)

if [ $# -eq 0 ]; then
	echo "usage: $0 MAJOR... (one of: ${!suite[*]})" >&2
	exit 2
fi
# The version of the Debian binary postgresql-MAJOR installed, or nothing.
binary_version() {
	dpkg-query -W -f='${Status} ${Version}\n' "postgresql-$1" 2>/dev/null |
		awk '$1 == "install" && $3 == "installed" { print $4 }'
}

for major in "$@"; do
	if [ -z "${suite[$major]:-}" ] && [ -z "$(binary_version "$major")" ]; then
		echo "install-pg-versions: no source for PostgreSQL $major (known: ${!suite[*]})" >&2
		exit 2
	fi
done

log() { echo "install-pg-versions: $*" >&2; }
# Whether file $2 has the SHA-256 $1.
sha256_is() { echo "$1  $2" | sha256sum --quiet -c - >/dev/null 2>&1; }
# Runs "$@" in a subshell, its output in log $1; on failure shows the log's
# tail and logs $2 with where the whole log is.
build_logged() {
	local out=$1 failed=$2
	shift 2
	("$@") >"$out" 2>&1 && return 0
	tail -n 30 "$out" >&2
	log "$failed; the whole log is $out"
	return 1
}

# The build recipe's revision: a change of the configure options below
# makes a new cache entry rather than reuse a build made the old way.
# 2: --with-openssl, so that gen_random_uuid() and uuidv7() draw their
# randomness as Debian's servers do, not one /dev/urandom read per call.
recipe=2

# A version is cached once its installation is complete; the marker is
# written last, so an interrupted build is redone.
is_cached() { [ -f "$cache/$1.b$recipe/.complete" ]; }

# The link makes a cached version the one used for its major version.
use_version() {
	local major=$1 version=$2
	rm -f "$cache/$major.unavailable"
	ln -sfn "$version.b$recipe" "$cache/$major"
	log "PostgreSQL $major: $cache/$major/pg ($version)"
}

# The archive of this machine's own apt sources, from deb822 .sources files
# or one-line .list files: the first whose suites include this release's
# codename (so not the security archive), or with an argument, the suite
# it names ("<codename>-security": the security archive, or nothing).
debian_uri() {
	if [ -n "${SNOWFLAKE_DEBIAN_URI:-}" ] && [ $# -eq 0 ]; then
		echo "$SNOWFLAKE_DEBIAN_URI"
		return
	fi
	local codename uri
	codename=${1:-$(. /etc/os-release && echo "$VERSION_CODENAME")}
	# A stanza ends at a blank line or at the end of its file; deb-src ones
	# (this script's own) do not count.
	uri=$(awk -v c="$codename" '
		function end() { if (u != "" && s && t) { print u; u = ""; exit } u = ""; s = 0; t = 0 }
		FNR == 1 { end() }
		/^[[:space:]]*$/ { end(); next }
		/^Types:/ { for (i = 2; i <= NF; i++) if ($i == "deb") t = 1 }
		/^URIs:/ { u = $2 }
		/^Suites:/ { for (i = 2; i <= NF; i++) if ($i == c) s = 1 }
		END { end() }' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -n 1)
	if [ -z "$uri" ]; then
		uri=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
			awk -v c="$codename" '$1 == "deb" {
				i = 2; if ($i ~ /^\[/) while ($i !~ /\]$/) i++; if ($2 ~ /^\[/) i++
				if ($(i + 1) == c) { print $i; exit } }')
	fi
	if [ -z "$uri" ] && [ $# -ne 0 ]; then
		return
	fi
	if [ -z "$uri" ]; then
		log "no Debian archive for $codename in /etc/apt/sources*; set SNOWFLAKE_DEBIAN_URI"
		exit 1
	fi
	echo "${uri%/}"
}

# The deb-src entries, in a file of their own; source only, so nothing of
# those suites can be installed as a binary by accident.  This release's
# own suites too, and its security archive's, for the regression tests of
# its binary (postgresql-15).
sources_file=/etc/apt/sources.list.d/snowflake-pg-src.sources
add_sources() {
	local uri=$1 file=$sources_file content
	local codename security entry='Types: deb-src\nURIs: %s\nSuites: %s\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n'
	codename=$(. /etc/os-release && echo "$VERSION_CODENAME")
	# shellcheck disable=SC2059 # the format is $entry
	content=$(printf "$entry" "$uri" "$(printf '%s\n' "${suite[@]}" "$codename" | tr ' ' '\n' | sort -u | paste -sd ' ')")
	security=$(debian_uri "$codename-security")
	if [ -n "$security" ]; then
		# shellcheck disable=SC2059
		content+=$'\n\n'$(printf "$entry" "$security" "$codename-security")
	fi
	if [ ! -f "$file" ] || [ "$(cat "$file")" != "$content" ]; then
		echo "$content" >"$file"
		apt_updated=0
	fi
}

apt_updated=1
apt_update() {
	if [ "$apt_updated" -eq 0 ]; then
		apt-get update -qq
		apt_updated=1
	fi
}

# Reads the index of this script's deb-src entries again, and only those
# (a second when nothing changed), so that a version only tried is built
# the day the archive serves it.  Short time-outs: a run without the
# archive goes on with what it has.  No package cache is written (it
# would hold these entries only).
refresh_sources() {
	apt-get update -qq -o Dir::Etc::sourcelist="$sources_file" -o Dir::Etc::sourceparts=- \
		-o APT::Get::List-Cleanup=0 -o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache= \
		-o Acquire::http::Timeout=10 -o Acquire::Retries=0 >/dev/null 2>&1 ||
		log "WARNING: could not read the index of $sources_file again; using the one read before"
}

# The versions of a source package that the indexes of the suites $2...
# (of every suite, if none) name, newest first.
index_versions() {
	local package=$1
	shift
	apt-cache madison "$package" 2>/dev/null |
		awk -F'|' -v s=" $* " '$3 ~ "Sources" {
			split($3, w, " "); sub(/\/.*/, "", w[2])
			if (s == "  " || index(s, " " w[2] " ")) { gsub(/ /, "", $2); print $2 } }' | sort -V -r -u
}

# The build's own tools; the sources need nothing else on this machine.
build_deps() {
	local packages=(build-essential bison flex dpkg-dev perl libipc-run-perl zlib1g-dev libssl-dev pkg-config curl)
	local missing=() p
	for p in "${packages[@]}"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
	done
	if [ ${#missing[@]} -gt 0 ]; then
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
	fi
}

# Fetches and unpacks the source package into $dir/src; fails (status 1)
# if the archive does not serve it.  First through apt, which needs the
# index to name the version; then, for a pinned version only, the .dsc
# (with the pinned hash) and its files from the archive's pool, which
# dpkg-source checks against the .dsc (the maintainers' keys that signed it
# are not in the archive keyring).  Debian's patches are not applied: they
# move the libraries to /usr/lib/postgresql/NN whatever --prefix says, and
# the tests want upstream's server anyway.
fetch_source() {
	local package=$1 version=$2 dir=$3 uri=$4
	local dl=$dir/download
	rm -rf "$dl" "$dir/src"
	mkdir -p "$dl"
	if ! (cd "$dl" && apt-get source -qq --download-only "$package=$version" >/dev/null 2>&1); then
		rm -f "$dl"/*
		local pool dsc sha=${pinned_dsc_sha256[$version]:-}
		[ -n "$sha" ] || return 1
		pool="$uri/pool/main/${package:0:1}/$package"
		dsc="${package}_${version#*:}.dsc"
		curl -fsSL -o "$dl/$dsc" "$pool/$dsc" || return 1
		if ! sha256_is "$sha" "$dl/$dsc"; then
			log "$dsc: its SHA-256 is not the pinned one"
			return 1
		fi
		local f
		while read -r f; do
			curl -fsSL -o "$dl/$f" "$pool/$f" || return 1
		done < <(awk '/^Checksums-Sha256:/ { on = 1; next } /^[^ ]/ { on = 0 } on { print $3 }' "$dl/$dsc")
	fi
	(cd "$dl" && dpkg-source --skip-patches -x ./*.dsc "$dir/src" >"$dir/unpack.log" 2>&1) || {
		cat "$dir/unpack.log" >&2
		return 1
	}
}

# configure, make, make install in source tree $1 for prefix $2, plus what
# the tests use beyond the core: contrib/pgstattuple.  The TAP modules,
# pg_regress and the isolation tester go into the prefix's pgxs with "make
# install" when TAP tests are enabled.
make_pg() {
	cd "$1"
	./configure --prefix="$2" --enable-tap-tests --with-openssl --without-icu --without-readline
	nice -n 10 make -j2
	make install
	nice -n 10 make -j2 -C contrib/pgstattuple
	make -C contrib/pgstattuple install
}
build_version() {
	local major=$1 version=$2 dir=$3
	local prefix=$dir/pg
	rm -rf "$prefix"
	log "building PostgreSQL $version into $prefix (log: $dir/build.log)"
	build_logged "$dir/build.log" "building PostgreSQL $version failed" make_pg "$dir/src" "$prefix" ||
		return 1
	# Other users (the tester) run the server from here.
	chmod -R a+rX "$prefix"
	keep_regress "$version" "$version" "$dir/src"
	# The build tree is not needed once installed (dpkg-source left a copy
	# of the upstream tarball beside it).
	rm -rf "$dir/src" "$dir/download" "$dir"/*.orig.tar.*
	touch "$dir/.complete"
}

# What test/opr-sanity.sh needs of the regression tests, for the server of
# version $1, from the source tree of version $2 unpacked in $3.
regress_files=(
	src/test/regress/sql/opr_sanity.sql
	src/test/regress/expected/opr_sanity.out
	src/test/regress/regress.c
)
regress_cached() { [ -f "$cache/regress/$1/.complete" ]; }
keep_regress() {
	local version=$1 source_version=$2 src=$3 out=$cache/regress/$1 f
	rm -rf "$out"
	mkdir -p "$out"
	for f in "${regress_files[@]}"; do
		cp "$src/$f" "$out/"
	done
	echo "$source_version" >"$out/SOURCE_VERSION"
	chmod -R a+rX "$out"
	touch "$out/.complete"
}
use_regress() {
	ln -sfn "$2" "$cache/regress/$1"
	log "PostgreSQL $1: opr_sanity from $(cat "$cache/regress/$2/SOURCE_VERSION") in $cache/regress/$1"
}

# Fetches the regression tests for the server of major version $1, version
# $2, from the source of one of the versions $3...: in a fresh directory,
# removed afterwards.  A failure is only reported.
fetch_regress() {
	local major=$1 version=$2 v dir
	shift 2
	mkdir -p "$cache/regress"
	for v in "$@"; do
		dir=$cache/regress/.fetch-$v
		if fetch_source "postgresql-$major" "$v" "$dir" "$uri"; then
			keep_regress "$version" "$v" "$dir/src"
			rm -rf "$dir"
			[ "$v" = "$version" ] ||
				log "postgresql-$major $version: the archive does not serve its source; opr_sanity is $v's"
			return 0
		fi
		rm -rf "$dir"
	done
	log "WARNING: no source of postgresql-$major could be fetched for its regression tests (tried: $*)"
	return 1
}

# pglogical, for the two-node TAP tests (test/perl/SnowflakePglogical.pm):
# Debian builds it only for its own PostgreSQL, so each version built here
# gets it from the upstream tarball of Debian's source package (Debian's
# patches are packaging), installed into the cached prefix.  The tarball
# is pinned by its SHA-256, as the sid index names it.  apt fetches it
# while an index names the version, but fails as a whole when the archive
# does not serve one of the package's other files (the mirror once served
# the tarball and not the .debian.tar.xz), so only the tarball's hash
# counts; failing that, the tarball comes from the archive's pool.  A
# marker per pglogical version, written last, keeps it from being built
# again.
pglogical_version=2.4.8
pglogical_debian_version=2.4.8-2
pglogical_orig_sha256=b93dc45a45bcc3c5c3e8f432bbdb1121f8ecf336dc2d4611a2eed0e3e46ed1a1
pglogical_installed() { [ -f "$cache/$1.b$recipe/.pglogical-$pglogical_version" ]; }
# Unpacks tarball $1 into $2 and builds and installs it there for the
# pg_config $3: through PGXS, or with ./configure and the options $4...
make_extension() {
	local tarball=$1 src=$2 pg_config=$3
	shift 3
	tar -C "$src" --strip-components=1 -xzf "$tarball" && cd "$src" || return 1
	if [ $# -eq 0 ]; then
		nice -n 10 make -j2 USE_PGXS=1 PG_CONFIG="$pg_config" && make USE_PGXS=1 PG_CONFIG="$pg_config" install
	else
		./configure PG_CONFIG="$pg_config" "$@" && nice -n 10 make -j2 && make install
	fi
}
install_pglogical() {
	local major=$1 version=$2 dir=$cache/$2.b$recipe
	local work=$dir/pglogical orig=pglogical_$pglogical_version.orig.tar.gz why=
	pglogical_installed "$version" && return 0
	prepare_fetch "$major (pglogical)" || return 1
	build_deps
	rm -rf "$work"
	mkdir -p "$work/src"
	(cd "$work" && apt-get source -qq --download-only "pglogical=$pglogical_debian_version" >/dev/null 2>&1) || true
	if ! sha256_is "$pglogical_orig_sha256" "$work/$orig"; then
		rm -f "$work/$orig"
		if ! curl -fsSL -o "$work/$orig" "$uri/pool/main/p/pglogical/$orig"; then
			why="the archive does not serve it"
		elif ! sha256_is "$pglogical_orig_sha256" "$work/$orig"; then
			why="its SHA-256 is not the pinned one"
		fi
	fi
	if [ -n "$why" ]; then
		log "WARNING: $orig: $why; no pglogical for PostgreSQL $major"
	else
		log "building pglogical $pglogical_version into $dir/pg (log: $dir/pglogical.log)"
		build_logged "$dir/pglogical.log" \
			"WARNING: building pglogical $pglogical_version for PostgreSQL $version failed" \
			make_extension "$work/$orig" "$work/src" "$dir/pg/bin/pg_config" || why=build
	fi
	rm -rf "$work"
	[ -z "$why" ] || return 1
	chmod -R a+rX "$dir/pg"
	touch "$dir/.pglogical-$pglogical_version"
	log "PostgreSQL $major: pglogical $pglogical_version installed"
}

# Citus, for test/t/049_citus_cluster.pl: not in Debian, so each version
# built here gets it from the source tarball kept beside the repository,
# pinned by its SHA-256.  Citus 14 supports PostgreSQL 16 to 18.  An
# installation that has citus.control already is left alone, so adding
# this step needed no new recipe (no rebuild of PostgreSQL).
citus_version=14.0.1
citus_sha256=edf37f5f80c0a2f2ba258941439d0a271f08de3b065c82520dae763ae9367b3d
# Beside this checkout, or, for a clone (CI clones the repository afresh),
# beside the local repository it was cloned from.
citus_tarball() {
	local top origin name=shared/citus/citus-$citus_version.tar.gz
	top=$(cd "$(dirname "$0")/.." && pwd)
	if [ -n "${SNOWFLAKE_CITUS_TARBALL:-}" ] || [ -f "$top/../$name" ]; then
		echo "${SNOWFLAKE_CITUS_TARBALL:-$top/../$name}"
		return
	fi
	origin=$(git -c safe.directory="$top" -C "$top" remote get-url origin 2>/dev/null || true)
	if [ -d "$origin" ] && [ -f "$origin/../$name" ]; then
		echo "$(cd "$origin/.." && pwd)/$name"
		return
	fi
	echo "$top/../$name"
}
citus_tarball=$(citus_tarball)
install_citus() {
	local major=$1 version=$2 dir=$cache/$2.b$recipe work status=0
	[ ! -f "$("$dir/pg/bin/pg_config" --sharedir)/extension/citus.control" ] || return 0
	if [ "$major" -lt 16 ] || [ "$major" -gt 18 ]; then
		log "Citus $citus_version supports PostgreSQL 16 to 18: none for $major"
		return 1
	fi
	if [ ! -f "$citus_tarball" ]; then
		log "WARNING: no $citus_tarball; no Citus for PostgreSQL $major"
		return 1
	fi
	if ! sha256_is "$citus_sha256" "$citus_tarball"; then
		log "WARNING: $citus_tarball: its SHA-256 is not the pinned one; no Citus for PostgreSQL $major"
		return 1
	fi
	work=$(mktemp -d)
	log "building Citus $citus_version into $dir/pg (log: $dir/citus.log)"
	build_logged "$dir/citus.log" "WARNING: building Citus $citus_version for PostgreSQL $version failed" \
		make_extension "$citus_tarball" "$work" "$dir/pg/bin/pg_config" \
		--without-libcurl --without-lz4 --without-zstd || status=1
	rm -rf "$work"
	[ "$status" -eq 0 ] || return 1
	chmod -R a+rX "$dir/pg"
	log "PostgreSQL $major: Citus $citus_version installed"
}

# The versions worth using for major version $1, in order: the one the
# index of its suite names, if any, then the pinned one.  Where its suites
# name several (19's experimental: 19~rc1-1 and 19~beta2-1), each of them,
# newest first; where it has no pin, no more.
candidate_versions() {
	local major=$1 pin=${pinned[$1]:-}
	# shellcheck disable=SC2086 # one word per suite
	index_versions "postgresql-$major" ${suite[$major]} | awk -v p="$pin" '$0 != p'
	[ -z "$pin" ] || echo "$pin"
}

# The root-only start of a fetch: the deb-src entries and their index.
prepare_fetch() {
	if [ "$(id -u)" -ne 0 ]; then
		log "run as root to fetch the sources of PostgreSQL $1"
		return 1
	fi
	[ -n "$uri" ] || uri=$(debian_uri)
	add_sources "$uri"
	apt_update
}

majors=("$@")
mkdir -p "$cache" "$cache/regress"
uri=
for major in "${majors[@]}"; do
	package=postgresql-$major
	# The Debian binary: its regression tests only.
	if [ -z "${suite[$major]:-}" ]; then
		version=$(binary_version "$major")
		if ! regress_cached "$version"; then
			prepare_fetch "$major" || continue
			mapfile -t candidates < <(
				echo "$version"
				index_versions "$package" | while read -r v; do
					dpkg --compare-versions "$v" le "$version" && [ "$v" != "$version" ] && echo "$v"
				done
			)
			if ! fetch_regress "$major" "$version" "${candidates[@]}"; then
				rm -f "$cache/regress/$major"
				continue
			fi
		fi
		use_regress "$major" "$version"
		continue
	fi
	# A cached build of the index's version or the pinned one is enough;
	# the index is read as it stands, without a network round.
	found=
	for v in $(candidate_versions "$major"); do
		if is_cached "$v"; then
			found=$v
			break
		fi
	done
	if [ -n "$found" ]; then
		use_version "$major" "$found"
		install_pglogical "$major" "$found" || true
		install_citus "$major" "$found" || true
		# A build cached before the regression tests were kept.
		if regress_cached "$found" ||
			{ prepare_fetch "$major" && fetch_regress "$major" "$found" "$found"; }; then
			use_regress "$major" "$found"
		fi
		continue
	fi

	start=$SECONDS
	prepare_fetch "$major" || exit 1
	[ -n "${pinned[$major]:-}" ] || refresh_sources
	build_deps
	mapfile -t candidates < <(candidate_versions "$major")
	found=
	for v in "${candidates[@]}"; do
		if is_cached "$v"; then
			found=$v
			break
		fi
		dir=$cache/$v.b$recipe
		mkdir -p "$dir"
		if fetch_source "$package" "$v" "$dir" "$uri"; then
			found=$v
			build_version "$major" "$v" "$dir"
			break
		fi
		log "$package $v: the archive does not serve it (or its checksums are wrong)"
		rm -rf "$dir"
	done
	if [ -z "$found" ] && [ -z "${pinned[$major]:-}" ]; then
		# Only tried: no link, so nothing runs against an older build.
		rm -f "$cache/$major" "$cache/regress/$major"
		if [ ${#candidates[@]} -eq 0 ]; then
			why="no index of Debian's ${suite[$major]} names $package"
		else
			why="Debian's index (${suite[$major]}) names $package ${candidates[*]}, and the archive serves none of them"
		fi
		echo "$why (checked in $((SECONDS - start)) s)" >"$cache/$major.unavailable"
		log "PostgreSQL $major not built: $(cat "$cache/$major.unavailable")"
		continue
	fi
	if [ -z "$found" ]; then
		log "no source of $package could be fetched (tried: ${candidates[*]})"
		exit 1
	fi
	use_version "$major" "$found"
	use_regress "$major" "$found"
	install_pglogical "$major" "$found" || true
	install_citus "$major" "$found" || true
	log "PostgreSQL $major: built in $((SECONDS - start)) s"
done
