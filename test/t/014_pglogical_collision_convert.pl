# The node registry and snowflake_convert_column() on a two-node
# bidirectional pglogical cluster (see SnowflakePglogical.pm), with
# snowflake_nodes in the replication set and snowflake.registry_interval =
# 500 ms.
#
# 1. Heartbeats replicate: each node sees the other's running instance in
#    snowflake_nodes, its beat count growing, and no collision.
# 2. Node 2 is restarted with node 1's id.  Both nodes detect the collision
#    within 30 s of the subscriptions replicating again (the guide promises
#    a few intervals plus the replication delay): a WARNING whose DETAIL
#    names the other instance, and node_collision in snowflake_status().
#    With the default on_node_collision = warn, IDs are still issued; after
#    ALTER SYSTEM SET snowflake.on_node_collision = error and a reload,
#    snowflake_nextval() fails on both nodes with the documented error
#    (SQLSTATE 55000, HINT).  Node 2 is then restarted with its own id
#    again: the collision clears on both nodes, generation resumes, and
#    rows inserted on both nodes replicate without conflict.
# 3. Serial keys, kept apart by odd and even sequence values on the two
#    nodes, replicate; the keys are converted with snowflake_convert_column()
#    on each node (pglogical does not replicate DDL), and rows inserted on
#    both nodes afterwards get snowflake IDs of their node, replicate
#    without conflict, and both nodes hold the same rows.
# 4. pg_dump of node 1's converted tables (only those: a dump of the whole
#    database would carry pglogical's node and subscription, which belong
#    to node 1's server) restores into a fresh database of node 2's server
#    that has CREATE EXTENSION snowflake: same rows, same defaults, new rows
#    get IDs of node 2 above every restored one.
# Over the whole test pglogical reports no conflict on either node.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes ();
use SnowflakePglogical;

my $db = $SnowflakePglogical::db;
my $interval_ms = 500;
# A timed promise (docs/multi-primary.md): a quiet machine detects the
# collision in a few seconds, so 30 s leaves ten times that for a loaded one.
my $detection_bound = 30;    # seconds

my ($node1, $node2) = SnowflakePglogical::create_pair();
my @nodes = ($node1, $node2);

# Serial keys on both nodes, kept apart the usual pre-snowflake way: node 1
# issues odd values, node 2 even ones.
SnowflakePglogical::run_on_both(
	\@nodes, q{
CREATE TABLE events (
    id     bigint PRIMARY KEY DEFAULT snowflake_nextval(),
    origin integer NOT NULL
);
CREATE TABLE legacy (
    id     serial PRIMARY KEY,
    origin integer NOT NULL,
    note   text
);
CREATE TABLE legacy_lines (
    id        serial PRIMARY KEY,
    legacy_id integer NOT NULL REFERENCES legacy,
    origin    integer NOT NULL
);
-- The outcome of one call of snowflake_nextval(): 'ok' or the error.
CREATE FUNCTION try_nextval() RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    PERFORM snowflake_nextval();
    RETURN 'ok';
EXCEPTION WHEN others THEN
    RETURN SQLSTATE || ': ' || SQLERRM;
END
$$;
});
for my $i (1, 2)
{
	$nodes[ $i - 1 ]->safe_psql($db,
		"ALTER SEQUENCE $_ INCREMENT BY 2 RESTART WITH $i")
	  for qw(legacy_id_seq legacy_lines_id_seq);
}
SnowflakePglogical::connect_pair(\@nodes,
	qw(events legacy legacy_lines snowflake_nodes));
pass('both subscriptions replicate, and both nodes registered');

sub status
{
	my ($node) = @_;
	return $node->safe_psql($db,
		'SELECT node_id, node_collision FROM snowflake_status()');
}

sub instance
{
	my ($node) = @_;
	return $node->safe_psql($db, 'SELECT instance_id FROM snowflake_status()');
}

# The beat count $node sees for $instance.
sub beats
{
	my ($node, $instance) = @_;
	return $node->safe_psql($db,
		"SELECT beats FROM snowflake_nodes WHERE instance_id = '$instance'");
}

# Polls until every node's node_collision is $want; returns the seconds it
# took, or undef.
sub wait_collision
{
	my ($want) = @_;
	my $start = Time::HiRes::time;
	for my $node (@nodes)
	{
		$node->poll_query_until($db,
			'SELECT node_collision FROM snowflake_status()', $want)
		  or return undef;
	}
	return Time::HiRes::time - $start;
}

sub insert_events
{
	my ($count) = @_;
	for my $i (1, 2)
	{
		$nodes[ $i - 1 ]->safe_psql($db,
			"INSERT INTO events (origin) SELECT $i FROM generate_series(1, $count)"
		);
	}
	return;
}

# Both nodes hold the same rows of @tables after catch-up, and IDs decode
# to the node in "origin" (for the rows $where selects).
sub check_tables
{
	my ($what, $where, @tables) = @_;
	SnowflakePglogical::wait_caught_up(\@nodes);
	for my $table (@tables)
	{
		my $one = SnowflakePglogical::digest($node1, $table);
		is(SnowflakePglogical::digest($node2, $table),
			$one, "$what: $table is identical on both nodes ($one)");
		for my $node (@nodes)
		{
			is( $node->safe_psql(
					$db, qq{
SELECT count(*) FROM $table AS t, snowflake_decode(t.id) AS d
 WHERE ($where) AND d.node_id <> t.origin}),
				0,
				"$what: the IDs of $table on " . $node->name
				  . ' decode to the node that inserted them');
		}
	}
	return;
}

# --- 1. heartbeats replicate ----------------------------------------------------

my %instance = map { $_->name => instance($_) } @nodes;
for my $pair ([ $node1, $node2 ], [ $node2, $node1 ])
{
	my ($seer, $seen) = @$pair;
	my $other = $instance{ $seen->name };
	my $before = beats($seer, $other);
	ok( $seer->poll_query_until(
			$db,
			"SELECT beats > $before FROM snowflake_nodes WHERE instance_id = '$other'"
		),
		$seer->name . ' sees the heartbeats of ' . $seen->name . ' grow');
	is( $seer->safe_psql(
			$db, qq{
SELECT node_id, port FROM snowflake_nodes WHERE instance_id = '$other'}),
		SnowflakePglogical::node_number($seen) . '|' . $seen->port,
		$seer->name . "'s snowflake_nodes names the other node's id and port");
}
is(status($_), SnowflakePglogical::node_number($_) . '|f',
	$_->name . ': no collision')
  for @nodes;

# --- 2. a node-id collision -------------------------------------------------------

my @offsets = map { -s $_->logfile } @nodes;
$node2->safe_psql($db, 'ALTER SYSTEM SET snowflake.node_id = 1');
my $restarted = Time::HiRes::time;
$node2->restart;
SnowflakePglogical::wait_replicating($_) for @nodes;
my $replicating = Time::HiRes::time;
my $took = wait_collision('t');
ok(defined $took && $took < $detection_bound,
	"both nodes detect the collision within $detection_bound s of replicating again")
  or diag('took ' . ($took // 'forever'));
diag(
	sprintf(
		'collision detected %.1f s after both subscriptions replicated, '
		  . '%.1f s after node2 restarted',
		$took // -1, Time::HiRes::time - $restarted));
is(status($_), '1|t', $_->name . ': node_id 1 and node_collision') for @nodes;

my %instance_now = map { $_->name => instance($_) } @nodes;
for my $pair ([ 0, $node1, $node2 ], [ 1, $node2, $node1 ])
{
	my ($i, $node, $other) = @$pair;
	my $other_instance = $instance_now{ $other->name };
	my $other_port = $other->port;
	$node->wait_for_log(qr/WARNING:  snowflake node_id 1 is also used/,
		$offsets[$i]);
	like(
		slurp_file($node->logfile, $offsets[$i]),
		qr/WARNING:  \Qsnowflake node_id 1 is also used by another running instance\E\n[^\n]*DETAIL:  \Qsnowflake_nodes shows instance $other_instance on host \E\S+ port $other_port\b/,
		$node->name . ' logs a WARNING whose DETAIL names the other instance');
}

is($_->safe_psql($db, 'SELECT try_nextval()'),
	'ok', $_->name . ': on_node_collision = warn still issues IDs')
  for @nodes;

$_->safe_psql($db,
	"ALTER SYSTEM SET snowflake.on_node_collision = 'error'; SELECT pg_reload_conf()"
) for @nodes;
my $refusal = '55000: snowflake node_id 1 is also used by another running instance';
for my $node (@nodes)
{
	my $name = $node->name;
	ok($node->poll_query_until($db, 'SELECT try_nextval()', $refusal),
		"$name: with on_node_collision = error, snowflake_nextval() fails");
	my ($stdout, $stderr);
	$node->psql(
		$db, qq(\\set VERBOSITY verbose
INSERT INTO events (origin) VALUES (0) RETURNING id;),
		stdout => \$stdout,
		stderr => \$stderr);
	is($stdout, '', "$name: no row is inserted");
	like($stderr, qr/ERROR:  \Q$refusal\E$/m,
		"$name: the error and SQLSTATE 55000");
	like(
		$stderr,
		qr/^HINT:  \QGive each primary its own snowflake.node_id.\E$/m,
		"$name: the HINT");
}

# Node 2 gets its own id back.
@offsets = map { -s $_->logfile } @nodes;
$node2->safe_psql($db, 'ALTER SYSTEM RESET snowflake.node_id');
$node2->restart;
SnowflakePglogical::wait_replicating($_) for @nodes;
$took = wait_collision('f');
ok(defined $took && $took < $detection_bound,
	"the collision clears on both nodes within $detection_bound s")
  or diag('took ' . ($took // 'forever'));
is(status($node1), '1|f', 'node1: node_id 1, no collision');
is(status($node2), '2|f', 'node2: node_id 2 again, no collision');
ok( $node1->log_contains(
		qr/snowflake node_id 1 is no longer used by another running instance/,
		$offsets[0]),
	'node1 logs that the collision is over');
is($_->safe_psql($db, 'SELECT try_nextval()'),
	'ok', $_->name . ': generation resumes, on_node_collision still error')
  for @nodes;
insert_events(1000);
check_tables('after the collision', 'true', 'events');

# --- 3. converting serial keys on both nodes ------------------------------------

# Rows on both nodes, from the odd and even serial values.
for my $i (1, 2)
{
	$nodes[ $i - 1 ]->safe_psql(
		$db, qq{
WITH l AS (
    INSERT INTO legacy (origin, note)
    SELECT $i, 'serial ' || g FROM generate_series(1, 500) AS g
    RETURNING id
)
INSERT INTO legacy_lines (legacy_id, origin) SELECT id, $i FROM l;
});
}
SnowflakePglogical::wait_caught_up(\@nodes);
for my $table (qw(legacy legacy_lines))
{
	my $one = SnowflakePglogical::digest($node1, $table);
	is(SnowflakePglogical::digest($node2, $table),
		$one, "serial keys: $table is identical on both nodes ($one)");
}
my %max_serial = map {
	$_ => $node1->safe_psql($db, "SELECT max(id) FROM $_")
} qw(legacy legacy_lines);

# With writes paused, on each node.  The function runs under a pinned
# search_path, so the old default names its sequence with the schema.
for my $node (@nodes)
{
	my $name = $node->name;
	is( $node->safe_psql(
			$db, q{
SELECT affected_table, affected_column, old_type, action
  FROM snowflake_convert_column('legacy', 'id')}),
		"legacy|id|integer|DEFAULT snowflake_nextval() replaces nextval('public.legacy_id_seq'::regclass); sequence public.legacy_id_seq dropped\n"
		  . 'legacy_lines|legacy_id|integer|references legacy(id) through legacy_lines_legacy_id_fkey',
		"$name: legacy.id converted, legacy_lines.legacy_id widened");
	is( $node->safe_psql(
			$db, q{
SELECT affected_table, old_type FROM snowflake_convert_column('legacy_lines', 'id')}),
		'legacy_lines|integer',
		"$name: legacy_lines.id converted");
	is( $node->safe_psql(
			$db, q{
SELECT string_agg(format('%s.%s %s %s', table_name, column_name, data_type,
                         column_default), ', ' ORDER BY table_name, column_name)
  FROM information_schema.columns
 WHERE table_name IN ('legacy', 'legacy_lines') AND column_name LIKE '%id'}),
		'legacy.id bigint snowflake_nextval(), '
		  . 'legacy_lines.id bigint snowflake_nextval(), '
		  . 'legacy_lines.legacy_id bigint ',
		"$name: the keys are bigint DEFAULT snowflake_nextval(), the reference bigint"
	);
}

# Inserts on both nodes, with snowflake IDs now.
for my $i (1, 2)
{
	$nodes[ $i - 1 ]->safe_psql(
		$db, qq{
WITH l AS (
    INSERT INTO legacy (origin, note)
    SELECT $i, 'snowflake ' || g FROM generate_series(1, 2000) AS g
    RETURNING id
)
INSERT INTO legacy_lines (legacy_id, origin) SELECT id, $i FROM l;
});
}
check_tables('converted keys', "t.id > $max_serial{legacy_lines}",
	qw(legacy legacy_lines));
for my $node (@nodes)
{
	is( $node->safe_psql(
			$db, qq{
SELECT count(*) FILTER (WHERE id <= $max_serial{legacy}),
       count(*) FILTER (WHERE id > $max_serial{legacy} AND note LIKE 'snowflake %'),
       count(*)
  FROM legacy}),
		'1000|4000|5000',
		$node->name . ': the serial rows kept their keys, new rows are above them');
	is( $node->safe_psql(
			$db, q{
SELECT count(*) FROM legacy_lines AS l
 WHERE NOT EXISTS (SELECT FROM legacy WHERE id = l.legacy_id)}),
		0,
		$node->name . ': every line has its parent');
}

# --- 4. pg_dump of node1, restored on node2's server ------------------------------

my $dump = $node1->basedir . '/legacy.sql';
$node1->command_ok(
	[
		'pg_dump', '-d', $node1->connstr($db),
		'-t', 'legacy', '-t', 'legacy_lines', '-f', $dump
	],
	'pg_dump of the converted tables of node1');
$node2->safe_psql('postgres', 'CREATE DATABASE restored');
$node2->safe_psql('restored', 'CREATE EXTENSION snowflake');
$node2->command_ok(
	[
		'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1',
		'-d', $node2->connstr('restored'), '-f', $dump
	],
	"the dump restores into a fresh database of node2's server");
for my $table (qw(legacy legacy_lines))
{
	is(SnowflakePglogical::digest($node2, $table, 'restored'),
		SnowflakePglogical::digest($node1, $table),
		"restored: $table holds the rows of node1");
}
is( $node2->safe_psql(
		'restored', q{
SELECT string_agg(format('%s.%s %s', table_name, column_name, column_default),
                  ', ' ORDER BY table_name, column_name)
  FROM information_schema.columns
 WHERE table_name IN ('legacy', 'legacy_lines') AND column_name = 'id'}),
	'legacy.id snowflake_nextval(), legacy_lines.id snowflake_nextval()',
	'restored: the keys default to snowflake_nextval()');
is( $node2->safe_psql(
		'restored', q{
WITH l AS (INSERT INTO legacy (origin, note) VALUES (2, 'restored') RETURNING id),
     ll AS (INSERT INTO legacy_lines (legacy_id, origin) SELECT id, 2 FROM l RETURNING id)
SELECT (SELECT id FROM l) > (SELECT max(id) FROM legacy WHERE note <> 'restored'),
       (SELECT d.node_id FROM l, snowflake_decode(l.id) AS d),
       (SELECT id FROM ll) > (SELECT max(id) FROM legacy_lines)}),
	't|2|t',
	'restored: a new row gets a node 2 ID above every restored one, and its line too');

# --- no conflicts, over the whole test ---------------------------------------------

is(SnowflakePglogical::conflicts($_), 0,
	'pglogical reported no conflict on ' . $_->name)
  for @nodes;

$_->stop for @nodes;
done_testing();
