# The correction of a step back must not be held as a forward step while
# the IDs wait for it (on_clock_behind = 'wait', clock_step_confirmation =
# 20 s): the correction only brings the clock back to where IDs already are.
use strict;
use warnings;
use Test::More;
use Time::HiRes qw(time);
use SnowflakeClock;

my $day = 86400;
my $confirmation = 20;
my $node = SnowflakeClock::new_node('backlate',
	'snowflake.clock_step_confirmation' => "${confirmation}s");
my @ids;

sub insert
{
	return SnowflakeClock::insert($node, \@ids, $_[0], checked => 1);
}

sub fails_behind
{
	my ($what) = @_;
	my ($ret, $out, $err) = $node->psql('postgres', 'SELECT snowflake_nextval()');
	like($err, qr/system clock is \d+ ms behind the next snowflake ID/,
		"$what: snowflake_nextval() waits and fails, as documented");
	return;
}

insert('before');

# A step back corrected after the confirmation.
SnowflakeClock::set_offset($node, -3600);
my $back_at = time();
fails_behind('1 h back');
SnowflakeClock::wait_until($back_at, $confirmation + 2);
SnowflakeClock::set_offset($node, 0);
my $ahead = insert('the step back corrected late');
cmp_ok(abs($ahead), '<', 60, 'IDs keep to the true time') if defined $ahead;

# +30 days (pending), "corrected" to 1 h behind, then set right; from a
# clock trusted again (the rest of the step above accepted).
SnowflakeClock::wait_status($node, 'clock_step_pending_ms IS NULL', 'the step was never accepted');
SnowflakeClock::set_offset($node, 30 * $day);
insert('during +30d');
SnowflakeClock::set_offset($node, -3600);
fails_behind('overcorrected to 1 h back');
SnowflakeClock::set_offset($node, 0);
$ahead = insert('set right');
cmp_ok(abs($ahead), '<', 60, 'IDs keep to the true time') if defined $ahead;
SnowflakeClock::check_ids(\@ids);

$node->stop;
done_testing();
