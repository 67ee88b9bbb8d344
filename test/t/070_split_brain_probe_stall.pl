# The split-brain probe (063) keeps a replication connection to the old
# primary; one that stops answering on it (SIGSTOP here) must not hold the
# promoted server's registry.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use SnowflakeTest;
use SnowflakeStandby;

my %settings = (
	'snowflake.node_id' => 3,
	'snowflake.registry_interval' => '200ms');

my ($primary, $standby) = SnowflakeStandby::primary_with_standbys(
	name => 'stall_primary',
	standbys => ['stall_standby'],
	settings => \%settings);
$primary->wait_for_catchup($standby);

# Split brain: promote while the primary runs; the probe connects.
$standby->promote;
ok( $standby->poll_query_until('postgres',
		'SELECT node_collision FROM snowflake_status()'),
	'the promoted standby finds its old primary through primary_conninfo');
my $walsender = $primary->safe_psql('postgres',
	q{SELECT pid FROM pg_stat_replication WHERE application_name ~ '^snowflake node 3 '});
like($walsender, qr/^\d+$/, 'the probe is one walsender of the old primary');
my $postmaster = (split /\n/, slurp_file($primary->data_dir . '/postmaster.pid'))[0];

# The old primary stops answering: its open connection stays up.
my $offset = -s $standby->logfile;
kill 'STOP', $walsender, $postmaster;
my $since = $standby->safe_psql('postgres', 'SELECT clock_timestamp()');
ok( SnowflakeTest::true_within(
		$standby,
		"SELECT registry_last_round > '$since'::timestamptz FROM snowflake_status()", 15),
	'the registry completes rounds while the old primary does not answer');
my $log = slurp_file($standby->logfile, $offset);
like(
	$log,
	qr/LOG:  snowflake registry: the server in primary_conninfo did not answer "[A-Z_ a-z.]+": no answer within the probe's timeout \(2 s\)/,
	'the log says the old primary did not answer in time');

# A fast shutdown ends the registry at once, also while it waits.
$offset = -s $standby->logfile;
my $start = time;
my $rc = system('pg_ctl', '-D', $standby->data_dir, '-m', 'fast', '-t', '20', '-w',
	'stop');
ok($rc == 0 && time - $start < 15, 'a fast shutdown of the promoted server ends')
  or diag('pg_ctl stop: rc ' . ($rc >> 8) . ' after ' . int(time - $start) . ' s');
if ($rc != 0)
{
	# The registry holds the shutdown: end the server the hard way.
	system('pg_ctl', '-D', $standby->data_dir, '-m', 'immediate', '-w', 'stop');
}
$standby->_update_pid(0);    # stopped outside the Cluster object
$log = slurp_file($standby->logfile, $offset);
my @loud = grep { /\b(WARNING|ERROR|FATAL|PANIC):/ } split /\n/, $log;
is_deeply(\@loud, [], 'the shutdown logs nothing at WARNING or above')
  or diag($log);

# The old primary answers again: the probe finds it again.
kill 'CONT', $walsender, $postmaster;
$standby->start;
ok( $standby->poll_query_until('postgres',
		'SELECT node_collision FROM snowflake_status()'),
	'once the old primary answers, the promoted standby finds it again');
$primary->stop('fast');
$standby->stop('fast');

done_testing();
