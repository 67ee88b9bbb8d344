#!/usr/bin/env bash
# Builds the PostgreSQL major versions named as arguments (17, 18) from
# Debian's source packages, each into a prefix of its own, and caches them:
#
#   /var/cache/snowflake-pg/<source version>.b<recipe>/pg   the installation
#   /var/cache/snowflake-pg/<major>               a link to the version in use
#
# so PG_CONFIG=/var/cache/snowflake-pg/18/pg/bin/pg_config builds against 18.
# A second run finds the cached build and does nothing.  Debian 12 ships
# only PostgreSQL 15 as a binary, and the binaries of newer suites need a
# newer libc; their sources build here.  Run as root.
#
#   SNOWFLAKE_PG_CACHE     the cache (default /var/cache/snowflake-pg)
#   SNOWFLAKE_DEBIAN_URI   the archive to fetch from (default: the first
#                          Debian archive of this machine's apt sources)
set -euo pipefail

cache=${SNOWFLAKE_PG_CACHE:-/var/cache/snowflake-pg}

# Per major version: the suite that carries it, and a version whose files
# the archive was seen to serve (its index can name a newer version than
# it serves), with the SHA-256 of its .dsc.  apt authenticates what the
# signed index names; a pinned version the index no longer names is
# authenticated by this hash, and its other files by the .dsc's checksums.
declare -A suite=([17]=trixie [18]=sid)
declare -A pinned=([17]=17.11-0+deb13u1 [18]=18.6-3)
declare -A pinned_dsc_sha256=(
	[17.11-0+deb13u1]=bf148ae423a982707c3f60672c3a072ef62b701bd9f5df847d9f4b8c9b3e3b18
	[18.6-3]=a4254c4548ebeea683832de193460ee8a9f1271418e884803b44ded1aead1776
)

if [ $# -eq 0 ]; then
	echo "usage: $0 MAJOR... (one of: ${!suite[*]})" >&2
	exit 2
fi
for major in "$@"; do
	if [ -z "${suite[$major]:-}" ]; then
		echo "install-pg-versions: no source for PostgreSQL $major (known: ${!suite[*]})" >&2
		exit 2
	fi
done

log() { echo "install-pg-versions: $*" >&2; }

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
	ln -sfn "$version.b$recipe" "$cache/$major"
	log "PostgreSQL $major: $cache/$major/pg ($version)"
}

# The archive of this machine's own apt sources, from deb822 .sources files
# or one-line .list files: the first whose suites include this release's
# codename (so not the security archive).
debian_uri() {
	if [ -n "${SNOWFLAKE_DEBIAN_URI:-}" ]; then
		echo "$SNOWFLAKE_DEBIAN_URI"
		return
	fi
	local codename uri
	codename=$(. /etc/os-release && echo "$VERSION_CODENAME")
	uri=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null | awk -v c="$codename" '
		/^[[:space:]]*$/ { if (u != "" && s) { print u; exit } u = ""; s = 0; next }
		/^URIs:/ { u = $2 }
		/^Suites:/ { for (i = 2; i <= NF; i++) if ($i == c) s = 1 }
		END { if (u != "" && s) print u }' | head -n 1)
	if [ -z "$uri" ]; then
		uri=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
			awk -v c="$codename" '$1 == "deb" {
				i = 2; if ($i ~ /^\[/) while ($i !~ /\]$/) i++; if ($2 ~ /^\[/) i++
				if ($(i + 1) == c) { print $i; exit } }')
	fi
	if [ -z "$uri" ]; then
		log "no Debian archive for $codename in /etc/apt/sources*; set SNOWFLAKE_DEBIAN_URI"
		exit 1
	fi
	echo "${uri%/}"
}

# The deb-src entries, in a file of their own; source only, so nothing of
# those suites can be installed as a binary by accident.
add_sources() {
	local uri=$1 file=/etc/apt/sources.list.d/snowflake-pg-src.sources content
	content=$(printf 'Types: deb-src\nURIs: %s\nSuites: %s\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
		"$uri" "$(printf '%s\n' "${suite[@]}" | sort -u | paste -sd ' ')")
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

# The version of a source package that the index of a suite names, or
# nothing.
index_version() {
	local package=$1 suite=$2
	apt-cache madison "$package" 2>/dev/null |
		awk -F'|' -v s="$suite" '$3 ~ "Sources" && $3 ~ (" " s "/") { gsub(/ /, "", $2); print $2; exit }'
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
# index to name the version; then the .dsc and the files it names from the
# archive's pool, for a pinned version only, whose .dsc must have the
# pinned hash.  dpkg-source checks every file against the .dsc's checksums
# (it cannot check the .dsc's signature: the maintainers' keys are not in
# the archive keyring).  Debian's patches are not applied: they move the libraries to
# /usr/lib/postgresql/NN whatever --prefix says, and the tests want
# upstream's server anyway.
fetch_source() {
	local package=$1 version=$2 dir=$3 uri=$4
	local dl=$dir/download
	rm -rf "$dl" "$dir/src"
	mkdir -p "$dl"
	if (cd "$dl" && apt-get source -qq --download-only "$package=$version" >/dev/null 2>&1); then
		:
	else
		rm -f "$dl"/*
		local pool dsc sha=${pinned_dsc_sha256[$version]:-}
		[ -n "$sha" ] || return 1
		pool="$uri/pool/main/${package:0:1}/$package"
		dsc="${package}_${version#*:}.dsc"
		curl -fsSL -o "$dl/$dsc" "$pool/$dsc" || return 1
		if ! echo "$sha  $dl/$dsc" | sha256sum --quiet -c - >/dev/null 2>&1; then
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

# configure, make, make install, plus what the tests use beyond the core:
# contrib/pgstattuple.  The TAP modules (PostgreSQL::Test::Cluster),
# pg_regress and the isolation tester go into the prefix's pgxs with
# "make install" when TAP tests are enabled.
build_version() {
	local major=$1 version=$2 dir=$3
	local prefix=$dir/pg
	rm -rf "$prefix"
	log "building PostgreSQL $version into $prefix (log: $dir/build.log)"
	(
		cd "$dir/src"
		./configure --prefix="$prefix" --enable-tap-tests --with-openssl --without-icu --without-readline
		nice -n 10 make -j2
		make install
		nice -n 10 make -j2 -C contrib/pgstattuple
		make -C contrib/pgstattuple install
	) >"$dir/build.log" 2>&1 || {
		tail -n 30 "$dir/build.log" >&2
		log "building PostgreSQL $version failed; the whole log is $dir/build.log"
		return 1
	}
	# Other users (the tester) run the server from here.
	chmod -R a+rX "$prefix"
	# The build tree is not needed once installed (dpkg-source left a copy
	# of the upstream tarball beside it).
	rm -rf "$dir/src" "$dir/download" "$dir"/*.orig.tar.*
	touch "$dir/.complete"
}

# The versions worth using for major version $1, in order: the one the
# index of its suite names, if any, then the pinned one.
candidate_versions() {
	local major=$1 v
	v=$(index_version "postgresql-$major" "${suite[$major]}")
	[ -z "$v" ] || echo "$v"
	[ "$v" = "${pinned[$major]}" ] || echo "${pinned[$major]}"
}

majors=("$@")
mkdir -p "$cache"
uri=
for major in "${majors[@]}"; do
	package=postgresql-$major
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
		continue
	fi

	if [ "$(id -u)" -ne 0 ]; then
		log "run as root to build PostgreSQL $major"
		exit 1
	fi
	start=$SECONDS
	[ -n "$uri" ] || uri=$(debian_uri)
	add_sources "$uri"
	apt_update
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
	if [ -z "$found" ]; then
		log "no source of $package could be fetched (tried: ${candidates[*]})"
		exit 1
	fi
	use_version "$major" "$found"
	log "PostgreSQL $major: built in $((SECONDS - start)) s"
done
