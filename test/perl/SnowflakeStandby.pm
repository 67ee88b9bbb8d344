# SnowflakeStandby: a primary that preloads snowflake with streaming
# standbys, and the failover tests' load on it: sessions committing rows of
# "ids" and sessions streaming IDs to their client.
#
#   my ($primary, $standby) = SnowflakeStandby::primary_with_standbys(
#       sql => $SnowflakeStandby::ids_schema);
#   my @runs = SnowflakeStandby::start_load($primary, $dir, inserters => 3, streamers => 2);
#   my ($streamed, $max) = SnowflakeStandby::check_streams($dir, 2);
package SnowflakeStandby;

use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeClock;
use SnowflakeTest;

# The table the load commits to; CALL generate(s) commits batches of 100
# rows of session s, numbered in call order, until it is ended.
our $ids_schema = q{
CREATE TABLE ids (
    id      bigint PRIMARY KEY DEFAULT snowflake_nextval(),
    session integer NOT NULL,
    n       integer NOT NULL
);
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

# Rows for ever: generate_series() in the select list is not materialized.
our $endless = '(SELECT generate_series(1, 1000000000)) AS g';

# Returns a started primary "primary" (%opt{settings} and %opt{conf} as in
# SnowflakeTest::new_node, the extension and %opt{sql} in "postgres") and a
# standby from one base backup for each name of %opt{standbys} (default
# "standby"), started unless start_standbys => 0.
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
# and checks that a new session sees it so (the margin grows with the query's
# round trip).
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

# Starts in the background (output in $dir) %opt{inserters} sessions
# "insert_N" that CALL generate(N) and %opt{streamers} sessions "stream_N"
# that stream IDs to their client through a cursor; returns the harnesses.
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

# Checks that the IDs each of the $streamers streams in $dir saw (whole lines)
# strictly increase, after a check that it saw any if %opt{nonempty} names
# where from; copies them to %opt{into} if given.  Returns their count and
# the largest.
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
	return $node->psql('postgres', "\\set VERBOSITY verbose\nSELECT snowflake_nextval();");
}

# Checks that snowflake_nextval() on $node, in recovery, fails with 25006 and
# the documented message and issues nothing ($where, e.g. "on the hot
# standby", goes into the checks' names).  Returns its stderr.
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
