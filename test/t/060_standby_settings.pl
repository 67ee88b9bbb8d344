# Rolling changes of the lease space and the node id, primary-first and
# standby-first, with live leases.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeTest;

my $leases_query = "SELECT string_agg(node_id || ':' || worker_id || ':' || holder || ':' || "
  . "token, ',' ORDER BY node_id, worker_id) FROM snowflake_leases WHERE state = 'held'";

# A primary (worker_bits = 3: ids 0 to 7) and its streaming standby, with
# the settings given, each a hash of snowflake.NAME => value.
sub pair
{
	my ($name, $primary_settings, $standby_settings) = @_;
	my %common = ('snowflake.worker_bits' => 3, max_connections => 40);
	my $primary = SnowflakeTest::new_node(
		"${name}_primary",
		init => [ allows_streaming => 1 ],
		settings => { %common, map { ("snowflake.$_" => $primary_settings->{$_}) } keys %$primary_settings },
		extension => 'postgres');
	$primary->backup('base');
	my $standby = PostgreSQL::Test::Cluster->new("${name}_standby");
	$standby->init_from_backup($primary, 'base', has_streaming => 1);
	set_conf($standby, %$standby_settings);
	$standby->start;
	return ($primary, $standby);
}

sub set_conf
{
	my ($node, %settings) = @_;
	$node->append_conf('postgresql.conf', join('', map { "snowflake.$_ = $settings{$_}\n" } sort keys %settings));
}

sub lease
{
	my ($node, $holder) = @_;
	return $node->safe_psql('postgres',
		"SELECT worker_id FROM snowflake_lease_worker('$holder', interval '1 hour')");
}

# Waits until the standby's startup process stops with the FATAL $message
# (logged after $offset) and its postmaster is gone; returns that log.
sub wait_for_refusal
{
	my ($standby, $offset, $message) = @_;
	$standby->wait_for_log(qr/FATAL:  \Q$message\E/, $offset);
	my $pidfile = $standby->data_dir . '/postmaster.pid';
	SnowflakeTest::wait_until(sub { !-e $pidfile }, 'the standby stops');
	$standby->_update_pid(0);
	return slurp_file($standby->logfile, $offset);
}

# Fails over to $standby and checks that it holds the leases $held (as
# $leases_query returns them) and grants none of their worker ids again.
sub check_failover
{
	my ($primary, $standby, $held, $what) = @_;
	$primary->wait_for_catchup($standby);
	$primary->stop('immediate');
	$standby->promote;
	is($standby->safe_psql('postgres', $leases_query), $held,
		"$what: the promoted standby holds every lease the primary held");
	my %held_ids = map { (split /:/)[1] => 1 } split /,/, $held;
	my ($ret, $stdout) = $standby->psql('postgres',
		"SELECT worker_id FROM snowflake_lease_worker('after-failover', interval '1 hour')");
	ok($ret != 0 || !$held_ids{$stdout},
		"$what: a new grant gets no worker id of a live lease (got '$stdout')");
	$standby->stop;
}

# --- the lease space grows, primary first ------------------------------------------
{
	my ($primary, $standby) = pair('grow_pf', { lease_workers => 2 }, {});
	$primary->append_conf('postgresql.conf', "snowflake.lease_workers = 4\n");
	my $offset = -s $standby->logfile;
	$primary->restart;
	my $log = wait_for_refusal($standby, $offset,
		'recovery aborted because of insufficient snowflake.lease_workers');
	lease($primary, "app$_") for 1 .. 4;    # ids 4 and 5 are new to the standby
	like($log, qr/DETAIL:  .*snowflake\.lease_workers = 4.*snowflake\.lease_workers = 2\)\.$/m,
		'grow, primary first: the DETAIL names both values');
	like($log, qr/HINT:  \QSet snowflake.lease_workers to at least 4 on this server and start it again.\E$/m,
		'grow, primary first: the HINT names the fix');
	set_conf($standby, lease_workers => 4);
	$standby->start;
	check_failover($primary, $standby, $primary->safe_psql('postgres', $leases_query),
		'grow, primary first');
}

# --- the lease space grows, standby first ------------------------------------------
{
	my ($primary, $standby) = pair('grow_sf', { lease_workers => 2 }, {});
	lease($primary, "app$_") for 1 .. 2;
	$primary->wait_for_catchup($standby);
	set_conf($standby, lease_workers => 4);
	$standby->restart;
	$primary->append_conf('postgresql.conf', "snowflake.lease_workers = 4\n");
	$primary->restart;
	lease($primary, "app$_") for 3 .. 4;
	my $held = $primary->safe_psql('postgres', $leases_query);
	is(scalar(split /,/, $held), 4, 'grow, standby first: the primary holds four leases');
	check_failover($primary, $standby, $held, 'grow, standby first');
}

# --- the node id changes, primary first --------------------------------------------
{
	my ($primary, $standby) = pair('node_pf', { lease_workers => 2, node_id => 1 }, {});
	lease($primary, 'old-node');
	$primary->wait_for_catchup($standby);
	$primary->append_conf('postgresql.conf', "snowflake.node_id = 2\n");
	my $offset = -s $standby->logfile;
	$primary->restart;
	my $log = wait_for_refusal($standby, $offset,
		"recovery aborted because snowflake.node_id differs from the primary's");
	like($log, qr/DETAIL:  The primary runs with snowflake\.node_id = 2, this server with 1;/m,
		'node id, primary first: the DETAIL names both values');
	like($log, qr/HINT:  Set snowflake\.node_id = 2 on this server/m,
		'node id, primary first: the HINT names the fix');
	set_conf($standby, node_id => 2);
	$standby->start;
	lease($primary, 'new-node');
	my $held = $primary->safe_psql('postgres', $leases_query);
	like($held, qr/(?:^|,)2:\d+:new-node:\d+(?:,|$)/, 'node id, primary first: the lease under the new id');
	check_failover($primary, $standby, $held, 'node id, primary first');
}

# --- the node id changes, standby first --------------------------------------------
{
	my ($primary, $standby) = pair('node_sf', { lease_workers => 2, node_id => 1 }, {});
	lease($primary, 'first');
	$primary->wait_for_catchup($standby);
	set_conf($standby, node_id => 2);
	my $offset = -s $standby->logfile;
	$standby->stop;
	$standby->start(fail_ok => 1);    # its redo start may refuse already
	lease($primary, 'second');
	my $log = wait_for_refusal($standby, $offset,
		"recovery aborted because snowflake.node_id differs from the primary's");
	like($log, qr/HINT:  Set snowflake\.node_id = 1 on this server/m,
		'node id, standby first: refused, the HINT names the fix');
	set_conf($standby, node_id => 1);
	$standby->start;
	my $held = $primary->safe_psql('postgres', $leases_query);
	is(scalar(split /,/, $held), 2, 'node id, standby first: the primary holds two leases');
	check_failover($primary, $standby, $held, 'node id, standby first');
}

done_testing();
