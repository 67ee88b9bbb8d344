# The JavaScript-safe layout (2 node, 2 worker, 8 sequence bits): every ID of
# its 69.7 years stays below 2^53.  Eight sessions at once on node 3 take many
# IDs, each below 2^53, unique, increasing per session, its bits the decoded
# fields; the 2^53 line falls right after the layout's 2^41st millisecond.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeTest;

my $sessions = 8;
my $per_session = 20000;

my $node = SnowflakeTest::new_node(
	'jssafe',
	settings => {
		'snowflake.node_bits' => 2,
		'snowflake.worker_bits' => 2,
		'snowflake.sequence_bits' => 8,
		'snowflake.node_id' => 3,
		timezone => 'UTC'
	},
	extension => 'postgres');
$node->safe_psql(
	'postgres', q{
CREATE TABLE ids (id bigint PRIMARY KEY, session integer NOT NULL, n integer NOT NULL);
});

is( $node->safe_psql(
		'postgres', 'SELECT timestamp_bits, node_bits + worker_bits + sequence_bits
                       FROM snowflake_status()'),
	'51|12',
	'12 bits below the timestamp');

my @harnesses;
for my $s (1 .. $sessions)
{
	push @harnesses,
	  SnowflakeTest::start_psql(
		$node, $node->basedir, "session$s", '-c', qq{
INSERT INTO ids (id, session, n)
SELECT snowflake_nextval(), $s, g FROM generate_series(1, $per_session) AS g});
}
$_->finish for @harnesses;

is($node->safe_psql('postgres', 'SELECT count(*) FROM ids'),
	$sessions * $per_session, 'every session inserted all its IDs (no duplicate key)');
is($node->safe_psql('postgres', 'SELECT count(*) FROM ids WHERE id >= 2^53'),
	0, 'every ID is below 2^53');
is(SnowflakeTest::out_of_order($node, 'ids'), 0, 'IDs increase within each session');
is( $node->safe_psql(
		'postgres', q{
SELECT count(*) FROM ids, snowflake_decode(id) AS d
 WHERE d.node_id <> 3
    OR id <> ((extract(epoch FROM d.ts - timestamptz '2025-01-01 00:00:00+00') * 1000)::bigint << 12)
             | (d.node_id::bigint << 10) | (d.worker_id::bigint << 8) | d.seq
}),
	0,
	'every ID decodes exactly: node 3, and its bits are the decoded fields');

# The 2^53 line: the last millisecond below it is the 2^41st of the layout.
is( $node->safe_psql(
		'postgres', q{
SELECT snowflake_max_id(t) = 2^53 - 1, snowflake_min_id(t + interval '1 ms') = 2^53, t
  FROM (SELECT timestamptz '2025-01-01 00:00:00+00'
               + ((2^41 - 1)::bigint * interval '1 ms') AS t) AS x
}),
	't|t|2094-09-07 15:47:35.551+00',
	'IDs stay below 2^53 until 2094-09-07 15:47:35.551, 69.7 years after the epoch');

$node->stop;
done_testing();
