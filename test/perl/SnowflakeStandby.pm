# SnowflakeStandby: a primary that preloads snowflake with streaming
# standbys, and the load the failover tests put on it: sessions committing
# rows of "ids" and sessions streaming IDs to their client, whose IDs the
# test then checks.  Used by 009, 010, 011, 016, 022, 037 and 043.
#
#   my ($primary, $standby) = SnowflakeStandby::primary_with_standbys(
#       sql => $SnowflakeStandby::ids_schema);
#   ok(SnowflakeStandby::make_synchronous($primary), ...);
#   my @runs = SnowflakeStandby::start_load($primary, $dir, inserters => 3, streamers => 2);
#   ... the primary is lost ...
#   my ($streamed, $max) = SnowflakeStandby::check_streams($dir, 2);
package SnowflakeStandby;

use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeClock;
use SnowflakeTest;

# The table the load commits to, and the procedure that commits it: CALL
# generate(s) commits batches of 100 rows of session s, numbered in call
# order, until it is ended.
our $ids_schema = q{
CREATE TABLE ids (
    id      bigint PRIMARY KEY DEFAULT snowflake_nextval(),
    session integer NOT NULL,
    n       integer NOT NULL
);
-- Commits batches of 100 rows, numbered in call order, until it is ended.
CREATE PROCEDURE generate(s integer) LANGUAGE plpgsql AS $$
DECLARE
    done integer := 0;
BEGIN
    LOOP
        INSERT INTO ids (session, n)
        SELECT s, done + g FROM generate_series(1, 100) AS g;
        done := done + 100;
        COMMIT;
    END LOOP;
END $$;
};

# A query that returns rows for ever, generate_series() in the select list,
# not in FROM, where its result would be materialized before the first row.
our $endless = '(SELECT generate_series(1, 1000000000)) AS g';

# Returns a started primary "primary" (allows_streaming, snowflake preloaded
# with %opt{settings} and %opt{conf} as in SnowflakeTest::new_node, the
# extension created in "postgres", then %opt{sql} run there) and a standby
# of it for each name of %opt{standbys} (default: "standby"), made from one
# base backup and started unless start_standbys => 0.
sub primary_with_standbys
{
	my (%opt) = @_;
	my $primary = SnowflakeTest::new_node(
		$opt{name} // 'primary',
		init => [ allows_streaming => 1 ],
		settings => $opt{settings} // {},
		conf => $opt{conf} // '',
		extension => 'postgres');
	$primary->safe_psql('postgres', $opt{sql}) if defined $opt{sql};
	$primary->backup('base');
	my @standbys;
	for my $name (@{ $opt{standbys} // ['standby'] })
	{
		my $standby = PostgreSQL::Test::Cluster->new($name);
		$standby->init_from_backup($primary, 'base', has_streaming => 1);
		$standby->start unless defined $opt{start_standbys} && !$opt{start_standbys};
		push @standbys, $standby;
	}
	return ($primary, @standbys);
}

# Makes $primary replicate synchronously to any standby and waits until one
# does; returns whether one did.
sub make_synchronous
{
	my ($primary) = @_;
	$primary->append_conf('postgresql.conf', "synchronous_standby_names = '*'\n");
	$primary->reload;
	return $primary->poll_query_until(
		'postgres', q{
SELECT count(*) = 1 FROM pg_stat_replication WHERE sync_state = 'sync'});
}

# Starts $node (stopped) under libfaketime $seconds behind the real clock,
# and checks that a new session there sees it so.  The margin grows with the
# query's round trip, which a loaded machine can stretch past a second.
sub start_behind
{
	my ($node, $seconds, $margin, $what) = @_;
	SnowflakeClock::start($node, -$seconds);
	check_behind($node, $seconds, $margin, $what);
	return;
}

# The check of start_behind(), for a node started otherwise.
sub check_behind
{
	my ($node, $seconds, $margin, $what) = @_;
	my ($offset, $uncertainty) = SnowflakeClock::server_offset($node);
	ok(abs($offset + $seconds) < $margin + $uncertainty,
		sprintf('%s (%.3f s, +/- %.3f s)', $what, $offset, $uncertainty));
	return;
}

# Starts the load on $node in the background (SnowflakeTest::start_psql,
# output in $dir): %opt{inserters} sessions "insert_N" that CALL
# generate(N), and %opt{streamers} sessions "stream_N" that stream IDs to
# their client through a cursor, so that IDs reach it while they are made.
# Returns the harnesses.
sub start_load
{
	my ($node, $dir, %opt) = @_;
	my @runs;
	push @runs, SnowflakeTest::start_psql($node, $dir, "insert_$_", '-c', "CALL generate($_)")
	  for 1 .. ($opt{inserters} // 0);
	push @runs,
	  SnowflakeTest::start_psql($node, $dir, "stream_$_", '-v', 'FETCH_COUNT=1000', '-c',
		"SELECT snowflake_nextval() FROM $endless")
	  for 1 .. ($opt{streamers} // 0);
	return @runs;
}

# Waits until each of the $streamers streams has written output to its
# client; returns true (or dies).
sub wait_streaming_ids
{
	my ($dir, $streamers) = @_;
	return SnowflakeTest::wait_until(
		sub { !grep { !-s "$dir/stream_$_.out" } 1 .. $streamers },
		'output from every stream');
}

# Waits until $node has written reservations; returns whether it did.
sub wait_reservations
{
	my ($node) = @_;
	return $node->poll_query_until('postgres',
		'SELECT reservations > 0 FROM snowflake_status()');
}

# Reads the IDs each of the $streamers streams in $dir saw (whole lines
# only) and checks that they strictly increase, one check a stream, after
# one that the stream saw any if %opt{nonempty} names where from.  The IDs
# are copied to the file %opt{into}, if given.  Returns how many IDs the
# streams saw and the largest.
sub check_streams
{
	my ($dir, $streamers, %opt) = @_;
	my ($streamed, $max_streamed) = (0, 0);
	my $all;
	if (defined $opt{into})
	{
		open $all, '>', $opt{into} or die "could not write $opt{into}: $!";
	}
	for my $s (1 .. $streamers)
	{
		my ($count, $decreases, $prev) = (0, 0, 0);
		open my $in, '<', "$dir/stream_$s.out" or die "could not read stream $s: $!";
		while (my $line = <$in>)
		{
			next unless $line =~ /^(\d+)\n\z/;
			$decreases++ if $1 <= $prev;
			$prev = $1;
			$count++;
			print $all $line if $all;
		}
		close $in;
		cmp_ok($count, '>', 0, "stream $s saw IDs $opt{nonempty}") if defined $opt{nonempty};
		is($decreases, 0, "stream $s saw strictly increasing IDs ($count)");
		$streamed += $count;
		$max_streamed = $prev if $prev > $max_streamed;
	}
	if ($all)
	{
		close $all or die "could not close $opt{into}: $!";
	}
	return ($streamed, $max_streamed);
}

# Runs snowflake_nextval() in a new session of $node with VERBOSITY
# verbose; returns psql's exit code, stdout and stderr.
sub nextval_verbose
{
	my ($node) = @_;
	my ($stdout, $stderr);
	my $rc = $node->psql(
		'postgres', q(
\set VERBOSITY verbose
SELECT snowflake_nextval();
),
		stdout => \$stdout,
		stderr => \$stderr);
	return ($rc, $stdout, $stderr);
}

# Runs snowflake_nextval() on $node, which is in recovery, with VERBOSITY
# verbose, and checks that it fails with SQLSTATE 25006 and the documented
# message and issues nothing ($where names the node in the checks' names:
# "on the hot standby").  Returns its stderr, for more checks.
sub check_nextval_refused
{
	my ($node, $where, $issues_nothing) = @_;
	my ($rc, $stdout, $stderr) = nextval_verbose($node);
	isnt($rc, 0, "snowflake_nextval() fails $where");
	is($stdout, '', $issues_nothing);
	like(
		$stderr,
		qr/\bERROR:  25006: cannot generate snowflake IDs during recovery$/m,
		'SQLSTATE 25006 and the documented message');
	return $stderr;
}

1;
