# When the node registry (in "postgres" here) cannot run, snowflake_status()
# and the log say why with a HINT giving the fix, and the last finding stands:
# with a faked running peer of our node id, on_node_collision = error refuses
# IDs; dropping the extension, a deferrable trigger on its table, or a missing
# database stop the registry (a read-only default does not); the block stays
# until a reload to warn or the registry finds the peer gone.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeTest;
use SnowflakeRegistryPeer;

my $node = SnowflakeRegistryPeer::registry_node('registry',
	{ 'snowflake.database' => 'postgres' }, extension => 'postgres');
$node->safe_psql('postgres', 'CREATE DATABASE app');
$node->safe_psql('app', 'CREATE EXTENSION snowflake');

# snowflake_nextval() in a new session of "app": the ID, or the error.
sub nextval
{
	my ($ret, $stdout, $stderr) =
	  $node->psql('app', 'SELECT snowflake_nextval() > 0');
	return $ret == 0 ? $stdout : $stderr;
}

sub status
{
	my ($columns) = @_;
	return $node->safe_psql('app', "SELECT $columns FROM snowflake_status()");
}

sub set_policy
{
	SnowflakeRegistryPeer::set_policy($node, 'app', @_);
	return;
}

my $blocked = qr/ERROR:  \Q$SnowflakeRegistryPeer::collision\E/;

# --- a collision, found by a registry that runs --------------------------------
is(nextval(), 't', 'IDs before any collision');
ok( $node->poll_query_until(
		'app', 'SELECT registry_last_round IS NOT NULL AND registry_problem IS NULL
                  FROM snowflake_status()'),
	'the registry completes rounds and reports no problem');

my $beating = SnowflakeRegistryPeer::start_peer($node);
ok($node->poll_query_until('app', 'SELECT node_collision FROM snowflake_status()'),
	'the registry finds the running peer');
like(nextval(), $blocked, 'on_node_collision = error refuses IDs');

# --- the extension is dropped in the registry's database ----------------------
my $log_offset = -s $node->logfile;
$node->safe_psql('postgres', 'DROP EXTENSION snowflake');
$beating->finish;    # its table is gone
ok( $node->poll_query_until(
		'app', q{SELECT registry_problem LIKE '%has no snowflake_nodes table%'
                   FROM snowflake_status()}),
	'snowflake_status() reports the missing registry table');
is( status('registry_problem'),
	'database "postgres" (snowflake.database) has no snowflake_nodes table: '
	  . 'the snowflake extension, version 1.2 or later, is not installed there',
	'the report names the database and what is missing');
ok( $node->wait_for_log(
		qr/WARNING:  snowflake node registry cannot run: database "postgres"[^\n]*\n[^\n]*DETAIL:[^\n]*\n[^\n]*HINT:  \QCreate the extension in database "postgres", or set snowflake.database to a database that has it, or to '' to register every database that has it, and restart the server.\E/,
		$log_offset),
	'the log says the registry cannot run, and the HINT gives the fix');
is(status('node_collision'), 't', 'the last finding stands');
like(nextval(), $blocked, 'and keeps refusing IDs under on_node_collision = error');

set_policy('warn');
is(nextval(), 't', 'a reload with on_node_collision = warn lifts the refusal');
set_policy('error');
like(nextval(), $blocked, 'a reload with error brings it back');

# --- the registry runs again, and the peer is gone ------------------------------
$node->safe_psql('postgres', 'CREATE EXTENSION snowflake');
ok( $node->poll_query_until(
		'app', 'SELECT NOT node_collision AND registry_problem IS NULL
                  FROM snowflake_status()'),
	'a completed round clears the collision and the problem');
is(nextval(), 't', 'IDs again');

# --- the database's defaults for its clients: rounds go on ----------------------
# The worker pins its own read-only, timeout and exit_on_error settings, or
# the database owner could turn collision detection off.

my $worker_pid = q{SELECT pid FROM pg_stat_activity WHERE backend_type = 'snowflake registry'};
my $old_pid = $node->safe_psql('app', $worker_pid);
$node->safe_psql(
	'app', qq{
ALTER DATABASE postgres SET default_transaction_read_only = on;
ALTER DATABASE postgres SET statement_timeout = '1ms';
ALTER DATABASE postgres SET lock_timeout = '1ms';
ALTER DATABASE postgres SET exit_on_error = on;
SELECT pg_terminate_backend($old_pid)});
ok( $node->poll_query_until(
		'app', qq{SELECT s.registry_last_round > a.backend_start AND s.registry_problem IS NULL
                    FROM snowflake_status() AS s, pg_stat_activity AS a
                   WHERE a.backend_type = 'snowflake registry' AND a.pid <> $old_pid}),
	'a worker started in a database with those defaults completes its rounds');
$node->safe_psql('app', 'ALTER DATABASE postgres RESET ALL');

# --- rounds fail: a deferrable trigger on snowflake_nodes ------------------------
# The registry refuses to write a table with a deferrable trigger (it would
# fire at commit with the worker's rights); the refusal is reported.

$node->safe_psql(
	'postgres', q{
CREATE FUNCTION public.nodes_noop() RETURNS trigger LANGUAGE plpgsql AS 'BEGIN RETURN NULL; END';
CREATE CONSTRAINT TRIGGER nodes_deferred AFTER INSERT ON snowflake_nodes
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION public.nodes_noop();
});
ok( $node->poll_query_until(
		'app', q{SELECT registry_problem LIKE 'table "snowflake_nodes" of the snowflake extension has a deferrable trigger%'
                   FROM snowflake_status()}),
	'a failing round is reported with its error');
is(nextval(), 't', 'without a known collision, IDs keep coming');
$node->safe_psql('postgres', 'DROP TRIGGER nodes_deferred ON snowflake_nodes');
ok( $node->poll_query_until(
		'app', 'SELECT registry_problem IS NULL FROM snowflake_status()'),
	'the problem clears when rounds complete again');

# --- the registry's database does not exist ------------------------------------
$node->append_conf('postgresql.conf', "snowflake.database = 'nosuchdb'");
$node->restart;
ok( $node->poll_query_until(
		'app', q{SELECT registry_problem LIKE 'could not connect to database "nosuchdb"%'
                   AND registry_last_round IS NULL
                   FROM snowflake_status()}),
	'a registry that cannot connect is reported');
ok( $node->wait_for_log(
		qr/WARNING:  snowflake node registry cannot run: could not connect to database "nosuchdb"[^\n]*\n[^\n]*DETAIL:[^\n]*\n[^\n]*HINT:  \QCreate database "nosuchdb" and the extension in it, or set snowflake.database to a database that has the extension, or to '' to register every database that has it, and restart the server.\E/
	),
	'with a HINT that gives the fix');
is(nextval(), 't', 'and generation goes on');

$node->stop;
done_testing();
