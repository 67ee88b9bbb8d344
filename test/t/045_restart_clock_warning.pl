# The clock-behind message after a restart is a WARNING only when it matters.
# With sequence_bits = 1, two million IDs run about 17 minutes ahead,
# whatever the machine's speed; the test checks the gap.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;

my $node = SnowflakeTest::new_node(
	'restart_warning',
	settings => {
		timezone => 'UTC',
		'snowflake.sequence_bits' => 1,
		'snowflake.max_drift' => '24h',
		'snowflake.reserve_ahead' => '60s'
	},
	extension => 'postgres');

my $message = qr/system clock is (\d+) ms behind the snowflake reservation/;

sub unix_ms
{
	my ($expr) = @_;
	return $node->safe_psql('postgres', "SELECT (extract(epoch FROM $expr) * 1000)::bigint");
}

# Two million IDs in one statement; returns the largest, how far (ms) it
# lies ahead of the clock, and its timestamp as the server prints it.
sub burst
{
	my $newest = $node->safe_psql('postgres',
		'SELECT max(snowflake_nextval()) FROM generate_series(1, 2000000)');
	my ($ahead, $ts_text) = split /\|/, $node->safe_psql('postgres',
		qq{
SELECT (extract(epoch FROM (snowflake_decode($newest)).ts - clock_timestamp()) * 1000)::bigint,
       (snowflake_decode($newest)).ts});
	return ($newest, $ahead, $ts_text);
}

# The first generation after a start, in a session of its own: the clock
# (Unix ms) just before and after it, the ID, and psql's stderr.
sub first_call
{
	my (%params) = @_;
	my ($out, $err);
	$node->psql(
		'postgres', q{
\set VERBOSITY verbose
SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint;
} . ($params{before} // '') . q{
SELECT snowflake_nextval(), (extract(epoch FROM clock_timestamp()) * 1000)::bigint;
},
		stdout => \$out,
		stderr => \$err,
		on_error_die => !$params{may_fail});
	my ($before, $row) = split /\n/, $out;
	my ($id, $after) = split /\|/, ($row // '');
	return ($before, $id // '', $after, $err);
}

# --- a clean restart right after two million IDs ---------------------------------------
my ($newest, $ahead, $ts_text) = burst();
cmp_ok($ahead, '>', 60_000,
	"two million IDs ran more than a minute ahead of the clock ($ahead ms)");
my $newest_ms = unix_ms("(snowflake_decode($newest)).ts");

$node->stop('fast');
is(slurp_file($node->data_dir . '/snowflake.reservation'), "$newest_ms\n",
	'the clean shutdown recorded the newest ID as the reservation');
my $offset = -s $node->logfile;
$node->start;
my ($before, $first, $after, $stderr) = first_call();
cmp_ok($after, '<', $newest_ms,
	'after the clean restart, the clock was still behind the newest ID');
cmp_ok($first, '>', $newest, 'the first ID lies above every earlier one');

my $log = slurp_file($node->logfile, $offset);
unlike($log, qr/WARNING:  $message/,
	'a clean restart within max_drift logs no clock WARNING');
my @gaps = $log =~ /LOG:  $message/g;
is(scalar(@gaps), 1, 'it logs the gap once, at LOG level');
ok( @gaps
	  && $gaps[0] >= $newest_ms - $after - 1
	  && $gaps[0] <= $newest_ms - $before + 1,
	'with the gap between the newest ID and the clock at the call ('
	  . ($newest_ms - $after) . ' to '
	  . ($newest_ms - $before) . ' ms)')
  or diag "gaps: @gaps";
like(
	$log,
	qr/LOG:  $message\n[^\n]*DETAIL:  \QIDs continue above the reservation, which ends at $ts_text.\E\n/,
	'and its DETAIL names the newest ID\'s timestamp');
unlike($log, qr/LOG:  $message\n[^\n]*DETAIL:  [^\n]*\n[^\n]*HINT:  /,
	'without a HINT: nothing waits');
unlike($stderr, $message, 'the session is not told');

# --- a crash (immediate shutdown) right after two million IDs ------------------------
($newest, $ahead) = burst();
cmp_ok($ahead, '>', 60_000, "again the IDs ran ahead of the clock ($ahead ms)");
$newest_ms = unix_ms("(snowflake_decode($newest)).ts");
$node->stop('immediate');
$offset = -s $node->logfile;
$node->start;
($before, $first, $after, $stderr) = first_call();
cmp_ok($after, '<', $newest_ms,
	'after the crash restart, the clock was behind the newest ID');
cmp_ok($first, '>', $newest, 'the first ID lies above every earlier one');
$log = slurp_file($node->logfile, $offset);
like($log, qr/database system was not properly shut down/,
	'the start was a crash recovery');
@gaps = $log =~ /WARNING:  $message/g;
is(scalar(@gaps), 1, 'after a crash, the gap is a WARNING, once');
ok(@gaps && $gaps[0] >= $newest_ms - $after - 1,
	'naming at least the gap to the newest ID') or diag "gaps: @gaps";
unlike($log, qr/LOG:  $message/, 'and not a LOG line');
like(
	$stderr,
	qr/\bWARNING:  01000: $message\nDETAIL:  IDs continue above the reservation, which ends at /m,
	'the session is warned (SQLSTATE 01000), with the DETAIL');
unlike($stderr, qr/HINT:/, 'within max_drift, without a HINT');

# --- a clean restart with a gap beyond max_drift -------------------------------------
$ahead = unix_ms('(snowflake_decode(' . $node->safe_psql('postgres', 'SELECT snowflake_nextval()')
	  . ')).ts - clock_timestamp()');
cmp_ok($ahead, '>', 60_000, "the newest ID lies more than a minute ahead ($ahead ms)");
$node->stop('fast');
$node->append_conf('postgresql.conf', "snowflake.max_drift = '10s'\n");
$offset = -s $node->logfile;
$node->start;
($before, $first, $after, $stderr) =
  first_call(before => 'SET snowflake.clock_wait_timeout = 0;', may_fail => 1);
is($first, '', 'beyond max_drift, with clock_wait_timeout = 0, no ID is issued');
like(
	$stderr,
	qr/\bERROR:  55000: system clock is \d+ ms behind the next snowflake ID$/m,
	'the call fails with SQLSTATE 55000');
like(
	$stderr,
	qr/\bWARNING:  01000: $message\nDETAIL:  [^\n]*\nHINT:  \Qsnowflake_nextval() waits up to snowflake.clock_wait_timeout for the clock to come within snowflake.max_drift of them; to issue IDs without waiting, set snowflake.on_clock_behind = 'ride' and reload.\E$/m,
	'after a clean restart, a gap beyond max_drift is a WARNING with its HINT');
$log = slurp_file($node->logfile, $offset);
like(
	$log,
	qr/WARNING:  $message\n[^\n]*DETAIL:  [^\n]*\n[^\n]*HINT:  \Qsnowflake_nextval() waits up to snowflake.clock_wait_timeout for the clock to come within snowflake.max_drift of them; to issue IDs without waiting, set snowflake.on_clock_behind = 'ride' and reload.\E\n/,
	'the log has the WARNING and its HINT');
unlike($log, qr/LOG:  $message/, 'and no LOG line for it');
cmp_ok(($log =~ /WARNING:  $message\n/)[0] // 0, '>', 10_000, 'the gap exceeds max_drift');

$node->stop;
done_testing();
