# A clean restart with the clock 1 h back.  The reservation survives it:
# reserved_until is exactly the newest earlier ID's timestamp, and under
# max_drift = 2h IDs continue at once above every earlier one; the gap is
# logged once at LOG level, not as a WARNING (045 has the crash restart,
# which warns).  (The first run keeps the default max_drift: a data
# directory without a reservation starts its IDs max_drift ahead.)  Then,
# restarted with max_drift 1 s and clock_wait_timeout 2 s, snowflake_nextval()
# waits 2 s and fails with 55000, after a WARNING with its HINT; once the
# clock is right again, IDs lie above all earlier ones, honest to the clock.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use SnowflakeClock;
use SnowflakeStandby;
use SnowflakeTest;

my $hour_ms = 3_600_000;

my $node = SnowflakeTest::new_node('restart', settings => { timezone => 'UTC' }, start => 0);
SnowflakeClock::start($node, 0);
$node->safe_psql(
	'postgres', q{
CREATE EXTENSION snowflake;
CREATE TABLE ids (
    id    bigint PRIMARY KEY DEFAULT snowflake_nextval(),
    phase text NOT NULL
)});

# IDs returned to the client, per phase.
my %returned;

# Issues IDs in two sessions: rows committed to "ids", and IDs returned to
# the client.  Returns the stderr of the first session.
sub generate
{
	my ($phase) = @_;
	my $sql = "INSERT INTO ids (phase) SELECT '$phase' FROM generate_series(1, 20000);"
	  . 'SELECT snowflake_nextval() FROM generate_series(1, 1000)';
	my ($out, $err);
	$node->psql('postgres', $sql, stdout => \$out, stderr => \$err, on_error_die => 1);
	push @{ $returned{$phase} }, split(/\n/, $out), split(/\n/, $node->safe_psql('postgres', $sql));
	return $err;
}

# The largest and the smallest ID of a phase, rows and returned IDs alike.
sub bounds
{
	my ($phase) = @_;
	my $ids = join(',', @{ $returned{$phase} });
	return split /\|/,
	  $node->safe_psql(
		'postgres', qq{
SELECT max(id), min(id)
  FROM (SELECT id FROM ids WHERE phase = '$phase'
        UNION ALL SELECT unnest('{$ids}'::bigint[])) AS s});
}

# The Unix time in ms of the timestamp $expr, by the server.
sub unix_ms_sql
{
	my ($expr) = @_;
	return $node->safe_psql('postgres',
		"SELECT (extract(epoch FROM $expr) * 1000)::bigint");
}

# The gap named in the messages of the log since $offset at $level (WARNING
# or LOG).
sub gap_messages
{
	my ($offset, $level) = @_;
	my @gaps = slurp_file($node->logfile, $offset)
	  =~ /$level:  system clock is (\d+) ms behind the snowflake reservation/g;
	return @gaps;
}

# --- before: clock right, max_drift 1000 ms ----------------------------------------
generate('before');
my ($max_before) = bounds('before');
my $max_before_ms = unix_ms_sql("(snowflake_decode($max_before)).ts");
cmp_ok($node->safe_psql('postgres', 'SELECT reservations FROM snowflake_status()'),
	'>', 0, 'reservations were written while generating');
my $reserved_before_ms = unix_ms_sql('(SELECT reserved_until FROM snowflake_status())');
cmp_ok($reserved_before_ms, '>=', $max_before_ms,
	'the reservation covers the IDs issued');

$node->stop;
$node->append_conf('postgresql.conf', "snowflake.max_drift = '2h'\n");
my $file = slurp_file($node->data_dir . '/snowflake.reservation');
like($file, qr/^\d+\n$/, 'snowflake.reservation holds a Unix time in ms');
cmp_ok($file + 0, '>=', $max_before_ms,
	'snowflake.reservation covers every ID issued before the stop');

# --- restart with the clock 1 h back, max_drift 2 h ------------------------------
my $log_offset = -s $node->logfile;
SnowflakeStandby::start_behind($node, 3600, 1, 'the server clock is 1 h back');

my $reserved_ms = unix_ms_sql('(SELECT reserved_until FROM snowflake_status())');
is($reserved_ms, $max_before_ms,
	'after the clean restart, reserved_until is the timestamp of the newest earlier ID');
cmp_ok($reserved_ms, '>=', $file + 0,
	'after the restart, reserved_until is the one of the file');
is(scalar(gap_messages($log_offset, 'WARNING')) + scalar(gap_messages($log_offset, 'LOG')),
	0, 'no message about the gap before the first generation');

my $first_call = time();
my $first_err = generate('after');
my $first_done = time();
unlike($first_err, qr/system clock is \d+ ms behind the snowflake reservation/,
	'within max_drift after a clean shutdown, the session is not warned');
generate('after');
is(scalar(gap_messages($log_offset, 'WARNING')), 0, 'the log has no WARNING about the gap');
my @gaps = gap_messages($log_offset, 'LOG');
is(scalar(@gaps), 1, 'the log has the gap once at LOG level, for four sessions');
# The gap: from the clock, 1 h back, to the end of the reservation, read
# by the first call somewhere between its start and its end.
my $longest_gap = $reserved_ms - int($first_call * 1000 - $hour_ms);
my $shortest_gap = $reserved_ms - int($first_done * 1000 - $hour_ms);
ok( @gaps && $gaps[0] <= $longest_gap + 1000 && $gaps[0] >= $shortest_gap - 1000,
	"the LOG line names the gap, about an hour ($shortest_gap to $longest_gap ms expected)")
  or diag "gaps: @gaps";
like(
	slurp_file($node->logfile, $log_offset),
	qr/LOG:  system clock is \d+ ms behind the snowflake reservation\n[^\n]*DETAIL:  IDs continue above the reservation, which ends at [^\n]*\n(?![^\n]*HINT:  )/,
	'the LOG line has its DETAIL, and no HINT');

my ($max_after, $min_after) = bounds('after');
cmp_ok($min_after, '>', $max_before,
	'with the clock 1 h back, new IDs lie above every earlier ID');
my $ahead_ms = unix_ms_sql(
	"(snowflake_decode($max_after)).ts - clock_timestamp()");
ok( $ahead_ms > $hour_ms - 60_000 && $ahead_ms <= 2 * $hour_ms,
	"the new IDs run about 1 h ahead of the clock, within max_drift ($ahead_ms ms)");
$max_before = $max_after;

# --- bounded wait: max_drift 1000 ms, clock still 1 h back -------------------------
$node->stop;
$node->append_conf(
	'postgresql.conf', q(
snowflake.max_drift = 1000
snowflake.clock_wait_timeout = 2000
));
$log_offset = -s $node->logfile;
SnowflakeClock::start($node, -3600);

my $started = time();
my ($rc, $stdout, $stderr) = SnowflakeStandby::nextval_verbose($node);
my $elapsed = time() - $started;
isnt($rc, 0, 'clock 1 h back, max_drift 1 s: snowflake_nextval() fails');
is($stdout, '', 'no ID is issued');
ok( $elapsed >= 1.9 && $elapsed < 30,
	sprintf('it fails after the bounded wait of about 2 s (%.2f s)', $elapsed));
like(
	$stderr,
	qr/\bERROR:  55000: system clock is (\d+) ms behind the next snowflake ID$/m,
	'SQLSTATE 55000 and the documented message');
my ($behind) = $stderr =~ /system clock is (\d+) ms behind the next/;
ok( defined $behind && $behind > $hour_ms - 60_000 && $behind <= $hour_ms + 5_000,
	'the message names a gap of about an hour')
  or diag "gap: " . ($behind // 'none');
like(
	$stderr,
	qr/^DETAIL:  \Qsnowflake_nextval() waited 2000 ms (snowflake.clock_wait_timeout) for the clock to come within snowflake.max_drift (1000 ms) of it; earlier IDs were issued under a clock that was ahead, or the clock stepped back.\E$/m,
	'the DETAIL names the wait and max_drift in force');
like(
	$stderr,
	qr/^HINT:  \QSet snowflake.on_clock_behind = 'ride' and reload to issue IDs above the newest one without waiting (see "A poisoned future" in the snowflake documentation), or wait until the clock reaches them; raising snowflake.clock_wait_timeout bridges a short gap only.\E$/m,
	'the HINT');
like(
	$stderr,
	qr/WARNING:  01000: system clock is \d+ ms behind the snowflake reservation/,
	'the session was warned about the gap first');
like(
	slurp_file($node->logfile, $log_offset),
	qr/WARNING:  system clock is \d+ ms behind the snowflake reservation\n[^\n]*DETAIL:  [^\n]*\n[^\n]*HINT:  \Qsnowflake_nextval() waits up to snowflake.clock_wait_timeout for the clock to come within snowflake.max_drift of them; to issue IDs without waiting, set snowflake.on_clock_behind = 'ride' and reload.\E\n/,
	'after a clean restart, a gap beyond max_drift is a WARNING that hints at the wait');

# --- the clock is set right again ----------------------------------------------------
SnowflakeClock::set_offset($node, 0);
generate('restored');
my ($max_restored, $min_restored) = bounds('restored');
cmp_ok($min_restored, '>', $max_before,
	'with the clock right again, IDs lie above every earlier ID');
my $honest = $node->safe_psql(
	'postgres', q{
SELECT bool_and(d.ts - q.a < interval '1001 ms')
  FROM (SELECT snowflake_nextval() AS id, clock_timestamp() AS a
          FROM generate_series(1, 1000)) AS q,
       snowflake_decode(q.id) AS d});
is($honest, 't', 'and no ID runs more than max_drift ahead of the clock');
is(scalar(gap_messages($log_offset, 'WARNING')), 1,
	'one WARNING for this server start as well');
is(scalar(gap_messages($log_offset, 'LOG')), 0, 'and no LOG line for it');
my $returned = join(',', map { @$_ } values %returned);
is( $node->safe_psql(
		'postgres', qq{
SELECT count(*) - count(DISTINCT id)
  FROM (SELECT id FROM ids UNION ALL SELECT unnest('{$returned}'::bigint[])) AS s}),
	'0', 'no ID occurs twice among all rows and the IDs returned to the client');

$node->stop;
done_testing();
