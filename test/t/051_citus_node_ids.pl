# Node ids across a Citus cluster set up with docs/citus.md's blocks: a
# coordinator (node id 1) and workers 9 and 10 (node_bits = 4), each
# publishing its snowflake_nodes to every other.  Detection times are
# noted, not asserted.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes ();
use SnowflakeCitus;
use SnowflakeDocs;

SnowflakeCitus::require_citus();
my $page = $SnowflakeCitus::page;
my $interval_ms = 500;

my $conf = SnowflakeDocs::block($page, 'mesh-settings')
  . SnowflakeDocs::block($page, 'bits-settings')
  . "snowflake.registry_interval = $interval_ms\nwal_retrieve_retry_interval = '500ms'\n";
my %node_id = (coordinator => 1, worker1 => 9, worker2 => 10);
# allows_streaming: the framework's default max_wal_senders is 0.
my @init = (init => [ allows_streaming => 'logical' ]);
my $coord = SnowflakeCitus::node('coordinator', 1, conf => $conf, @init);
my $w1 = SnowflakeCitus::node('worker1', 9, conf => $conf, @init);
my $w2 = SnowflakeCitus::node('worker2', 10, conf => $conf, @init);
my @nodes = ($coord, $w1, $w2);
SnowflakeCitus::create_cluster($coord, $w1, $w2);

# The page's hosts and the test's.
my %doc_host = (coordinator => 'coordinator', worker1 => 'worker-1', worker2 => 'worker-2',
	worker3 => 'worker-3');
sub doc_connection
{
	my ($node) = @_;
	return ("host=$doc_host{$node->name} port=5432" => 'host=127.0.0.1 port=' . $node->port);
}

sub status
{
	my ($node) = @_;
	return $node->safe_psql('postgres', 'SELECT node_id, node_collision FROM snowflake_status()');
}

sub instance
{
	my ($node) = @_;
	return $node->safe_psql('postgres', 'SELECT instance_id FROM snowflake_status()');
}

# snowflake_nextval() on $node: 'ok' or the error, with its SQLSTATE.
sub try_nextval
{
	my ($node) = @_;
	my ($out, $err) = ('', '');
	$node->psql('postgres', "\\set VERBOSITY verbose\nSELECT snowflake_nextval()",
		stdout => \$out, stderr => \$err);
	return 'ok' if $out =~ /^\d+$/;
	my ($error) = $err =~ /ERROR:  (.*)$/m;
	return $error // $err;
}

# Waits until $node's snowflake_nodes shows the beats of $instance grow.
sub sees_beating
{
	my ($node, $instance) = @_;
	my $before = $node->safe_psql('postgres',
		"SELECT coalesce(max(beats), 0) FROM snowflake_nodes WHERE instance_id = '$instance'");
	return $node->poll_query_until('postgres',
		"SELECT coalesce(max(beats), 0) > $before FROM snowflake_nodes WHERE instance_id = '$instance'");
}

# --- 1. the layout ----------------------------------------------------------------
for my $node (@nodes)
{
	is( $node->safe_psql('postgres',
			'SELECT timestamp_bits, node_bits, worker_bits, sequence_bits, slots_total, node_id FROM snowflake_status()'),
		"41|4|6|12|64|$node_id{$node->name}",
		$node->name . ': 41 timestamp bits, 4 node bits, 6 worker bits, 64 slots, its node id');
}
$coord->safe_psql('postgres', q{
CREATE TABLE events (id bigint DEFAULT snowflake_nextval() PRIMARY KEY, origin int NOT NULL);
SELECT create_distributed_table('events', 'id');});
$_->safe_psql('postgres',
	"INSERT INTO events (origin) SELECT $node_id{$_->name} FROM generate_series(1, 20)")
  for @nodes;
is( $coord->safe_psql('postgres', q{
SELECT string_agg(format('%s:%s', origin, c), ' ' ORDER BY origin)
  FROM (SELECT origin, count(*) AS c FROM events
         WHERE (snowflake_decode(id)).node_id = origin GROUP BY origin) AS o}),
	'1:20 9:20 10:20',
	'IDs made through each node decode on the coordinator to its node id (9 and 10 above 7)');

# --- 2. the mesh --------------------------------------------------------------------
# With DDL propagation on, Citus creates the coordinator's publication on
# the workers, without snowflake_nodes.
$coord->safe_psql('postgres', 'CREATE PUBLICATION probe FOR TABLE snowflake_nodes');
for my $node ($w1, $w2)
{
	is( $node->safe_psql('postgres', q{
SELECT count(*), (SELECT count(*) FROM pg_publication_tables WHERE pubname = 'probe')
  FROM pg_publication WHERE pubname = 'probe'}),
		'1|0',
		$node->name
		  . ": propagation on: Citus created the coordinator's publication here, without snowflake_nodes");
	my ($ret, $out, $err) =
	  $node->psql('postgres', 'CREATE PUBLICATION probe FOR TABLE snowflake_nodes');
	like($err, qr/ERROR:  publication "probe" already exists/,
		$node->name . ': its own CREATE PUBLICATION then fails');
}
$coord->safe_psql('postgres', 'DROP PUBLICATION probe');
is($_->safe_psql('postgres', 'SELECT count(*) FROM pg_publication'),
	'0', $_->name . ': DROP PUBLICATION propagated too')
  for ($w1, $w2);

$_->safe_psql('postgres', SnowflakeDocs::block($page, 'mesh-publication')) for @nodes;
for my $node (@nodes)
{
	is( $node->safe_psql('postgres', q{
SELECT string_agg(format('%s.%s', schemaname, tablename), ',')
  FROM pg_publication_tables WHERE pubname = 'snowflake_registry'}),
		'public.snowflake_nodes',
		$node->name . ': the publication of snowflake_nodes alone');
}

# Each node's registry has written its row before the others subscribe.
my %instance = map { ($_->name => instance($_)) } @nodes;
for my $node (@nodes)
{
	$node->poll_query_until('postgres',
		"SELECT count(*) = 1 FROM snowflake_nodes WHERE instance_id = '$instance{$node->name}'")
	  or die $node->name . ' did not register';
}

my $subscriptions = SnowflakeDocs::block($page, 'mesh-subscriptions');
my %doc_part = (coordinator => 'coordinator', worker1 => 'worker-1', worker2 => 'worker-2');
my %parts = SnowflakeDocs::parts($subscriptions, values %doc_part);
for my $node (@nodes)
{
	$node->safe_psql('postgres',
		SnowflakeDocs::substitute($parts{ $doc_part{ $node->name } },
			map { doc_connection($_) } grep { $_ != $node } @nodes));
}
for my $node (@nodes)
{
	my @others = sort map { $_->name } grep { $_ != $node } @nodes;
	is( $node->safe_psql('postgres', q{
SELECT string_agg(format('%s:%s', subname, suborigin), ',' ORDER BY subname) FROM pg_subscription}),
		join(',', map { "registry_${_}_to_" . $node->name . ':none' } @others),
		$node->name . ': its own two subscriptions only (Citus does not propagate them), origin = none');
}
for my $node (@nodes)
{
	for my $seen (grep { $_ != $node } @nodes)
	{
		ok(sees_beating($node, $instance{ $seen->name }),
			$node->name . ' sees the heartbeats of ' . $seen->name . ' grow');
	}
	is( $node->safe_psql('postgres', q{
SELECT string_agg(format('%s:%s', node_id, instance_id), ',' ORDER BY node_id) FROM snowflake_nodes}),
		join(',', map { "$node_id{$_->name}:$instance{$_->name}" } @nodes),
		$node->name . "'s snowflake_nodes lists the running instances of all three nodes");
	is(status($node), "$node_id{$node->name}|f", $node->name . ': no collision');
}

# --- 3. two nodes with one node id ----------------------------------------------------
my $refusal = '55000: snowflake node_id 9 is also used by another running instance';

# Polls until $node's node_collision is $want; false on timeout.
sub wait_collision
{
	my ($node, $want) = @_;
	return $node->poll_query_until('postgres', 'SELECT node_collision FROM snowflake_status()', $want);
}

my @offsets = map { -s $_->logfile } ($w1, $w2);
$w2->safe_psql('postgres', 'ALTER SYSTEM SET snowflake.node_id = 9');
$w2->restart;
my $restarted = Time::HiRes::time;
for my $node ($w1, $w2)
{
	ok(wait_collision($node, 't'), $node->name . ': node_collision with node id 9');
}
note(sprintf('both workers detected the collision %.1f s after worker2 restarted (registry_interval %d ms)',
		Time::HiRes::time - $restarted, $interval_ms));
is(status($w2), '9|t', 'worker2 runs with node id 9');
my $i = 0;
for my $node ($w1, $w2)
{
	$node->wait_for_log(qr/WARNING:  snowflake node_id 9 is also used by another running instance/,
		$offsets[ $i++ ]);
	ok(1, $node->name . ' logs the WARNING');
	is(try_nextval($node), $refusal, $node->name . ': snowflake_nextval() refused with 55000');
}
my ($out, $err) = ('', '');
$w1->psql('postgres', 'SELECT snowflake_nextval()', stdout => \$out, stderr => \$err);
like($err, qr/^HINT:  \QGive each primary its own snowflake.node_id.\E$/m, 'worker1: the HINT');
is(status($coord), '1|f', 'coordinator: no collision');
is(try_nextval($coord), 'ok', 'coordinator: issues IDs');

$w2->safe_psql('postgres', 'ALTER SYSTEM RESET snowflake.node_id');
$w2->restart;
my $fixed = Time::HiRes::time;
for my $node ($w1, $w2)
{
	ok(wait_collision($node, 'f'), $node->name . ': the collision clears');
	is(try_nextval($node), 'ok', $node->name . ': issues IDs again');
}
note(sprintf('both workers cleared %.1f s after worker2 restarted with node id 10',
		Time::HiRes::time - $fixed));
is(status($w2), '10|f', 'worker2 runs with node id 10 again');

# --- 4. a replica of worker1 promoted into a new node ---------------------------------
$w1->backup('w1_backup');
my $w3 = PostgreSQL::Test::Cluster->new('worker3');
$w3->init_from_backup($w1, 'w1_backup', has_streaming => 1);
# Citus's server.key, which the framework's backup copy leaves readable by
# others: the server refuses such a key.
chmod 0600, $w3->data_dir . '/server.key' or die "chmod server.key: $!";
$w3->start;
$w1->wait_for_replay_catchup($w3);
is($w3->safe_psql('postgres', 'SELECT pg_is_in_recovery()'), 't', 'worker3 is a streaming replica of worker1');
# Citus registers the replica as a clone of worker1, promotes it, and
# moves half of worker1's shards to it.
my $shards_before = $coord->safe_psql('postgres',
	'SELECT count(*) FROM citus_shards WHERE nodeport = ' . $w1->port);
my ($promoted, $promote_out, $promote_err) = $coord->psql(
	'postgres',
	SnowflakeDocs::substitute(SnowflakeDocs::block($page, 'promote-clone'),
		"'worker-3', 5432" => "'127.0.0.1', " . $w3->port,
		"'worker-1', 5432" => "'127.0.0.1', " . $w1->port),
	on_error_stop => 1);
is($promoted, 0, 'citus_promote_clone_and_rebalance() succeeds') or diag($promote_err);
like($promote_err, qr/NOTICE:  Clone node 127\.0\.0\.1:\d+ \(ID \d+\) has been successfully promoted\./,
	'it promoted the clone');
is($w3->safe_psql('postgres', 'SELECT pg_is_in_recovery()'), 'f', 'worker3 is a primary');
is( $coord->safe_psql('postgres',
		q{SELECT count(*) FROM pg_dist_node WHERE isactive AND noderole = 'primary' AND nodeport = }
		  . $w3->port),
	'1', 'worker3 is a primary node of the cluster');
is( $coord->safe_psql('postgres',
		'SELECT count(*) FROM citus_shards WHERE nodeport IN (' . $w1->port . ', ' . $w3->port . ')'),
	$shards_before, "worker1's shards are on worker1 and worker3");
ok( $coord->safe_psql('postgres', 'SELECT count(*) FROM citus_shards WHERE nodeport = ' . $w3->port) > 0,
	'worker3 holds some of them');
is($coord->safe_psql('postgres', 'SELECT count(*), count(DISTINCT id) FROM events'), '60|60',
	'every row of events is still there');
is( $w3->safe_psql('postgres', 'SELECT string_agg(subname, \',\' ORDER BY subname) FROM pg_subscription'),
	'registry_coordinator_to_worker1,registry_worker2_to_worker1',
	"the promoted replica carries worker1's subscriptions");
# Their apply workers found worker1's slots in use.
$w3->wait_for_log(qr/replication slot "registry_coordinator_to_worker1" is active for PID \d+/);
ok(1, "worker3: the copied subscription's apply worker finds worker1's slot in use");
$w3->safe_psql('postgres', SnowflakeDocs::block($page, 'promoted-drop-subscriptions'));
is($w3->safe_psql('postgres', 'SELECT count(*) FROM pg_subscription'), '0', 'worker3: they are dropped');
for my $node ($coord, $w2)
{
	is( $node->safe_psql('postgres', q{
SELECT string_agg(slot_name, ',' ORDER BY slot_name) FROM pg_replication_slots WHERE slot_name LIKE '%_to_worker1'}),
		'registry_' . $node->name . '_to_worker1',
		$node->name . ": worker1's slot is still there");
	ok( $node->poll_query_until('postgres', q{
SELECT count(*) = 1 FROM pg_stat_replication WHERE application_name LIKE '%_to_worker1' AND state = 'streaming'}),
		$node->name . ': worker1 still streams from it');
}

# Still a replica's primary_conninfo: worker3's registry reaches worker1 by
# replication, and both notice the second instance of node id 9 at once.
is((split /\|/, status($w3))[0], '9', "worker3 keeps worker1's node id 9");
ok(wait_collision($_, 't'), $_->name . ': the collision is noticed before the mesh is wired')
  for ($w3, $w1);

# Into the mesh: the publication came with the copy; subscriptions both
# ways, as the page's, named after both nodes.
is( $w3->safe_psql('postgres', q{SELECT count(*) FROM pg_publication_tables WHERE pubname = 'snowflake_registry'}),
	'1', "worker3 has worker1's publication");
my $w3_instance = instance($w3);
for my $pair ([ $w3, $coord ], [ $w3, $w1 ], [ $w3, $w2 ], [ $coord, $w3 ], [ $w1, $w3 ], [ $w2, $w3 ])
{
	my ($from, $to) = @$pair;
	$to->safe_psql('postgres', sprintf(q{
CREATE SUBSCRIPTION registry_%s_to_%s
    CONNECTION 'host=127.0.0.1 port=%d dbname=postgres'
    PUBLICATION snowflake_registry WITH (origin = none, copy_data = false)},
		$from->name, $to->name, $from->port));
}
my $wired = Time::HiRes::time;
ok(sees_beating($w1, $w3_instance), "worker1 sees worker3's heartbeats");
ok(sees_beating($w3, $instance{worker1}), "worker3 sees worker1's heartbeats");
for my $node ($w1, $w3)
{
	ok(wait_collision($node, 't'), $node->name . ': node_collision with node id 9');
}
note(sprintf('worker1 and worker3 detected the collision %.1f s after the subscriptions were made',
		Time::HiRes::time - $wired));
is(try_nextval($_), $refusal, $_->name . ': snowflake_nextval() refused with 55000') for ($w1, $w3);
is(status($w2), '10|f', 'worker2: no collision');

$w3->safe_psql('postgres', 'ALTER SYSTEM SET snowflake.node_id = 11');
$w3->restart;
for my $node ($w1, $w3)
{
	ok(wait_collision($node, 'f'), $node->name . ': the collision clears');
	is(try_nextval($node), 'ok', $node->name . ': issues IDs again');
}
is(status($w3), '11|f', 'worker3 runs with node id 11');
$w3->safe_psql('postgres', 'INSERT INTO events (origin) SELECT 11 FROM generate_series(1, 20)');
$w1->safe_psql('postgres', 'INSERT INTO events (origin) SELECT 9 FROM generate_series(1, 20)');
is( $coord->safe_psql('postgres', q{
SELECT count(*), count(DISTINCT id) FROM events WHERE (snowflake_decode(id)).node_id = origin}),
	'100|100', "INSERTs through worker3 get IDs of node 11, through worker1 of 9; every ID distinct");

for my $node ($coord, $w1, $w2, $w3)
{
	unlike(slurp_file($node->logfile), qr/duplicate key value/,
		$node->name . ': no apply failed on a duplicate key');
}

$_->stop for ($coord, $w1, $w2, $w3);
done_testing();
