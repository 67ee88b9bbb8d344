# SnowflakeClock: runs a test node under libfaketime, with a clock offset
# the test can change while the server runs.
#
# Each node gets its own offset file (in its base directory, beside the data
# directory).  Only the postmaster is started with libfaketime preloaded, so
# the node's own processes see the faked clock, while the test, psql and
# other nodes keep the real one.  CLOCK_MONOTONIC is never faked: the
# extension detects clock steps by comparing the two clocks.
#
#   SnowflakeClock::start($node, -3600);   # offset in seconds
#   SnowflakeClock::set_offset($node, -1); # step the running server's clock
#   SnowflakeClock::restart($node);        # keeps the current offset
#
# libfaketime re-reads the file only when its cache has expired, at most
# every FAKETIME_CACHE_DURATION (1) second, but as it counts whole seconds a
# process may see a change up to two seconds late.  set_offset() therefore
# waits until a new backend sees the offset, and then long enough for every
# running process to have re-read the file.
#
# A PostgreSQL 15 postmaster forks some children inside signal handlers,
# which interrupt its select().  libfaketime's select() wrapper turns faking
# off around the real call, so a child forked there keeps the real clock for
# its whole life.  Backends are forked outside the handlers and see the faked
# clock, but the "snowflake reservation" worker, started when recovery ends,
# does not (nor do the postmaster's own log lines from its handlers, which
# therefore show the real time).  refork_reservation_worker() ends the worker
# so that the postmaster starts it again from its main loop, under the faked
# clock.
package SnowflakeClock;

use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes ();
use SnowflakeTest;

my $libfaketime = '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1';

# How long after a change of the file every process has read it (seconds).
our $settle_seconds = 2.5;

# The offset file of a node.
sub offset_file
{
	my ($node) = @_;
	return $node->basedir . '/faketime.offset';
}

# The offset (seconds) last written for a node, or undef.
sub offset
{
	my ($node) = @_;
	my $file = offset_file($node);
	return undef unless -e $file;
	my $text = slurp_file($file);
	return $text + 0;
}

# Writes the offset file atomically: libfaketime may read it at any moment.
# "+0" rather than "0": libfaketime reads a bare "0" as an absolute time.
sub write_offset
{
	my ($node, $seconds) = @_;
	my $file = offset_file($node);
	open my $fh, '>', "$file.new" or die "could not write $file.new: $!";
	printf $fh "%+.3f\n", $seconds;
	close $fh or die "could not close $file.new: $!";
	rename "$file.new", $file or die "could not rename to $file: $!";
	return;
}

# The environment under which a node's postmaster runs faked.
sub faked_env
{
	my ($node) = @_;
	return (
		LD_PRELOAD => $libfaketime,
		FAKETIME_TIMESTAMP_FILE => offset_file($node),
		FAKETIME_DONT_FAKE_MONOTONIC => 1,
		FAKETIME_CACHE_DURATION => 1);
}

# Starts a node under faketime, with $seconds as its offset (default: the
# current one, or +0).  %params go to $node->start (fail_ok).
sub start
{
	my ($node, $seconds, %params) = @_;
	$seconds = offset($node) // 0 unless defined $seconds;
	write_offset($node, $seconds);
	local %ENV = (%ENV, faked_env($node));
	return $node->start(%params);
}

# Restarts a node under faketime, keeping or changing its offset.
sub restart
{
	my ($node, $seconds) = @_;
	write_offset($node, $seconds) if defined $seconds;
	local %ENV = (%ENV, faked_env($node));
	return $node->restart;
}

# Makes the node's "snowflake reservation" worker run under the faked clock
# (see above) by terminating it and waiting for its replacement.  The
# postmaster restarts it snowflake's bgw_restart_time (1 s) after the exit,
# measured between a real and a faked timestamp: call this while the offset
# is +0 (or ahead), or the restart waits as long as the clock is behind.
# Returns the new worker's pid.
sub refork_reservation_worker
{
	my ($node) = @_;
	my $query = q{SELECT pid FROM pg_stat_activity
	               WHERE backend_type = 'snowflake reservation'};
	my $old = $node->safe_psql('postgres', $query);
	die "no snowflake reservation worker is running" if $old eq '';
	$node->safe_psql('postgres', "SELECT pg_terminate_backend($old)");
	$node->poll_query_until('postgres',
		"SELECT count(*) = 1 AND min(pid) <> $old FROM ($query) AS w")
	  or die "the snowflake reservation worker was not restarted";
	return $node->safe_psql('postgres', $query);
}

# How far the node's clock is ahead of the test's (negative: behind), in
# seconds, as a new backend sees it; in list context also the uncertainty.
sub server_offset
{
	my ($node) = @_;
	my $before = Time::HiRes::time();
	my $server = $node->safe_psql('postgres',
		'SELECT extract(epoch FROM clock_timestamp())');
	my $after = Time::HiRes::time();
	my $offset = $server - ($before + $after) / 2;
	return wantarray ? ($offset, ($after - $before) / 2) : $offset;
}

# Steps the clock of a running node to $seconds off the real one, and waits
# until the server sees it (to within $tolerance seconds, default 0.25) and
# then until all its processes have re-read the offset.  Returns the offset
# a new backend measured.
sub set_offset
{
	my ($node, $seconds, $tolerance) = @_;
	$tolerance //= 0.25;
	write_offset($node, $seconds);
	my $measured;
	my $deadline = Time::HiRes::time() + $PostgreSQL::Test::Utils::timeout_default;
	while (1)
	{
		my ($offset, $error) = server_offset($node);
		$measured = $offset;
		last if abs($offset - $seconds) <= $tolerance + $error;
		die sprintf("the server clock is %.3f s off, not %.3f s", $offset, $seconds)
		  if Time::HiRes::time() > $deadline;
		Time::HiRes::sleep(0.1);
	}
	Time::HiRes::sleep($settle_seconds);
	note sprintf('node "%s": clock offset %+.3f s (measured %+.3f s)',
		$node->name, $seconds, $measured);
	return $measured;
}

# A node under faketime at +0, its reservation worker on the faked clock,
# with the extension and a table t whose id defaults to snowflake_nextval().
# %settings (timezone UTC and clock_wait_timeout 500 ms unless given) go to
# its postgresql.conf.
sub new_node
{
	my ($name, %settings) = @_;
	my $node = SnowflakeTest::new_node(
		$name,
		settings => {
			'snowflake.clock_wait_timeout' => '500ms',
			timezone => 'UTC',
			%settings
		},
		start => 0);
	start($node, 0);
	refork_reservation_worker($node);
	$node->safe_psql('postgres',
		'CREATE EXTENSION snowflake; '
		  . 'CREATE TABLE t (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), phase text)');
	return $node;
}

# Inserts a row of $phase into t on $node, checks that its ID is above the
# last one of @$ids and appends it; returns how far (seconds) the ID's
# timestamp lies ahead of the true time.  With checked => 1 the insert's
# success is a test of its own (undef when it failed).
sub insert
{
	my ($node, $ids, $phase, %opt) = @_;
	my ($ret, $id, $err) =
	  $node->psql('postgres', "INSERT INTO t (phase) VALUES ('$phase') RETURNING id");
	if ($opt{checked})
	{
		is($ret, 0, "$phase: snowflake_nextval() succeeds") or diag($err);
		return undef if $ret != 0;
	}
	die "$phase: the insert failed: $err" if $ret != 0;
	my $at = $node->safe_psql('postgres',
		"SELECT extract(epoch FROM snowflake_timestamp($id))");
	cmp_ok($id, '>', $ids->[-1], "$phase: the ID is above the one before") if @$ids;
	push @$ids, $id;
	return $at - Time::HiRes::time();
}

# Checks that no ID of @$ids occurs twice and, given $node, that t holds a
# row for each (every insert succeeded).
sub check_ids
{
	my ($ids, $node) = @_;
	my %seen;
	$seen{$_}++ for @$ids;
	is(scalar(grep { $seen{$_} > 1 } keys %seen), 0, 'no ID occurs twice');
	is($node->safe_psql('postgres', 'SELECT count(*) FROM t'),
		scalar(@$ids), 'every call succeeded')
	  if $node;
	return;
}

# Columns of the node's snowflake_status().
sub status
{
	my ($node, $columns) = @_;
	return $node->safe_psql('postgres', "SELECT $columns FROM snowflake_status()");
}

# Waits until $condition on snowflake_status() holds, or dies with $what.
sub wait_status
{
	my ($node, $condition, $what) = @_;
	$node->poll_query_until('postgres', "SELECT $condition FROM snowflake_status()")
	  or die "$what, on node " . $node->name;
	return;
}

# Returns once $seconds of real time have passed since $since: a
# confirmation is a duration, so a test waits for it, not for a state.
sub wait_until
{
	my ($since, $seconds) = @_;
	my $left = $since + $seconds - Time::HiRes::time();
	Time::HiRes::sleep($left) if $left > 0;
	return;
}

1;
