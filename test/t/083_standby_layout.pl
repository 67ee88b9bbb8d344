# A layout change, standby first, while the primary leases worker ids: an
# epoch three days earlier passes the layout check, but replay applies no
# lease image of another layout.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeTest;

my $primary_epoch = '2025-01-01 00:00:00+00';
my $earlier_epoch = '2024-12-29 00:00:00+00';
my $leases_query = "SELECT string_agg(worker_id || ':' || holder, ',' ORDER BY worker_id) "
  . "FROM snowflake_leases WHERE state = 'held'";

sub lease
{
	my ($node, $holder) = @_;
	return $node->safe_psql('postgres',
		"SELECT worker_id FROM snowflake_lease_worker('$holder', interval '1 hour')");
}

sub set_epoch
{
	my ($node, $epoch) = @_;
	$node->append_conf('postgresql.conf', "snowflake.epoch = '$epoch'\n");
}

my $primary = SnowflakeTest::new_node(
	'layout_primary',
	init => [ allows_streaming => 1 ],
	settings => {
		'snowflake.worker_bits' => 3,
		'snowflake.lease_workers' => 4,
		'snowflake.epoch' => $primary_epoch
	},
	extension => 'postgres');
$primary->backup('base');
my $standby = PostgreSQL::Test::Cluster->new('layout_standby');
$standby->init_from_backup($primary, 'base', has_streaming => 1);
$standby->start;
my $wa = lease($primary, 'app-A');
$primary->wait_for_catchup($standby);

# The standby first: its epoch one second earlier.
$standby->stop('fast');
set_epoch($standby, $earlier_epoch);
my $offset = -s $standby->logfile;
my $started = $standby->start(fail_ok => 1);
ok(!$started, 'a standby with another layout than its leasing primary does not start');
my $log = slurp_file($standby->logfile, $offset);
like(
	$log,
	qr/FATAL:  recovery aborted because the snowflake layout differs from the primary's\n[^\n]*DETAIL:  The primary leases worker ids under the layout epoch 2025-01-01 00:00:00\+00, 3 node bits, 3 worker bits, 12 sequence bits; this server runs epoch 2024-12-29 00:00:00\+00, 3 node bits, 3 worker bits, 12 sequence bits, and would skip its LEASE records\./,
	'the FATAL names both layouts');
like(
	$log,
	qr/HINT:  Give this server the primary's snowflake.epoch, snowflake.node_bits and snowflake.sequence_bits and start it again; change a layout on the primary first\./,
	'the HINT names the fix');

# The primary leases on; the standby runs with the layout it may run with.
my $wb = lease($primary, 'app-B');
if (!$started)
{
	set_epoch($standby, $primary_epoch);
	$standby->start;
}

# Failover: the promoted standby holds both leases, and grants neither again.
$primary->wait_for_catchup($standby);
$primary->stop('immediate');
$standby->promote;
is($standby->safe_psql('postgres', $leases_query),
	join(',', map { "$_->[0]:$_->[1]" } sort { $a->[0] <=> $b->[0] } ([ $wa, 'app-A' ], [ $wb, 'app-B' ])),
	'the promoted standby holds every lease the primary held');
my ($ret, $c) = $standby->psql('postgres',
	"SELECT worker_id FROM snowflake_lease_worker('app-C', interval '1 hour')");
ok($ret == 0 && $c ne $wa && $c ne $wb,
	"a new grant gets no worker id of a live lease (got '$c'; held: $wa, $wb)");
$standby->stop;

done_testing();
