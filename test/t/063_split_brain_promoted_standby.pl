# A standby promoted while its old primary runs (split brain, one node id):
# the promoted server's registry probes the old primary over
# primary_conninfo, and the old primary's registry sees that walsender.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeTest;
use SnowflakeStandby;

my %settings = (
	'snowflake.node_id' => 3,
	'snowflake.registry_interval' => '200ms',
	'snowflake.on_node_collision' => 'error');

sub collision
{
	my ($node) = @_;
	return $node->safe_psql('postgres',
		'SELECT node_collision FROM snowflake_status()');
}

# Waits until $node reports node_collision (or, with $not, no longer): one check.
sub wait_collision
{
	my ($node, $what, $not) = @_;
	ok( $node->poll_query_until('postgres',
			'SELECT ' . ($not ? 'NOT ' : '') . 'node_collision FROM snowflake_status()'),
		$what);
	return;
}

sub check_refused
{
	my ($node, $what) = @_;
	my ($rc, $stdout, $stderr) = SnowflakeStandby::nextval_verbose($node);
	isnt($rc, 0, "snowflake_nextval() fails on $what");
	like(
		$stderr,
		qr/\bERROR:  55000: snowflake node_id 3 is also used by another running instance\n[^\n]*DETAIL:  [^\n]*; IDs from the two could collide, and snowflake.on_node_collision is "error"\./,
		"$what: SQLSTATE 55000 and the documented message");
	like(
		$stderr,
		qr/^HINT:  \QStop the old primary: a standby promoted while its old primary runs must not generate beside it (changing either node_id with live leases is no fix).\E$/m,
		"$what: the HINT names the fix");
	return $stderr;
}

my ($primary, $standby) = SnowflakeStandby::primary_with_standbys(
	name => 'split_primary',
	standbys => ['split_standby'],
	settings => \%settings,
	sql => 'CREATE ROLE regress_plain LOGIN');
$primary->wait_for_catchup($standby);

# A forged application name from an ordinary session: not a walsender.
my ($instance) = $primary->safe_psql('postgres',
	q{SELECT instance_id FROM snowflake_nodes WHERE node_id = 3});
my $forged_name = 'snowflake node 3 00000000-0000-4000-8000-0000000000ff';
my $forged;
{
	local $ENV{PGAPPNAME} = $forged_name;
	$forged = SnowflakeTest::start_psql($primary, $primary->basedir, 'forged',
		'-U', 'regress_plain', '-c', 'SELECT pg_sleep(600)');
}
ok( $primary->poll_query_until(
		'postgres',
		qq{SELECT count(*) = 1 FROM pg_stat_activity WHERE application_name = '$forged_name'}),
	'an ordinary role holds a session named like the probe');
SnowflakeTest::wait_registry_round($primary);
is(collision($primary), 'f', 'a forged application name from an ordinary role is no collision');
$forged->kill_kill;
isnt($instance, '', 'the primary heartbeats');

# Split brain: promote while the primary runs.
$standby->promote;
wait_collision($standby, 'the promoted standby reports node_collision');
wait_collision($primary, 'the old primary reports node_collision');
ok( $primary->poll_query_until(
		'postgres',
		qq{SELECT count(*) = 1 FROM pg_stat_replication
		    WHERE application_name ~ '^snowflake node 3 [0-9a-f-]{36}\$'
		      AND application_name <> 'snowflake node 3 $instance'}),
	'the probe is one walsender of the old primary, named with the other instance');
check_refused($standby, 'the promoted standby');
check_refused($primary, 'the old primary');
like(
	slurp_file($standby->logfile),
	qr/WARNING:  snowflake node_id 3 is also used by another running instance\n[^\n]*DETAIL:  the server in primary_conninfo \(host [^\n]* port \d+, system \d+\), which this one was promoted from, runs as a primary\./,
	'the promoted standby logs the WARNING naming primary_conninfo');
like(
	slurp_file($primary->logfile),
	qr/WARNING:  snowflake node_id 3 is also used by another running instance\n[^\n]*DETAIL:  instance [0-9a-f-]{36}, promoted from this server, runs as a primary \(it connected by replication, walsender pid \d+\)\./,
	'the old primary logs the WARNING naming the promoted instance');

# Fencing the old primary ends it on the promoted side.
$primary->stop('fast');
wait_collision($standby, 'the collision clears once the old primary is stopped', 'not');
$standby->safe_psql('postgres', 'SELECT snowflake_nextval()');

# Started again beside the promoted server: detected again, on both sides.
$primary->start;
wait_collision($standby, 'the old primary started again is detected by the promoted one');
wait_collision($primary, 'and the old primary detects the promoted one');
$primary->stop('fast');
$standby->stop('fast');

# A normal failover: the old primary is stopped before the promotion.
my ($primary2, $standby2) = SnowflakeStandby::primary_with_standbys(
	name => 'failover_primary',
	standbys => ['failover_standby'],
	settings => \%settings);
$primary2->wait_for_catchup($standby2);
$primary2->stop('fast');
$standby2->promote;
SnowflakeTest::wait_registry_round($standby2);
SnowflakeTest::wait_registry_round($standby2);
is(collision($standby2), 'f', 'a normal failover reports no collision');
is($standby2->safe_psql('postgres', 'SELECT snowflake_nextval() > 0'),
	't', 'the promoted server generates IDs');
unlike(slurp_file($standby2->logfile), qr/also used by another running instance/,
	'and logs no collision');

# A primary_conninfo that names the server itself reaches its own walsender,
# no peer (seen in the log: the probe keeps no connection between rounds).
(my $self = $standby2->connstr) =~ s/'/''/g;
my $self_log = -s $standby2->logfile;
$standby2->safe_psql('postgres',
	qq{ALTER SYSTEM SET primary_conninfo = '$self';
	   ALTER SYSTEM SET log_replication_commands = on; SELECT pg_reload_conf()});
ok( SnowflakeTest::wait_until(
		sub {
			slurp_file($standby2->logfile, $self_log) =~
			  /snowflake node 3 [0-9a-f-]{36} [^\n]*received replication command: IDENTIFY_SYSTEM/;
		},
		'the probe\'s walsender on the server itself'),
	'the probe connects to the server itself');
SnowflakeTest::wait_registry_round($standby2);
is(collision($standby2), 'f', 'probing itself is no collision');

done_testing();
