# More generating sessions than worker slots (worker_bits = 1, two slots):
# extra sessions attach to the least-loaded slot at once, without error or
# wait; thirteen concurrent sessions all get unique, per-session ascending
# IDs; a session taking a slot its last session left continues above its
# mark; the server notes at startup that slots are fewer than max_connections.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;

my $slot_lock_class = 1936617335;
my $concurrent = 10;    # sessions besides the three below
my $rows_per_session = 20_000;
my $start_gate = 4343;

my $node = SnowflakeTest::new_node('slots', settings => { 'snowflake.worker_bits' => 1 },
	extension => 'postgres');

# Every ID any session issues, in the order issued.
$node->safe_psql(
	'postgres', q{
CREATE TABLE issued (n bigserial, session text NOT NULL, id bigint NOT NULL)});

sub issue_one
{
	my ($name) = @_;
	return "INSERT INTO issued (session, id) VALUES ('$name', snowflake_nextval()) RETURNING id";
}

# A session that has attached to a worker slot and stays connected.
sub open_holder
{
	my ($name) = @_;
	my $session = $node->background_psql('postgres');
	$session->query_safe(issue_one($name));
	return $session;
}

# The worker id of this session's slot, from snowflake_workers.
sub held_worker_id
{
	my ($session) = @_;
	return $session->query_safe(
		'SELECT worker_id FROM snowflake_workers WHERE pid = pg_backend_pid()');
}

# Issues $count IDs in the session and records them.
sub issue_ids
{
	my ($session, $name, $count) = @_;
	my $issued = $session->query_safe(
		"WITH new AS (INSERT INTO issued (session, id) "
		  . "SELECT '$name', snowflake_nextval() FROM generate_series(1, $count) "
		  . "RETURNING id) SELECT count(*) FROM new");
	is($issued, $count, "$name issued $count IDs");
}

# slots_used|sessions_attached|slots_shared
sub slot_use
{
	return $node->safe_psql('postgres',
		'SELECT slots_used, sessions_attached, slots_shared FROM snowflake_status()');
}

# Sessions per worker id, as snowflake_workers and pg_locks show them:
# "worker:sessions:locks,..."
sub sessions_per_worker
{
	return $node->safe_psql(
		'postgres', qq{
SELECT string_agg(w.worker_id || ':' || w.sessions || ':' || coalesce(l.locks, 0),
                  ',' ORDER BY w.worker_id)
  FROM (SELECT worker_id, count(*) AS sessions FROM snowflake_workers
         GROUP BY worker_id) AS w
       LEFT JOIN (SELECT objid::int AS worker_id, count(*) AS locks FROM pg_locks
                   WHERE locktype = 'advisory' AND database = 0
                     AND classid = $slot_lock_class AND mode = 'ShareLock' AND granted
                   GROUP BY objid) AS l USING (worker_id)});
}

sub largest_id
{
	my ($name) = @_;
	return $node->safe_psql('postgres',
		"SELECT max(id) FROM issued WHERE session = '$name'");
}

# --- startup note ------------------------------------------------------------
my $max_connections = $node->safe_psql('postgres', 'SHOW max_connections');
ok( $node->log_contains(
		qr/LOG:  \Qsnowflake.worker_bits = 1 gives 2 worker slots, fewer than max_connections ($max_connections)\E\n.*DETAIL:  \QSessions beyond the slot count share slots, and with them the 4096 IDs per millisecond of a slot.\E/
	),
	'startup notes that sessions beyond the slot count share slots');
ok(!$node->log_contains(qr/WARNING:.*worker slots/),
	'and does not warn about it');

# --- a third session shares a slot at once -----------------------------------
my $holder1 = open_holder('holder1');
my $holder2 = open_holder('holder2');
is(slot_use(), '2|2|0', 'two holders take both slots, alone');
is(held_worker_id($holder1), 0, 'holder1 has worker 0');
is(held_worker_id($holder2), 1, 'holder2 has worker 1');

my (undef, $stdout, $stderr) = $node->psql('postgres',
	"\\set VERBOSITY verbose\n" . issue_one('oneshot') . ";\n", on_error_stop => 0);
like($stdout, qr/^\d{6,}$/m, 'a third session gets an ID');
is($stderr, '', 'without an error or a warning');
is( $node->safe_psql('postgres',
		'SELECT worker_id FROM snowflake_decode(' . ($stdout =~ /^(\d+)$/m ? $1 : 0) . ')'),
	0, 'under worker 0: both slots had one session, and 0 has the lower id');
ok($node->poll_query_until('postgres', 'SELECT sessions_attached = 2 FROM snowflake_status()'),
	'the one-shot session detached when it ended');

# Worker 0 was released last, so a connected third session takes worker 1.
my $third = open_holder('third');
is(held_worker_id($third), 1,
	'a connected third session shares worker 1, the less recently released');
is(slot_use(), '2|3|1', 'snowflake_status() counts three sessions, one shared slot');
is(sessions_per_worker(), '0:1:1,1:2:2',
	'snowflake_workers and pg_locks show both sessions of worker 1');

# --- thirteen sessions on two slots, all inserting at once --------------------
# Each session attaches, waits at the gate, then inserts its rows.
my $gate = $node->background_psql('postgres');
$gate->query_safe("SELECT pg_advisory_lock($start_gate)");
my $dir = PostgreSQL::Test::Utils::tempdir();
my @runs;
for my $i (1 .. $concurrent)
{
	push @runs,
	  SnowflakeTest::start_psql(
		$node, $dir, "s$i",
		'-c', issue_one("s$i"),
		'-c', "SELECT pg_advisory_lock_shared($start_gate)",
		'-c', "INSERT INTO issued (session, id) SELECT 's$i', snowflake_nextval() "
		  . "FROM generate_series(1, $rows_per_session)");
}
ok( $node->poll_query_until(
		'postgres', qq{
SELECT count(*) = $concurrent FROM pg_locks
 WHERE locktype = 'advisory' AND objid = $start_gate AND NOT granted}),
	'all concurrent sessions attached and wait at the gate');
my $total = $concurrent + 3;
is(slot_use(), "2|$total|2", "$total sessions attached to 2 slots");
# Newcomers go to the emptier slot, on a tie to worker 1 (released earlier).
is(sessions_per_worker(), '0:6:6,1:7:7',
	'the least-loaded slot took each newcomer: 6 and 7 sessions');
$gate->query_safe("SELECT pg_advisory_unlock($start_gate)");
$gate->quit;
for my $i (1 .. $concurrent)
{
	ok($runs[ $i - 1 ]->finish, "session s$i ran all its statements")
	  or diag(slurp_file("$dir/s$i.err"));
}
is( $node->safe_psql(
		'postgres', q{
SELECT count(DISTINCT session), min(c), max(c)
  FROM (SELECT session, count(*) AS c FROM issued WHERE session LIKE 's%'
         GROUP BY session) AS s}),
	"$concurrent|" . ($rows_per_session + 1) . '|' . ($rows_per_session + 1),
	'every concurrent session got all its IDs');
is( $node->safe_psql(
		'postgres', q{
SELECT count(*) FROM (SELECT session FROM issued GROUP BY session
                      HAVING count(DISTINCT (snowflake_decode(id)).worker_id) > 1) AS s}),
	'0', 'each session issued under one worker id');
ok($node->poll_query_until('postgres', 'SELECT sessions_attached = 3 FROM snowflake_status()'),
	'the concurrent sessions detached when they ended');

# --- handover by snowflake_release_worker() ---------------------------------
# holder1 is alone on worker 0: after it leaves, a newcomer takes worker 0,
# the least-loaded slot, and continues above holder1's IDs.
issue_ids($holder1, 'holder1', 3000);
is($holder1->query_safe('SELECT snowflake_release_worker()'),
	't', 'snowflake_release_worker() reports a detached session');
is($holder1->query_safe('SELECT snowflake_release_worker()'),
	'f', 'a second snowflake_release_worker() has nothing to detach');
is(slot_use(), '1|2|1', 'worker 0 has no session left');
my $waiter1 = open_holder('waiter1');
is(held_worker_id($waiter1), 0, 'a newcomer takes the free worker 0');
cmp_ok(largest_id('waiter1'), '>', largest_id('holder1'),
	"the newcomer's ID lies above holder1's");
issue_ids($waiter1, 'waiter1', 3000);

# --- handover by disconnect -------------------------------------------------
issue_ids($waiter1, 'waiter1', 3000);
my $pid = $waiter1->query_safe('SELECT pg_backend_pid()');
$waiter1->quit;
ok( $node->poll_query_until(
		'postgres', "SELECT count(*) = 0 FROM snowflake_workers WHERE pid = $pid"),
	'a session that disconnects is detached');
my $waiter2 = open_holder('waiter2');
is(held_worker_id($waiter2), 0, 'the next newcomer takes worker 0 again');
cmp_ok(largest_id('waiter2'), '>', largest_id('waiter1'),
	"its ID lies above the disconnected session's");
issue_ids($waiter2, 'waiter2', 3000);
issue_ids($holder2, 'holder2', 3000);
issue_ids($third, 'third', 3000);

# --- no duplicates, each session in order -------------------------------------
is( $node->safe_psql(
		'postgres', 'SELECT count(*) - count(DISTINCT id) FROM issued'),
	0,
	'no ID was issued twice');
is(SnowflakeTest::out_of_order($node, 'issued'),
	0, "each session's IDs strictly increase");
cmp_ok($node->safe_psql('postgres', 'SELECT count(*) FROM issued'),
	'>=', $concurrent * $rows_per_session + 15000, 'all sessions recorded their IDs');

$holder1->quit;
$holder2->quit;
$third->quit;
$waiter2->quit;
$node->stop;
done_testing();
