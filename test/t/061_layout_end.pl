# Nothing past the layout's end: 31 timestamp bits from an epoch that ends
# them 90 s after the start, reserve_ahead = 60s.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use POSIX qw(strftime);
use Time::HiRes qw(time);
use SnowflakeTest;
use SnowflakeStandby;

my $epoch_ms = int(time() * 1000) - 2**31 + 90_000;
my $last_ms = $epoch_ms + 2**31 - 1;
my $epoch_text = strftime('%Y-%m-%d %H:%M:%S', gmtime(int($epoch_ms / 1000)))
  . sprintf('.%03d+00', $epoch_ms % 1000);

my ($primary, $standby) = SnowflakeStandby::primary_with_standbys(
	settings => {
		'snowflake.epoch' => $epoch_text,
		'snowflake.node_bits' => 3,
		'snowflake.worker_bits' => 7,
		'snowflake.sequence_bits' => 22,
		'snowflake.reserve_ahead' => '60s',
		restart_after_crash => 'on',
		timezone => 'UTC'
	});

my $reserved_ms =
  'SELECT (extract(epoch FROM reserved_until) * 1000)::bigint FROM snowflake_status()';

is( $primary->safe_psql(
		'postgres',
		'SELECT timestamp_bits, (extract(epoch FROM horizon) * 1000)::bigint FROM snowflake_status()'),
	"31|" . ($last_ms + 1),
	'the layout has 31 timestamp bits and ends 2^31 ms past the epoch');

# Wait until reserve_ahead from the clock reaches past the end, then issue.
ok( $primary->poll_query_until(
		'postgres',
		"SELECT clock_timestamp() >= horizon - interval '59 s' FROM snowflake_status()"),
	'the clock is within 59 s of the layout\'s end');
my $left_ms = $primary->safe_psql('postgres',
	'SELECT snowflake_nextval() IS NOT NULL; '
	  . "SELECT (extract(epoch FROM horizon - clock_timestamp()) * 1000)::bigint FROM snowflake_status()");
($left_ms) = $left_ms =~ /(-?\d+)$/;
cmp_ok($left_ms, '>', 10_000, 'the layout still has time left after the first ID');

ok( $primary->poll_query_until(
		'postgres', "SELECT snowflake_nextval() IS NOT NULL AND ($reserved_ms) >= $last_ms"),
	'the reservation reaches the layout\'s last millisecond');
is($primary->safe_psql('postgres', $reserved_ms),
	$last_ms, 'the primary reserves up to the layout\'s last millisecond, not past it');
is(slurp_file($primary->data_dir . '/snowflake.reservation'),
	"$last_ms\n", 'the primary\'s reservation file holds the last millisecond');

# --- the standby's replay ------------------------------------------------------
$primary->wait_for_catchup($standby);
is($standby->safe_psql('postgres', $reserved_ms),
	$last_ms, 'the standby replays the reservation up to the last millisecond, not past it');
$standby->stop('immediate');
ok($standby->start(fail_ok => 1), 'the standby starts again after an immediate shutdown');
$standby->promote;
my ($ret, $out, $err) = $standby->psql(
	'postgres', 'SELECT snowflake_nextval()',
	extra_params => [ '-v', 'VERBOSITY=verbose' ]);
like($err, qr/ERROR:  54000: the snowflake layout has run out of timestamps/,
	'promoted, the standby refuses IDs with SQLSTATE 54000: its floor is past the end');
like($err,
	qr/DETAIL:  Its last millisecond is [^,]+, ahead of the clock, but every timestamp up to it may be in use: IDs ran ahead of the clock, or this server resumed from a reservation that reaches it\./,
	'the DETAIL says why, with the clock still inside the layout');
unlike($err, qr/behind the snowflake reservation/,
	'and no WARNING proposes to wait for the clock, which cannot help');
$standby->stop('immediate');

# --- crash restarts of the primary ---------------------------------------------
my $victim = SnowflakeTest::start_psql($primary, $primary->basedir, 'victim', '-c',
	"SELECT pg_sleep(600)");
ok( $primary->poll_query_until(
		'postgres', "SELECT count(*) = 1 FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(600)'"),
	'a backend sleeps');
my $pid = $primary->safe_psql('postgres',
	"SELECT pid FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(600)'");
my $offset = -s $primary->logfile;
kill 'KILL', $pid;
$victim->finish;
ok( SnowflakeTest::wait_until(
		sub {
			slurp_file($primary->logfile, $offset) =~
			  /database system is ready to accept connections|does not hold a valid snowflake reservation/;
		},
		'the crash restart'),
	'the postmaster restarted after the killed backend');
unlike(
	slurp_file($primary->logfile, $offset),
	qr/does not hold a valid snowflake reservation/,
	'the crash restart reads the reservation back, without a FATAL');
is($primary->safe_psql('postgres', $reserved_ms),
	$last_ms, 'after the crash restart the reservation is the last millisecond');
($ret, $out, $err) = $primary->psql(
	'postgres', 'SELECT snowflake_nextval()',
	extra_params => [ '-v', 'VERBOSITY=verbose' ]);
like($err, qr/ERROR:  54000: the snowflake layout has run out of timestamps/,
	'after the crash restart IDs are refused with SQLSTATE 54000');
unlike($err, qr/behind the snowflake reservation/,
	'after the crash restart no WARNING proposes to wait for the clock');

$primary->stop('immediate');
ok($primary->start(fail_ok => 1), 'the primary starts after an immediate shutdown');
is($primary->safe_psql('postgres', $reserved_ms),
	$last_ms, 'after the immediate shutdown the reservation is the last millisecond');

# --- the HINT of a damaged reservation file ------------------------------------
$primary->stop('immediate');
my $file = $primary->data_dir . '/snowflake.reservation';
SnowflakeTest::write_file($file, '');
my $log = SnowflakeTest::start_refused($primary, 'an empty reservation file is refused');
my ($suggested) = $log =~ /HINT:  .*such as the current time plus 86460000 ms \(at most the last millisecond of the running layout\): (\d+)\./;
is($suggested, $last_ms, 'the HINT proposes the layout\'s last millisecond, not a time past it');
SnowflakeTest::write_file($file, "$suggested\n");
ok($primary->start(fail_ok => 1), 'the primary starts with the value the HINT proposed');
cmp_ok($primary->safe_psql('postgres', 'SELECT clock_timestamp() < horizon FROM snowflake_status()'),
	'eq', 't', 'all of it before the layout\'s end');
$primary->stop('immediate');

done_testing();
