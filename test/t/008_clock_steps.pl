# Clock steps back of 5 ms, 1 s and 1 h, and set right, while three
# sessions insert rows and a probe fetches IDs (max_drift 500 ms,
# clock_wait_timeout 1 s): 5 ms is absorbed without a wait, 1 s makes the
# sessions wait and go on, 1 h makes every call fail with 55000 and the
# documented message.  Proves: no ID occurs twice, IDs strictly increase per
# session, none lies beyond max_drift ahead of its issuer's clock, and
# snowflake_status() counts the steps back and the largest one.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeTest;
use Time::HiRes qw(time sleep);
use SnowflakeClock;

my $sessions = 3;
my $max_drift_ms = 500;
my $wait_timeout_ms = 1000;

# IDs the probe session saw, in the order it saw them.
my @probe_ids;

my $node = SnowflakeTest::new_node(
	'steps',
	settings => { 'snowflake.max_drift' => $max_drift_ms, timezone => 'UTC' },
	start => 0);
SnowflakeClock::start($node, 0);
# The worker that counts clock steps must see the faked clock.
SnowflakeClock::refork_reservation_worker($node);

# Columns are filled in attribute order: the clock at the ID's issue lies
# between c_before and c_after, unless it stepped in between.
$node->safe_psql(
	'postgres', q{
CREATE EXTENSION snowflake;
CREATE TABLE ids (
    c_before timestamptz NOT NULL,
    id       bigint PRIMARY KEY DEFAULT snowflake_nextval(),
    c_after  timestamptz NOT NULL DEFAULT clock_timestamp(),
    session  integer NOT NULL,
    n        integer NOT NULL,
    phase    text NOT NULL
);
CREATE TABLE control (stop boolean NOT NULL, phase text NOT NULL);
INSERT INTO control VALUES (false, 'steady');
CREATE TABLE errors (
    session  integer,
    phase    text,
    sqlstate text,
    message  text,
    detail   text,
    hint     text
);
-- Inserts rows one at a time, numbered in call order, each committed,
-- until told to stop; records errors instead of ending.  It reads the phase
-- from "control" before each row.  No pauses: pg_sleep() counts on the wall
-- clock, so a step back would stretch the pause rather than reach
-- snowflake_nextval() (and a step back of 1 h would make it sleep an hour).
CREATE PROCEDURE generate(s integer) LANGUAGE plpgsql AS $$
DECLARE
    done integer := 0;
    halt boolean;
    ph   text;
    st   text;
    msg  text;
    det  text;
    hnt  text;
BEGIN
    LOOP
        SELECT stop, phase INTO halt, ph FROM control;
        EXIT WHEN halt;
        BEGIN
            INSERT INTO ids (c_before, session, n, phase)
            VALUES (clock_timestamp(), s, done + 1, ph);
            done := done + 1;
        EXCEPTION WHEN OTHERS THEN
            GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT,
                                    det = PG_EXCEPTION_DETAIL, hnt = PG_EXCEPTION_HINT;
            -- The phase when the call failed: it may have waited into the next.
            SELECT phase INTO ph FROM control;
            INSERT INTO errors VALUES (s, ph, st, msg, det, hnt);
        END;
        COMMIT;
    END LOOP;
END $$;
});

is( $node->safe_psql(
		'postgres',
		'SELECT clock_steps_back, largest_step_back_ms FROM snowflake_status()'),
	'0|0',
	'no clock step counted at the start');

# Starts the generating sessions: one psql each, output to files, so no pipe
# needs pumping while the test sleeps.
my $dir = PostgreSQL::Test::Utils::tempdir();
my @runs = map {
	SnowflakeTest::start_psql($node, $dir, "gen_$_", '-c',
		"SET snowflake.clock_wait_timeout = $wait_timeout_ms", '-c', "CALL generate($_)")
} 1 .. $sessions;

# The probe: one session that fetches IDs to the client, and reports errors
# with their SQLSTATE.
my $probe = $node->background_psql('postgres', on_error_stop => 0);
$probe->set_query_timer_restart;
$probe->query_safe('\set VERBOSITY verbose');
$probe->query_safe("SET snowflake.clock_wait_timeout = $wait_timeout_ms");

sub set_phase
{
	my ($phase) = @_;
	$node->safe_psql('postgres', "UPDATE control SET phase = '$phase'");
	return;
}

# Fetches 2000 IDs to the probe, each with a verdict on how far ahead of
# the probe's clock it was issued (clock read just before and just after the
# ID; "stepped" if the clock went back in between).  Returns the verdicts
# that are neither "honest" nor "stepped".
sub probe_ids
{
	my ($what) = @_;
	my $limit = $max_drift_ms + 1;
	my ($out, $failed) = $probe->query(
		qq{
WITH g AS MATERIALIZED (
    SELECT clock_timestamp() AS b, snowflake_nextval() AS id,
           clock_timestamp() AS a
      FROM generate_series(1, 2000))
SELECT g.id,
       CASE WHEN g.a < g.b THEN 'stepped'
            WHEN d.ts - g.a < interval '$limit ms' THEN 'honest'
            ELSE 'ahead by ' || (d.ts - g.a) END
  FROM g, snowflake_decode(g.id) AS d});
	is(without_forward_step($probe->{stderr}), '', "$what: the probe fetched IDs without error")
	  or diag $probe->{stderr};
	$probe->{stderr} = '';
	my @bad;
	for my $line (split /\n/, $out)
	{
		my ($id, $verdict) = split /\|/, $line;
		push @probe_ids, $id;
		push @bad, "$id $verdict" if $verdict ne 'honest' && $verdict ne 'stepped';
	}
	return @bad;
}

# What a session's stderr holds besides the WARNING of a forward step: the
# clock set right after the step back is one, and the session that sees it
# first gets its WARNING (with DETAIL and HINT), which is no failure.
sub without_forward_step
{
	my ($err) = @_;
	$err =~ s/^WARNING:  (?:\d{5}: )?snowflake: the system clock stepped forward by \d+ ms\n(?:DETAIL:  .*\n)?(?:HINT:  .*\n)?(?:LOCATION:  .*\n)?//mg;
	return $err;
}

# Gives up on a session whose psql reported an error.
sub sessions_failed
{
	for my $s (1 .. $sessions)
	{
		my $err = without_forward_step(slurp_file("$dir/gen_$s.err"));
		if ($err ne '')
		{
			diag "session $s failed: $err";
			return 1;
		}
	}
	return 0;
}

# Waits until $condition (SQL, one boolean) holds, while the sessions run,
# for at most $timeout seconds (default: the framework's).
sub wait_for
{
	my ($condition, $timeout) = @_;
	my $deadline = time() + ($timeout // $PostgreSQL::Test::Utils::timeout_default);
	while (time() < $deadline && !sessions_failed())
	{
		return 1 if $node->safe_psql('postgres', "SELECT $condition") eq 't';
		sleep 0.1;
	}
	return 0;
}

# Waits until every session has inserted another 100 rows or more.
sub wait_progress
{
	my $marks = $node->safe_psql(
		'postgres', q{
SELECT coalesce(string_agg(session || ',' || n, ';'), '')
  FROM (SELECT session, max(n) AS n FROM ids GROUP BY session) AS m});
	my %n = map { split /,/ } split /;/, $marks;
	my $behind = join(' OR ',
		map { "coalesce(max(n) FILTER (WHERE session = $_), 0) < "
			  . (($n{$_} // 0) + 100) } 1 .. $sessions);
	return wait_for("NOT ($behind) FROM ids");
}

# --- steady, then 5 ms back -------------------------------------------------
ok(wait_progress(), 'all sessions generate before any step');
is(join(',', probe_ids('steady')), '', 'steady: no probed ID ran ahead');

sub overflow_waits
{
	return $node->safe_psql('postgres',
		'SELECT overflow_waits FROM snowflake_status()');
}

my $waits = overflow_waits();
set_phase('back 5 ms');
SnowflakeClock::set_offset($node, -0.005);
ok(wait_progress(), 'after a 5 ms step back, all sessions generate');
ok(wait_for('clock_steps_back >= 1 FROM snowflake_status()'),
	'the 5 ms step back is counted');
is(join(',', probe_ids('back 5 ms')), '', 'back 5 ms: no probed ID ran ahead');
is(overflow_waits(), $waits, 'the 5 ms step is absorbed without a wait');
$waits = overflow_waits();

# --- 1 s back ------------------------------------------------------------------
set_phase('back 1 s');
SnowflakeClock::set_offset($node, -1.005);
ok(wait_progress(), 'after a 1 s step back, all sessions generate');
is(join(',', probe_ids('back 1 s')), '', 'back 1 s: no probed ID ran ahead');
cmp_ok(overflow_waits(), '>=', $waits + $sessions,
	'the 1 s step made the sessions wait for the clock');
is($node->safe_psql('postgres', 'SELECT count(*) FROM errors'),
	'0', 'the 5 ms and 1 s steps caused no error');

# --- 1 h back ------------------------------------------------------------------
set_phase('back 1 h');
my $back_at = time();
SnowflakeClock::set_offset($node, -3601.005, 1);

# The probe's next ID follows its last one; the error names how far that
# lies ahead of the clock (1 h less the time since the last probe).
my $last_probe_ms = $node->safe_psql('postgres',
	'SELECT (extract(epoch FROM ts) * 1000)::bigint FROM snowflake_decode('
	  . $probe_ids[-1] . ')');
my $started = time();
my ($out, $failed) = $probe->query('SELECT snowflake_nextval()');
my $ended = time();
my $elapsed = $ended - $started;
my $stderr = $probe->{stderr};
$probe->{stderr} = '';
is($out, '', 'clock 1 h back: the probe got no ID');
like(
	$stderr,
	qr/\bERROR:  55000: system clock is (\d+) ms behind the next snowflake ID$/m,
	'clock 1 h back: SQLSTATE 55000 and the documented message');
my ($behind) = $stderr =~ /system clock is (\d+) ms behind/;
# The call read the clock between $started and $ended.
my $expected_gap = $last_probe_ms + 1 - int($ended * 1000 - 3_601_005);
ok( defined $behind
	  && $behind >= $expected_gap - 500
	  && $behind <= $expected_gap + 1000 * $elapsed + 500,
	"clock 1 h back: the message names the gap ($expected_gap ms expected)")
  or diag "gap: " . ($behind // 'none');
like(
	$stderr,
	qr/^DETAIL:  \Qsnowflake_nextval() waited $wait_timeout_ms ms (snowflake.clock_wait_timeout) for the clock to come within snowflake.max_drift ($max_drift_ms ms) of it; earlier IDs were issued under a clock that was ahead, or the clock stepped back.\E$/m,
	'clock 1 h back: the DETAIL names the wait and max_drift');
like(
	$stderr,
	qr/^HINT:  \QSet snowflake.on_clock_behind = 'ride' and reload to issue IDs above the newest one without waiting (see "A poisoned future" in the snowflake documentation), or wait until the clock reaches them; raising snowflake.clock_wait_timeout bridges a short gap only.\E$/m,
	'clock 1 h back: the HINT');
# The upper bound only tells a bounded wait from an endless one: 30 s is
# 30 times the wait.
ok( $elapsed >= $wait_timeout_ms / 1000 - 0.1 && $elapsed < 30,
	sprintf('clock 1 h back: the call failed after the bounded wait (%.2f s)',
		$elapsed));

ok( wait_for(
		"count(DISTINCT session) = $sessions FROM errors WHERE phase = 'back 1 h'"),
	'clock 1 h back: every generating session hits the error');

# --- the clock is set right again ------------------------------------------------
set_phase('restoring');
SnowflakeClock::set_offset($node, 0);
my $back_for_ms = int((time() - $back_at) * 1000);
set_phase('restored');
ok( wait_for(
		"count(DISTINCT session) = $sessions FROM ids WHERE phase = 'restored'"),
	'clock set right: all sessions generate again');
ok(wait_progress(), 'and go on generating');
is(join(',', probe_ids('restored')), '', 'restored: no probed ID ran ahead');

$node->safe_psql('postgres', 'UPDATE control SET stop = true');
for my $s (1 .. $sessions)
{
	ok($runs[ $s - 1 ]->finish, "session $s ran to the end")
	  or diag slurp_file("$dir/gen_$s.err");
}

# --- what the test saw -------------------------------------------------------------
my %errors = map { split /\|/, $_, 2 } split /\n/,
  $node->safe_psql(
	'postgres', q{
SELECT phase, count(*) FROM errors GROUP BY phase ORDER BY phase});
note "errors per phase: " . join(', ', map { "$_ $errors{$_}" } sort keys %errors);
is( join(',', grep { $_ ne 'back 1 h' && $_ ne 'restoring' } sort keys %errors),
	'', 'errors happened only while the clock was 1 h back');
is( $node->safe_psql(
		'postgres', qq{
SELECT count(*) FROM errors
 WHERE sqlstate <> '55000'
    OR message !~ '^system clock is [0-9]+ ms behind the next snowflake ID\$'
    OR detail <> 'snowflake_nextval() waited $wait_timeout_ms ms (snowflake.clock_wait_timeout) for the clock to come within snowflake.max_drift ($max_drift_ms ms) of it; earlier IDs were issued under a clock that was ahead, or the clock stepped back.'
    OR hint <> 'Set snowflake.on_clock_behind = ''ride'' and reload to issue IDs above the newest one without waiting (see "A poisoned future" in the snowflake documentation), or wait until the clock reaches them; raising snowflake.clock_wait_timeout bridges a short gap only.'}
	),
	'0',
	'every error in the sessions is the documented one');
# Each names how far the session's next ID lies ahead of the clock: the
# step, plus at most max_drift, less the time since the session's last ID
# (a session the machine starved may have issued it well before the step).
my $lowest_gap = 3_601_005 - $back_for_ms - $max_drift_ms;
my $highest_gap = 3_601_005 + $max_drift_ms;
my $back_at_ms = int($back_at * 1000);
is( $node->safe_psql(
		'postgres', qq{
SELECT count(*)
  FROM errors
  JOIN (SELECT session,
               (extract(epoch FROM max(snowflake_timestamp(id))) * 1000)::bigint AS last_ms
          FROM ids WHERE phase NOT IN ('restoring', 'restored')
         GROUP BY session) AS last USING (session)
 WHERE substring(message from '([0-9]+) ms')::bigint
       NOT BETWEEN $lowest_gap - greatest(0, $back_at_ms - last_ms) AND $highest_gap}),
	'0',
	"every error names a gap of about an hour ($lowest_gap to $highest_gap ms)");

my $seen = join(',', @probe_ids);
is( $node->safe_psql(
		'postgres', qq{
SELECT count(*) - count(DISTINCT id)
  FROM (SELECT id FROM ids
        UNION ALL SELECT unnest('{$seen}'::bigint[])) AS s}),
	'0',
	'no ID occurs twice among ' . (scalar(@probe_ids) + 0) . ' probed IDs and the rows');

is(SnowflakeTest::out_of_order($node, 'ids'),
	'0',
	'within each session, IDs strictly increase in insertion order');
my @sorted = sort { $a <=> $b } @probe_ids;
is_deeply(\@probe_ids, \@sorted, 'the probe saw strictly increasing IDs');

is( $node->safe_psql(
		'postgres', q{
SELECT (SELECT min(id) FROM ids WHERE phase = 'restored')
       > (SELECT max(id) FROM ids WHERE phase NOT IN ('restoring', 'restored'))}),
	't',
	'IDs issued after the clock was set right lie above all IDs from before');

my $limit = $max_drift_ms + 1;
my ($stepped, $ahead) = split /\|/,
  $node->safe_psql(
	'postgres', qq{
SELECT count(*) FILTER (WHERE c_after < c_before),
       count(*) FILTER (WHERE c_after >= c_before
                          AND d.ts - c_after >= interval '$limit ms')
  FROM ids, snowflake_decode(id) AS d});
note "$stepped rows saw a step back while issued; they are not judged";
is($ahead, '0',
	"no committed ID ran more than max_drift ($max_drift_ms ms) ahead of the clock");
note 'rows per phase: ' . $node->safe_psql('postgres',
	q{SELECT string_agg(phase || ' ' || n, ', ') FROM
	  (SELECT phase, count(*) AS n FROM ids GROUP BY phase) AS p});

my ($steps, $largest) = split /\|/,
  $node->safe_psql('postgres',
	'SELECT clock_steps_back, largest_step_back_ms FROM snowflake_status()');
cmp_ok($steps, '>=', 3, 'snowflake_status() counted the three steps back');
cmp_ok($largest, '>=', 3_599_000,
	'snowflake_status() reports the 1 h step as the largest');
cmp_ok($largest, '<=', 3_601_000, 'and not more than the 1 h step');

$probe->quit;
$node->stop;
done_testing();
