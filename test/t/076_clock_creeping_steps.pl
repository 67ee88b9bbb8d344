# A clock that creeps forward in steps each below
# snowflake.clock_step_threshold (0.8 s every few seconds, far faster than
# the 500 ppm NTP may slew): the trusted offset may rise by at most the
# threshold plus the slew within one clock_step_confirmation.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeClock;

my $node = SnowflakeClock::new_node('creep', 'snowflake.clock_step_confirmation' => '10min');
my @ids;
SnowflakeClock::insert($node, \@ids, 'before');
my $log_at = -s $node->logfile;
my $offset = 0;
for my $i (1 .. 10)
{
	$offset += 0.8;
	SnowflakeClock::set_offset($node, $offset);
	my $ahead = SnowflakeClock::insert($node, \@ids, "creeping to +$offset s");
	cmp_ok($ahead, '<', 2.5,
		"with the clock crept to +$offset s, the ID is at most the threshold ahead");
}
like(slurp_file($node->logfile, $log_at),
	qr/WARNING:  snowflake: the system clock stepped forward by \d+ ms/,
	'the steps that add up beyond the threshold are logged as a forward step');
cmp_ok(SnowflakeClock::status($node, 'clock_steps_forward'), '>=', 1, 'and counted');
isnt(SnowflakeClock::status($node, 'clock_step_pending_ms'),
	'', 'the crept offset is a pending step');

SnowflakeClock::set_offset($node, 0);
my $ahead = SnowflakeClock::insert($node, \@ids, 'corrected');
cmp_ok(abs($ahead), '<', 2.5, 'after the correction IDs keep to the true time');
SnowflakeClock::check_ids(\@ids, $node);

$node->stop;
done_testing();
