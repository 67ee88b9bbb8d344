# Worker-id leases under concurrency, with the C++ reference client: fifty
# clients lease at once while sessions issue IDs; no two hold one worker id,
# every client's IDs decode to its lease inside its window, no ID repeats.
# A second node leases from its own node id; there, leases of rolled-back
# transactions (also read through a cursor) stay granted and held.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SnowflakeLease;
use SnowflakeTest;
use Test::More;

my $clients = 50;
my $ids_per_client = 2000;

my %nodes;
for my $node_id (1, 2)
{
	my $node = SnowflakeTest::new_node(
		"node$node_id",
		settings => lease_settings(
			node_id => $node_id,
			lease_workers => 64,
			# Fifty clients at once can take over 1 s from clock to grant
			# (client clocks are 029's subject).
			lease_clock_tolerance => 60000),
		extension => 'postgres');
	$node->safe_psql('postgres', 'CREATE TABLE issued (id bigint, source text)');
	$nodes{$node_id} = $node;
}
my $node = $nodes{1};

is($node->safe_psql('postgres', 'SELECT slots_total FROM snowflake_status()'),
	'64', 'sessions attach to the 64 worker ids below the lease space');
ok( $node->log_contains(
		qr/LOG:  \Qsnowflake.worker_bits = 7 with snowflake.lease_workers = 64 leaves 64 worker slots to sessions, fewer than max_connections (120)\E/
	),
	'the start notes that the lease space leaves sessions fewer slots than connections');

# Sessions generate while the clients run.
my $sessions = $node->background_psql('postgres');
$sessions->query_until(qr/started/, q{
\echo started
INSERT INTO issued SELECT snowflake_nextval(), 'session' FROM generate_series(1, 200000);
});

# Fifty clients at once, half connection-scoped and half with a ttl, each
# holding its lease (renewing) until let go, so that all hold together.
my @clients;
for my $i (1 .. $clients)
{
	push @clients,
	  start_lease_client($node, "client$i", '--count', $ids_per_client,
		'--wait-stdin', ($i % 2 ? ('--ttl', 30) : ()));
}
my @leases = map { wait_for_lease($_) } @clients;
is(scalar(grep { defined } @leases), $clients, "all $clients clients got a lease");
is(scalar(grep { wait_for_holding($_) } @clients),
	$clients, "all $clients clients issued their IDs and hold their leases");

my $held_at_once = $node->safe_psql('postgres',
	q{SELECT count(DISTINCT worker_id) FILTER (WHERE state = 'held'), count(*) FILTER (WHERE state = 'held')
	    FROM snowflake_leases});
is($held_at_once, "$clients|$clients",
	"$clients leases held at once, on $clients different worker ids");

my %worker_ids = map { $_->{worker_id} => 1 } grep { defined } @leases;
is(scalar(keys %worker_ids), $clients, 'no two clients got the same worker id');
is(scalar(grep { $_ < 64 || $_ > 127 } keys %worker_ids),
	0, 'every leased worker id lies in the lease space (64 to 127)');
my %tokens = map { $_->{token} => 1 } grep { defined } @leases;
is(scalar(keys %tokens), $clients, 'every lease has a token of its own');

is(scalar(grep { finish_lease_client($_) != 0 } @clients), 0, 'every client exited with 0')
  or diag(join("\n", map { "$_->{name}: $_->{stderr}" } @clients));
$sessions->quit;

# Load every client's IDs with its lease and check them in the database.
my $load = "$PostgreSQL::Test::Utils::tmp_check/client_ids.csv";
open my $fh, '>', $load or die "cannot write $load: $!";
my $ordinal = 0;
for my $i (0 .. $#clients)
{
	my ($client, $lease) = ($clients[$i], $leases[$i]);
	print $fh join(',',
		++$ordinal, $_, $client->{name}, $lease->{worker_id}, $lease->{not_before},
		$lease->{not_after}), "\n"
	  for read_ids($client);
}
close $fh;
$node->safe_psql('postgres', qq{
CREATE TABLE client_ids (ord bigint, id bigint, client text, worker_id int, not_before bigint,
                         not_after bigint);
COPY client_ids FROM '$load' WITH (FORMAT csv);
INSERT INTO issued SELECT id, client FROM client_ids;
});

is($node->safe_psql('postgres', 'SELECT count(*) FROM client_ids'),
	$clients * $ids_per_client, 'every client issued all its IDs');
is( $node->safe_psql(
		'postgres', q{
SELECT count(*)
  FROM client_ids AS c, snowflake_decode(c.id) AS d
 WHERE d.node_id <> 1 OR d.worker_id <> c.worker_id
    OR floor(extract(epoch FROM d.ts) * 1000) <= c.not_before
    OR floor(extract(epoch FROM d.ts) * 1000) >= c.not_after}),
	'0',
	'each client ID decodes to its lease\'s node and worker id, inside the lease\'s window');
is( $node->safe_psql(
		'postgres', q{
SELECT count(*)
  FROM (SELECT id <= lag(id) OVER (PARTITION BY client ORDER BY ord) AS down
          FROM client_ids) AS x
 WHERE down}),
	'0',
	'each client\'s IDs increase');
is( $node->safe_psql(
		'postgres',
		q{SELECT count(*) - count(DISTINCT id), count(*) FILTER (WHERE source = 'session') FROM issued}),
	'0|200000',
	'no ID repeats among the clients\' and the sessions\' 300,000');
is( $node->safe_psql(
		'postgres',
		q{SELECT count(*) FILTER (WHERE state = 'released'), count(*) FROM snowflake_leases}),
	"$clients|$clients",
	'every client released its lease on exit');

# On the unused second node: a ttl lease in a rolled-back transaction and a
# connection-scoped one read through a cursor, rolled back, stay granted;
# a third grant gets the next worker id.
my $rolled = start_lease_client($nodes{2}, 'rolled_back', '--acquire-in', 'transaction',
	'--ttl', 30, '--count', $ids_per_client, '--wait-stdin');
my $rolled_lease = wait_for_lease($rolled);
ok(wait_for_holding($rolled), 'a client whose grant was rolled back holds its lease')
  or diag($rolled->{stderr});
is( $nodes{2}->safe_psql(
		'postgres',
		"SELECT state, holder FROM snowflake_leases WHERE token = $rolled_lease->{token}"),
	'held|rolled_back',
	'the view shows the lease taken in a rolled-back transaction held');
my $cursor = start_lease_client($nodes{2}, 'cursor', '--acquire-in', 'cursor', '--count',
	$ids_per_client, '--wait-stdin');
my $cursor_lease = wait_for_lease($cursor);
ok(wait_for_holding($cursor), 'a client that read its grant through a cursor holds its lease')
  or diag($cursor->{stderr});
is( $nodes{2}->safe_psql(
		'postgres',
		"SELECT state, holder FROM snowflake_leases WHERE token = $cursor_lease->{token}"),
	'held|cursor',
	'the view shows the lease read through a cursor in a rolled-back transaction held');
my ($third_worker, $third_token) = split /\|/, $nodes{2}->safe_psql('postgres',
	q{SELECT worker_id, token FROM snowflake_lease_worker('third', interval '1 minute')});
is("$rolled_lease->{worker_id}|$cursor_lease->{worker_id}|$third_worker",
	'64|65|66', 'each later grant gets another worker id, never a rolled-back lease\'s');
ok($rolled_lease->{token} < $cursor_lease->{token} && $cursor_lease->{token} < $third_token,
	'and a token of its own');
is(finish_lease_client($rolled) + finish_lease_client($cursor),
	0, 'both clients ran and released')
  or diag("$rolled->{stderr}\n$cursor->{stderr}");
like($rolled->{stdout} . $cursor->{stdout}, qr/^released last_id=\d+\n(?s:.*)^released last_id=\d+$/m,
	'each released its lease with its last ID');
my %rb_seen;
my $rb_repeats = grep { $rb_seen{$_}++ } (read_ids($rolled), read_ids($cursor));
is(scalar(keys %rb_seen), 2 * $ids_per_client, 'they issued all their IDs');
is($rb_repeats, 0, 'none twice');
is( $nodes{2}->safe_psql(
		'postgres', qq{
SELECT count(*) FROM unnest('{@{[join(',', read_ids($rolled))]}}'::bigint[]) AS i,
                     snowflake_decode(i) AS d
 WHERE d.node_id <> 2 OR d.worker_id <> $rolled_lease->{worker_id}
    OR floor(extract(epoch FROM d.ts) * 1000) <= $rolled_lease->{not_before}}),
	'0', 'the rolled-back grant\'s client issued its IDs under its own lease');
$nodes{2}->safe_psql('postgres', "SELECT snowflake_release_lease($third_token, NULL)");

# The second node leases from its own node id: a client there and one on
# node 1 at the same time issue IDs that decode to their own node.
my $a = start_lease_client($nodes{1}, 'node1_client', '--count', 5000);
my $b = start_lease_client($nodes{2}, 'node2_client', '--count', 5000);
my ($lease_a, $lease_b) = (wait_for_lease($a), wait_for_lease($b));
is(finish_lease_client($a) + finish_lease_client($b), 0, 'clients on both nodes ran');
is("$lease_a->{node_id}|$lease_b->{node_id}", '1|2', 'each node leases its own node id');
my %seen;
my $repeats = grep { $seen{$_}++ } (read_ids($a), read_ids($b));
is($repeats, 0, 'the two nodes\' clients issue no ID twice');
my ($first_b) = read_ids($b);
is($nodes{1}->safe_psql('postgres', "SELECT node_id FROM snowflake_decode($first_b)"),
	'2', 'node 1 decodes node 2\'s client IDs to node 2');
done_testing();
