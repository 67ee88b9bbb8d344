# A standby whose layout ends before its primary's (an epoch earlier, a
# provable successor).  31 timestamp bits: the standby's layout ends 75 s
# after the start, the primary's two days later; with reserve_ahead = 4s a
# record comes about every 2 s.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use POSIX qw(strftime);
use Time::HiRes qw(time usleep);
use SnowflakeStandby;

sub epoch_text
{
	my ($ms) = @_;
	return strftime('%Y-%m-%d %H:%M:%S', gmtime(int($ms / 1000)))
	  . sprintf('.%03d+00', $ms % 1000);
}

my $now_ms = int(time() * 1000);
my $standby_epoch_ms = $now_ms - 2**31 + 75_000;
my $standby_last_ms = $standby_epoch_ms + 2**31 - 1;
my %layout = (
	'snowflake.node_bits' => 3,
	'snowflake.worker_bits' => 7,
	'snowflake.sequence_bits' => 22);

my ($primary, $standby) = SnowflakeStandby::primary_with_standbys(
	settings => {
		%layout,
		'snowflake.epoch' => epoch_text($standby_epoch_ms + 2 * 86_400_000),
		'snowflake.reserve_ahead' => '4s',
		timezone => 'UTC'
	},
	start_standbys => 0);
$standby->append_conf('postgresql.conf',
	"snowflake.epoch = '" . epoch_text($standby_epoch_ms) . "'\n");
$standby->start;

my $reserved_ms =
  'SELECT (extract(epoch FROM reserved_until) * 1000)::bigint FROM snowflake_status()';
my $warning = qr/WARNING:  snowflake reservation record lies beyond the end of the running layout/;

# The primary generates until its reservation lies past the standby's
# end, and on for two more records.
my ($first_past, $count) = (undef, 0);
my $deadline = time() + 120;
while (time() < $deadline)
{
	$primary->safe_psql('postgres', 'SELECT snowflake_nextval()');
	(my $reserved, $count) = split /\|/, $primary->safe_psql('postgres',
		q{SELECT (extract(epoch FROM reserved_until) * 1000)::bigint || '|' || reservations
		    FROM snowflake_status()});
	$first_past //= $count if $reserved > $standby_last_ms;
	last if defined $first_past && $count >= $first_past + 2;
	usleep(100_000);
}
ok(defined $first_past, "the primary reserves past the standby's layout's end");
cmp_ok($count, '>=', ($first_past // 0) + 2, 'in three records at least');
$primary->wait_for_catchup($standby, 'replay', $primary->lsn('insert'));
is($standby->safe_psql('postgres', $reserved_ms), $standby_last_ms,
	"the standby's reservation is its layout's last millisecond");
my @warnings = slurp_file($standby->logfile) =~ /$warning/g;
is(scalar @warnings, 1, 'three records past the end: one WARNING');
like(slurp_file($standby->logfile),
	qr/$warning\n.*DETAIL:  The record reserves up to \d+ \(Unix ms\); the last millisecond of the running layout is $standby_last_ms, which is replayed instead; later such records are lowered the same way, without a message, until the next start\.\n.*HINT:  Give this server the primary's snowflake.\* layout settings, and run the same snowflake version on both\./,
	'the DETAIL gives the last millisecond and says later records are lowered too; the HINT names the fix');

$standby->stop;
$primary->stop;
done_testing();
