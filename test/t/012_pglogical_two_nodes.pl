# Two-node bidirectional pglogical (docs/multi-primary.md, node ids 1 and 2):
# concurrent pgbench inserts on both nodes, then a restart of node 1 and a
# SIGKILL of node 2's postmaster under load; after catch-up both nodes hold
# the same rows, every ID decodes to its node, no insert failed on a duplicate
# key and pglogical logged no "CONFLICT: remote ..." (a deliberate key
# conflict shows that such reports reach the logs read).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use SnowflakePglogical;
use SnowflakeTest;

my $db = $SnowflakePglogical::db;

my ($node1, $node2) = SnowflakePglogical::create_pair();
my @nodes = ($node1, $node2);
my %number = (node1 => 1, node2 => 2);

# Step 2 of the guide, with an origin column to check against the IDs, on
# both nodes (pglogical does not replicate DDL).
$_->safe_psql(
	$db, q{
CREATE TABLE items (
    id     bigint PRIMARY KEY DEFAULT snowflake_nextval(),
    origin integer NOT NULL,
    phase  integer NOT NULL
);
CREATE TABLE item_lines (
    id      bigint PRIMARY KEY DEFAULT snowflake_nextval(),
    item_id bigint NOT NULL REFERENCES items,
    origin  integer NOT NULL,
    phase   integer NOT NULL
);
CREATE TABLE probe (id bigint PRIMARY KEY, origin integer NOT NULL);
}) for @nodes;
SnowflakePglogical::connect_pair(\@nodes, qw(items item_lines probe snowflake_nodes));
pass('both subscriptions replicate');

# One pgbench transaction: 100 items and lines for 25 of them.
my $items_per_tx = 100;
my $lines_per_tx = 25;
my $script = $node1->basedir . '/insert.sql';
SnowflakeTest::write_file($script, qq{
WITH i AS (
    INSERT INTO items (origin, phase)
    SELECT :origin, :phase FROM generate_series(1, $items_per_tx)
    RETURNING id
)
INSERT INTO item_lines (item_id, origin, phase)
SELECT id, :origin, :phase FROM (SELECT id FROM i ORDER BY id LIMIT $lines_per_tx) AS l;
});

# Starts pgbench on $node with $clients sessions, each running
# $transactions transactions, or, with $transactions = 0, running until
# stopped at $rate transactions per second in all.
sub start_load
{
	my ($node, $phase, $clients, $transactions, $rate) = @_;
	my %load = (node => $node, out => '', err => '');
	$load{run} = IPC::Run::start(
		[
			'pgbench', '-n', '-h', $node->host, '-p', $node->port,
			'-c', $clients, '-j', $clients,
			$transactions ? ('-t', $transactions) : ('-T', 600, '-R', $rate),
			'-D', "origin=$number{$node->name}", '-D', "phase=$phase",
			'-f', $script, "dbname=$db application_name=load"
		],
		'>', \$load{out}, '2>', \$load{err});
	return \%load;
}

# Waits for pgbench to end by itself; returns its exit status.
sub finish_load
{
	my ($load) = @_;
	$load->{run}->finish;
	return $load->{run}->full_result(0) >> 8;
}

# Ends a pgbench that runs until stopped, and waits until its sessions
# are gone: a statement that was running still commits.
sub stop_load
{
	my ($load) = @_;
	# TERM: a suite started in the background has SIGINT ignored.
	$load->{run}->signal('TERM');
	$load->{run}->finish;
	$load->{node}->poll_query_until($db,
		"SELECT count(*) = 0 FROM pg_stat_activity WHERE application_name = 'load'")
	  or die 'the sessions of pgbench on ' . $load->{node}->name . ' did not end';
	return;
}

# Rows whose ID decodes to another node than the one that inserted them,
# and lines without their item.
sub misattributed
{
	my ($node) = @_;
	return $node->safe_psql(
		$db, q{
SELECT (SELECT count(*) FROM items, snowflake_decode(id) AS d
         WHERE d.node_id <> origin)
     + (SELECT count(*) FROM item_lines, snowflake_decode(id) AS d
         WHERE d.node_id <> origin)});
}

sub orphans
{
	my ($node) = @_;
	return $node->safe_psql(
		$db, q{
SELECT count(*) FROM item_lines AS l
 WHERE NOT EXISTS (SELECT FROM items AS i WHERE i.id = l.item_id)});
}

# Where in each node's log the count of conflicts starts: after the first
# heartbeats, which predate the subscriptions.
my %conflicts_from =
  map { $_->name => SnowflakePglogical::registered_offset($_) } @nodes;

# The common checks after catch-up.
sub check_consistent
{
	my ($what) = @_;
	SnowflakePglogical::wait_caught_up(\@nodes);
	for my $table (qw(items item_lines))
	{
		my $one = SnowflakePglogical::digest($node1, $table);
		my $two = SnowflakePglogical::digest($node2, $table);
		is($two, $one, "$what: $table is identical on both nodes ($one)");
	}
	for my $node (@nodes)
	{
		my $name = $node->name;
		is(SnowflakePglogical::conflicts($node, $conflicts_from{$name}), 0,
			"$what: pglogical reported no conflict on $name");
		is(misattributed($node), 0,
			"$what: every ID on $name decodes to the node that inserted it");
		is(orphans($node), 0, "$what: every line on $name has its item");
	}
	return;
}

# --- 1. concurrent inserts on both nodes ------------------------------------
my $clients = 4;
my $transactions = 500;    # 4 x 500 x 100 = 200,000 items per node
my @loads = map { start_load($_, 1, $clients, $transactions) } @nodes;
for my $load (@loads)
{
	my $name = $load->{node}->name;
	is(finish_load($load), 0, "pgbench on $name succeeded")
	  or diag $load->{err};
	like($load->{out}, qr/number of transactions actually processed: 2000\/2000/,
		"pgbench on $name committed every transaction");
}

check_consistent('concurrent inserts');
my $per_node = $clients * $transactions * $items_per_tx;
for my $node (@nodes)
{
	my $name = $node->name;
	is( $node->safe_psql(
			$db, q{
SELECT string_agg(format('%s:%s/%s', i.origin, i.n, l.n), ' ' ORDER BY i.origin)
  FROM (SELECT origin, count(*) AS n FROM items GROUP BY origin) AS i
  JOIN (SELECT origin, count(*) AS n FROM item_lines GROUP BY origin) AS l
 USING (origin)}),
		join(' ',
			map { "$_:$per_node/" . $per_node / $items_per_tx * $lines_per_tx }
			  (1, 2)),
		"$name holds every item and line both nodes inserted");
}
is( $node1->safe_psql(
		$db, q{
SELECT min(d.node_id), max(d.node_id), count(DISTINCT d.worker_id) >= 4
  FROM items, snowflake_decode(id) AS d WHERE origin = 1}),
	'1|1|t',
	"node1's IDs carry node id 1, from several workers");
is( $node1->safe_psql(
		$db, q{
SELECT max(ts) FILTER (WHERE origin = 1) > min(ts) FILTER (WHERE origin = 2)
   AND max(ts) FILTER (WHERE origin = 2) > min(ts) FILTER (WHERE origin = 1)
  FROM items, snowflake_decode(id) AS d WHERE phase = 1}),
	't',
	'the two nodes inserted at the same time (their ID timestamps overlap)');

# The conflict check sees real conflicts: the same key inserted on both
# nodes while node2 does not receive node1's changes.
my @offsets = map { -s $_->logfile } @nodes;
$node2->safe_psql($db,
	"SELECT pglogical.alter_subscription_disable('from_node1', true)");
$node1->safe_psql($db, 'INSERT INTO probe VALUES (42, 1)');
$node2->safe_psql($db, 'INSERT INTO probe VALUES (42, 2)');
$node2->safe_psql($db,
	"SELECT pglogical.alter_subscription_enable('from_node1', true)");
for my $i (0, 1)
{
	my $node = $nodes[$i];
	$node->wait_for_log(qr/$SnowflakePglogical::conflict_pattern/, $offsets[$i]);
	like(
		join("\n", SnowflakePglogical::conflict_lines($node, $offsets[$i])),
		qr/CONFLICT: remote INSERT on relation public\.probe \(local index probe_pkey\)/,
		'a key inserted on both nodes is reported as a conflict on ' . $node->name);
}
# From here on, conflicts are counted after the probe.
%conflicts_from = map { $_->name => -s $_->logfile } @nodes;

# --- 2. a restart and a crash during concurrent inserts --------------------
# Waits until $node holds $more items of $phase inserted there than now.
sub wait_more_rows
{
	my ($node, $phase, $more) = @_;
	my $origin = $number{ $node->name };
	my $mine = "FROM items WHERE origin = $origin AND phase = $phase";
	my $now = $node->safe_psql($db, "SELECT count(*) $mine");
	return $node->poll_query_until($db,
		"SELECT count(*) >= $now + $more $mine");
}

sub no_duplicate_key_errors
{
	my ($load, $what) = @_;
	unlike($load->{err}, qr/duplicate key|conflict/i,
		"$what: no insert failed for a duplicate key");
	return;
}

# 30 transactions (3,000 items) per second and node: steady inserts that
# replication keeps up with while both nodes run.
my $rate = 30;
my $load1 = start_load($node1, 2, 2, 0, $rate);
my $load2 = start_load($node2, 2, 2, 0, $rate);
ok(wait_more_rows($node1, 2, 5000) && wait_more_rows($node2, 2, 5000),
	'both nodes insert');

# Restart node1 (fast shutdown) while both insert: its pgbench loses its
# connections; node2 keeps inserting while node1 is down.
$node1->restart;
is(finish_load($load1), 2, "node1's pgbench lost its connections at the restart");
like($load1->{err}, qr/terminating connection|server closed the connection|connection .* lost/i,
	"node1's pgbench saw the shutdown");
no_duplicate_key_errors($load1, 'before the restart');
$load1 = start_load($node1, 3, 2, 0, $rate);
ok(wait_more_rows($node1, 3, 5000), 'node1 inserts again after its restart');
SnowflakePglogical::wait_replicating($_) for @nodes;
pass('both subscriptions replicate again after the restart');

# Crash node2: SIGKILL to its postmaster while both insert.
ok(wait_more_rows($node2, 2, 10000), 'node2 is still inserting');
SnowflakePglogical::kill9_and_wait($node2);
pass("every process of node2's server exited after SIGKILL of its postmaster");
finish_load($load2);
like($load2->{err}, qr/server closed the connection|terminating connection|connection .* lost|postmaster/i,
	"node2's pgbench lost its connections at the crash");
no_duplicate_key_errors($load2, 'before the crash');
ok(wait_more_rows($node1, 3, 10000), 'node1 keeps inserting while node2 is down');
my $start_offset = -s $node2->logfile;
$node2->start;
like(
	slurp_file($node2->logfile, $start_offset),
	qr/database system was interrupted|was not properly shut down; automatic recovery in progress/,
	'node2 ran crash recovery');
$load2 = start_load($node2, 3, 2, 0, $rate);
ok(wait_more_rows($node2, 3, 5000), 'node2 inserts again after the crash');
SnowflakePglogical::wait_replicating($_) for @nodes;
pass('both subscriptions replicate again after the crash');

stop_load($_) for ($load1, $load2);
no_duplicate_key_errors($load1, 'after the restart');
no_duplicate_key_errors($load2, 'after the crash');

check_consistent('restart and crash');
is( $node1->safe_psql(
		$db, q{
SELECT count(*) = count(DISTINCT id) FROM
  (SELECT id FROM items UNION ALL SELECT id FROM item_lines) AS ids}),
	't',
	'no ID occurs twice among items and lines');
is( $node1->safe_psql(
		$db, 'SELECT count(DISTINCT (origin, phase)) FROM items WHERE phase > 1'),
	4,
	'rows from both nodes before and after the disruptions are there');

$_->stop for @nodes;
done_testing();
