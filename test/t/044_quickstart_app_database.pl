# The README's quick start, followed word for word in "app" on two nodes with
# one node id (plus a short registry interval and what replication needs:
# logical replication on 16+, pglogical on 15).
use strict;
use warnings;
use File::Basename ();
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $db = 'app';
my $readme_path = File::Basename::dirname(__FILE__) . '/../../README.md';
my $readme = slurp_file($readme_path);

# The section, then its marked blocks (list items indent them).
my ($section) = $readme =~ /^## Quick start\n(.*?)(?=^## )/ms
  or die "README.md has no section \"## Quick start\"";
my @conf_blocks =
  $section =~ /<!-- quickstart: postgresql\.conf -->\s*\n\s*```ini\n(.*?)\n\s*```/gs;
my @sql_blocks = $section =~ /<!-- quickstart: sql -->\s*\n\s*```sql\n(.*?)\n\s*```/gs;
is(scalar @conf_blocks, 1, 'the quick start has one postgresql.conf block');
cmp_ok(scalar @sql_blocks, '>=', 1, 'the quick start has SQL blocks');
s/^[ \t]+//mg for @conf_blocks, @sql_blocks;
my ($node_id) = $conf_blocks[0] =~ /^snowflake\.node_id\s*=\s*(\d+)/m;
ok(defined $node_id, 'the postgresql.conf block gives the node id');

my $native = 0;
my @nodes;
for my $name ('quick1', 'quick2')
{
	my $node = PostgreSQL::Test::Cluster->new($name);
	$native = $node->pg_version >= 16;
	$node->init(allows_streaming => 'logical');
	$node->append_conf('postgresql.conf', $conf_blocks[0]);
	# The test's own lines: quick rounds, and what replication needs.
	$node->append_conf(
		'postgresql.conf', qq(
snowflake.registry_interval = 200
track_commit_timestamp = on
max_connections = 40
wal_retrieve_retry_interval = '500ms'
));
	if (!$native)
	{
		# pglogical must be preloaded too: the same line, with it first.
		my ($preload) = $conf_blocks[0] =~ /^shared_preload_libraries\s*=\s*'([^']*)'/m
		  or die 'the quick start does not preload snowflake';
		$node->append_conf('postgresql.conf',
			"shared_preload_libraries = 'pglogical,$preload'\n"
			  . "output_plugin_libraries = 'pgoutput, test_decoding, pglogical_output'\n");
	}
	$node->start;
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	$node->safe_psql($db, $_) for @sql_blocks;
	push @nodes, $node;
}
my ($node1, $node2) = @nodes;

# --- 1. detection is on -------------------------------------------------------
ok( $node1->poll_query_until(
		$db, 'SELECT registry_last_round IS NOT NULL FROM snowflake_status()'),
	'the registry completes its first round in "app"');
is($node1->safe_psql($db, 'SELECT registry_problem IS NULL FROM snowflake_status()'),
	't', 'registry_problem is NULL after the quick start');
is( $node1->safe_psql(
		$db, q{SELECT count(*) FROM snowflake_nodes AS n, snowflake_status() AS s
                WHERE n.instance_id = s.instance_id}),
	'1',
	'this instance heartbeats in the snowflake_nodes of "app"');
unlike(
	slurp_file($node1->logfile),
	qr/WARNING:  snowflake node registry/,
	'no "snowflake node registry" WARNING in the log');

# Normal operation warns about nothing, a clean restart after a burst included.
$node1->safe_psql($db, 'SELECT count(snowflake_nextval()) FROM generate_series(1, 200000)');
$node1->restart;
$node1->safe_psql($db, 'INSERT INTO orders (item) VALUES (\'after restart\')');
ok( $node1->poll_query_until(
		$db, 'SELECT registry_last_round IS NOT NULL FROM snowflake_status()'),
	'the registry runs again in "app" after a restart');
is($node1->safe_psql($db, 'SELECT registry_problem IS NULL FROM snowflake_status()'),
	't', 'registry_problem is NULL after the restart');
my @warnings = slurp_file($node1->logfile) =~ /^.*WARNING: .*$/mg;
is_deeply(\@warnings, [], 'no WARNING at all in the log, through the quick start and a restart');

# --- 2. a second node with the same id is detected ----------------------------
if ($native)
{
	# docs/multi-primary.md's steps for snowflake_nodes alone.
	for my $node (@nodes)
	{
		$node->safe_psql($db, 'CREATE PUBLICATION quick FOR TABLE snowflake_nodes');
	}
	for my $pair ([ $node1, $node2 ], [ $node2, $node1 ])
	{
		my ($subscriber, $provider) = @$pair;
		my $dsn = sprintf('host=%s port=%d dbname=%s',
			$provider->host, $provider->port, $db);
		$subscriber->safe_psql($db,
			    "CREATE SUBSCRIPTION from_"
			  . $provider->name
			  . " CONNECTION '$dsn' PUBLICATION quick"
			  . ' WITH (origin = none, copy_data = false)');
	}
}
else
{
	require SnowflakePglogical;
	no warnings 'once';
	local $SnowflakePglogical::db = $db;
	$_->safe_psql($db, 'CREATE EXTENSION pglogical') for @nodes;
	for my $node (@nodes)
	{
		my $name = $node->name;
		my $dsn = SnowflakePglogical::dsn($node);
		$node->safe_psql($db,
			"SELECT pglogical.create_node(node_name := '$name', dsn := '$dsn')");
		$node->safe_psql($db,
			"SELECT pglogical.replication_set_add_table('default', 'snowflake_nodes')");
	}
	for my $pair ([ $node1, $node2 ], [ $node2, $node1 ])
	{
		my ($subscriber, $provider) = @$pair;
		my $dsn = SnowflakePglogical::dsn($provider);
		$subscriber->safe_psql(
			$db, qq{
SELECT pglogical.create_subscription(
    subscription_name := 'from_@{[ $provider->name ]}',
    provider_dsn := '$dsn',
    forward_origins := '{}',
    synchronize_data := false)});
	}
	SnowflakePglogical::wait_replicating($_) for @nodes;
}

for my $node (@nodes)
{
	ok($node->poll_query_until($db, 'SELECT node_collision FROM snowflake_status()'),
		$node->name . ' reports node_collision: the other node has the same id');
}
my $other = $node2->safe_psql($db, 'SELECT instance_id FROM snowflake_status()');
ok( $node1->wait_for_log(
		qr/WARNING:  \Qsnowflake node_id $node_id is also used by another running instance\E\n[^\n]*DETAIL:  \Qsnowflake_nodes shows instance $other\E/
	),
	'the first node logs the collision, naming the second node\'s instance');

$_->stop for @nodes;
done_testing();
