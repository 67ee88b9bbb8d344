# The documented limit of split-brain detection (docs/multi-primary.md,
# "What it cannot catch").
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeTest;
use SnowflakeStandby;

my ($primary, $standby) = SnowflakeStandby::primary_with_standbys(
	name => 'blind_primary',
	standbys => ['blind_standby'],
	settings => {
		'snowflake.node_id' => 3,
		'snowflake.registry_interval' => '200ms',
		'snowflake.on_node_collision' => 'error'
	});
$primary->wait_for_catchup($standby);

# A failover manager clears primary_conninfo, then promotes; the old
# primary keeps running.
$standby->append_conf('postgresql.conf', "primary_conninfo = ''\n");
$standby->reload;
ok( $standby->poll_query_until('postgres', q{SELECT current_setting('primary_conninfo') = ''}),
	'the standby runs without primary_conninfo');
$standby->promote;
SnowflakeTest::wait_registry_round($standby);
SnowflakeTest::wait_registry_round($standby);
SnowflakeTest::wait_registry_round($primary);

my %issued;
for my $node ($primary, $standby)
{
	is($node->safe_psql('postgres', 'SELECT node_collision FROM snowflake_status()'),
		'f', $node->name . ': no node_collision is reported');
	my ($node_id, $worker_id) = split /\|/, $node->safe_psql('postgres',
		q{SELECT d.node_id || '|' || d.worker_id FROM snowflake_decode(snowflake_nextval()) AS d});
	is($node_id, 3, $node->name . ': snowflake_nextval() issues IDs with node id 3');
	$issued{ $node->name } = $worker_id;
	unlike(slurp_file($node->logfile), qr/also used by another running instance/,
		$node->name . ': and logs no collision');
}
is($issued{ $standby->name }, $issued{ $primary->name },
	'both issue with the same worker id: their IDs can repeat');
is( $primary->safe_psql(
		'postgres',
		q{SELECT count(*) FROM pg_stat_replication WHERE application_name ~ '^snowflake node '}),
	'0', 'no probe of the promoted server reaches the old primary');

$standby->stop('fast');
$primary->stop('fast');
done_testing();
