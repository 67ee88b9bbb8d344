# The split-brain probe (063) with a multi-host primary_conninfo, the old
# primary first and the standby itself next.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeTest;
use SnowflakeStandby;

my %settings = (
	'snowflake.node_id' => 3,
	'snowflake.registry_interval' => '200ms');

sub collision
{
	my ($node) = @_;
	return $node->safe_psql('postgres',
		'SELECT node_collision FROM snowflake_status()');
}

my ($primary, $standby) = SnowflakeStandby::primary_with_standbys(
	name => 'hosts_primary',
	standbys => ['hosts_standby'],
	settings => \%settings,
	start_standbys => 0);
my $host = $primary->host;
my $ports = $primary->port . ',' . $standby->port;
$standby->append_conf('postgresql.conf',
	"primary_conninfo = 'host=$host,$host port=$ports application_name=hosts_standby'\n");
$standby->start;
$primary->wait_for_catchup($standby);

# A normal failover: the old primary stopped first.
$primary->stop('fast');
$standby->promote;
my $since = $standby->safe_psql('postgres', 'SELECT clock_timestamp()');
ok( SnowflakeTest::true_within(
		$standby,
		qq{SELECT registry_last_round > '$since'::timestamptz + interval '1 s'
		     FROM snowflake_status()},
		30),
	'the promoted server completes rounds');
is(collision($standby), 'f', 'its probe reaching itself is no collision');
ok( SnowflakeTest::true_within(
		$standby,
		q{SELECT count(*) = 0 FROM pg_stat_replication
		   WHERE application_name ~ '^snowflake node 3 '},
		10),
	'between rounds the probe holds no walsender of its own server');

# The old primary started again as a primary: split brain.
$primary->start;
ok( SnowflakeTest::true_within($standby, 'SELECT node_collision FROM snowflake_status()', 20),
	'the promoted server finds the old primary, the first host of primary_conninfo');
ok( SnowflakeTest::true_within($primary, 'SELECT node_collision FROM snowflake_status()', 20),
	'the old primary finds the promoted one');
like(
	slurp_file($standby->logfile),
	qr/WARNING:  snowflake node_id 3 is also used by another running instance\n[^\n]*DETAIL:  the server in primary_conninfo \(host [^\n]* port ${\ $primary->port}, system \d+\), which this one was promoted from, runs as a primary\./,
	'the WARNING names the old primary\'s port');

$primary->stop('fast');
$standby->stop('fast');

done_testing();
