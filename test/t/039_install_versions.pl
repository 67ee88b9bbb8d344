# The gate of src/extension/snowflake--1.3--1.6.sql (test/README.md says what
# it proves): databases at the released versions are made on a relocated copy
# of the installation that still installs 1.0.

use strict;
use warnings;
use File::Basename;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SnowflakeOldVersions;
use SnowflakeTest;
use Test::More;

my @released = qw(1.0 1.1 1.2 1.3);
my @never_released = qw(1.4 1.5);
my $current = '1.6';
my $top = $ENV{TESTDIR} // '.';

# ERROR, WARNING, DETAIL and HINT lines of psql's stderr (VERBOSITY verbose),
# without psql's "psql:<stdin>:N: " prefix.
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

# PostgreSQL's refusal of a version it has no script for.
sub refusal_of_install
{
	my ($version) = @_;
	return "ERROR:  22023: extension \"snowflake\" has no installation script nor update path "
	  . "for version \"$version\"";
}

sub warning_of_version
{
	my ($version, $db) = @_;
	return
	    "WARNING:  55000: snowflake extension in database \"$db\" is at version $version, "
	  . "older than library version $current\n"
	  . "DETAIL:  The database lacks the objects of version $current until it is updated.\n"
	  . "HINT:  Run ALTER EXTENSION snowflake UPDATE in database \"$db\".";
}

sub extversion
{
	my ($node, $db) = @_;
	return $node->safe_psql($db, "SELECT extversion FROM pg_extension WHERE extname = 'snowflake'");
}

# A new database $db at $version (1.0 from the fixture, then the shipped
# update scripts), where $sql then runs.
sub database_at
{
	my ($node, $db, $version, $sql) = @_;
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	$node->safe_psql($db, "CREATE EXTENSION snowflake VERSION '1.0';\n"
		  . ($version eq '1.0' ? '' : "ALTER EXTENSION snowflake UPDATE TO '$version';\n")
		  . ($sql // ''));
	return;
}

# Settings of the regression tests (test/conf/regress.conf).
sub start_node
{
	my ($name, %params) = @_;
	return SnowflakeTest::new_node($name,
		install => [%params],
		conf => slurp_file("$top/test/conf/regress.conf"));
}

# --- The shipped files ----------------------------------------------------------
my $shipped = start_node('shipped');
for my $version (@released, @never_released)
{
	is( messages_of($shipped, 'postgres', "CREATE EXTENSION snowflake VERSION '$version'"),
		refusal_of_install($version),
		"CREATE EXTENSION snowflake VERSION '$version' fails: no script installs it (22023)");
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
for my $version (@never_released)
{
	is( messages_of($old, 'postgres', "CREATE EXTENSION snowflake VERSION '$version'"),
		refusal_of_install($version),
		"with 1.0's script at hand, VERSION '$version' still fails: no path leads to it");
}

for my $version (@released)
{
	my $db = 'from_' . ($version =~ tr/./_/r);
	database_at($old, $db, $version);
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

# The comparison fails an update that misses an object or adds one.
$old->safe_psql('from_1_3', q{
ALTER EXTENSION snowflake DROP FUNCTION snowflake_id_interval(interval);
CREATE FUNCTION snowflake_extra() RETURNS integer LANGUAGE sql AS 'SELECT 1';
ALTER EXTENSION snowflake ADD FUNCTION snowflake_extra();});
my $differences = SnowflakeOldVersions::catalog_differences(
	SnowflakeOldVersions::extension_catalog($old, 'from_1_3'), $fresh);
like($differences, qr/^- function snowflake_id_interval\(interval\) \| member = yes$/m,
	'the comparison reports an object the update misses');
like($differences, qr/^\+ function snowflake_extra\(\) \| member = yes$/m,
	'the comparison reports an object the update adds');
is( scalar(grep { !/^[-+] function snowflake_(id_interval\(interval\)|extra\(\)) \|/ }
		  split /\n/, $differences),
	0, 'and nothing else');

# A table named snowflake in the extension's schema: the update to 1.6,
# which adds the type snowflake, says so, and succeeds once it is renamed.
database_at($old, 'clash', '1.3', 'CREATE TABLE snowflake (x integer)');
is( messages_of($old, 'clash', "\\set SHOW_CONTEXT never\nALTER EXTENSION snowflake UPDATE"),
	"ERROR:  42710: schema \"public\" already has a type named \"snowflake\"\n"
	  . "DETAIL:  Version 1.6 adds the type snowflake to the extension's schema; a table named "
	  . "snowflake has a row type of that name.\n"
	  . "HINT:  Rename the table or type, then run the command again.",
	'the update to 1.6 says that a table named snowflake is in the way (42710)');
is(extversion($old, 'clash'), '1.3', 'and leaves the database at 1.3');
$old->safe_psql('clash', 'ALTER TABLE snowflake RENAME TO snowflake_old');
is(messages_of($old, 'clash', 'ALTER EXTENSION snowflake UPDATE'), '',
	'once the table is renamed, the update succeeds');
is(extversion($old, 'clash'), $current, "and the database is at $current");

# A view over snowflake_status(): the update, which recreates the function
# with more columns, names the view, and succeeds once it is dropped.
database_at($old, 'statusview', '1.3',
	'CREATE VIEW my_status AS SELECT ids_issued FROM snowflake_status()');
like(messages_of($old, 'statusview', 'ALTER EXTENSION snowflake UPDATE'),
	qr/\AERROR:  2BP01: cannot drop function snowflake_status\(\) because other objects depend on it\nDETAIL:  view my_status depends on function snowflake_status\(\)/,
	'a view over snowflake_status() stops the update to 1.6, naming the view (2BP01)');
$old->safe_psql('statusview', 'DROP VIEW my_status');
is(messages_of($old, 'statusview', 'ALTER EXTENSION snowflake UPDATE'), '',
	'once the view is dropped, the update succeeds');

# --- 1.3 under library 1.6 -----------------------------------------------------
database_at($old, 'at13', '1.3');

# The first ID of a session warns, once; not the next one.
my ($ret, $out, $err) = $old->psql('at13',
	"\\set VERBOSITY verbose\nSELECT snowflake_nextval() > 0;\nSELECT snowflake_nextval() > 0;");
is($out, "t\nt", 'a database at 1.3 still issues IDs');
is(messages($err), warning_of_version('1.3', 'at13'),
	"a session's first ID in a database at 1.3 warns, once");
is(messages_of($old, 'at13', 'SELECT snowflake_nextval() > 0'),
	warning_of_version('1.3', 'at13'),
	"so does the next session's: an outdated database is never taken as checked");

# At every start, the registry's first round says it in the log.
$old->append_conf('postgresql.conf', "snowflake.database = 'at13'");
my $log_offset = -s $old->logfile;
$old->restart;
$old->wait_for_log(
	qr/WARNING:  snowflake extension in database "at13" is at version 1\.3, older than library version \Q$current\E/,
	$log_offset);
ok(1, 'at each start the server log says that snowflake.database is at 1.3');

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
