# Worker-id leases on two-node bidirectional pglogical: the lease state is no
# table, so nothing of it replicates; each node leases worker ids of its own
# node id and shows only its own leases, no conflict, and the IDs of clients
# leasing on both nodes at once never repeat and decode to their node.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SnowflakeLease;
use SnowflakePglogical;
use Test::More;

my $db = $SnowflakePglogical::db;
local $SnowflakeLease::database = $db;

my @nodes = SnowflakePglogical::create_pair(conf => "snowflake.lease_workers = 4\n");
SnowflakePglogical::connect_pair(\@nodes, qw(snowflake_nodes));
is( $nodes[0]->safe_psql(
		$db, q{SELECT count(*) FROM pg_class WHERE relname = 'snowflake_worker_leases'}),
	'0', 'there is no lease table to replicate');

# Every worker id of both lease spaces, leased at once: each client keeps
# its lease until all hold theirs.
my (@clients, @leases);
for my $node (@nodes)
{
	my $n = SnowflakePglogical::node_number($node);
	for my $i (1 .. 4)
	{
		push @clients, start_lease_client($node, "node${n}_client$i", '--count', 2000,
			'--wait-stdin', ($i % 2 ? ('--ttl', 30) : ()));
	}
}
push @leases, wait_for_lease($_) for @clients;
is(scalar(grep { defined } @leases), 8, 'four clients on each node got a lease');
is(scalar(grep { wait_for_holding($_) } @clients), 8, 'all eight hold their leases at once');
is( join(',', map { $_->safe_psql($db, q{SELECT count(*) FROM snowflake_leases WHERE state = 'held'}) } @nodes),
	'4,4', 'each node shows its four held leases');
is(scalar(grep { finish_lease_client($_) != 0 } @clients), 0, 'every client ran')
  or diag(join("\n", map { "$_->{name}: $_->{stderr}" } @clients));
is( join(',', sort map { "$_->{node_id}:$_->{worker_id}" } @leases),
	'1:124,1:125,1:126,1:127,2:124,2:125,2:126,2:127',
	'each node leased the worker ids of its own node id');

SnowflakePglogical::wait_caught_up(\@nodes);
for my $node (@nodes)
{
	my $n = SnowflakePglogical::node_number($node);
	is( $node->safe_psql(
			$db, q{
SELECT string_agg(node_id || ':' || count || ':' || released, ',' ORDER BY node_id)
  FROM (SELECT node_id, count(*), count(*) FILTER (WHERE state = 'released') AS released
          FROM snowflake_leases GROUP BY node_id) AS s}),
		"$n:4:4",
		"node $n shows its own four leases, released, and none of the other node's");
	is(SnowflakePglogical::conflicts($node), 0, "node $n: pglogical reports no conflict");
}

# Each node leases again from its own node id.
for my $node (@nodes)
{
	my $n = SnowflakePglogical::node_number($node);
	is( $node->safe_psql(
			$db,
			q{SELECT node_id, worker_id >= 124 FROM snowflake_lease_worker('again', interval '1 minute')}),
		"$n|t",
		"node $n leases again from its own node id");
}

my @ids = map { read_ids($_) } @clients;
my %seen = map { $_ => 1 } @ids;
is(scalar(@ids), 8 * 2000, 'the clients issued 16,000 IDs');
is(scalar(keys %seen), scalar(@ids), 'no ID repeats across the two nodes');
my $wrong_node = 0;
for my $i (0 .. $#clients)
{
	my ($first) = read_ids($clients[$i]);
	$wrong_node++
	  if $nodes[0]->safe_psql($db, "SELECT node_id FROM snowflake_decode($first)") !=
	  $leases[$i]->{node_id};
}
is($wrong_node, 0, 'every client\'s IDs decode to its own node');
done_testing();
