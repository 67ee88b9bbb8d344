# A lease belongs to a worker id whatever the node id.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use SnowflakeLease;
use SnowflakeLeaseFile;
use SnowflakeTest;
use Test::More;

my $node = SnowflakeTest::new_node('flip',
	settings => lease_settings(lease_workers => 2, node_id => 1), extension => 'postgres');

# Restarts $n with node id $id; returns what it logged meanwhile.
sub set_node_id
{
	my ($n, $id) = @_;
	$n->stop;
	$n->append_conf('postgresql.conf', "snowflake.node_id = $id\n");
	my $offset = -s $n->logfile;
	$n->start;
	return slurp_file($n->logfile, $offset);
}

my ($a_worker, $a_token, $a_end) = split /\|/, $node->safe_psql('postgres',
	q{SELECT worker_id, token, not_after FROM snowflake_lease_worker('A', interval '12 hours')});
is($a_worker, 126, 'node 1: A leases worker id 126');

my $log = set_node_id($node, 2);
like($log, qr/LOG:  snowflake node id changed from 1 to 2\n.*DETAIL:  1 leases of other node ids may still issue IDs, the last until /,
	'the node-id change is logged, with the live lease of node 1');
is(read_lease_header(lease_file($node))->{node_id}, 2, 'the lease state records node id 2');
is($node->safe_psql('postgres', q{SELECT node_id || '|' || state FROM snowflake_leases WHERE worker_id = 126}),
	'1|held', 'snowflake_leases shows A\'s lease, of node 1, held');
my ($ok, $out, $err) = $node->psql('postgres', "SELECT * FROM snowflake_renew_lease($a_token, NULL)");
like($err, qr/ERROR:  snowflake lease $a_token is not held/,
	'A\'s lease is not renewed under node 2');
my ($b_worker, $b_node) = split /\|/, $node->safe_psql('postgres',
	q{SELECT worker_id, node_id FROM snowflake_lease_worker('B', interval '1 minute')});
is("$b_worker|$b_node", '127|2', 'node 2: B leases worker id 127, not A\'s 126');
$node->safe_psql('postgres', q{SELECT snowflake_release_lease(token, NULL) FROM snowflake_leases WHERE holder = 'B'});
($ok, $out, $err) = $node->psql('postgres',
	q{SELECT worker_id FROM snowflake_lease_worker('C', interval '1 minute') WHERE worker_id = 126});
is($out, '', 'no grant under node 2 takes A\'s worker id 126 while its lease runs');
$node->safe_psql('postgres', q{SELECT snowflake_release_lease(token, NULL) FROM snowflake_leases WHERE holder = 'C'});

$log = set_node_id($node, 1);
like($log, qr/LOG:  snowflake node id changed from 2 to 1/, 'the change back is logged');
is($node->safe_psql('postgres', "SELECT count(*) FROM snowflake_renew_lease($a_token, NULL)"),
	'1', 'node 1 again: A renews its lease');
my ($d_worker, $d_before) = split /\|/, $node->safe_psql('postgres',
	q{SELECT worker_id, not_before FROM snowflake_lease_worker('D', interval '1 hour')});
is($d_worker, 127, 'node 1 again: D gets worker id 127, not A\'s');

# A lease space of one worker id: under node 2, node 1's live lease keeps it.
my $one = SnowflakeTest::new_node('one',
	settings => lease_settings(lease_workers => 1, node_id => 1), extension => 'postgres');
my $a_window = $one->safe_psql('postgres',
	q{SELECT worker_id || '|' || not_after FROM snowflake_lease_worker('A', interval '1 hour')});
for my $step ([ 2, 'B', "node 2: the one worker id stays A's while its lease of node 1 runs" ],
	[ 1, 'Z', "node 1 again: the worker id is still A's, not leased over its window" ])
{
	my ($node_id, $holder, $what) = @$step;
	set_node_id($one, $node_id);
	($ok, $out, $err) = $one->psql('postgres',
		qq{SELECT worker_id FROM snowflake_lease_worker('$holder', interval '1 minute')});
	like($err, qr/ERROR:  all 1 snowflake worker ids set aside for leases are leased/, $what);
}
is($one->safe_psql('postgres', q{SELECT worker_id || '|' || not_after FROM snowflake_leases WHERE holder = 'A'}),
	$a_window, 'and A\'s window is what it was');
done_testing();
