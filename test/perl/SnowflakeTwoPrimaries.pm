# SnowflakeTwoPrimaries: what the tests of two primaries replicating one
# database to each other share (pglogical in 014, native logical replication
# in 035): node N is "nodeN" with snowflake.node_id N, its changes reach the
# other node through subscription "from_nodeN", snowflake_nodes replicates.
#
#   my $pair = SnowflakeTwoPrimaries->new([ $node1, $node2 ], wait_caught_up => sub { ... });
#   $pair->check_heartbeats;
#   $pair->check_tables('after the inserts', 'true', 'items');
package SnowflakeTwoPrimaries;

use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes ();
use Exporter 'import';

our @EXPORT_OK = qw(number sub_of status instance digest wait_streaming);

# The replicated database.
our $db = 'app';

# The outcome of one call of snowflake_nextval(): 'ok' or the error.
our $try_nextval = q{
CREATE FUNCTION try_nextval() RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    PERFORM snowflake_nextval();
    RETURN 'ok';
EXCEPTION WHEN others THEN
    RETURN SQLSTATE || ': ' || SQLERRM;
END
$$;
};

# The error of snowflake_nextval() when both nodes have node id 1 and
# snowflake.on_node_collision = error, after its SQLSTATE.
our $refusal = '55000: snowflake node_id 1 is also used by another running instance';

# The pair of $nodes (node1, node2).  %opt: wait_caught_up, a sub that waits
# until each subscriber applied what its node had written (default: native).
sub new
{
	my ($class, $nodes, %opt) = @_;
	my $self = bless { nodes => [@$nodes], %opt }, $class;
	$self->{wait_caught_up} //= sub { wait_caught_up_native($self->{nodes}) };
	return $self;
}

sub nodes
{
	my ($self) = @_;
	return @{ $self->{nodes} };
}

sub wait_caught_up
{
	my ($self) = @_;
	$self->{wait_caught_up}->();
	return;
}

# The number N of node "nodeN", its snowflake.node_id unless changed.
sub number
{
	my ($node) = @_;
	my ($n) = $node->name =~ /(\d+)$/;
	return $n;
}

# The subscription on the other node that replicates $node's changes (and,
# natively, its walsender's application_name).
sub sub_of
{
	my ($node) = @_;
	return 'from_' . $node->name;
}

sub other
{
	my ($self, $node) = @_;
	my ($other) = grep { $_->name ne $node->name } $self->nodes;
	return $other;
}

sub status
{
	my ($node) = @_;
	return $node->safe_psql($db, 'SELECT node_id, node_collision FROM snowflake_status()');
}

sub instance
{
	my ($node) = @_;
	return $node->safe_psql($db, 'SELECT instance_id FROM snowflake_status()');
}

# A digest of a table's rows in $dbname (default "app"): count, sum of ids,
# md5 of the rows ordered by id.
sub digest
{
	my ($node, $table, $dbname) = @_;
	return $node->safe_psql(
		$dbname // $db, qq{
SELECT count(*), coalesce(sum(id), 0),
       md5(coalesce(string_agg(t::text, ',' ORDER BY id), ''))
  FROM $table AS t});
}

# With native logical replication: waits until the other node's
# subscription to $node streams from it.
sub wait_streaming
{
	my ($node) = @_;
	my $sub = sub_of($node);
	$node->poll_query_until(
		$db, qq{
SELECT count(*) = 1 FROM pg_stat_replication
 WHERE application_name = '$sub' AND state = 'streaming'})
	  or die "the subscription $sub does not stream from " . $node->name;
	return;
}

# With native logical replication: waits until each node's subscriber has
# applied everything the node had written when the wait began.
sub wait_caught_up_native
{
	my ($nodes) = @_;
	wait_streaming($_) for @$nodes;
	$_->wait_for_catchup(sub_of($_)) for @$nodes;
	return;
}

# Each node sees the other's running instance in snowflake_nodes, its beat
# count growing, with the other's node id and port, and no collision.
# Returns the instance of each node, by name.
sub check_heartbeats
{
	my ($self) = @_;
	my %instance = map { $_->name => instance($_) } $self->nodes;
	for my $node ($self->nodes)
	{
		my $seen = $self->other($node);
		my $other = $instance{ $seen->name };
		my $before = $node->safe_psql($db,
			"SELECT coalesce(max(beats), 0) FROM snowflake_nodes WHERE instance_id = '$other'");
		ok( $node->poll_query_until(
				$db,
				"SELECT beats > $before FROM snowflake_nodes WHERE instance_id = '$other'"),
			$node->name . ' sees the heartbeats of ' . $seen->name . ' grow');
		is( $node->safe_psql(
				$db,
				"SELECT node_id, port FROM snowflake_nodes WHERE instance_id = '$other'"),
			number($seen) . '|' . $seen->port,
			$node->name . "'s snowflake_nodes names the other node's id and port");
		is(status($node), number($node) . '|f', $node->name . ': no collision');
	}
	return %instance;
}

# Polls until every node's node_collision is $want; returns the seconds it
# took, or undef.
sub wait_collision
{
	my ($self, $want) = @_;
	my $start = Time::HiRes::time;
	for my $node ($self->nodes)
	{
		$node->poll_query_until($db, 'SELECT node_collision FROM snowflake_status()', $want)
		  or return undef;
	}
	return Time::HiRes::time - $start;
}

# With node 2 on node 1's id, checks that each node's registry WARNING (log
# from $offsets->[i]) names the other node's instance and port.
sub check_collision_warnings
{
	my ($self, $offsets) = @_;
	my %instance_now = map { $_->name => instance($_) } $self->nodes;
	my @nodes = $self->nodes;
	for my $i (0 .. $#nodes)
	{
		my $node = $nodes[$i];
		my $other = $self->other($node);
		my $other_instance = $instance_now{ $other->name };
		my $other_port = $other->port;
		$node->wait_for_log(qr/WARNING:  snowflake node_id 1 is also used/, $offsets->[$i]);
		like(
			slurp_file($node->logfile, $offsets->[$i]),
			qr/WARNING:  \Qsnowflake node_id 1 is also used by another running instance\E\n[^\n]*DETAIL:  \Qsnowflake_nodes shows instance $other_instance on host \E\S+ port $other_port\b/,
			$node->name . ' logs a WARNING whose DETAIL names the other instance');
	}
	return %instance_now;
}

# With both nodes on node id 1: under on_node_collision = warn IDs are issued;
# with error, snowflake_nextval() and $insert fail with 55000 (and the HINT).
sub check_collision_policies
{
	my ($self, $insert, $hint) = @_;
	is($_->safe_psql($db, 'SELECT try_nextval()'),
		'ok', $_->name . ': on_node_collision = warn still issues IDs')
	  for $self->nodes;
	$_->safe_psql($db,
		"ALTER SYSTEM SET snowflake.on_node_collision = 'error'; SELECT pg_reload_conf()")
	  for $self->nodes;
	for my $node ($self->nodes)
	{
		my $name = $node->name;
		ok($node->poll_query_until($db, 'SELECT try_nextval()', $refusal),
			"$name: with on_node_collision = error, snowflake_nextval() fails");
		my (undef, $stdout, $stderr) = $node->psql($db, "\\set VERBOSITY verbose\n$insert RETURNING id;");
		is($stdout, '', "$name: no row is inserted");
		like($stderr, qr/ERROR:  \Q$refusal\E$/m, "$name: the error and SQLSTATE 55000");
		like(
			$stderr,
			qr/^HINT:  \QGive each primary its own snowflake.node_id.\E$/m,
			"$name: the HINT")
		  if $hint;
	}
	return;
}

# Both nodes hold the same rows of @tables after catch-up, and the IDs of the
# rows $where selects (undef: none) decode to the node in "origin".
sub check_tables
{
	my ($self, $what, $where, @tables) = @_;
	$self->wait_caught_up;
	my ($node1, $node2) = $self->nodes;
	for my $table (@tables)
	{
		my $one = digest($node1, $table);
		is(digest($node2, $table), $one, "$what: $table is identical on both nodes ($one)");
		next unless defined $where;
		is( $_->safe_psql(
				$db, qq{
SELECT count(*) FROM $table AS t, snowflake_decode(t.id) AS d
 WHERE ($where) AND d.node_id <> t.origin}),
			0,
			"$what: the IDs of $table on " . $_->name . ' decode to the node that inserted them')
		  for $self->nodes;
	}
	return;
}

# --- serial keys converted on both nodes ---------------------------------------------

# The tables "legacy" and "legacy_lines" with serial keys, odd on node 1 and
# even on node 2 (node $n).
sub legacy_schema
{
	my ($n) = @_;
	return qq{
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
ALTER SEQUENCE legacy_id_seq INCREMENT BY 2 RESTART WITH $n;
ALTER SEQUENCE legacy_lines_id_seq INCREMENT BY 2 RESTART WITH $n;
};
}

# Inserts $count rows of legacy, noted "$note N", each with a line, on each
# node, with the node's number as their origin.
sub insert_legacy
{
	my ($self, $note, $count) = @_;
	for my $node ($self->nodes)
	{
		my $n = number($node);
		$node->safe_psql(
			$db, qq{
WITH l AS (
    INSERT INTO legacy (origin, note)
    SELECT $n, '$note ' || g FROM generate_series(1, $count) AS g
    RETURNING id
)
INSERT INTO legacy_lines (legacy_id, origin) SELECT id, $n FROM l;
});
	}
	return;
}

# Converts the keys of legacy and legacy_lines on $node, checking the report.
sub convert_legacy
{
	my ($node) = @_;
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
	return;
}

1;
