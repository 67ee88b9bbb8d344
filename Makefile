# Makefile for the snowflake extension (PGXS).
#
#   make                   build the library
#   make install           install library and SQL scripts
#   make installcheck      pg_regress, isolation and TAP tests, each on a
#                          temporary cluster (run as a non-root user)
#   make unittest          the C++ core's unit tests, no server needed
#   make unittest-sanitize the same under AddressSanitizer and UBSan
#   make corefence         proves that src/core cannot include a server header,
#                          and that src/pg holds no object with a destructor
#
# Options (make VAR=1):
#   ERROR_ON_WARNING=1     compile with -Werror (the test suite and CI do)
#   ASSERTS=1              compile the extension with -DUSE_ASSERT_CHECKING,
#                          so its Assert()s run (also against a server built
#                          without them; "make clean" when switching)

EXTENSION = snowflake
EXTVERSION = $(shell sed -n "s/^default_version = '\(.*\)'/\1/p" snowflake.control)

MODULE_big = snowflake
# Every .cpp under src/: the core, and the PostgreSQL glue by subsystem
# (src/pg/*/README.md says what each folder owns).
CORE_OBJS = $(patsubst %.cpp,%.o,$(sort $(wildcard src/core/*.cpp)))
PG_OBJS = $(patsubst %.cpp,%.o,$(sort $(wildcard src/pg/*.cpp src/pg/*/*.cpp)))
OBJS = $(CORE_OBJS) $(PG_OBJS)

# One install script of the current version, snowflake--$(EXTVERSION).sql,
# and the update scripts of the releases: 1.0 to 1.3 byte for byte as they
# shipped, and one from the last release to this one (src/extension/README.md).
# An update from 1.0 through 1.3 builds the catalog of a fresh install
# (test/t/039_install_versions.pl compares them).  No older version installs
# anew; the first release's install script is a test fixture,
# test/fixtures/snowflake--1.0.sql.
CURRENT_SCRIPT = src/extension/snowflake--$(EXTVERSION).sql
UPDATE_SCRIPTS = src/extension/snowflake--1.0--1.1.sql src/extension/snowflake--1.1--1.2.sql \
	src/extension/snowflake--1.2--1.3.sql src/extension/snowflake--1.3--1.6.sql
DATA = $(CURRENT_SCRIPT) $(UPDATE_SCRIPTS)
EXTRA_CLEAN = test/unit/core_test test/unit/core_test_sanitize fence_probe.log $(OBJS:.o=.d) output_iso_one_slot/ tmp_check_iso_one_slot/

REGRESS = api decode errors status install_versions leases lease_calls convert convert_names privileges \
	time_bounds batch workers_visibility planner snowflake_type snowflake_type_sqljson replication \
	parallel_workers text_forms
# pg_regress reads sql/ and expected/ at the top, as PGXS expects; the
# isolation specs and their expected output are under test/isolation/.
# Every file starts with the extension created (install_versions drops and
# re-creates it).
REGRESS_OPTS = --temp-instance=tmp_check_regress --temp-config=test/conf/regress.conf \
	--load-extension=snowflake
ISOLATION = slot_claims interleaved_nextval lease_no_blocking convert_schema_swap convert_schema_lock
ISOLATION_OPTS = --inputdir=test/isolation --temp-instance=tmp_check_iso --temp-config=test/conf/preload.conf
# Specs that need every session on one worker slot run on an instance of
# their own, with snowflake.worker_bits = 0.
ISOLATION_ONE_SLOT = shared_slot
TAP_TESTS = 1
PROVE_TESTS = test/t/*.pl

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)

# The server headers trip -Wregister and -Wunused-parameter under C++17;
# taking them as system headers keeps our own code at -Werror.
PG_INCLUDEDIR_SERVER := $(shell $(PG_CONFIG) --includedir-server)
# Our includes name their path from src/ ("core/layout.hpp",
# "pg/slots/worker_slot.hpp").
PG_CPPFLAGS = -I$(srcdir)/src -isystem $(PG_INCLUDEDIR_SERVER) -isystem $(shell $(PG_CONFIG) --includedir)
# libpq, as libpqwalreceiver links it: the registry's replication probe
# of a promoted standby's old primary (src/pg/registry/split_brain.cpp).
SHLIB_LINK_INTERNAL = $(libpq)
ifeq ($(ASSERTS),1)
PG_CPPFLAGS += -DUSE_ASSERT_CHECKING
endif
# -Werror is for CI and the test suite, not for a user's build against
# another compiler or server version.
WARNINGS = -Wall -Wextra
ifeq ($(ERROR_ON_WARNING),1)
WARNINGS += -Werror
endif
# -MMD -MP: rebuild objects when a header they include changes.
PG_CXXFLAGS = -std=c++17 -fno-exceptions -fno-rtti $(WARNINGS) -MMD -MP

# Link with the C++ driver; skip LLVM bitcode, which ignores PG_CXXFLAGS.
override with_llvm = no
include $(PGXS)
override COMPILER = $(CXX) $(CXXFLAGS)
# After PGXS, which resets it: the tests' own Perl modules, and how many
# TAP files run at once (each on its own clusters and ports).
TAP_JOBS ?= 1
PROVE_FLAGS += -I test/perl -j$(TAP_JOBS)

# The core fence: src/core is compiled without the server's include path,
# in the extension as in the unit tests, so a PostgreSQL header there does
# not compile.  "make corefence" shows that it fails.
CORE_CPPFLAGS = -I$(srcdir)/src
$(CORE_OBJS): override CPPFLAGS = $(CORE_CPPFLAGS)

# The library's own version, for what it says about older SQL objects.
src/pg/old_versions.o: override CPPFLAGS += -DSNOWFLAKE_LIBRARY_VERSION='"$(EXTVERSION)"'
src/pg/old_versions.o: snowflake.control

-include $(OBJS:.o=.d)

# Part of the isolation tests: "make installcheck ISOLATION=" skips it too.
ifdef ISOLATION
installcheck: installcheck-one-slot
endif
installcheck-one-slot:
	$(pg_isolation_regress_installcheck) --inputdir=test/isolation --outputdir=output_iso_one_slot \
		--temp-instance=tmp_check_iso_one_slot --temp-config=test/conf/shared_slot.conf \
		$(ISOLATION_ONE_SLOT)

# The core alone, with exceptions on, as GoogleTest needs.
CORE_SRCS = $(CORE_OBJS:.o=.cpp)
UNITTEST_CXXFLAGS = -std=c++17 -g $(WARNINGS) $(CORE_CPPFLAGS)
CORE_TESTS = test/unit/core_test.cpp test/unit/lease_rules_test.cpp test/unit/time_range_test.cpp \
	test/unit/holder_text_test.cpp test/unit/extension_version_test.cpp \
	test/unit/decimal_text_test.cpp test/unit/text_forms_test.cpp test/unit/horizon_test.cpp \
	test/unit/clock_steps_test.cpp test/unit/clock_skew_test.cpp
test/unit/core_test: $(CORE_TESTS) $(CORE_SRCS) src/core/*.hpp
	$(CXX) $(UNITTEST_CXXFLAGS) -O1 -o $@ $(CORE_TESTS) $(CORE_SRCS) \
		-lgtest -lgtest_main -pthread

unittest: test/unit/core_test
	test/unit/core_test

# The same tests under AddressSanitizer and UndefinedBehaviorSanitizer; any
# report fails the run.
SANITIZE = -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
test/unit/core_test_sanitize: $(CORE_TESTS) $(CORE_SRCS) src/core/*.hpp
	$(CXX) $(UNITTEST_CXXFLAGS) -O1 $(SANITIZE) -o $@ $(CORE_TESTS) $(CORE_SRCS) \
		-lgtest -lgtest_main -pthread

unittest-sanitize: test/unit/core_test_sanitize
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
		test/unit/core_test_sanitize

# The C++ reference client of worker-id leases (clients/cpp): a header-only
# library and the command-line program the TAP tests drive, and the unit
# tests of its pure part (snowflake_lease.hpp), which need neither a server
# nor libpq.
LEASE_CLIENT_HEADERS = clients/cpp/snowflake_lease.hpp clients/cpp/snowflake_lease_pq.hpp
EXTRA_CLEAN += clients/cpp/lease_client test/unit/lease_client_test
clients/cpp/lease_client: clients/cpp/lease_client.cpp $(LEASE_CLIENT_HEADERS)
	$(CXX) -std=c++17 $(WARNINGS) -O2 -I$(shell $(PG_CONFIG) --includedir) -o $@ \
		clients/cpp/lease_client.cpp -L$(shell $(PG_CONFIG) --libdir) \
		-Wl,-rpath,$(shell $(PG_CONFIG) --libdir) -lpq -pthread

lease-client: clients/cpp/lease_client

# The lease TAP tests drive the client.
ifdef TAP_TESTS
installcheck: clients/cpp/lease_client
endif

test/unit/lease_client_test: test/unit/lease_client_test.cpp clients/cpp/snowflake_lease.hpp
	$(CXX) -std=c++17 $(WARNINGS) -g -O1 -Iclients/cpp -o $@ test/unit/lease_client_test.cpp \
		-lgtest -lgtest_main -pthread

lease-client-test: test/unit/lease_client_test
	test/unit/lease_client_test

.PHONY: lease-client lease-client-test

# Compiles test/unit/fence_probe.cpp (a core header, then postgres.h) as
# the core is compiled, and succeeds only if that fails on postgres.h; a
# second check refuses any include in src/core but a core header or a
# standard one, so no path around the include path (say <postgresql/...>)
# slips in.
#
# Then the other side: no frame in src/pg holds an object with a
# destructor, which an ereport(ERROR) longjmp would skip (docs/design.md,
# "The C++ boundary").  Each core type has a static_assert that it is
# trivially destructible.  For src/pg's own code corefence refuses
# 1. a standard header that declares an owning type (string, container,
#    smart pointer, std::function, lock, thread, stream), reached by a
#    src/pg file directly or through other headers, as the preprocessor
#    lists them with the build's flags ($(CXX) -M).  However the type is
#    then spelt, its header is there.  A header that brings one along
#    (<iterator>, <random>) is refused too;
# 2. in src/pg's text without comments ($(CXX) -fpreprocessed -E), with
#    file and line: those types, and the functions that return one, after
#    std::; "using namespace std" or an alias of std; a destructor.  (A
#    string literal that names one is refused too: rephrase it.)
# A class of src/pg's own with a member of such a type fails 1 or 2.
# test/unit/pg_fence_probe.cpp shows that both checks see what they refuse.
# The owning types' headers (libstdc++ keeps the types in bits/), the names
# refused after std::, and the other forms refused by 2.
OWNING_STD_HEADERS = string vector deque list forward_list map set unordered_map \
	unordered_set queue stack memory functional any mutex shared_mutex thread future \
	condition_variable ios iostream istream ostream sstream fstream regex filesystem \
	locale syncstream basic_string.h stl_vector.h stl_deque.h stl_list.h stl_tree.h \
	hashtable.h unique_ptr.h shared_ptr.h std_function.h std_mutex.h std_thread.h ios_base.h
OWNING_STD_NAMES = basic_string string wstring u8string u16string u32string vector deque \
	list forward_list map multimap set multiset unordered_map unordered_multimap \
	unordered_set unordered_multiset priority_queue queue stack unique_ptr shared_ptr \
	weak_ptr make_unique make_shared allocate_shared function any mutex recursive_mutex \
	timed_mutex shared_mutex lock_guard unique_lock scoped_lock shared_lock \
	condition_variable thread jthread async future shared_future promise packaged_task \
	basic_[a-z]*(stream|buf) [io]?stringstream [io]?fstream [io]stream stringbuf filebuf \
	cin cout cerr clog wcout wcerr regex locale filesystem pmr to_string to_wstring getline
fence_empty :=
fence_space := $(fence_empty) $(fence_empty)
fence_alternatives = ($(subst $(fence_space),|,$(strip $(1))))
fence_end = ([^A-Za-z0-9_]|$$)
OWNING_HEADERS_RE = /c\+\+/[^/]+/(bits/)?$(call fence_alternatives,$(OWNING_STD_HEADERS))$$
OWNING_USES_RE = std[[:space:]]*::[[:space:]]*(__cxx11[[:space:]]*::[[:space:]]*)?$(call \
	fence_alternatives,$(OWNING_STD_NAMES))$(fence_end)|using[[:space:]]+namespace[[:space:]]+(::)?std$(fence_end)|namespace[[:space:]]+[A-Za-z_][A-Za-z0-9_]*[[:space:]]*=[[:space:]]*(::)?std$(fence_end)|~[[:space:]]*[A-Za-z_][A-Za-z0-9_]*[[:space:]]*\([[:space:]]*(void)?[[:space:]]*\)
corefence:
	@if $(CXX) -std=c++17 $(CORE_CPPFLAGS) -fsyntax-only test/unit/fence_probe.cpp \
			>fence_probe.log 2>&1; then \
		echo "corefence: src/core can include postgres.h" >&2; exit 1; \
	fi
	@grep -q "postgres.h" fence_probe.log || { cat fence_probe.log >&2; exit 1; }
	@rm -f fence_probe.log
	@if grep -nE '^[[:space:]]*#[[:space:]]*include' src/core/*.cpp src/core/*.hpp | \
			grep -vE '#include ("[a-z_]+\.hpp"|<[a-z_]+>)$$'; then \
		echo "corefence: src/core includes something other than core and standard headers" >&2; \
		exit 1; \
	fi
	@echo "corefence: ok, src/core cannot include PostgreSQL headers"
	@headers() { deps=$$($(CXX) $(filter-out -MMD -MP,$(CXXFLAGS)) $(CPPFLAGS) \
			-DSNOWFLAKE_LIBRARY_VERSION='""' -M "$$1") || exit 2; \
		printf '%s\n' "$$deps" | tr ' \\' '\n\n' | grep -E '$(OWNING_HEADERS_RE)' | sort -u; }; \
	uses() { text=$$($(CXX) -std=c++17 -fpreprocessed -dD -w -E "$$1") || exit 2; \
		printf '%s\n' "$$text" | awk -v f="$$1" '/^# [0-9]+ "/ { n = $$2 - 1; next } \
			{ print "corefence: " f ":" ++n ": " $$0 }' | grep -E '$(OWNING_USES_RE)'; }; \
	probe=test/unit/pg_fence_probe.cpp; \
	hit=$$(headers $$probe) || exit 1; \
	[ -n "$$hit" ] || { echo "corefence: the header check misses <string> in $$probe" >&2; exit 1; }; \
	want=$$(grep -c '/\* refused \*/' $$probe); got=$$(uses $$probe | wc -l); \
	[ "$$got" = "$$want" ] || { echo "corefence: the name check reports $$got lines" \
		"of $$probe, not its $$want refused ones" >&2; exit 1; }; \
	bad=0; for f in $(PG_OBJS:.o=.cpp); do \
		hit=$$(headers $$f) || exit 1; \
		[ -z "$$hit" ] || { echo "corefence: $$f reaches" $$hit >&2; bad=1; }; \
	done; \
	for f in $(sort $(wildcard src/pg/*.[ch]pp src/pg/*/*.[ch]pp)); do \
		if uses $$f >&2; then bad=1; fi; \
	done; \
	[ $$bad = 0 ] || { echo "corefence: src/pg must hold no object with a destructor" \
		"(docs/design.md, \"The C++ boundary\")" >&2; exit 1; }
	@echo "corefence: ok, src/pg names no type with a destructor"

.PHONY: unittest unittest-sanitize corefence installcheck-one-slot
