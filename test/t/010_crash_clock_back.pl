# A crash (immediate stop: not kill -9 of the postmaster, whose busy
# backends would go on as orphans) while three sessions commit rows, two
# stream IDs and a burst runs max_drift ahead; the server starts again with
# its clock 300 s behind, and the test sets it 30 s behind the reservation
# just before the first call, so the gap does not depend on how fast a
# loaded machine restarts.  Proves: reserved_until after recovery covers
# every ID seen before the crash; the first call waits (clock_wait_timeout
# 40 s, the gap beyond max_drift 1 s) and succeeds, warned once; every new
# ID lies above every earlier one, and none repeats.  009 and 011 cover IDs
# that continue at once under a large max_drift.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeTest;
use Time::HiRes qw(time);
use SnowflakeClock;
use SnowflakeStandby;

my $max_drift_ms = 1000;
my $inserters = 3;
my $streamers = 2;

# 8 sequence bits: 256 IDs per ms, so the streams and the burst outrun the
# clock and borrow up to max_drift ahead.
my $node = SnowflakeTest::new_node(
	'crash',
	settings => {
		timezone => 'UTC',
		'snowflake.sequence_bits' => 8,
		'snowflake.max_drift' => $max_drift_ms,
		'snowflake.clock_wait_timeout' => '40s'
	},
	start => 0);
SnowflakeClock::start($node, 0);
$node->safe_psql(
	'postgres', q{
CREATE EXTENSION snowflake;
-- IDs the client saw, loaded after the crash.
CREATE TABLE returned (id bigint NOT NULL, after_crash boolean DEFAULT false);
} . $SnowflakeStandby::ids_schema);

my $dir = PostgreSQL::Test::Utils::tempdir();

my @runs = SnowflakeStandby::start_load($node, $dir,
	inserters => $inserters, streamers => $streamers);
push @runs, SnowflakeTest::start_psql($node, $dir, 'burst', '-c',
	"SELECT count(snowflake_nextval()) FROM $SnowflakeStandby::endless");

ok( $node->poll_query_until(
		'postgres', qq{
SELECT count(DISTINCT session) = $inserters AND count(*) >= 20000 FROM ids}),
	'the sessions commit rows');
ok( $node->poll_query_until(
		'postgres', q{SELECT drift_ms > 500 FROM snowflake_status()}),
	'generation runs ahead of the clock');
ok(SnowflakeStandby::wait_streaming_ids($dir, $streamers),
	'the client receives streamed IDs');
ok(SnowflakeStandby::wait_reservations($node), 'reservations are written before the crash');
my ($reservations, $reserved_before) = split /\|/,
  $node->safe_psql(
	'postgres', q{
SELECT reservations, (extract(epoch FROM reserved_until) * 1000)::bigint
  FROM snowflake_status()});
cmp_ok($reservations, '>', 0, "reservations were written before the crash ($reservations)");

# --- the crash ---------------------------------------------------------------------
$node->stop('immediate');
ok(!$_->finish, 'a generating psql ended with the server') for @runs;

# The IDs each stream saw, in order (whole lines only), checked on the way
# into the file the server loads after the restart.
my $returned_file = "$dir/returned.txt";
my ($streamed) = SnowflakeStandby::check_streams($dir, $streamers, into => $returned_file);

# --- restart with the clock behind ---------------------------------------------------
my $log_offset = -s $node->logfile;
SnowflakeStandby::start_behind($node, 300, 0.5, 'the server clock is 300 s back');
like(slurp_file($node->logfile, $log_offset),
	qr/database system was interrupted|was not properly shut down/,
	'the start recovered from the crash');

$node->safe_psql('postgres', "COPY returned (id) FROM '$returned_file'");
my ($max_before, $max_before_ms, $committed) = split /\|/,
  $node->safe_psql(
	'postgres', q{
SELECT max(id), (extract(epoch FROM (snowflake_decode(max(id))).ts) * 1000)::bigint,
       (SELECT count(*) FROM ids)
  FROM (SELECT id FROM ids UNION ALL SELECT id FROM returned) AS s});
note "before the crash: $committed committed rows, $streamed streamed IDs";

my $reserved_ms = $node->safe_psql('postgres',
	'SELECT (extract(epoch FROM reserved_until) * 1000)::bigint FROM snowflake_status()');
cmp_ok($reserved_ms, '>=', $max_before_ms,
	'after recovery, reserved_until covers every ID seen before the crash');
cmp_ok($reserved_ms, '>=', $reserved_before,
	'and is not below the reservation seen before the crash');

# The first call: the floor lies beyond max_drift ahead of the clock, so it
# waits for the clock, within clock_wait_timeout, and then succeeds.  The
# clock is put 30 s behind the reservation now; set_offset() waits until
# a new backend sees it, so the call meets a gap of about 30 s, however
# slow the machine was until here.
my $clock_offset = $reserved_ms / 1000 - 30 - time();
SnowflakeClock::set_offset($node, $clock_offset);
my ($stdout, $stderr);
my $started = time();
$node->psql(
	'postgres', q{
SELECT snowflake_nextval() AS id, clock_timestamp() AS c \gset
SELECT :id, ((snowflake_decode(:id)).ts - :'c'::timestamptz) < interval '1001 ms'},
	stdout => \$stdout,
	stderr => \$stderr,
	on_error_die => 1);
my $elapsed = time() - $started;
my ($first, $honest) = split /\|/, $stdout;
my ($gap) = $stderr =~ /WARNING:  system clock is (\d+) ms behind the snowflake reservation/;
ok(defined $gap, 'the first generation is warned about the gap');
# The call read the clock between $started and the end of the wait.
my $expected_gap = $reserved_ms - int(($started + $clock_offset) * 1000);
ok( defined $gap
	  && $gap <= $expected_gap + 1000
	  && $gap >= $expected_gap - 1000 * $elapsed - 1000,
	"the WARNING names the gap ($expected_gap ms expected, less the call's delay)")
  or diag "gap: " . ($gap // 'none');
# clock_wait_timeout (40 s) bounds the wait: past it on_error_die fails.
ok( defined $gap
	  && $elapsed >= ($gap - $max_drift_ms) / 1000 - 1,
	sprintf('the first call waited for the clock (%.2f s)', $elapsed));
cmp_ok($first, '>', $max_before, 'the first new ID is above every earlier one');
is($honest, 't', 'and at most max_drift ahead of the clock');

# More generation after the restart.
for my $s (101 .. 103)
{
	$node->safe_psql(
		'postgres', qq{
INSERT INTO ids (session, n) SELECT $s, g FROM generate_series(1, 10000) AS g;
INSERT INTO returned SELECT snowflake_nextval(), true FROM generate_series(1, 1000);});
}
my @gaps = slurp_file($node->logfile, $log_offset)
  =~ /WARNING:  system clock is \d+ ms behind the snowflake reservation/g;
is(scalar(@gaps), 1, 'the WARNING is logged once');

is( $node->safe_psql(
		'postgres', qq{
SELECT (SELECT count(*) FROM ids WHERE session > 100 AND id <= $max_before)
     + (SELECT count(*) FROM returned WHERE after_crash AND id <= $max_before)}),
	'0',
	'every ID after the restart is above every ID seen before the crash');
is( $node->safe_psql(
		'postgres', q{
SELECT count(*) - count(DISTINCT id)
  FROM (SELECT id FROM ids UNION ALL SELECT id FROM returned
        UNION ALL SELECT } . $first . q{) AS s}),
	'0',
	'no ID occurs twice among the committed rows and the IDs the client saw');
is(SnowflakeTest::out_of_order($node, 'ids'),
	'0',
	'within each session, committed IDs strictly increase');

$node->stop;
done_testing();
