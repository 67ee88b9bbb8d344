# Clock skew between two primaries that replicate snowflake_nodes to each
# other (origin = none: PostgreSQL 16+), node 2 under libfaketime,
# registry_interval 500 ms, clock_skew_threshold 1 s.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeTest;
use SnowflakeClock;

my $db = 'app';
my $node1 = PostgreSQL::Test::Cluster->new('node1');
plan skip_all => 'two primaries replicating to each other with native logical '
  . 'replication need origin = none, new in PostgreSQL 16; this is PostgreSQL '
  . $node1->pg_version
  if $node1->pg_version < 16;
my $node2 = PostgreSQL::Test::Cluster->new('node2');
my %number = (node1 => 1, node2 => 2);

for my $node ($node1, $node2)
{
	$node->init(allows_streaming => 'logical');
	$node->append_conf(
		'postgresql.conf',
		SnowflakeTest::node_conf(
			'snowflake.node_id' => $number{ $node->name },
			'snowflake.registry_interval' => '500ms',
			'snowflake.database' => $db,
			# Node 2's IDs run ahead once its clock is corrected: ride it out.
			'snowflake.on_clock_behind' => 'ride',
			wal_retrieve_retry_interval => '500ms',
			timezone => 'UTC'));
}
$node1->start;
SnowflakeClock::start($node2, 0);
for my $node ($node1, $node2)
{
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	$node->safe_psql($db,
		'CREATE EXTENSION snowflake; CREATE PUBLICATION nodes FOR TABLE snowflake_nodes');
}
$node1->restart;
SnowflakeClock::restart($node2);
for my $node ($node1, $node2)
{
	my $peer = $node == $node1 ? $node2 : $node1;
	my $connection = sprintf('host=%s port=%d dbname=%s', $peer->host, $peer->port, $db);
	$node->safe_psql($db,
		"CREATE SUBSCRIPTION from_" . $peer->name . " CONNECTION '$connection' "
		  . 'PUBLICATION nodes WITH (origin = none, copy_data = false)');
}

sub status
{
	my ($node, $columns) = @_;
	return $node->safe_psql($db, "SELECT $columns FROM snowflake_status()");
}

sub instance
{
	my ($node) = @_;
	return status($node, 'instance_id');
}

# --- 1. clocks that agree ------------------------------------------------------

for my $node ($node1, $node2)
{
	$node->poll_query_until($db, 'SELECT clock_peers = 1 FROM snowflake_status()')
	  or die $node->name . ' compared no clock';
	my ($skewed, $skew) = split /\|/, status($node, 'clock_skewed_peers, clock_skew_ms');
	is($skewed, 0, $node->name . ': clocks that agree are no skew');
	cmp_ok(abs($skew), '<', 1000, $node->name . ': the replication delay makes up no skew');
}

# --- 2. node 2 a minute ahead ----------------------------------------------------

my $old_instance = instance($node2);
my @log_at = (-s $node1->logfile);
$node2->stop;
# Without the file a start trusts its clock: the minute is no pending step.
unlink $node2->data_dir . '/snowflake.clock';
SnowflakeClock::start($node2, 60);
push @log_at, -s $node2->logfile;
my %instance = (node1 => instance($node1), node2 => instance($node2));
isnt($instance{node2}, $old_instance, 'node 2 runs as a new instance');

for my $node ($node1, $node2)
{
	$node->poll_query_until($db,
		'SELECT clock_skewed_peers = 1 AND clock_peers = 1 FROM snowflake_status()')
	  or die $node->name . ' did not report the skew';
}
my $skew1 = status($node1, 'clock_skew_ms');
my $skew2 = status($node2, 'clock_skew_ms');
ok($skew1 < -55000 && $skew1 >= -60005,
	"node 1 reports its clock a minute behind node 2's ($skew1 ms)");
ok($skew2 > 55000 && $skew2 <= 60005,
	"node 2 reports its clock a minute ahead of node 1's ($skew2 ms)");
is( $node2->safe_psql(
		$db,
		"SELECT clocks_ahead = ARRAY['$instance{node2}']::uuid[], clocks_ahead_ms[1] > 55000
		   FROM snowflake_nodes WHERE instance_id = '$instance{node1}'"),
	't|t',
	"node 1's heartbeat, replicated to node 2, lists node 2 as ahead by about a minute");
is( $node1->safe_psql(
		$db,
		"SELECT clocks_ahead FROM snowflake_nodes WHERE instance_id = '$instance{node2}'"),
	'{}', "node 2's heartbeat lists nobody ahead of it");
is( $node1->safe_psql(
		$db,
		"SELECT count(*) FROM snowflake_nodes WHERE instance_id = '$old_instance'"),
	'1', "the stopped instance's row is still there, and clock_peers does not count it");

$node1->wait_for_log(
	qr/WARNING:  snowflake: this node's clock is at least \d+ ms behind the clock of node 2\n.*DETAIL:  Instance $instance{node2} of node 2 heartbeats in snowflake_nodes of database "app"; its heartbeat's clock, read here, proves it/,
	$log_at[0]);
ok(1, 'node 1 logs the skew: its clock behind node 2\'s');
$node2->wait_for_log(
	qr/WARNING:  snowflake: this node's clock is at least \d+ ms ahead of the clock of node 1\n.*DETAIL:  Instance $instance{node1} of node 1 heartbeats in snowflake_nodes of database "app"; its heartbeat says so/,
	$log_at[1]);
ok(1, 'node 2 logs the skew: its clock ahead of node 1\'s');

# The exporter's query, as postgres_exporter runs it (test/t/056 runs the
# exporter itself).
my $queries = slurp_file('monitoring/postgres_exporter/snowflake_queries.yaml');
my ($query) = $queries =~ /^snowflake:\n  query: \|\n(.*?)\n  master:/ms
  or die 'no snowflake query in the queries file';
for my $node ($node1, $node2)
{
	my ($peers, $seconds) = split /\|/,
	  $node->safe_psql($db,
		"SELECT clock_skewed_peers, round(clock_skew_seconds) FROM ($query) AS m");
	is($peers, 1, $node->name . ': the metric clock_skewed_peers is 1');
	is($seconds, $node == $node1 ? '-60' : '60',
		$node->name . ': the metric clock_skew_seconds is the minute, signed');
}

# --- 3. refusing IDs -----------------------------------------------------------

sub set_policy
{
	my ($node, $policy) = @_;
	$node->safe_psql($db,
		"ALTER SYSTEM SET snowflake.on_clock_skew = '$policy'; SELECT pg_reload_conf()");
	$node->poll_query_until($db, "SELECT current_setting('snowflake.on_clock_skew') = '$policy'")
	  or die "the reload did not take";
	return;
}

sub nextval_error
{
	my ($node) = @_;
	my ($ret, $out, $err) = $node->psql($db, 'SELECT snowflake_nextval()',
		extra_params => [ '-v', 'VERBOSITY=verbose' ]);
	return $ret == 0 ? '' : $err;
}

set_policy($node2, 'refuse');
like(
	nextval_error($node2),
	qr/ERROR:  55000: snowflake refuses IDs: this node's clock disagrees with its peers' by more than snowflake.clock_skew_threshold \(1000 ms\)
DETAIL:  It disagrees with 1 of the 1 running nodes it compared, with node 1 by at least \d+ ms \(this node's clock ahead\), and snowflake.on_clock_skew is "refuse".
HINT:  Find which clock is wrong by comparing each node with a trusted time source, and repair its time synchronization: IDs resume at the next registry round after the clocks agree.  Or set snowflake.on_clock_skew = 'warn' and reload to issue IDs meanwhile./,
	'under refuse, node 2 refuses IDs with 55000, naming the skew and the fix');
is(nextval_error($node1), '', "node 1, at 'warn', issues IDs");
set_policy($node1, 'refuse');
like(nextval_error($node1),
	qr/DETAIL:  It disagrees with 1 of the 1 running nodes it compared, with node 2 by at least \d+ ms \(this node's clock behind\)/,
	'with two nodes, node 1 refuses too under refuse');
set_policy($node1, 'warn');

# --- 4. the clock corrected ------------------------------------------------------

@log_at = (-s $node1->logfile, -s $node2->logfile);
SnowflakeClock::set_offset($node2, 0);
for my $node ($node1, $node2)
{
	$node->poll_query_until($db,
		'SELECT clock_skewed_peers = 0 AND abs(clock_skew_ms) < 1000 FROM snowflake_status()')
	  or die $node->name . ' still reports a skew';
}
ok(1, 'once node 2 is corrected, neither node reports a skew');
$node1->wait_for_log(
	qr/LOG:  snowflake: this node's clock agrees with the clock of node 2 again, within snowflake.clock_skew_threshold/,
	$log_at[0]);
$node2->wait_for_log(
	qr/LOG:  snowflake: this node's clock agrees with the clock of node 1 again/, $log_at[1]);
ok(1, 'both logs say the clocks agree again');
is(nextval_error($node2), '', 'node 2 issues IDs again under refuse');

$node1->stop;
$node2->stop;
done_testing();
