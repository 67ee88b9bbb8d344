# Forward steps across a clean restart and a promotion, and a standby that
# observes its clock (libfaketime, boot time not faked,
# snowflake.clock_step_confirmation = 5 min so that no step is accepted).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeClock;

my $day = 86400;
my $primary = SnowflakeClock::new_node(
	'primary',
	'snowflake.clock_step_confirmation' => '5min',
	wal_level => 'replica',
	max_wal_senders => 4);
my @ids;

sub insert { return SnowflakeClock::insert($_[0], \@ids, $_[1]) }
sub status { return SnowflakeClock::status(@_) }

insert($primary, 'before');

# --- a clean restart during a pending step ----------------------------------------
SnowflakeClock::set_offset($primary, 30 * $day);
SnowflakeClock::wait_status($primary, 'clock_step_pending_ms IS NOT NULL', 'the step was not seen');
cmp_ok(abs(insert($primary, 'pending')), '<', 60, 'a pending step is not followed');
SnowflakeClock::restart($primary);
ok(-e $primary->data_dir . '/snowflake.clock', 'the clean shutdown recorded the clock');
isnt(status($primary, 'clock_step_pending_ms'), '',
	'after a clean restart the step is still pending');
cmp_ok(abs(insert($primary, 'after the restart')), '<', 60,
	'after a clean restart IDs keep to the true time');
SnowflakeClock::set_offset($primary, 0);
cmp_ok(abs(insert($primary, 'corrected')), '<', 60, 'the correction costs nothing');
is(status($primary, 'clock_step_pending_ms IS NULL'), 't', 'no step pending');

# --- a standby observes its clock --------------------------------------------------
$primary->backup('b');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'b', has_streaming => 1);
SnowflakeClock::start($standby, 0);
$primary->wait_for_catchup($standby);
SnowflakeClock::refork_reservation_worker($standby);
is(status($standby, 'clock_steps_back'), '0', 'the standby saw no step yet');
my $log_at = -s $standby->logfile;
SnowflakeClock::set_offset($standby, -600);
SnowflakeClock::wait_status($standby, 'clock_steps_back = 1', 'no step back counted');
cmp_ok(abs(status($standby, 'largest_step_back_ms') - 600000), '<', 5000,
	'the standby counts its 600 s step back before promotion');
like(slurp_file($standby->logfile, $log_at),
	qr/LOG:  snowflake: the system clock stepped back by (?:59|60)\d{4} ms/,
	'and logs it');

# Back to the true time (accepted at once: the clock returns to where it
# was before its step back), then 30 days ahead, pending at promotion.
SnowflakeClock::set_offset($standby, 0);
SnowflakeClock::set_offset($standby, 30 * $day);
SnowflakeClock::wait_status($standby, 'clock_step_pending_ms IS NOT NULL', 'no forward step seen');
$primary->stop;
$standby->promote;
$standby->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()');
is(status($standby, 'clock_steps_back'), '1', 'after promotion the step back is still counted');
cmp_ok(abs(insert($standby, 'promoted')), '<', 60,
	'the promoted server keeps to the true time during the pending step');

SnowflakeClock::check_ids(\@ids);
$standby->stop;
done_testing();
