# A fresh install builds 1.6 and nothing older, and a database left at 1.4
# cannot run 1.4's SECURITY DEFINER functions under library 1.6.
#
# - The shipped files: CREATE EXTENSION snowflake VERSION 'X' fails for
#   every X from 1.0 to 1.5 with 0A000, saying why and what to run; plain
#   CREATE EXTENSION installs 1.6 from its own script (the only other way
#   to 1.6 would start from 1.0's install script, which refuses).
# - On a relocated copy of the installation that can still install 1.0
#   (test/perl/SnowflakeOldVersions.pm): a database at each of 1.0 to 1.5,
#   updated with ALTER EXTENSION snowflake UPDATE, has the catalog of a
#   fresh 1.6, item by item (SnowflakeOldVersions::extension_catalog).  The
#   install scripts of 1.1 to 1.5 there still refuse: ALTER EXTENSION UPDATE
#   never runs them, and CREATE EXTENSION runs a version's own script
#   rather than a path from 1.0.
# - A database at 1.4 under library 1.6: each of 1.4's SECURITY DEFINER
#   functions is refused (55000) before its body runs, renaming the schema
#   and planting the helper such a function calls (snowflake_lease_held)
#   makes nobody a superuser, and the first snowflake_nextval() of a session warns.
# - The update chain step by step, with leases of 1.4 carried over:
#   test/old_versions/sql/upgrade.sql, run with pg_regress on the relocated
#   copy.

use strict;
use warnings;
use File::Basename;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SnowflakeOldVersions;
use SnowflakeTest;
use Test::More;

my @old_versions = qw(1.0 1.1 1.2 1.3 1.4 1.5);
my $current = '1.6';
my $top = $ENV{TESTDIR} // '.';

# ERROR, WARNING, DETAIL and HINT lines of psql's stderr, without psql's
# "psql:<stdin>:N: " prefix (run with VERBOSITY verbose: the SQLSTATE
# follows the severity).
sub messages
{
	my ($stderr) = @_;
	my @lines = map { s/^psql:[^:]*:\d+: //r } split /\n/, $stderr;
	return join("\n", grep { /^(ERROR|WARNING|DETAIL|HINT):/ } @lines);
}

# The messages of $sql in $db, run as $role (default: the superuser).
sub messages_of
{
	my ($node, $db, $sql, $role) = @_;
	my (undef, undef, $stderr) = $node->psql(
		$db, "\\set VERBOSITY verbose\n$sql",
		extra_params => [ defined $role ? ('-U', $role) : () ]);
	return messages($stderr);
}

sub refusal_of_install
{
	my ($version) = @_;
	return
	    "ERROR:  0A000: snowflake version $version cannot be installed anew\n"
	  . "DETAIL:  Library $current installs only version $current: older versions are reached only by "
	  . "updating, since version 1.4 had SECURITY DEFINER functions that the owner of the "
	  . "extension's schema could turn against the superuser.\n"
	  . "HINT:  Run CREATE EXTENSION snowflake; to install version $current. A database at an older "
	  . "version reaches $current with ALTER EXTENSION snowflake UPDATE.";
}

sub refusal_of_definer
{
	my ($function, $db) = @_;
	return
	    "ERROR:  55000: snowflake 1.4's SECURITY DEFINER functions are disabled under library $current\n"
	  . "DETAIL:  Database \"$db\" still has the SQL functions of snowflake 1.4. $function() runs "
	  . "with its owner's rights and calls other functions by schema name, so the owner of the "
	  . "extension's schema could run code with those rights.\n"
	  . "HINT:  Run ALTER EXTENSION snowflake UPDATE in database \"$db\".";
}

sub warning_of_version
{
	my ($version, $db) = @_;
	my $detail =
	  $version eq '1.4'
	  ? "The database is exposed until it is updated: it keeps version 1.4's SECURITY DEFINER "
	  . "functions, which the owner of the extension's schema can turn against the superuser. "
	  . "Library $current refuses to run them."
	  : "The database lacks the objects of version $current until it is updated.";
	return
	    "WARNING:  55000: snowflake extension in database \"$db\" is at version $version, "
	  . "older than library version $current\n"
	  . "DETAIL:  $detail\n"
	  . "HINT:  Run ALTER EXTENSION snowflake UPDATE in database \"$db\".";
}

sub extversion
{
	my ($node, $db) = @_;
	return $node->safe_psql($db, "SELECT extversion FROM pg_extension WHERE extname = 'snowflake'");
}

# Settings of the regression tests (test/conf/regress.conf: 4 leased
# worker ids, the registry in contrib_regression; it preloads snowflake too).
sub start_node
{
	my ($name, %params) = @_;
	return SnowflakeTest::new_node($name,
		install => [%params],
		conf => slurp_file("$top/test/conf/regress.conf"));
}

# --- The shipped files ----------------------------------------------------------

my $shipped = start_node('shipped');
for my $version (@old_versions)
{
	is( messages_of($shipped, 'postgres', "CREATE EXTENSION snowflake VERSION '$version'"),
		refusal_of_install($version),
		"CREATE EXTENSION snowflake VERSION '$version' refuses with 0A000, why and what to run");
}
is($shipped->safe_psql('postgres', "SELECT count(*) FROM pg_extension WHERE extname = 'snowflake'"),
	'0', 'no refused version left an extension behind');

$shipped->safe_psql('postgres', 'CREATE DATABASE fresh');
is(messages_of($shipped, 'fresh', 'CREATE EXTENSION snowflake'), '',
	'CREATE EXTENSION snowflake succeeds');
is(extversion($shipped, 'fresh'), $current, "CREATE EXTENSION snowflake installs $current");
is($shipped->safe_psql('fresh', 'SELECT count(*) FROM snowflake_layout WHERE first_id = 0'),
	'1', "${current}'s script records the running layout");
is(messages_of($shipped, 'fresh', 'SELECT snowflake_nextval() > 0'), '',
	"a session in a database at $current is not warned");
my $fresh = SnowflakeOldVersions::extension_catalog($shipped, 'fresh');
cmp_ok(scalar(@$fresh), '>', 1000, "the catalog of a fresh $current has its many items");

# The comparison sees one changed label.
$shipped->safe_psql('postgres', 'CREATE DATABASE altered');
$shipped->safe_psql('altered',
	'CREATE EXTENSION snowflake; ALTER FUNCTION snowflake_decode(bigint) IMMUTABLE');
is( SnowflakeOldVersions::catalog_differences(
		SnowflakeOldVersions::extension_catalog($shipped, 'altered'), $fresh),
	"- function snowflake_decode(bigint) | volatility = s\n"
	  . "+ function snowflake_decode(bigint) | volatility = i",
	'the catalog comparison reports one changed label as a difference');
$shipped->stop;

# --- The relocated copy that still installs 1.0 ---------------------------------

my $old = start_node('relocated',
	install_path => SnowflakeOldVersions::relocated_install('relocated'));
is( messages_of($old, 'postgres', "CREATE EXTENSION snowflake VERSION '1.4'"),
	refusal_of_install('1.4'),
	"with 1.0's script at hand, VERSION '1.4' still runs 1.4's own script, which refuses");

for my $version (@old_versions)
{
	my $db = 'from_' . ($version =~ tr/./_/r);
	$old->safe_psql('postgres', "CREATE DATABASE $db");
	$old->safe_psql($db, "CREATE EXTENSION snowflake VERSION '1.0'");
	$old->safe_psql($db, "ALTER EXTENSION snowflake UPDATE TO '$version'")
	  if $version ne '1.0';
	is(extversion($old, $db), $version,
		"a database at $version: 1.0 from the fixture, then the shipped update scripts");
	is(messages_of($old, $db, 'ALTER EXTENSION snowflake UPDATE'), '',
		"ALTER EXTENSION snowflake UPDATE from $version succeeds");
	is(extversion($old, $db), $current, "$version is updated to $current");
	is( SnowflakeOldVersions::catalog_differences(
			SnowflakeOldVersions::extension_catalog($old, $db), $fresh),
		'',
		"updated from $version: the catalog of a fresh $current, item by item");
}

# A table named snowflake in the extension's schema: the update to 1.6,
# which adds the type snowflake, says so, and succeeds once it is renamed.
$old->safe_psql('postgres', 'CREATE DATABASE clash');
$old->safe_psql('clash', q{
CREATE EXTENSION snowflake VERSION '1.0';
ALTER EXTENSION snowflake UPDATE TO '1.5';
CREATE TABLE snowflake (x integer);});
is( messages_of($old, 'clash', "\\set SHOW_CONTEXT never\nALTER EXTENSION snowflake UPDATE"),
	"ERROR:  42710: schema \"public\" already has a type named \"snowflake\"\n"
	  . "DETAIL:  Version 1.6 adds the type snowflake to the extension's schema; a table named "
	  . "snowflake has a row type of that name.\n"
	  . "HINT:  Rename the table or type, then run the command again.",
	'the update to 1.6 says that a table named snowflake is in the way (42710)');
is(extversion($old, 'clash'), '1.5', 'and leaves the database at 1.5');
$old->safe_psql('clash', 'ALTER TABLE snowflake RENAME TO snowflake_old');
is(messages_of($old, 'clash', 'ALTER EXTENSION snowflake UPDATE'), '',
	'once the table is renamed, the update succeeds');
is(extversion($old, 'clash'), $current, "and the database is at $current");

# A view over snowflake_status(): the update, which recreates the function
# with more columns, stops naming the view (CHANGELOG.md, 1.6), and
# succeeds once it is dropped.
$old->safe_psql('postgres', 'CREATE DATABASE statusview');
$old->safe_psql('statusview', q{
CREATE EXTENSION snowflake VERSION '1.0';
ALTER EXTENSION snowflake UPDATE TO '1.5';
CREATE VIEW my_status AS SELECT ids_issued FROM snowflake_status();});
like(messages_of($old, 'statusview', 'ALTER EXTENSION snowflake UPDATE'),
	qr/\AERROR:  2BP01: cannot drop function snowflake_status\(\) because other objects depend on it\nDETAIL:  view my_status depends on function snowflake_status\(\)/,
	'a view over snowflake_status() stops the update to 1.6, naming the view (2BP01)');
$old->safe_psql('statusview', 'DROP VIEW my_status');
is(messages_of($old, 'statusview', 'ALTER EXTENSION snowflake UPDATE'), '',
	'once the view is dropped, the update succeeds');

# --- 1.4 (and 1.3) under library 1.6 --------------------------------------------

$old->safe_psql(
	'postgres', q{
CREATE ROLE app LOGIN;
CREATE DATABASE leasedb OWNER app;
CREATE DATABASE at13;
});
$old->safe_psql(
	'leasedb', q{
CREATE EXTENSION snowflake VERSION '1.0';
ALTER EXTENSION snowflake UPDATE TO '1.4';
GRANT EXECUTE ON FUNCTION snowflake_lease_worker(text, interval, timestamptz),
                          snowflake_renew_lease(bigint, bigint, timestamptz),
                          snowflake_release_lease(bigint, bigint) TO app;
});
$old->safe_psql('at13',
	"CREATE EXTENSION snowflake VERSION '1.0'; ALTER EXTENSION snowflake UPDATE TO '1.3'");

is( $old->safe_psql(
		'leasedb', q{
SELECT string_agg(p.proname, ',' ORDER BY p.proname)
  FROM pg_proc AS p
       JOIN pg_depend AS d
         ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
       JOIN pg_extension AS e ON e.oid = d.refobjid AND e.extname = 'snowflake'
 WHERE p.prosecdef}),
	'snowflake_lease_connection_alive,snowflake_lease_worker,snowflake_release_lease,'
	  . 'snowflake_renew_lease',
	'1.4 has four SECURITY DEFINER functions');
my %definer_calls = (
	snowflake_lease_connection_alive =>
	  'SELECT snowflake_lease_connection_alive(pg_backend_pid(), now())',
	snowflake_lease_worker => "SELECT * FROM snowflake_lease_worker('definer', interval '1 hour')",
	snowflake_renew_lease => 'SELECT * FROM snowflake_renew_lease(1, NULL)',
	snowflake_release_lease => 'SELECT snowflake_release_lease(1, NULL)');
for my $function (sort keys %definer_calls)
{
	is(messages_of($old, 'leasedb', $definer_calls{$function}),
		refusal_of_definer($function, 'leasedb'),
		"1.4's $function() is refused under library $current (55000), with the database to update");
}
is( messages_of(
		$old, 'leasedb', "SELECT * FROM snowflake_lease_worker('definer', interval '1 hour')", 'app'),
	refusal_of_definer('snowflake_lease_worker', 'leasedb'),
	'the same for a role granted the function');
my ($ret, $out, $err);

# Only the extension's own: another SECURITY DEFINER function runs.
$old->safe_psql('leasedb',
	q{CREATE FUNCTION public.own_definer() RETURNS integer LANGUAGE sql SECURITY DEFINER AS 'SELECT 7'});
($ret, $out, $err) = $old->psql('leasedb', 'SELECT public.own_definer()');
is("$out|$err", '7|', "a SECURITY DEFINER function that is not the extension's runs");

# The first ID of a session warns, once; not the next one.
($ret, $out, $err) = $old->psql('leasedb',
	"\\set VERBOSITY verbose\nSELECT snowflake_nextval() > 0;\nSELECT snowflake_nextval() > 0;");
is($out, "t\nt", 'a database at 1.4 still issues IDs');
is(messages($err), warning_of_version('1.4', 'leasedb'),
	"a session's first ID in a database at 1.4 warns, once: exposed until updated");
is(messages_of($old, 'leasedb', 'SELECT snowflake_nextval() > 0'),
	warning_of_version('1.4', 'leasedb'),
	"so does the next session's: an outdated database is never taken as checked");
is( messages_of($old, 'at13', 'SELECT snowflake_nextval() > 0'),
	warning_of_version('1.3', 'at13'),
	"a session's first ID in a database at 1.3 warns, once");

# The attack on 1.4's SECURITY DEFINER functions: the owner of the database, and so of schema public, renames it and plants
# the helper that 1.4's snowflake_release_lease() calls first.
($ret, $out, $err) = $old->psql(
	'leasedb', q{
\set VERBOSITY verbose
ALTER SCHEMA public RENAME TO snowpub;
CREATE SCHEMA public;
} . $SnowflakeOldVersions::lookalike_lease_table . q{
CREATE FUNCTION public.snowflake_lease_held(token bigint, caller text)
RETURNS public.snowflake_worker_leases LANGUAGE plpgsql AS $f$
DECLARE r public.snowflake_worker_leases;
BEGIN
  RAISE NOTICE 'planted code runs as current_user=%, session_user=%', current_user, session_user;
  EXECUTE 'ALTER ROLE app SUPERUSER';
  r.released_at := pg_catalog.now();
  RETURN r;
END $f$;
SELECT snowpub.snowflake_release_lease(1, NULL);
},
	extra_params => [ '-U', 'app' ]);
is(messages($err), refusal_of_definer('snowflake_release_lease', 'leasedb'),
	'definer attack: the renamed 1.4 definer function is refused before its body runs');
unlike($err, qr/planted code runs/, 'definer attack: the planted helper never runs');
is($old->safe_psql('postgres', "SELECT rolsuper FROM pg_roles WHERE rolname = 'app'"),
	'f', 'definer attack: the schema owner is no superuser');

# At every start of the server, the registry worker's first round says it in
# the log for the database it runs in.
$old->append_conf('postgresql.conf', "snowflake.database = 'leasedb'");
my $log_offset = -s $old->logfile;
$old->restart;
$old->wait_for_log(
	qr/WARNING:  snowflake extension in database "leasedb" is at version 1\.4, older than library version \Q$current\E/,
	$log_offset);
ok(1, 'at each start the server log says that snowflake.database is at 1.4');

# --- The update chain step by step ----------------------------------------------

my $pg_regress = $ENV{PG_REGRESS}
  // dirname(dirname(`pg_config --pgxs`)) . '/test/regress/pg_regress';
my $outdir = PostgreSQL::Test::Utils::tempdir('upgrade_regress');
my ($stdout, $stderr);
my $passed = IPC::Run::run(
	[
		$pg_regress, '--bindir=' . $old->install_path . '/bin',
		"--inputdir=$top/test/old_versions", "--outputdir=$outdir",
		'--host=' . $old->host, '--port=' . $old->port,
		'--dbname=contrib_regression', 'upgrade'
	],
	'>', \$stdout, '2>', \$stderr);
ok($passed, 'test/old_versions/sql/upgrade.sql: the update chain, step by step')
  or diag($stdout . $stderr
	  . (-f "$outdir/regression.diffs" ? slurp_file("$outdir/regression.diffs") : ''));

$old->stop;
done_testing();
