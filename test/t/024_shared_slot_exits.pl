# Sessions sharing the one worker slot (worker_bits = 0) end abruptly: one
# ended by pg_terminate_backend() is detached from snowflake_workers, pg_locks
# and snowflake_status() while the others insert on unharmed; after a SIGKILL
# crash restart every new ID is above every old one and after the shared
# slot's last timestamp; no ID the test saw repeats, and each session's
# committed IDs strictly increase.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;
use List::Util ();

my $slot_lock_class = 1936617335;
my $inserters = 3;
my $statements = 4;
my $rows_per_statement = 50_000;

# Generates IDs, without a result, until the backend is ended.
my $endless = 'SELECT count(snowflake_nextval()) FROM (SELECT generate_series(1, 2000000000)) AS g';

# 10 sequence bits: sharing sessions soon run max_drift ahead of the clock.
my $node = SnowflakeTest::new_node(
	'shared_exits',
	settings => {
		'snowflake.worker_bits' => 0,
		'snowflake.sequence_bits' => 10,
		restart_after_crash => 'on'
	},
	extension => 'postgres');
$node->safe_psql(
	'postgres', q{
CREATE TABLE seen (
    id      bigint PRIMARY KEY DEFAULT snowflake_nextval(),
    n       bigserial NOT NULL,
    session text NOT NULL,
    phase   text NOT NULL
)});

# sessions_attached|slots_shared, and the rows of snowflake_workers and the
# slot locks in pg_locks.
sub slot_use
{
	return $node->safe_psql(
		'postgres', qq{
SELECT s.sessions_attached, s.slots_shared,
       (SELECT count(*) FROM snowflake_workers),
       (SELECT count(*) FROM pg_locks
         WHERE locktype = 'advisory' AND database = 0
           AND classid = $slot_lock_class AND granted)
  FROM snowflake_status() AS s});
}

sub wait_generating
{
	my ($pid, $what) = @_;
	ok( $node->poll_query_until(
			'postgres',
			"SELECT ids_issued > 1 FROM snowflake_workers WHERE pid = $pid"),
		"$what is generating IDs");
	return;
}

# --- pg_terminate_backend of one of the sessions sharing the slot -----------
my $doomed = $node->background_psql('postgres');
my $doomed_pid = $doomed->query_safe('SELECT pg_backend_pid()');
$doomed->query_safe('SELECT snowflake_nextval()');

my $dir = PostgreSQL::Test::Utils::tempdir();
my @runs;
for my $i (1 .. $inserters)
{
	push @runs,
	  SnowflakeTest::start_psql($node, $dir, "s$i",
		map { ('-c', "INSERT INTO seen (session, phase) SELECT 's$i', 'before' "
			  . "FROM generate_series(1, $rows_per_statement)") } 1 .. $statements);
}
$doomed->query_until(qr/generating/, "\\echo generating\n$endless;\n");
wait_generating($doomed_pid, 'the doomed session');
ok( $node->poll_query_until(
		'postgres', 'SELECT sessions_attached = 4 AND slots_shared = 1 FROM snowflake_status()'),
	'four sessions share the slot')
  or diag(slot_use());
is($node->safe_psql('postgres', "SELECT pg_terminate_backend($doomed_pid)"),
	't', 'the doomed backend is terminated');
ok(!$doomed->{run}->finish, 'its psql exited with an error');
like($doomed->{stderr}, qr/terminating connection due to administrator command/,
	'it saw the termination');
ok( $node->poll_query_until(
		'postgres', "SELECT count(*) = 0 FROM snowflake_workers WHERE pid = $doomed_pid"),
	'the terminated session is detached');
is( $node->safe_psql(
		'postgres', qq{
SELECT count(*) FROM pg_locks WHERE pid = $doomed_pid AND classid = $slot_lock_class}),
	'0', 'its slot lock is gone from pg_locks');
for my $i (1 .. $inserters)
{
	ok($runs[ $i - 1 ]->finish, "inserter s$i ran all its statements")
	  or diag(slurp_file("$dir/s$i.err"));
}
is( $node->safe_psql(
		'postgres', "SELECT count(*) FROM seen WHERE phase = 'before'"),
	$inserters * $statements * $rows_per_statement,
	'every row of the inserters is there');
ok( $node->poll_query_until(
		'postgres', 'SELECT sessions_attached = 0 FROM snowflake_status()'),
	'every session detached');

# --- SIGKILL of a session sharing the slot: crash restart ---------------------
my $bystander = $node->background_psql('postgres');
my $victim = $node->background_psql('postgres');
my $victim_pid = $victim->query_safe('SELECT pg_backend_pid()');
my @returned;
push @returned, split /\n/,
  $bystander->query_safe('SELECT snowflake_nextval() FROM generate_series(1, 1000)');
push @returned, split /\n/,
  $victim->query_safe('SELECT snowflake_nextval() FROM generate_series(1, 1000)');
is(slot_use(), '2|1|2|2', 'victim and bystander share the slot');
$victim->query_until(qr/generating/, "\\echo generating\n$endless;\n");
wait_generating($victim_pid, 'the victim');
ok( $node->poll_query_until(
		'postgres', q{
SELECT bool_and(last_timestamp > clock_timestamp() + interval '500 ms')
  FROM snowflake_workers}),
	'the shared slot runs ahead of the wall clock');
push @returned,
  $bystander->query_safe('SELECT max(snowflake_nextval()) FROM generate_series(1, 100000)');
my $slot_mark = $node->safe_psql(
	'postgres', q{
SELECT (extract(epoch FROM max(last_timestamp)) * 1000)::bigint FROM snowflake_workers});

SnowflakeTest::crash_backend($node, $victim_pid);
ok(!$victim->{run}->finish, 'the victim psql exited with an error');
$bystander->quit;
is(slot_use(), '0|0|0|0', 'after the restart nobody is attached');

my $after = $node->background_psql('postgres');
$after->query_safe('SET client_min_messages = error');
$after->query_safe(
	"INSERT INTO seen (session, phase) SELECT 'after', 'after' FROM generate_series(1, 10000)");
my $first_after = $node->safe_psql('postgres', "SELECT min(id) FROM seen WHERE phase = 'after'");
$after->quit;

# --- What the test saw --------------------------------------------------------
my $max_before = List::Util::max(@returned,
	$node->safe_psql('postgres', "SELECT max(id) FROM seen WHERE phase = 'before'"));
cmp_ok($first_after, '>', $max_before,
	'every ID after the crash restart is larger than every ID before it');
cmp_ok(
	$node->safe_psql('postgres',
		"SELECT (extract(epoch FROM ts) * 1000)::bigint FROM snowflake_decode($first_after)"),
	'>', $slot_mark,
	"the first ID after the restart lies after the shared slot's last timestamp");

my %count;
$count{$_}++ for @returned,
  split(/\n/, $node->safe_psql('postgres', 'SELECT id FROM seen'));
is(scalar(grep { $count{$_} > 1 } keys %count), 0,
	'no ID seen twice among ' . scalar(keys %count) . ' IDs');
is(SnowflakeTest::out_of_order($node, 'seen'), 0,
	"each session's committed IDs strictly increase");

$node->stop;
done_testing();
