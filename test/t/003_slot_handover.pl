# Worker-slot handover: a session taking a single slot after its holder left
# (disconnect or snowflake_release_worker()) or while it is held continues
# right after the holder's last ID, even ahead of the clock; with more slots,
# never used slots go first, then the least recently released.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;

my $burst_size = 1_500_000;
my $max_sequence = 255;     # 8 sequence bits, on the single-slot node

# Starts a node with snowflake preloaded and installed, and %settings.
sub start_node
{
	my ($name, %settings) = @_;
	return SnowflakeTest::new_node($name, settings => \%settings, extension => 'postgres');
}

# The fields of an ID, with the timestamp in Unix milliseconds.
sub decode
{
	my ($node, $id) = @_;
	my ($ts, $node_id, $worker, $seq) = split /\|/,
	  $node->safe_psql(
		'postgres', qq{
SELECT (extract(epoch FROM ts) * 1000)::bigint, node_id, worker_id, seq
  FROM snowflake_decode($id)});
	return { ts => $ts, node_id => $node_id, worker => $worker, seq => $seq };
}

# Issues a burst of IDs in a session.  Returns the last ID and how far its
# timestamp lies ahead of the wall clock at the end of the burst, in ms.
sub burst
{
	my ($session) = @_;
	return split /\|/, $session->query_safe(
		qq{
SELECT last,
       (extract(epoch FROM (snowflake_decode(last)).ts - clock_timestamp())
        * 1000)::bigint
  FROM (SELECT max(snowflake_nextval()) AS last
          FROM generate_series(1, $burst_size)) AS b});
}

sub nextval
{
	my ($session) = @_;
	return $session->query_safe('SELECT snowflake_nextval()');
}

# The worker id a session works under, claiming a slot if it has none.
sub claimed_worker
{
	my ($session) = @_;
	return $session->query_safe(
		'SELECT worker_id FROM snowflake_decode(snowflake_nextval())');
}

# Checks that $new_id is the ID right after $old_id under the same worker.
sub continues_right_after
{
	my ($node, $old_id, $new_id, $what) = @_;
	my $old = decode($node, $old_id);
	my $new = decode($node, $new_id);
	my %expected =
	  $old->{seq} < $max_sequence
	  ? (ts => $old->{ts}, seq => $old->{seq} + 1)
	  : (ts => $old->{ts} + 1, seq => 0);

	cmp_ok($new_id, '>', $old_id, "$what: new holder's first ID is larger");
	is($new->{worker}, $old->{worker}, "$what: same worker id");
	is( "$new->{ts}/$new->{seq}",
		"$expected{ts}/$expected{seq}",
		"$what: continues in the same millisecond, at the next sequence")
	  or diag explain { old => $old, new => $new };
	return;
}

# Whether a backend holds the slot lock, as pg_locks shows it.
sub holds_slot_lock
{
	my ($node, $pid) = @_;
	return $node->safe_psql(
		'postgres', qq{
SELECT count(*) > 0 FROM pg_locks
 WHERE locktype = 'advisory' AND database = 0 AND classid = 1936617335
   AND pid = $pid AND granted});
}

# --- Single slot: handover by disconnecting -------------------------------
# A burst (5.9 s of timestamps at 8 sequence bits) ends max_drift ahead of
# the clock, leaving the next session seconds to attach.
my $single = start_node(
	'single_slot',
	'snowflake.worker_bits' => 0,
	'snowflake.sequence_bits' => 8,
	'snowflake.max_drift' => 5000);
is($single->safe_psql('postgres', 'SELECT slots_total FROM snowflake_status()'),
	'1', 'worker_bits = 0 gives one slot');

# B connects first, so that it can attach the moment A is gone.
my $session_b = $single->background_psql('postgres');
my $session_a = $single->background_psql('postgres');
my ($last_a, $ahead_a) = burst($session_a);
cmp_ok($ahead_a, '>', 0, "A's last ID runs ahead of the wall clock");
$session_a->quit;
# Whether or not A's backend has exited yet, B continues right after it.
my $first_b = nextval($session_b);
continues_right_after($single, $last_a, $first_b, 'after disconnect');
ok( $single->poll_query_until(
		'postgres', 'SELECT sessions_attached = 1 FROM snowflake_status()'),
	'A detached when it exited');
my $last_b = nextval($session_b);
cmp_ok($last_b, '>', $first_b, 'B goes on increasing');
$session_b->quit;

# --- Single slot: handover through snowflake_release_worker() -------------
my $session_c = $single->background_psql('postgres');
my $session_d = $single->background_psql('postgres');
my ($last_c, $ahead_c) = burst($session_c);
cmp_ok($last_c, '>', $last_b, 'C continued after the previous holders');
cmp_ok($ahead_c, '>', 0, "C's last ID runs ahead of the wall clock");
my $pid_c = $session_c->query_safe('SELECT pg_backend_pid()');
is(holds_slot_lock($single, $pid_c), 't', 'C holds the slot lock');
is($session_c->query_safe('SELECT snowflake_release_worker()'),
	't', 'C releases its slot');
is(holds_slot_lock($single, $pid_c), 'f', 'C no longer holds the slot lock');
is($session_c->query_safe('SELECT snowflake_release_worker()'),
	'f', 'a second release finds no slot');
my $first_d = nextval($session_d);
continues_right_after($single, $last_c, $first_d, 'after release_worker');

# While D holds the only slot, another session shares it at once, and
# continues right after D's last ID, which runs ahead of the clock.
my $session_e = $single->background_psql('postgres');
my ($last_d, $ahead_d) = burst($session_d);
cmp_ok($ahead_d, '>', 0, "D's last ID runs ahead of the wall clock");
my $first_e = nextval($session_e);
continues_right_after($single, $last_d, $first_e, 'sharing with D');
is( $single->safe_psql(
		'postgres', 'SELECT slots_used, sessions_attached, slots_shared FROM snowflake_status()'),
	'1|2|1',
	'D and E share the only slot');
cmp_ok(nextval($session_d), '>', $first_e, "D's next ID is after E's");
$session_e->quit;

# C attaches again once D lets go, and still issues larger IDs than before.
$last_d = nextval($session_d);
$session_d->query_safe('SELECT snowflake_release_worker()');
my $again_c = nextval($session_c);
cmp_ok($again_c, '>', $last_d, "C's new ID is after D's last");
cmp_ok($again_c, '>', $last_c, "C's new ID is after its own earlier ones");
$session_c->quit;
$session_d->quit;
$single->stop;

# --- Many slots: never used first, a released one last --------------------
my $many = start_node('many_slots');
my @s = map { $many->background_psql('postgres') } 1 .. 3;
is(claimed_worker($s[0]), 0, 's1 claims worker 0');
is(claimed_worker($s[1]), 1, 's2 claims worker 1');
is($s[0]->query_safe('SELECT snowflake_release_worker()'), 't',
	's1 releases worker 0');
is(claimed_worker($s[2]), 2, 's3 claims worker 2, not the released 0');
is( $many->safe_psql(
		'postgres', q{
SELECT string_agg(worker_id::text, ',' ORDER BY worker_id)
  FROM snowflake_workers}),
	'1,2',
	'snowflake_workers lists the held slots only');
is(claimed_worker($s[0]), 3, 's1 claims again: worker 3, still not 0');
$_->quit for @s;
$many->stop;

# --- Two slots: among released slots, the least recently released first ----
my $two = start_node('two_slots', 'snowflake.worker_bits' => 1);
my @t = map { $two->background_psql('postgres') } 1 .. 4;
is(claimed_worker($t[0]), 0, 't1 claims worker 0');
is(claimed_worker($t[1]), 1, 't2 claims worker 1');
$t[1]->query_safe('SELECT snowflake_release_worker()');
$t[0]->query_safe('SELECT snowflake_release_worker()');
is(claimed_worker($t[2]), 1, 't3 gets worker 1, released before worker 0');
is(claimed_worker($t[3]), 0, 't4 gets worker 0, the last released');
$_->quit for @t;
$two->stop;
done_testing();
