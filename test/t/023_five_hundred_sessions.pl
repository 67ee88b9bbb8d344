# 500 concurrent pgbench sessions insert 100 rows each into a table keyed by
# snowflake_nextval(), with 128 and with 4 worker slots: no transaction fails,
# no ID repeats, each session's IDs strictly increase, and all 500 were
# attached at once, evenly spread, each shown in pg_locks.
use strict;
use warnings;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;

my $clients = 500;
# A count, not a duration: connecting 500 clients can outlast a -T run.
my $transactions = 100;
my $slot_lock_class = 1936617335;

# One row per insert: the session (its backend's pid) and "n", growing per
# session.  After each insert a client passes a gate (a shared advisory lock)
# that the test holds until it has seen all the clients attached.
my $gate_key = 4242;
my $insert_script = "INSERT INTO t (v) VALUES (1);\n"
  . "SELECT pg_advisory_lock_shared($gate_key);\n"
  . "SELECT pg_advisory_unlock_shared($gate_key);\n";

sub run_layout
{
	my ($name, $worker_bits) = @_;
	my $slots = 2**$worker_bits;
	my $node = SnowflakeTest::new_node($name,
		settings => { 'snowflake.worker_bits' => $worker_bits, max_connections => 600 },
		extension => 'postgres');
	$node->safe_psql(
		'postgres', q{
CREATE TABLE t (
    id      bigint PRIMARY KEY DEFAULT snowflake_nextval(),
    n       bigserial NOT NULL,
    session integer NOT NULL DEFAULT pg_backend_pid(),
    v       integer
)});

	my $dir = PostgreSQL::Test::Utils::tempdir();
	append_to_file("$dir/insert.sql", $insert_script);
	my $gate = SnowflakeTest::start_psql($node, $dir, 'gate', '-c',
		"SET application_name = 'gate'; SELECT pg_advisory_lock($gate_key); SELECT pg_sleep(3600)");
	$node->poll_query_until(
		'postgres', qq{
SELECT count(*) = 1 FROM pg_locks
 WHERE locktype = 'advisory' AND objid = $gate_key AND mode = 'ExclusiveLock' AND granted})
	  or die "the gate was not closed";
	# Output to files: nothing needs pumping while the test polls.
	my $pgbench = IPC::Run::start(
		[
			$node->installed_command('pgbench'), '-n',
			'-c', $clients, '-j', 2, '-t', $transactions,
			'-f', "$dir/insert.sql", $node->connstr('postgres')
		],
		'>', "$dir/pgbench.out", '2>', "$dir/pgbench.err",
		IPC::Run::timeout($PostgreSQL::Test::Utils::timeout_default));

	# While pgbench runs, every client is attached, evenly spread.
	ok( $node->poll_query_until(
			'postgres',
			"SELECT sessions_attached = $clients FROM snowflake_status()"),
		"$name: all $clients sessions are attached at once");
	my ($lo, $hi) = (int($clients / $slots), int(($clients + $slots - 1) / $slots));
	is( $node->safe_psql(
			'postgres', qq{
SELECT s.slots_used, s.slots_shared, count(DISTINCT w.worker_id),
       min(w.sessions), max(w.sessions)
  FROM snowflake_status() AS s,
       (SELECT worker_id, count(*) AS sessions FROM snowflake_workers
         GROUP BY worker_id) AS w
 GROUP BY s.slots_used, s.slots_shared}),
		"$slots|$slots|$slots|$lo|$hi",
		"$name: every one of the $slots slots has $lo to $hi sessions");
	is( $node->safe_psql(
			'postgres', qq{
SELECT count(*) FROM pg_locks
 WHERE locktype = 'advisory' AND database = 0 AND classid = $slot_lock_class
   AND mode = 'ShareLock' AND granted}),
		$clients,
		"$name: pg_locks shows the share lock of every session");

	# Open the gate: the clients run their other transactions.
	$node->safe_psql('postgres',
		"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'gate'");
	$gate->finish;

	ok($pgbench->finish, "$name: pgbench exited with success")
	  or diag(slurp_file("$dir/pgbench.err"));
	my $out = slurp_file("$dir/pgbench.out");
	like($out, qr/^number of clients: $clients$/m, "$name: pgbench ran $clients clients");
	like($out, qr/^number of failed transactions: 0 \(/m,
		"$name: no transaction failed");
	like($out, qr{^number of transactions actually processed: @{[ $clients * $transactions ]}/}m,
		"$name: pgbench ran every transaction");

	is( $node->safe_psql(
			'postgres', 'SELECT count(*), count(DISTINCT id) FROM t'),
		($clients * $transactions) . '|' . ($clients * $transactions),
		"$name: one row per transaction, no ID twice");
	is( $node->safe_psql(
			'postgres', 'SELECT count(*), min(c), max(c) FROM (SELECT count(*) AS c FROM t GROUP BY session) AS s'),
		"$clients|$transactions|$transactions", "$name: every session inserted all its rows");
	is(SnowflakeTest::out_of_order($node, 't'),
		0, "$name: each session's IDs strictly increase");
	is( $node->safe_psql(
			'postgres', q{
SELECT count(*) FROM (SELECT session FROM t GROUP BY session
                      HAVING count(DISTINCT (snowflake_decode(id)).worker_id) > 1) AS s}),
		'0', "$name: each session issued under one worker id");
	ok( $node->poll_query_until(
			'postgres', 'SELECT sessions_attached = 0 FROM snowflake_status()'),
		"$name: the sessions detached when pgbench disconnected");
	$node->stop;
	return;
}

run_layout('default_layout', 7);
run_layout('four_slots', 2);
done_testing();
