# The node registry and snowflake_convert_column() on two-node bidirectional
# pglogical (registry_interval 500 ms): heartbeats replicate; node 2 restarted
# with node 1's id is detected on both nodes within 30 s (WARNING naming the
# other instance, node_collision), refused with on_node_collision = error
# (55000) and cleared with its own id back; serial keys replicate, are
# converted on each node and new IDs replicate; a pg_dump of node 1's
# converted tables restores on node 2 with IDs of node 2 above the restored
# ones.  pglogical reports no conflict on either node.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes ();
use SnowflakePglogical;
use SnowflakeTwoPrimaries;

my $db = $SnowflakePglogical::db;
my $interval_ms = 500;
# A timed promise (docs/multi-primary.md): a quiet machine detects the
# collision in a few seconds, so 30 s leaves ten times that for a loaded one.
my $detection_bound = 30;    # seconds

my ($node1, $node2) = SnowflakePglogical::create_pair();
my @nodes = ($node1, $node2);

my $pair = SnowflakeTwoPrimaries->new(\@nodes,
	wait_caught_up => sub { SnowflakePglogical::wait_caught_up(\@nodes) });

# Serial keys on both nodes, kept apart the usual pre-snowflake way: node 1
# issues odd values, node 2 even ones.
for my $node (@nodes)
{
	$node->safe_psql(
		$db, q{
CREATE TABLE events (
    id     bigint PRIMARY KEY DEFAULT snowflake_nextval(),
    origin integer NOT NULL
);
} . SnowflakeTwoPrimaries::legacy_schema(SnowflakeTwoPrimaries::number($node))
		  . $SnowflakeTwoPrimaries::try_nextval);
}
SnowflakePglogical::connect_pair(\@nodes,
	qw(events legacy legacy_lines snowflake_nodes));
pass('both subscriptions replicate, and both nodes registered');

# --- 1. heartbeats replicate ----------------------------------------------------
$pair->check_heartbeats;

# --- 2. a node-id collision -------------------------------------------------------
my @offsets = map { -s $_->logfile } @nodes;
$node2->safe_psql($db, 'ALTER SYSTEM SET snowflake.node_id = 1');
my $restarted = Time::HiRes::time;
$node2->restart;
SnowflakePglogical::wait_replicating($_) for @nodes;
my $replicating = Time::HiRes::time;
my $took = $pair->wait_collision('t');
ok(defined $took && $took < $detection_bound,
	"both nodes detect the collision within $detection_bound s of replicating again")
  or diag('took ' . ($took // 'forever'));
diag(
	sprintf(
		'collision detected %.1f s after both subscriptions replicated, '
		  . '%.1f s after node2 restarted',
		$took // -1, Time::HiRes::time - $restarted));
is(SnowflakeTwoPrimaries::status($_), '1|t', $_->name . ': node_id 1 and node_collision')
  for @nodes;

$pair->check_collision_warnings(\@offsets);
$pair->check_collision_policies('INSERT INTO events (origin) VALUES (0)', 1);

# Node 2 gets its own id back.
@offsets = map { -s $_->logfile } @nodes;
$node2->safe_psql($db, 'ALTER SYSTEM RESET snowflake.node_id');
$node2->restart;
SnowflakePglogical::wait_replicating($_) for @nodes;
$took = $pair->wait_collision('f');
ok(defined $took && $took < $detection_bound,
	"the collision clears on both nodes within $detection_bound s")
  or diag('took ' . ($took // 'forever'));
is(SnowflakeTwoPrimaries::status($node1), '1|f', 'node1: node_id 1, no collision');
is(SnowflakeTwoPrimaries::status($node2), '2|f', 'node2: node_id 2 again, no collision');
# The registry clears the finding before it writes the line: wait for it.
ok( defined eval {
		$node1->wait_for_log(
			qr/snowflake node_id 1 is no longer used by another running instance/,
			$offsets[0]);
	},
	'node1 logs that the collision is over');
is($_->safe_psql($db, 'SELECT try_nextval()'),
	'ok', $_->name . ': generation resumes, on_node_collision still error')
  for @nodes;
$nodes[ $_ - 1 ]->safe_psql($db,
	"INSERT INTO events (origin) SELECT $_ FROM generate_series(1, 1000)")
  for 1, 2;
$pair->check_tables('after the collision', 'true', 'events');

# --- 3. converting serial keys on both nodes ------------------------------------
# Rows on both nodes, from the odd and even serial values.
$pair->insert_legacy('serial', 500);
$pair->check_tables('serial keys', undef, qw(legacy legacy_lines));
my %max_serial = map {
	$_ => $node1->safe_psql($db, "SELECT max(id) FROM $_")
} qw(legacy legacy_lines);

# With writes paused, on each node.  The function runs under a pinned
# search_path, so the old default names its sequence with the schema.
for my $node (@nodes)
{
	my $name = $node->name;
	SnowflakeTwoPrimaries::convert_legacy($node);
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
$pair->insert_legacy('snowflake', 2000);
$pair->check_tables('converted keys', "t.id > $max_serial{legacy_lines}",
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
	is(SnowflakeTwoPrimaries::digest($node2, $table, 'restored'),
		SnowflakeTwoPrimaries::digest($node1, $table),
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
