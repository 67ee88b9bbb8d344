# snowflake.database = '' (the default): the registry launcher runs a
# registry in every database that holds the extension, and in no other.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeTest;

# debug1: the log shows "registering/unregistering background worker".
my $node = SnowflakeTest::new_node('every_database',
	settings => { 'snowflake.registry_interval' => 200, log_min_messages => 'debug1' });
for my $db ('one', 'two', 'plain', 'late')
{
	$node->safe_psql('postgres', "CREATE DATABASE $db");
}
# "postgres" too: the test reads snowflake_status() there.
$node->safe_psql($_, 'CREATE EXTENSION snowflake') for 'postgres', 'one', 'two';

sub registries
{
	return $node->safe_psql(
		'postgres', q{
SELECT coalesce(string_agg(datname, ',' ORDER BY datname), '')
  FROM pg_stat_activity WHERE backend_type = 'snowflake registry'});
}

# Waits until the registries run in exactly @$dbs: one check, named $what.
sub registries_become
{
	my ($dbs, $what) = @_;
	my $want = join(',', @$dbs);
	ok(SnowflakeTest::wait_until(sub { registries() eq $want }, "registries in $want"), $what);
	return;
}

# This instance's beat count in $db's snowflake_nodes.
sub beats
{
	my ($db) = @_;
	return $node->safe_psql(
		$db, q{
SELECT coalesce(max(n.beats), 0)
  FROM snowflake_nodes AS n, snowflake_status() AS s WHERE n.instance_id = s.instance_id});
}

sub oid_of
{
	my ($db) = @_;
	return $node->safe_psql('postgres',
		"SELECT oid FROM pg_database WHERE datname = '$db'");
}

# --- 1. two databases with the extension, one without -------------------------
is( $node->safe_psql(
		'postgres', q{SELECT count(*) FROM pg_stat_activity
                       WHERE backend_type = 'snowflake registry launcher' AND datname IS NULL}),
	'1',
	'one launcher runs, connected to no database');
registries_become([qw(one postgres two)], 'a registry runs in each database with the extension');
for my $db ('one', 'two')
{
	ok(SnowflakeTest::wait_until(sub { beats($db) >= 3 }, "heartbeats in $db"),
		"the registry heartbeats in the snowflake_nodes of \"$db\"");
}
my $plain = oid_of('plain');
ok( $node->wait_for_log(
		qr/unregistering background worker "snowflake registry in database $plain"/),
	'"plain" was probed, and its registry exited');
is(registries(), 'one,postgres,two', 'no registry stays in "plain"');
ok( $node->poll_query_until(
		'postgres', 'SELECT registry_last_round IS NOT NULL AND registry_problem IS NULL
                      FROM snowflake_status()'),
	'the registries complete rounds, and no problem is reported');
unlike(slurp_file($node->logfile), qr/WARNING:  snowflake node registry/,
	'no registry WARNING in the log');

# --- 2. CREATE EXTENSION after the start ----------------------------------------
$node->safe_psql('late', 'CREATE EXTENSION snowflake');
registries_become([qw(late one postgres two)],
	'CREATE EXTENSION starts a registry in "late", without a restart');
ok(SnowflakeTest::wait_until(sub { beats('late') >= 2 }, 'heartbeats in late'),
	'it heartbeats there');

# --- 3. DROP EXTENSION ------------------------------------------------------------
my $two = oid_of('two');
my $offset = -s $node->logfile;
$node->safe_psql('two', 'DROP EXTENSION snowflake');
registries_become([qw(late one postgres)], 'after DROP EXTENSION the registry of "two" exits');
ok( $node->wait_for_log(
		qr/unregistering background worker "snowflake registry in database $two"/, $offset),
	'and gives its worker up');
is($node->safe_psql('postgres', 'SELECT registry_problem IS NULL FROM snowflake_status()'),
	't', 'no problem is reported');
unlike(slurp_file($node->logfile, $offset), qr/WARNING:  snowflake node registry/,
	'and no WARNING logged');
$node->safe_psql('two', 'CREATE EXTENSION snowflake');
registries_become([qw(late one postgres two)], 'created again, the extension gets a registry again');

# --- 4. DROP DATABASE with a registry connected -------------------------------------
my ($ret, $stdout, $stderr) = $node->psql('postgres', 'DROP DATABASE one');
is($ret, 0, 'DROP DATABASE succeeds while a registry is connected to it');
is($stderr, '', 'with no error');
registries_become([qw(late postgres two)], 'its registry is gone');
ok( $node->poll_query_until(
		'postgres', 'SELECT registry_problem IS NULL FROM snowflake_status()'),
	'and no problem is left');

# --- 5. a registry that is terminated ---------------------------------------------
my $late_pid = $node->safe_psql(
	'postgres', q{SELECT pid FROM pg_stat_activity
                   WHERE backend_type = 'snowflake registry' AND datname = 'late'});
$node->safe_psql('postgres', "SELECT pg_terminate_backend($late_pid)");
ok( $node->poll_query_until(
		'postgres', qq{
SELECT count(*) = 1 FROM pg_stat_activity AS a, snowflake_status() AS s
 WHERE a.backend_type = 'snowflake registry' AND a.datname = 'late' AND a.pid <> $late_pid
   AND s.registry_problem IS NULL AND s.registry_last_round > a.backend_start}),
	'a terminated registry is started again, and completes rounds');

# --- 6. no background worker slot for a registry -------------------------------------
# Six slots: reservation worker, launcher, logical replication launcher, and
# three for four registries.  "plain" goes, so that no probe competes.

$node->safe_psql('postgres', 'DROP DATABASE plain');
$node->safe_psql('postgres', 'CREATE DATABASE three');
$node->safe_psql('three', 'CREATE EXTENSION snowflake');
$node->append_conf('postgresql.conf',
	"max_worker_processes = 6\nmax_parallel_workers = 0\n");
$offset = -s $node->logfile;
$node->restart;
ok( $node->poll_query_until(
		'postgres', q{SELECT registry_problem ~ '^database "(late|postgres|two|three)": no background worker slot is free for its registry \(max_worker_processes\)$'
                      FROM snowflake_status()}),
	'a registry with no background worker slot is a problem naming its database');
ok( $node->wait_for_log(
		qr/WARNING:  snowflake node registry cannot run in database "(late|postgres|two|three)": no background worker slot is free[^\n]*\n[^\n]*DETAIL:[^\n]*\n[^\n]*HINT:  \QRaise max_worker_processes (each database with the extension needs one for its registry) and restart the server, or set snowflake.database to the one database to register.\E/,
		$offset),
	'the WARNING\'s HINT gives the fix');
$node->append_conf('postgresql.conf', "max_worker_processes = 8\n");
$node->restart;
registries_become([qw(late postgres three two)],
	'with more slots, every database with the extension has its registry');
ok( $node->poll_query_until(
		'postgres', 'SELECT registry_problem IS NULL AND registry_last_round IS NOT NULL
                      FROM snowflake_status()'),
	'and no problem is left');

# --- 7. more databases with the extension than registry slots ----------------------
# 16 slots, 18 databases: the launcher counts and names the two left out.

$node->append_conf('postgresql.conf', "max_worker_processes = 24\n");
$node->restart;
my @more = map { "more$_" } 1 .. 14;
for my $db (@more)
{
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	$node->safe_psql($db, 'CREATE EXTENSION snowflake');
}
ok( $node->poll_query_until(
		'postgres', q{SELECT registry_problem ~ '^2 databases cannot be probed: all 16 registry slots are taken: "\w+", "\w+"$'
                      FROM snowflake_status()}),
	'a 17th and 18th database with the extension are a problem counting and naming them');
ok( $node->wait_for_log(
		qr/WARNING:  snowflake node registry cannot run: 2 databases cannot be probed: all 16 registry slots are taken: "\w+", "\w+"\n[^\n]*DETAIL:[^\n]*\n[^\n]*HINT:  \QSet snowflake.database to the database whose snowflake_nodes the replication carries, and restart the server.\E/
	),
	'the WARNING\'s HINT gives the fix');
is( $node->safe_psql(
		'postgres', q{SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'snowflake registry'}),
	'16',
	'16 registries run');
$node->safe_psql($_, 'DROP EXTENSION snowflake') for 'more1', 'more2';
ok( $node->poll_query_until(
		'postgres', q{SELECT count(*) = 16 AND bool_and(datname NOT IN ('more1', 'more2'))
                        AND (SELECT registry_problem IS NULL FROM snowflake_status())
                       FROM pg_stat_activity WHERE backend_type = 'snowflake registry'}),
	'two extensions fewer: every database that has it has its registry, and no problem is left');

$node->stop;
done_testing();
