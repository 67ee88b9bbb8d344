# The processes that write the reservation file once per record keep flat
# memory: with reserve_ahead = 10ms a session issues IDs until 2,000 records
# were written, and the "Grand total" that pg_log_backend_memory_contexts()
# logs for the reservation worker and a standby's startup process must not
# grow between before and after.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeTest;
use SnowflakeStandby;

# Bytes of growth allowed: far below one allocation per record (tens of KB).
# Replay fills PostgreSQL's own bounded caches by about 2 KB here.
my $allowed_growth = 4096;
my $allowed_startup_growth = 16384;
# Reservation records between the two measures (a quiet machine writes
# about 4,000 in 20 s).
my $records_wanted = 2000;

my ($primary, $standby) = SnowflakeStandby::primary_with_standbys(
	settings => { 'snowflake.reserve_ahead' => '10ms' });

sub pid_of
{
	my ($node, $type) = @_;
	my $pid = $node->safe_psql('postgres',
		"SELECT pid FROM pg_stat_activity WHERE backend_type = '$type'");
	die "no $type process on " . $node->name if $pid eq '';
	return $pid;
}

# Makes $pid log its memory contexts and returns the bytes of its
# "Grand total" line and the bytes used.
sub memory_of
{
	my ($node, $pid) = @_;
	my $offset = -s $node->logfile;
	$node->safe_psql('postgres', "SELECT pg_log_backend_memory_contexts($pid)");
	my $pattern =
	  qr/\[$pid\] LOG:  Grand total: (\d+) bytes in \d+ blocks; \d+ free \(\d+ chunks\); (\d+) used/;
	$node->wait_for_log($pattern, $offset);
	my ($total, $used) = slurp_file($node->logfile, $offset) =~ $pattern;
	return ($total, $used);
}

sub reservations
{
	return $primary->safe_psql('postgres', 'SELECT reservations FROM snowflake_status()');
}

my $dir = PostgreSQL::Test::Utils::tempdir();

# One ID every millisecond or so, until the test has seen enough records.
$primary->safe_psql('postgres',
	'CREATE TABLE control (stop boolean NOT NULL); INSERT INTO control VALUES (false)');
my $run = SnowflakeTest::start_psql(
	$primary, $dir, 'generate', '-c', q{
DO $$
BEGIN
    WHILE NOT (SELECT stop FROM control) LOOP
        PERFORM snowflake_nextval();
        PERFORM pg_sleep(0.001);
    END LOOP;
END $$});

# Let both processes reach their steady state before the first measure.
$primary->poll_query_until('postgres',
	'SELECT reservations > 100 FROM snowflake_status()')
  or die 'no reservation records are being written';
$primary->wait_for_catchup($standby);

my $worker = pid_of($primary, 'snowflake reservation');
my $startup = pid_of($standby, 'startup');
my $records_before = reservations();
my ($worker_total_before, $worker_used_before) = memory_of($primary, $worker);
my ($startup_total_before, $startup_used_before) = memory_of($standby, $startup);

ok( $primary->poll_query_until(
		'postgres',
		"SELECT reservations >= $records_before + $records_wanted FROM snowflake_status()"),
	"the worker and the session write $records_wanted reservation records");
$primary->safe_psql('postgres', 'UPDATE control SET stop = true');
ok($run->finish, 'the generating session ended without an error');
my $records = reservations() - $records_before;
$primary->wait_for_catchup($standby);

my ($worker_total_after, $worker_used_after) = memory_of($primary, $worker);
my ($startup_total_after, $startup_used_after) = memory_of($standby, $startup);
is(pid_of($primary, 'snowflake reservation'), $worker,
	'the same worker process ran throughout');
is(pid_of($standby, 'startup'), $startup, 'the same startup process ran throughout');

note "$records reservation records were written between the measures";
note "worker: total $worker_total_before -> $worker_total_after, "
  . "used $worker_used_before -> $worker_used_after bytes";
note "startup: total $startup_total_before -> $startup_total_after, "
  . "used $startup_used_before -> $startup_used_after bytes";
cmp_ok($worker_total_after - $worker_total_before,
	'<=', $allowed_growth, 'the worker\'s memory did not grow');
cmp_ok($worker_used_after - $worker_used_before,
	'<=', $allowed_growth, 'the worker\'s memory in use did not grow');
cmp_ok($startup_total_after - $startup_total_before,
	'<=', $allowed_startup_growth, 'the standby\'s startup process did not grow');
cmp_ok($startup_used_after - $startup_used_before,
	'<=', $allowed_startup_growth,
	'the standby\'s startup process used no more memory');

$standby->stop;
$primary->stop;
done_testing();
