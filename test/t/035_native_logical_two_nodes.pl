# Two primaries replicating to each other with PostgreSQL's own logical
# replication, set up by the steps of docs/multi-primary.md run as they stand
# (origin = none needs 16: skipped on 15).  The publication holds exactly the
# tables snowflake_publication_tables() lists; heartbeats replicate; gated
# concurrent inserts give both nodes the same unique, per-session ascending
# IDs of their node; a node id collision is detected and refused (55000) and
# recovered; tables added later replicate and convert; the only conflict
# reported is 18's one delete_missing per subscription on snowflake_nodes,
# the first heartbeat's DELETE of a row the peer never received.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes ();
use SnowflakeDocs;
use SnowflakeTest;
use SnowflakeTwoPrimaries qw(number sub_of status instance digest wait_streaming);

my $db = $SnowflakeTwoPrimaries::db;
my $pub = 'multi_primary';
my $interval_ms = 500;

my $node1 = PostgreSQL::Test::Cluster->new('node1');
plan skip_all => 'native logical replication between primaries needs the '
  . 'subscription option origin = none, new in PostgreSQL 16; this is PostgreSQL '
  . $node1->pg_version
  if $node1->pg_version < 16;
my $node2 = PostgreSQL::Test::Cluster->new('node2');
my @nodes = ($node1, $node2);
my $major = $node1->pg_version->major(separator => '.');

my $pair = SnowflakeTwoPrimaries->new(\@nodes);

# Step 1 of the guide; the restart once "app" exists saves the 10 s a
# registry that found no database waits before it tries again.
for my $node (@nodes)
{
	$node->init(allows_streaming => 'logical');
	$node->append_conf(
		'postgresql.conf',
		SnowflakeTest::node_conf(
			'snowflake.node_id' => number($node),
			'snowflake.registry_interval' => $interval_ms,
			'snowflake.database' => $db,
			track_commit_timestamp => 'on',
			wal_retrieve_retry_interval => '500ms',
			max_connections => 40,
			timezone => 'UTC'));
	$node->start;
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	$node->safe_psql($db, 'CREATE EXTENSION snowflake');
	$node->restart;
}

# Step 2: the same schema on both nodes (logical replication does not
# replicate DDL).
for my $node (@nodes)
{
	$node->safe_psql(
		$db, q{
CREATE TABLE items (
    id      bigint PRIMARY KEY DEFAULT snowflake_nextval(),
    origin  integer NOT NULL,
    session integer NOT NULL,
    n       integer NOT NULL
);
CREATE TABLE readings (
    id     bigint NOT NULL DEFAULT snowflake_nextval(),
    origin integer NOT NULL,
    PRIMARY KEY (id, origin)
) PARTITION BY LIST (origin);
CREATE TABLE readings_1 PARTITION OF readings FOR VALUES IN (1);
CREATE TABLE readings_2 PARTITION OF readings FOR VALUES IN (2);
CREATE UNLOGGED TABLE scratch (id bigint PRIMARY KEY);
} . $SnowflakeTwoPrimaries::try_nextval);
}

# The tables of the publication, as pg_publication_tables shows them.
sub published
{
	my ($node) = @_;
	return $node->safe_psql(
		$db, qq{
SELECT string_agg(format('%s.%s', schemaname, tablename), ',' ORDER BY schemaname, tablename)
  FROM pg_publication_tables WHERE pubname = '$pub'});
}

sub function_tables
{
	my ($node) = @_;
	return $node->safe_psql($db,
		q{SELECT string_agg(t::text, ',' ORDER BY t::text) FROM snowflake_publication_tables() AS t});
}

# --- 1. the publications ------------------------------------------------------
# The guide's nodes (127.0.0.1 ports 5433 and 5434) become the test's.
my $page = 'docs/multi-primary.md';
my %doc_port = (node1 => 5433, node2 => 5434);

# The part of a block of the guide that runs on $node ("-- on node1").
sub part_on
{
	my ($name, $node) = @_;
	my %parts = SnowflakeDocs::parts(SnowflakeDocs::block($page, $name), map { $_->name } @nodes);
	return $parts{ $node->name };
}

# Step 3 of the guide.
my $create_publication = SnowflakeDocs::block($page, 'native-publication');
for my $node (@nodes)
{
	my $name = $node->name;
	is(function_tables($node), 'items,readings,snowflake_nodes',
		"$name: snowflake_publication_tables() lists the own permanent tables, "
		  . 'partitioned ones by their root, and snowflake_nodes');
	$node->safe_psql($db, $create_publication);
	is( published($node),
		'public.items,public.readings,public.snowflake_nodes',
		"$name: the publication holds exactly those tables");
	is( $node->safe_psql(
			$db, qq{
SELECT (SELECT count(*) > 0 FROM snowflake_layout),
       (SELECT count(*) FROM pg_publication_tables
         WHERE pubname = '$pub' AND tablename = 'snowflake_layout')}),
		't|0',
		"$name: snowflake_layout has rows, and the publication does not carry it");
}
is( $node1->safe_psql(
		$db, q{
CREATE PUBLICATION everything FOR ALL TABLES;
SELECT string_agg(tablename, ',' ORDER BY tablename)
  FROM pg_publication_tables WHERE pubname = 'everything';
DROP PUBLICATION everything;}),
	'items,readings_1,readings_2,snowflake_layout,snowflake_nodes',
	'FOR ALL TABLES would publish snowflake_layout');

# Each node's registry has written its row before the other subscribes:
# that row reaches the peer only with the next heartbeat (see 6.).
for my $node (@nodes)
{
	my $instance = instance($node);
	$node->poll_query_until($db,
		"SELECT count(*) = 1 FROM snowflake_nodes WHERE instance_id = '$instance'")
	  or die $node->name . ' did not register';
}

# Step 4 of the guide.
for my $node (@nodes)
{
	my $peer = $pair->other($node);
	$node->safe_psql(
		$db,
		SnowflakeDocs::substitute(
			part_on('native-subscriptions', $node),
			'host=127.0.0.1 port=' . $doc_port{ $peer->name } =>
			  sprintf('host=%s port=%d', $peer->host, $peer->port)));
}
wait_streaming($_) for @nodes;
for my $node (@nodes)
{
	is( $node->safe_psql(
			$db, q{
SELECT s.subname, s.suborigin, string_agg(format('%s:%s', r.srrelid::regclass, r.srsubstate),
                                          ',' ORDER BY r.srrelid::regclass::text)
  FROM pg_subscription AS s JOIN pg_subscription_rel AS r ON r.srsubid = s.oid
 GROUP BY s.subname, s.suborigin}),
		sub_of($pair->other($node)) . '|none|items:r,readings:r,snowflake_nodes:r',
		$node->name . ' subscribes to the other node with origin = none, every table ready');
}

# --- 2. heartbeats replicate ----------------------------------------------------
my %instance = $pair->check_heartbeats;

# --- 3. concurrent inserts on both nodes ---------------------------------------
my $sessions = 4;
my $per_session = 10000;
my $total = 2 * $sessions * $per_session;
my $gate_key = 4242;
my $dir = PostgreSQL::Test::Utils::tempdir();

# Each node's gate: an exclusive advisory lock that a session of the test
# holds; every inserting session first waits for a shared one.
my %gate;
for my $node (@nodes)
{
	$gate{ $node->name } = $node->background_psql($db);
	$gate{ $node->name }->query_safe("SELECT pg_advisory_lock($gate_key)");
}
my @runs;
for my $node (@nodes)
{
	my $origin = number($node);
	for my $s (1 .. $sessions)
	{
		my $name = $node->name . "_session$s";
		push @runs,
		  {
			name => $name,
			run => SnowflakeTest::start_psql(
				$node, $dir, $name,
				'-c', "\\connect $db",
				'-c', "SELECT pg_advisory_lock_shared($gate_key)",
				'-c', "SELECT pg_advisory_unlock_shared($gate_key)",
				'-c', qq{
DO \$\$
BEGIN
    FOR i IN 1 .. $per_session LOOP
        INSERT INTO items (origin, session, n) VALUES ($origin, $s, i);
        COMMIT;
    END LOOP;
END
\$\$})
		  };
	}
}
SnowflakeTest::open_gates(\@nodes, $db, $gate_key, $sessions, \%gate, \@runs, $dir);

for my $node (@nodes)
{
	ok($node->poll_query_until($db, "SELECT count(*) = $total FROM items"),
		$node->name . " holds all $total rows");
}
$pair->wait_caught_up;

my $items = digest($node1, 'items');
is(digest($node2, 'items'), $items, "items is identical on both nodes ($items)");
for my $node (@nodes)
{
	my $name = $node->name;
	is($node->safe_psql($db, 'SELECT count(*), count(DISTINCT id) FROM items'),
		"$total|$total", "$name: $total rows, every ID unique");
	is( $node->safe_psql(
			$db, q{
SELECT string_agg(format('%s:%s', origin, c), ' ' ORDER BY origin)
  FROM (SELECT origin, count(*) AS c FROM items GROUP BY origin) AS o}),
		join(' ', map { "$_:" . $sessions * $per_session } (1, 2)),
		"$name: the rows of both nodes");
	is( $node->safe_psql(
			$db, q{
SELECT count(*) FROM items, snowflake_decode(id) AS d WHERE d.node_id <> origin}),
		0, "$name: every ID decodes to the node that made it");
	is( $node->safe_psql(
			$db, q{
SELECT count(*)
  FROM (SELECT id, lag(id) OVER (PARTITION BY origin, session ORDER BY n) AS prev
          FROM items) AS s
 WHERE id <= prev}),
		0, "$name: each session's IDs increase");
}
is( $node1->safe_psql(
		$db, q{
SELECT max(ts) FILTER (WHERE origin = 1) > min(ts) FILTER (WHERE origin = 2)
   AND max(ts) FILTER (WHERE origin = 2) > min(ts) FILTER (WHERE origin = 1)
  FROM items, snowflake_decode(id) AS d}),
	't',
	'the two nodes inserted at the same time (their ID timestamps overlap)');

# The partitioned table, published by its root.
$_->safe_psql($db,
	'INSERT INTO readings (origin) SELECT ' . number($_) . ' FROM generate_series(1, 100)')
  for @nodes;
$pair->wait_caught_up;
my $readings = digest($node1, 'readings');
is(digest($node2, 'readings'), $readings,
	"readings is identical on both nodes ($readings)");
is( $_->safe_psql(
		$db, q{
SELECT (SELECT count(*) FROM readings_1 WHERE origin = 1),
       (SELECT count(*) FROM readings_2 WHERE origin = 2),
       (SELECT count(*) FROM readings, snowflake_decode(id) AS d WHERE d.node_id <> origin)}),
	'100|100|0',
	$_->name . ': the rows of both nodes are in their partitions and decode to their node')
  for @nodes;

# --- 4. a node-id collision -----------------------------------------------------
my @offsets = map { -s $_->logfile } @nodes;
$node2->safe_psql($db, 'ALTER SYSTEM SET snowflake.node_id = 1');
$node2->restart;
my $restarted = Time::HiRes::time;
wait_streaming($_) for @nodes;
my $streaming = Time::HiRes::time - $restarted;
ok(defined $pair->wait_collision('t'), 'both nodes detect the collision');
my $detection = Time::HiRes::time - $restarted;
note(
	sprintf(
		'PostgreSQL %s: both nodes detected the collision %.1f s after node2 '
		  . 'restarted with node_id 1 (both subscriptions streamed again after %.1f s; '
		  . 'registry_interval %d ms)',
		$major, $detection, $streaming, $interval_ms));
is(status($_), '1|t', $_->name . ': node_id 1 and node_collision') for @nodes;

my %instance_now = $pair->check_collision_warnings(\@offsets);
$pair->check_collision_policies('INSERT INTO items (origin, session, n) VALUES (0, 0, 0)');

# The colliding instance stops; node 2 will come back with its own id.
$node2->safe_psql($db, 'ALTER SYSTEM RESET snowflake.node_id');
@offsets = map { -s $_->logfile } @nodes;
$node2->stop;
my $stopped = Time::HiRes::time;
ok( $node1->poll_query_until(
		$db, 'SELECT node_collision FROM snowflake_status()', 'f'),
	'node1: the collision clears once the colliding instance has stopped');
my $recovery = Time::HiRes::time - $stopped;
is($node1->safe_psql($db, 'SELECT try_nextval()'),
	'ok', 'node1: generation resumes, on_node_collision still error');
note(
	sprintf(
		'PostgreSQL %s: node1 generated again %.1f s after the colliding instance stopped '
		  . '(three registry intervals: %.1f s)',
		$major, $recovery, 3 * $interval_ms / 1000));
# The registry clears the finding before it writes the line: wait for it.
ok( defined eval {
		$node1->wait_for_log(
			qr/snowflake node_id 1 is no longer used by another running instance/,
			$offsets[0]);
	},
	'node1 logs that the collision is over');
$node2->start;
is(status($node2), '2|f', 'node2: node_id 2 again, no collision');
wait_streaming($_) for @nodes;
is($node2->safe_psql($db, 'SELECT try_nextval()'),
	'ok', 'node2: generates, on_node_collision error');
is(status($node1), '1|f', 'node1: still no collision');

# --- 5. tables added later, and snowflake_convert_column() ----------------------
$_->safe_psql($db, SnowflakeTwoPrimaries::legacy_schema(number($_))) for @nodes;

# "Adding tables later" in the guide: on every node the publication
# first, then the subscription, before any row is written.
$_->safe_psql($db, SnowflakeDocs::block($page, 'native-add-tables')) for @nodes;
$_->safe_psql($db, part_on('native-refresh', $_)) for @nodes;
for my $node (@nodes)
{
	my $name = $node->name;
	is( published($node),
		'public.items,public.legacy,public.legacy_lines,public.readings,public.snowflake_nodes',
		"$name: the publication holds the new tables too");
	is(function_tables($node), 'items,legacy,legacy_lines,readings,snowflake_nodes',
		"$name: as snowflake_publication_tables() lists them");
	is( $node->safe_psql(
			$db, q{
SELECT string_agg(format('%s:%s', srrelid::regclass, srsubstate), ','
                  ORDER BY srrelid::regclass::text)
  FROM pg_subscription_rel}),
		'items:r,legacy:r,legacy_lines:r,readings:r,snowflake_nodes:r',
		"$name: its subscription has the new tables, ready");
}

# Serial rows on both nodes.
$pair->insert_legacy('serial', 500);
$pair->check_tables('serial keys', undef, qw(legacy legacy_lines));
my $max_serial = $node1->safe_psql($db,
	'SELECT greatest((SELECT max(id) FROM legacy), (SELECT max(id) FROM legacy_lines))');

# With writes paused, on each node: DDL does not replicate.
SnowflakeTwoPrimaries::convert_legacy($_) for @nodes;

# Inserts on both nodes, with snowflake IDs now.
$pair->insert_legacy('snowflake', 1000);
$pair->check_tables('converted keys', "t.id > $max_serial", qw(legacy legacy_lines));
is( $_->safe_psql(
		$db, qq{
SELECT count(*) FILTER (WHERE id <= $max_serial AND note LIKE 'serial %'),
       count(*) FILTER (WHERE id > $max_serial AND note LIKE 'snowflake %'),
       count(*)
  FROM legacy}),
	'1000|2000|3000',
	$_->name . ': the serial rows kept their keys, the new rows are above them')
  for @nodes;

# --- 6. over the whole test -------------------------------------------------------
$pair->wait_caught_up;
is(digest($node2, 'items'), digest($node1, 'items'),
	'items is still identical on both nodes');
my @instances = (
	[ 1, $instance{node1} ],
	[ 2, $instance{node2} ],
	[ 1, $instance_now{node2} ],
	[ 2, instance($node2) ]);
my $registry = join(',',
	map { "$_->[0]:$_->[1]" }
	  sort { $a->[0] <=> $b->[0] || $a->[1] cmp $b->[1] } @instances);
is( $_->safe_psql(
		$db, q{
SELECT string_agg(format('%s:%s', node_id, instance_id), ',' ORDER BY node_id, instance_id)
  FROM snowflake_nodes}),
	$registry,
	$_->name . ' holds the registry rows of all four instances of the two nodes')
  for @nodes;

for my $node (@nodes)
{
	my $name = $node->name;
	my $log = slurp_file($node->logfile);
	unlike($log, qr/duplicate key value/, "$name: no apply failed on a duplicate key");
	my @conflicts = $log =~ /^.*conflict detected on relation.*$/mg;
	my $sub = sub_of($pair->other($node));
	if ($major >= 18)
	{
		ok( $node->poll_query_until(
				$db, qq{
SELECT subname, confl_insert_exists, confl_update_origin_differs, confl_update_exists,
       confl_update_missing, confl_delete_origin_differs, confl_delete_missing,
       confl_multiple_unique_conflicts
  FROM pg_stat_subscription_stats},
				"$sub|0|0|0|0|0|1|0"),
			"$name: pg_stat_subscription_stats counts one delete_missing and no other conflict")
		  or diag(
			$node->safe_psql($db, 'SELECT * FROM pg_stat_subscription_stats'));
		is( scalar(@conflicts), 1, "$name: the log reports one conflict")
		  or diag(join("\n", @conflicts));
		like(
			$conflicts[0] // '',
			qr/LOG:  conflict detected on relation "public\.snowflake_nodes": conflict=delete_missing$/,
			"$name: a delete_missing on snowflake_nodes");
	}
	else
	{
		is(scalar(@conflicts), 0, "$name: PostgreSQL $major logs no conflict");
	}
}

$_->stop for @nodes;
done_testing();
