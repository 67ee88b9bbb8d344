# The data-directory layout check uses the saved reservation, and the layout
# file is written only once the server has started: (i) after a run with the
# clock 3 days ahead, an epoch 2 days earlier is refused at start and by the
# database's history, though safe within 24 h 1 min of the clock; (ii) a
# safe layout change whose start fails after snowflake loaded records nothing.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeTest;
use POSIX qw(strftime);
use Time::HiRes qw(time);
use SnowflakeClock;

my $day_ms = 86_400_000;
my $epoch_ms = 1735689600000;    # the default epoch, 2025-01-01

sub new_node
{
	return SnowflakeTest::settings_node($_[0], settings => { timezone => 'UTC' });
}

*write_settings = \&SnowflakeTest::write_settings;
*describe = \&SnowflakeTest::layout_text;

# --- (i) the reservation bounds the old IDs ---------------------------------------
my $node = new_node('ahead');
SnowflakeClock::start($node, 3 * 86400);
$node->safe_psql('postgres', 'CREATE EXTENSION snowflake');
my $max_ahead = $node->safe_psql('postgres',
	'SELECT max(snowflake_nextval()) FROM generate_series(1, 1000)');
$node->stop;
my $layout_file = $node->data_dir . '/snowflake.layout';
my $reservation_file = $node->data_dir . '/snowflake.reservation';
my $reservation_ms = slurp_file($reservation_file) + 0;
cmp_ok($reservation_ms, '>', time() * 1000 + 3 * $day_ms - 600_000,
	'the reservation lies 3 days ahead of the real clock');
my $saved_layout = slurp_file($layout_file);

write_settings($node, epoch => '2024-12-30');
my $log = SnowflakeTest::start_refused($node,
	'real clock, epoch 2 days earlier: the server refuses to start');
like(
	$log,
	qr/FATAL:  \Qthe snowflake layout differs from the layout this data directory last ran with\E\n/,
	'the log gives the reason');
like(
	$log,
	qr/DETAIL:  \QLast: ${\ describe('2025-01-01', 12)}. Now: ${\ describe('2024-12-30', 12)}. Not every new ID would be larger than every ID already issued.\E\n/,
	'the log names both layouts');
is(slurp_file($layout_file), $saved_layout, 'the layout file is unchanged');

# The database's own check, without the data directory's record: an epoch
# earlier by just over its age in days, one sequence bit less, is a successor
# within 24 h 1 min of the clock, not from the reservation 3 days ahead.
my $age_days = int((time() * 1000 - $epoch_ms) / $day_ms) + 1;
my $earlier = strftime('%Y-%m-%d', gmtime($epoch_ms / 1000 - $age_days * 86400));
write_settings($node, epoch => $earlier, sequence_bits => 11);
unlink $layout_file or die "could not remove $layout_file: $!";
$node->start;
my (undef, $stdout, $stderr) = $node->psql(
	'postgres', q(
SET snowflake.clock_wait_timeout = 0;
SELECT snowflake_nextval();
));
is($stdout, '', "epoch $earlier, 11 sequence bits: no ID is issued");
like(
	$stderr,
	qr/ERROR:  \Qthe server's snowflake layout differs from the layout recorded in database "postgres"\E\n/,
	'the database refuses the layout');
like(
	$stderr,
	qr/DETAIL:  \QRecorded: ${\ describe('2025-01-01', 12)}. Running: ${\ describe($earlier, 11)}. Not every new ID would be larger than every ID already issued.\E/,
	'the DETAIL names both layouts');
$node->stop;

# Back to the layout the IDs were issued under.
SnowflakeTest::write_file($layout_file, $saved_layout);
write_settings($node);
ok($node->start(fail_ok => 1), 'with the old settings again, the server starts');
$node->stop;

# --- (ii) a start that fails later records nothing -----------------------------------
$node = new_node('failed_start');
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION snowflake');
my $max_before = $node->safe_psql('postgres',
	'SELECT max(snowflake_nextval()) FROM generate_series(1, 1000)');
$node->stop;
$layout_file = $node->data_dir . '/snowflake.layout';
is(slurp_file($layout_file), "$epoch_ms 3 7 12\n", 'the layout file holds 12 sequence bits');

write_settings($node, sequence_bits => 13, preload => 'snowflake,no_such_library');
$log = SnowflakeTest::start_refused($node,
	'sequence_bits 13 and a missing library: the server does not start');
like($log, qr/\Qsnowflake layout changed from\E/,
	'snowflake accepted the new layout');
like($log, qr/FATAL:  \Qcould not access file "no_such_library"\E/,
	'the start failed on the missing library');
is(slurp_file($layout_file), "$epoch_ms 3 7 12\n", 'the layout file still holds 12 sequence bits');

write_settings($node);
if (ok($node->start(fail_ok => 1), 'back to the old settings, the server starts'))
{
	my $min_after = $node->safe_psql('postgres',
		'SELECT min(snowflake_nextval()) FROM generate_series(1, 1000)');
	cmp_ok($min_after, '>', $max_before, 'and IDs continue above the earlier ones');
	$node->stop;
}

# And the change itself, started properly, is recorded.
write_settings($node, sequence_bits => 13);
$node->start;
# The worker records it soon after the start.
ok( SnowflakeTest::wait_until(
		sub { slurp_file($layout_file) eq "$epoch_ms 3 7 13\n" },
		'the new layout in the layout file'),
	'a start that succeeds records the new layout without any ID');
$node->stop;
done_testing();
