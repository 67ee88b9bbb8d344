# A step on top of a pending step needs its own confirmation: +2 s
# (pending, clock_step_confirmation = 20 s), then +30 days just before that
# step's confirmation runs out.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use SnowflakeClock;

my $day = 86400;
my $confirmation = 20;
my $node = SnowflakeClock::new_node('stacked',
	'snowflake.clock_step_confirmation' => "${confirmation}s");
my @ids;
SnowflakeClock::insert($node, \@ids, 'before');
my $log_at = -s $node->logfile;
SnowflakeClock::write_offset($node, 2);
$node->wait_for_log(qr/snowflake: the system clock stepped forward by \d+ ms/, $log_at);
my $first_seen = time();
SnowflakeClock::set_offset($node, 2);
is(SnowflakeClock::status($node, 'clock_step_pending_ms > 1000'), 't', 'the 2-s step is pending');

# Five seconds before the 2-s step is confirmed, the clock steps on by 30
# days; the 2-s step was first seen no later than $first_seen, so its
# confirmation ends by $first_seen + $confirmation.
SnowflakeClock::wait_until($first_seen, $confirmation - 5);
$log_at = -s $node->logfile;
SnowflakeClock::set_offset($node, 30 * $day);
SnowflakeClock::wait_until($first_seen, $confirmation + 2);
my $ahead = SnowflakeClock::insert($node, \@ids, 'after the confirmation of the first step');
cmp_ok($ahead, '<', 60,
	'the 30-day step does not inherit the confirmation of the step below it');
is(SnowflakeClock::status($node, 'clock_step_pending_ms > 29 * 86400000::bigint'),
	't', 'the 30-day step is pending');
like(slurp_file($node->logfile, $log_at),
	qr/WARNING:  snowflake: the system clock stepped forward by 259\d{7} ms/,
	'the 30-day step is logged as a forward step of its own');

SnowflakeClock::set_offset($node, 0);
$ahead = SnowflakeClock::insert($node, \@ids, 'corrected');
cmp_ok(abs($ahead), '<', 60, 'after the correction IDs keep to the true time');
SnowflakeClock::check_ids(\@ids, $node);

$node->stop;
done_testing();
