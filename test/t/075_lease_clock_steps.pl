# Leases follow the trusted clock (pg/clock_watch.hpp) under libfaketime
# (CLOCK_BOOTTIME not faked), with snowflake.clock_step_confirmation = 20 s.
use strict;
use warnings;
use Test::More;
use Time::HiRes qw(time);
use SnowflakeClock;

my $day = 86400;
my $node = SnowflakeClock::new_node(
	'leaseclock',
	'snowflake.clock_step_confirmation' => '20s',
	'snowflake.clock_wait_timeout' => '10s',
	'snowflake.lease_workers' => 4,
	'snowflake.on_clock_behind' => 'ride');

sub status { return SnowflakeClock::status($node, $_[0]) }

sub wait_status { SnowflakeClock::wait_status($node, @_) }

# Grants a 30-second lease; returns its token, not_before and not_after (Unix
# seconds), and what the grant wrote to stderr.
sub grant
{
	my ($holder) = @_;
	my ($ret, $out, $err) = $node->psql(
		'postgres', qq{
SELECT token, extract(epoch FROM not_before), extract(epoch FROM not_after)
  FROM snowflake_lease_worker('$holder', interval '30 seconds')});
	die "the grant failed: $err" if $ret != 0;
	return (split(/\|/, $out), $err);
}

# --- a lease during an unconfirmed step ------------------------------------------

SnowflakeClock::set_offset($node, 3600);
wait_status('clock_step_pending_ms > 3500000', 'the step is not pending');
my ($token, $not_before, $not_after, $err) = grant('during the step');
my $now = time();
cmp_ok($not_after - $now, '<=', 31, 'the window keeps to the true time, not the step');
cmp_ok($not_after - $now, '>', 20, 'the window is the 30 s asked for');
cmp_ok($not_before, '<=', $now + 1, 'not_before is not in the step');
is($err, '', 'the grant raises no message');
is( $node->safe_psql(
		'postgres',
		"SELECT state, abs(extract(epoch FROM expires_at) - $not_after) < 0.01
		   FROM snowflake_leases WHERE token = $token"),
	'held|t',
	'snowflake_leases shows it held by the trusted clock (by the raw one it expired)');
my $renewed = $node->safe_psql('postgres',
	"SELECT extract(epoch FROM not_after) FROM snowflake_renew_lease($token, NULL)");
cmp_ok($renewed - time(), '<=', 31, 'a renewal during the step keeps to the true time');
isnt(status('clock_step_pending_ms'), '', 'the step is still pending');
SnowflakeClock::set_offset($node, 0);
wait_status('clock_step_pending_ms IS NULL', 'the correction was not seen');
$node->safe_psql('postgres', "SELECT snowflake_release_lease($token, NULL)");

# --- a poisoned future ------------------------------------------------------------

SnowflakeClock::set_offset($node, 30 * $day);
wait_status('clock_step_pending_ms IS NOT NULL', 'the 30-day step is not pending');
wait_status('clock_step_pending_ms IS NULL', 'the 30-day step was never accepted');
my $id = $node->safe_psql('postgres', 'SELECT snowflake_nextval()');
cmp_ok($node->safe_psql('postgres', "SELECT extract(epoch FROM snowflake_timestamp($id))") - time(),
	'>', 29 * $day, 'an ID follows the accepted step');
SnowflakeClock::set_offset($node, 0);
SnowflakeClock::restart($node);
SnowflakeClock::refork_reservation_worker($node);

($token, $not_before, $not_after, $err) = grant('after the restart');
$now = time();
cmp_ok($not_before - $now, '>', 29 * $day, 'not_before lies in the poisoned future');
is(sprintf('%.3f', $not_after - $not_before), '30.000', 'the window follows not_before');
like(
	$err,
	qr/WARNING:  the lease's not_before lies (\d+) ms ahead of the clock
DETAIL:  This node's generation floor lies ahead of its clock \(a clock step accepted and then corrected, or one made while the server was down\): a generator that waits for its clock to pass not_before, [-0-9: .+]+, issues no ID with this lease until then.
HINT:  Issue the lease's IDs above not_before at once, their timestamps advancing with the IDs, as snowflake.on_clock_behind = 'ride' does for sessions; they stay unique.  Or wait until the clock reaches not_before./,
	'the grant warns that not_before lies ahead, with DETAIL and HINT');
my ($ahead_ms) = $err =~ /lies (\d+) ms ahead/;
cmp_ok(abs($ahead_ms / 1000 - ($not_before - $now)), '<', 5,
	'the WARNING says how far ahead not_before lies');

$node->stop;
done_testing();
