# A clean shutdown leaves an exact floor; a crash leaves the reservation.
# After a burst drives the reservation (reserve_ahead 5 s) past the newest
# ID, a fast or immediate shutdown leaves the newest ID's timestamp in
# snowflake.reservation and the next start resumes just above it, without
# the gap WARNING or a wait; after a SIGKILL crash, generation resumes above
# the reservation, shared memory not being trusted.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeTest;

my $node = SnowflakeTest::new_node('shutdown',
	settings => { 'snowflake.reserve_ahead' => '5s', restart_after_crash => 'on' },
	extension => 'postgres');
$node->safe_psql(
	'postgres', q{
CREATE TABLE ids (id bigint PRIMARY KEY, phase text NOT NULL)});

my $reservation_file = $node->data_dir . '/snowflake.reservation';

sub unix_ms
{
	my ($expr) = @_;
	return $node->safe_psql('postgres', "SELECT (extract(epoch FROM $expr) * 1000)::bigint");
}

sub ts_ms
{
	my ($id) = @_;
	return unix_ms("(snowflake_decode($id)).ts");
}

sub reserved_ms
{
	return unix_ms('(SELECT reserved_until FROM snowflake_status())');
}

# A burst of IDs in one session; returns the largest.
sub burst
{
	my ($phase) = @_;
	$node->safe_psql('postgres', "INSERT INTO ids SELECT snowflake_nextval(), '$phase' "
		  . 'FROM generate_series(1, 200000)');
	return $node->safe_psql('postgres', "SELECT max(id) FROM ids WHERE phase = '$phase'");
}

# The first ID after a start, with the clock (Unix ms) read just after it.
sub first_id
{
	my ($phase) = @_;
	my ($id, $after) = split /\|/, $node->safe_psql('postgres',
		qq{
INSERT INTO ids SELECT snowflake_nextval(), '$phase' RETURNING id,
       (extract(epoch FROM clock_timestamp()) * 1000)::bigint});
	return ($id, $after);
}

# --- a clean (fast) shutdown right after a burst ----------------------------------
my $last = burst('before');
my $last_ms = ts_ms($last);
# Past the newest ID on the clock, so that an exact floor needs no wait.
$node->poll_query_until('postgres',
	"SELECT clock_timestamp() > (snowflake_decode($last)).ts + interval '2 ms'")
  or die 'the clock did not pass the newest ID';
my $reserved_before = reserved_ms();
cmp_ok($reserved_before - $last_ms, '>', 2000,
	'the reservation runs seconds past the newest ID');

$node->stop('fast');
is(slurp_file($reservation_file), "$last_ms\n",
	'after a fast shutdown, the file holds the newest issued timestamp');

my $offset = -s $node->logfile;
$node->start;
my ($first, $clock_after) = first_id('after');
my $first_ms = ts_ms($first);
cmp_ok($first, '>', $last, 'the first ID after the restart is larger than every earlier one');
my $bound = $last_ms + 1 > $clock_after ? $last_ms + 1 : $clock_after;
cmp_ok($first_ms, '<=', $bound,
	'its timestamp is at most max(newest + 1 ms, the clock): the exact floor');
# On a slow machine the restart may outlast the reservation: then the
# clock itself is the floor.
cmp_ok($first_ms, '<', $reserved_before > $clock_after ? $reserved_before : $clock_after + 1,
	'and below the reservation the server had before the shutdown, unless the clock passed it');
unlike(slurp_file($node->logfile, $offset),
	qr/WARNING:  system clock is \d+ ms behind the snowflake reservation/,
	'no "behind the snowflake reservation" WARNING');
is($node->safe_psql('postgres', 'SELECT overflow_waits FROM snowflake_status()'),
	'0', 'no wait for the clock');
burst('after');
is($node->safe_psql('postgres', q{SELECT count(*) FROM ids WHERE phase = 'after' AND id <= } . $last),
	'0', 'every ID after the restart is larger than every earlier one');

# --- a crash: resumes above the reservation ----------------------------------------
$last = burst('crash');
$last_ms = ts_ms($last);
my $reserved_crash = reserved_ms();
cmp_ok($reserved_crash - $last_ms, '>', 2000,
	'again the reservation runs seconds past the newest ID');

my $dir = PostgreSQL::Test::Utils::tempdir();
my $victim = SnowflakeTest::start_psql($node, $dir, 'victim', '-c', 'SELECT pg_sleep(600)');
$node->poll_query_until('postgres',
	q{SELECT count(*) = 1 FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(600)'})
  or die 'the session to kill did not start';
my $victim_pid = $node->safe_psql('postgres',
	q{SELECT pid FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(600)'});
$offset = -s $node->logfile;
kill 'KILL', $victim_pid;
$victim->finish;
$node->wait_for_log(qr/all server processes terminated; reinitializing/, $offset);
# Polling during crash recovery can fail (a psql that cannot connect exits
# unread): wait for the state in the log first.
$node->wait_for_log(qr/database system is ready to accept connections/, $offset);
$node->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()')
  or die 'the server did not come back after the crash';

cmp_ok(reserved_ms(), '>=', $reserved_crash,
	'after the crash, the reservation is the one before it');
($first) = first_id('after_crash');
cmp_ok(ts_ms($first), '>', $reserved_crash,
	'after the crash, IDs resume above the reservation');
cmp_ok($first, '>', $last, 'and above every earlier ID');

# --- an immediate shutdown -------------------------------------------------------
$last = burst('immediate');
$last_ms = ts_ms($last);
$node->stop('immediate');
is(slurp_file($reservation_file), "$last_ms\n",
	'after an immediate shutdown, the file holds the newest issued timestamp');
$node->start;
($first) = first_id('after_immediate');
cmp_ok($first, '>', $last, 'after an immediate shutdown, IDs resume above every earlier one');

is($node->safe_psql('postgres', 'SELECT count(*) - count(DISTINCT id) FROM ids'), '0', 'no ID occurs twice');
$node->stop;
done_testing();
