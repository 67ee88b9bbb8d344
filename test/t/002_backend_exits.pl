# Backends ended while generating IDs: after pg_terminate_backend() the slot
# and its advisory lock are released and the next holder continues above; after
# a SIGKILL crash restart every new ID is above every old one; no ID the test
# saw (committed or returned) occurs twice.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;

my $slot_lock_class = 1936617335;
my $burst_size = 500_000;

# Every ID the test has seen outside the "seen" table: [id, phase, round].
my @returned;

# Runs until terminated: generates IDs, without a result, for minutes.
my %endless = (
	select => 'SELECT count(snowflake_nextval()) '
	  . 'FROM (SELECT generate_series(1, 2000000000)) AS g',
	insert => q{INSERT INTO seen (phase, round) SELECT 'doomed', 0 }
	  . 'FROM (SELECT generate_series(1, 2000000000)) AS g');

sub start_node
{
	# Two slots, handed over between rounds; 1024 IDs a millisecond run
	# ahead of the clock soon; a reservation 15 s ahead still lies ahead after
	# a slow crash restart, and max_drift 20 s lets IDs continue above it.
	my $node = SnowflakeTest::new_node(
		'exits',
		settings => {
			'snowflake.worker_bits' => 1,
			'snowflake.sequence_bits' => 10,
			'snowflake.reserve_ahead' => 15000,
			'snowflake.max_drift' => 20000,
			restart_after_crash => 'on'
		},
		extension => 'postgres');
	$node->safe_psql(
		'postgres', q{
CREATE TABLE seen (
    id    bigint PRIMARY KEY DEFAULT snowflake_nextval(),
    phase text NOT NULL,
    round integer NOT NULL
)});
	return $node;
}

# Has a session issue IDs every way the test sees them: returned one by one,
# committed to the table, and the last ID of a burst that runs ahead of the
# wall clock.  Returns the worker id the session works under.
sub generate_seen_ids
{
	my ($session, $phase, $round) = @_;
	my @ids = split /\n/, $session->query_safe(
		'SELECT snowflake_nextval() FROM generate_series(1, 1000)');
	$session->query_safe(
		qq{INSERT INTO seen (phase, round)
		   SELECT '$phase', $round FROM generate_series(1, 10000)});
	push @ids, $session->query_safe(
		"SELECT max(snowflake_nextval()) FROM generate_series(1, $burst_size)");
	push @returned, map { [ $_, $phase, $round ] } @ids;
	return $session->query_safe(
		"SELECT worker_id FROM snowflake_decode($ids[0])");
}

# Starts a statement that generates IDs until the backend is ended, and
# waits until the slot's counter shows it generating.
sub start_endless
{
	my ($node, $session, $pid, $kind) = @_;
	my $issued = $node->safe_psql('postgres',
		"SELECT ids_issued FROM snowflake_workers WHERE pid = $pid");
	$session->query_until(qr/generating/,
		"\\echo generating\n$endless{$kind};\n");
	ok( $node->poll_query_until(
			'postgres', qq{
SELECT ids_issued > $issued FROM snowflake_workers WHERE pid = $pid}),
		"backend $pid is generating IDs ($kind)");
	return;
}

# The number of slot locks pg_locks shows for a worker id, and for a pid.
sub slot_locks
{
	my ($node, $worker, $pid) = @_;
	return $node->safe_psql(
		'postgres', qq{
SELECT count(*) FILTER (WHERE objid = $worker),
       count(*) FILTER (WHERE objid = $worker AND pid = $pid
                          AND granted AND mode = 'ShareLock')
  FROM pg_locks
 WHERE locktype = 'advisory' AND database = 0
   AND classid = $slot_lock_class});
}

# How the slots look from snowflake_workers and snowflake_status().
sub slot_use
{
	my ($node, $worker) = @_;
	return $node->safe_psql(
		'postgres', qq{
SELECT (SELECT count(*) FROM snowflake_workers WHERE worker_id = $worker),
       slots_used
  FROM snowflake_status()});
}

# A psql whose connection was cut exits by itself (quit would write \q into a
# closed pipe): wait on its IPC::Run harness and read its stderr.
sub wait_psql_exit
{
	my ($session, $message, $what) = @_;
	ok(!$session->{run}->finish, "$what: psql exited with an error");
	like($session->{stderr}, $message, "$what: psql saw the connection end");
	return;
}

# One round: a session issues IDs, then is terminated while generating.
sub terminate_round
{
	my ($node, $round, $kind) = @_;
	my $session = $node->background_psql('postgres');
	my $pid = $session->query_safe('SELECT pg_backend_pid()');
	my $worker = generate_seen_ids($session, 'before', $round);

	is(slot_locks($node, $worker, $pid), '1|1',
		"round $round: pg_locks shows the slot lock of the live holder");
	is(slot_use($node, $worker), '1|1',
		"round $round: snowflake_workers and slots_used show the holder");
	start_endless($node, $session, $pid, $kind);
	is($node->safe_psql('postgres', "SELECT pg_terminate_backend($pid)"),
		't', "round $round: backend terminated");
	ok( $node->poll_query_until(
			'postgres', "SELECT count(*) = 0 FROM pg_stat_activity WHERE pid = $pid"),
		"round $round: backend is gone");
	is(slot_locks($node, $worker, $pid), '0|0',
		"round $round: the slot lock is gone from pg_locks");
	is(slot_use($node, $worker), '0|0',
		"round $round: worker $worker released");
	wait_psql_exit($session,
		qr/terminating connection due to administrator command/,
		"round $round");
	return $worker;
}

# Kills a backend with SIGKILL while it generates, with a second slot held
# by another session, and waits until the server has restarted.  Returns the
# timestamp (Unix ms) of the last ID the victim had issued shortly before.
sub crash_round
{
	my ($node, $round) = @_;
	my $victim = $node->background_psql('postgres');
	my $bystander = $node->background_psql('postgres');
	my $pid = $victim->query_safe('SELECT pg_backend_pid()');
	generate_seen_ids($bystander, 'before', $round);
	generate_seen_ids($victim, 'before', $round);
	is($node->safe_psql('postgres', 'SELECT slots_used FROM snowflake_status()'),
		'2', 'both slots held before the crash');
	start_endless($node, $victim, $pid, 'select');
	ok( $node->poll_query_until(
			'postgres', qq{
SELECT last_timestamp > clock_timestamp() + interval '500 ms'
  FROM snowflake_workers WHERE pid = $pid}),
		'the victim runs ahead of the wall clock');
	my $victim_mark = $node->safe_psql(
		'postgres', qq{
SELECT (extract(epoch FROM last_timestamp) * 1000)::bigint
  FROM snowflake_workers WHERE pid = $pid});

	SnowflakeTest::crash_backend($node, $pid);
	wait_psql_exit($victim, qr/server closed the connection unexpectedly/,
		'crash victim');
	# The idle one notices nothing until it is asked for something.
	$bystander->quit;
	return $victim_mark;
}

# All IDs the test has seen: committed rows plus returned IDs.
sub all_seen_ids
{
	my ($node) = @_;
	return (@returned,
		map { [ split /\|/ ] } split /\n/, $node->safe_psql('postgres', 'SELECT id, phase, round FROM seen'));
}

sub duplicate_ids
{
	my @all = @_;
	my %count;
	$count{ $_->[0] }++ for @all;
	return sort grep { $count{$_} > 1 } keys %count;
}

# The smallest and the largest ID seen, per phase and per round.
sub id_bounds
{
	my @all = @_;
	my (%min, %max);
	for my $id (@all)
	{
		my ($value, $phase, $round) = @$id;
		for my $key ($phase, "round $round")
		{
			$min{$key} = $value if !defined $min{$key} || $value < $min{$key};
			$max{$key} = $value if !defined $max{$key} || $value > $max{$key};
		}
	}
	return (\%min, \%max);
}

my $node = start_node();

# --- pg_terminate_backend while generating ---------------------------------
# Two slots and three rounds: round 3 gets the slot round 1 was terminated
# in, the least recently released one.
my %worker_of_round = map { $_->[0] => terminate_round($node, @$_) } [ 1, 'select' ],
  [ 2, 'insert' ], [ 3, 'select' ];
is($worker_of_round{3}, $worker_of_round{1},
	'round 3 re-claimed the slot terminated in round 1');

# --- kill -9 while generating: crash restart -------------------------------
my $victim_mark = crash_round($node, 4);
is( $node->safe_psql(
		'postgres', "SELECT count(*) FROM seen WHERE phase = 'before'"),
	'50000',
	'the rows committed before the crash are all there');
is( $node->safe_psql(
		'postgres', qq{
SELECT slots_used, ids_issued,
       (SELECT count(*) FROM snowflake_workers),
       (SELECT count(*) FROM pg_locks
         WHERE locktype = 'advisory' AND classid = $slot_lock_class)
  FROM snowflake_status()}),
	'0|0|0|0',
	'after the restart, no slot is held and the counters start over');

# The server resumes above the reservation the victim was using, which lies
# ahead of the clock: the first session to generate is warned once, and the
# server log keeps the warning.
my $log_offset = -s $node->logfile;
for my $round (5, 6)
{
	my $session = $node->background_psql('postgres');
	$session->query_safe('SET client_min_messages = error');
	generate_seen_ids($session, 'after', $round);
	$session->quit;
}
my @gap_warnings = slurp_file($node->logfile, $log_offset)
  =~ /WARNING:  system clock is \d+ ms behind the snowflake reservation/g;
is(scalar(@gap_warnings), 1,
	'the first generation after the restart warns about the gap, once');

# --- What the test saw -------------------------------------------------------
my @all = all_seen_ids($node);
my @duplicates = duplicate_ids(@all);
is(scalar(@duplicates), 0, 'no ID seen twice among ' . scalar(@all) . ' IDs')
  or diag "duplicates, first: $duplicates[0]";

my ($min, $max) = id_bounds(@all);
ok(!defined $max->{doomed}, 'no row of a terminated statement was committed');
cmp_ok($min->{after}, '>', $max->{before},
	'every ID after the crash restart is larger than every ID before it');
cmp_ok( $node->safe_psql('postgres',
		"SELECT (extract(epoch FROM ts) * 1000)::bigint FROM snowflake_decode($min->{after})"),
	'>', $victim_mark,
	"the first ID after the restart lies after the victim's last timestamp");
cmp_ok($min->{'round 3'}, '>', $max->{'round 1'},
	'the next holder of a terminated slot continued above its IDs');

$node->stop;
done_testing();
