# The data-directory layout check uses the saved reservation, and the layout
# file is written only once the server has started.
#
# (i) A node runs with its clock 3 days ahead (libfaketime) and issues IDs,
# so its reservation lies 3 days past the real time.  Started again with the
# real clock and the epoch 2 days earlier, its new IDs would start below the
# old ones if they followed the clock: the server must refuse to start,
# although the change is safe within the 24 h 1 min any run can reach ahead
# of its clock.  A database whose layout history is checked without the
# data directory's record must refuse snowflake_nextval() for the same
# reason (a change of epoch and sequence bits that only the reservation
# shows to be unsafe).
#
# (ii) A safe layout change whose start fails after snowflake was loaded
# (shared_preload_libraries also names a library that does not exist) does
# not record the new layout: going back to the old settings starts.
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

# A node, not started, whose snowflake settings and preload list come from
# snowflake.conf (write_settings): included last, it overrides the preload
# line that new_node writes.
sub new_node
{
	my ($name) = @_;
	my $node = SnowflakeTest::new_node(
		$name,
		settings => { timezone => 'UTC' },
		conf => "include 'snowflake.conf'\n",
		start => 0);
	write_settings($node);
	return $node;
}

# Replaces the node's snowflake settings (and its preload list).
sub write_settings
{
	my ($node, %settings) = @_;
	my $preload = delete $settings{preload} // 'snowflake';
	my $file = $node->data_dir . '/snowflake.conf';
	open my $fh, '>', $file or die "could not write $file: $!";
	print $fh "shared_preload_libraries = '$preload'\n";
	print $fh "snowflake.$_ = '$settings{$_}'\n" for sort keys %settings;
	close $fh;
}

sub describe
{
	my ($epoch_text, $seq_bits) = @_;
	return "epoch $epoch_text 00:00:00+00, 3 node bits, 7 worker bits, "
	  . "$seq_bits sequence bits";
}

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
# earlier by a whole number of days just over the epoch's age, with one
# sequence bit less.  Within 24 h 1 min of the clock that is a successor;
# from the reservation, 3 days ahead, it is not.
my $age_days = int((time() * 1000 - $epoch_ms) / $day_ms) + 1;
my $earlier = strftime('%Y-%m-%d', gmtime($epoch_ms / 1000 - $age_days * 86400));
write_settings($node, epoch => $earlier, sequence_bits => 11);
unlink $layout_file or die "could not remove $layout_file: $!";
$node->start;
my ($stdout, $stderr);
$node->psql(
	'postgres', q(
SET snowflake.clock_wait_timeout = 0;
SELECT snowflake_nextval();
),
	stdout => \$stdout,
	stderr => \$stderr);
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
open my $fh, '>', $layout_file or die "could not write $layout_file: $!";
print $fh $saved_layout;
close $fh;
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
# The worker records it soon after the start: wait for that state, up to
# the framework's timeout (was: 10 s).
ok( SnowflakeTest::wait_until(
		sub { slurp_file($layout_file) eq "$epoch_ms 3 7 13\n" },
		'the new layout in the layout file'),
	'a start that succeeds records the new layout without any ID');
$node->stop;

done_testing();
