# Forward steps of the wall clock under libfaketime (CLOCK_BOOTTIME is not
# faked), with snowflake.clock_step_confirmation = 20 s.  Every ID the test
# saw is distinct and each one is above the one before.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use SnowflakeClock;

my $day = 86400;
my $node = SnowflakeClock::new_node(
	'forward',
	'snowflake.clock_step_confirmation' => '20s',
	restart_after_crash => 'on');
my @ids;

sub insert { return SnowflakeClock::insert($node, \@ids, $_[0]) }
sub status { return SnowflakeClock::status($node, $_[0]) }

insert('before');

# +1 h, seen first by the reservation worker: no session reads the clock
# until its WARNING is logged.  A row just before keeps the worker extending
# the reservation (it does for 10 s after the last ID).
my $log_at = -s $node->logfile;
insert('just before +1h');
SnowflakeClock::write_offset($node, 3600);
$node->wait_for_log(qr/snowflake: the system clock stepped forward by 3[56]\d{5} ms/, $log_at);
like(slurp_file($node->logfile, $log_at),
	qr/WARNING:  snowflake: the system clock stepped forward by 3[56]\d{5} ms/,
	'the forward step is a WARNING with its size');
# Until every process has re-read the offset file, a backend forked from a
# postmaster whose libfaketime cache is fresh would read the time before the
# step, and see it corrected.
SnowflakeClock::set_offset($node, 3600);
my ($pending, $forward) = split /\|/, status('clock_step_pending_ms, clock_steps_forward');
cmp_ok(abs($pending - 3600000), '<', 5000, 'status shows the pending step of 1 h');
is($forward, 1, 'the step is counted');
my $reserved = status('extract(epoch FROM reserved_until)');
cmp_ok($reserved - time(), '<', 60, 'the reservation did not move into the step');
for my $i (1 .. 3)
{
	my $r = insert('during +1h');
	cmp_ok(abs($r), '<', 60, 'an ID during the pending step keeps to the true time');
}
$log_at = -s $node->logfile;
SnowflakeClock::set_offset($node, 0);
$node->wait_for_log(qr/forward step of the system clock was corrected/, $log_at);
my $r = insert('after +1h');
cmp_ok(abs($r), '<', 60, 'after the correction IDs keep to the true time');
is(status('clock_step_pending_ms IS NULL'), 't', 'no step is pending any more');

# +30 days and back, with sessions inserting throughout.
SnowflakeClock::set_offset($node, 30 * $day);
for my $i (1 .. 3)
{
	$r = insert('during +30d');
	cmp_ok(abs($r), '<', 60, 'an ID during the 30-day step keeps to the true time');
}
is(status('largest_step_forward_ms > 29 * 86400000::bigint'), 't',
	'the largest step is the 30-day one');
SnowflakeClock::set_offset($node, 0);
for my $i (1 .. 3)
{
	$r = insert('after +30d');
	cmp_ok(abs($r), '<', 60, 'after the 30-day step IDs decode within a minute of the true time');
}

# A crash restart during an unconfirmed step: the postmaster keeps the
# trust of the memory it re-initialises, so the step stays pending.
SnowflakeClock::set_offset($node, 30 * $day);
insert('pending before the crash');
my $victim = $node->safe_psql('postgres',
	"SELECT pid FROM pg_stat_activity WHERE backend_type = 'checkpointer'");
$log_at = -s $node->logfile;
kill 'KILL', $victim;
$node->wait_for_log(qr/all server processes terminated; reinitializing/, $log_at);
$node->poll_query_until('postgres', 'SELECT true') or die 'no crash restart';
SnowflakeClock::refork_reservation_worker($node);
isnt(status('clock_step_pending_ms'), '', 'after a crash restart the step is still pending');
$r = insert('after the crash restart');
cmp_ok(abs($r), '<', 60, 'after a crash restart IDs keep to the true time');

# The step persists: accepted after the confirmation, IDs follow it.
SnowflakeClock::wait_status($node, 'clock_step_pending_ms IS NULL', 'the step was never accepted');
# The process that accepted it logs just after the shared state shows it
# (searched from before the crash, as the step may be accepted any time).
ok( eval {
		$node->wait_for_log(qr/lasted snowflake.clock_step_confirmation; IDs follow it now/,
			$log_at);
		1;
	},
	'the acceptance is logged');
$r = insert('accepted +30d');
cmp_ok(abs($r - 30 * $day), '<', 60, 'an accepted step is followed');

# Corrected after it was accepted: the future is poisoned.  Waiting fails
# with a HINT that names riding it out.
SnowflakeClock::set_offset($node, 0);
my ($ret, $out, $err) = $node->psql('postgres', 'SELECT snowflake_nextval()');
isnt($ret, 0, 'in wait mode snowflake_nextval() fails behind a poisoned future');
like($err, qr/HINT:  Set snowflake.on_clock_behind = 'ride' and reload/,
	'the HINT names riding it out');
unlike($err, qr/Correct the system clock/i, 'the HINT does not ask to correct the clock');
$node->safe_psql('postgres',
	"ALTER SYSTEM SET snowflake.on_clock_behind = 'ride'; SELECT pg_reload_conf()");
$node->poll_query_until('postgres',
	"SELECT current_setting('snowflake.on_clock_behind') = 'ride'");
for my $i (1 .. 3)
{
	$r = insert('riding it out');
	cmp_ok($r, '>', 29 * $day, 'riding it out issues IDs above the poisoned future');
}
cmp_ok(status('drift_ms'), '>', 29 * $day * 1000, 'drift_ms says how far the IDs run ahead');

SnowflakeClock::check_ids(\@ids, $node);

$node->stop;
done_testing();
