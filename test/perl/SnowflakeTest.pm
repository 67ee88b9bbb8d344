# SnowflakeTest: small helpers that several TAP tests share.
package SnowflakeTest;

use strict;
use warnings;
use IPC::Run;
use PostgreSQL::Test::Utils;
use Time::HiRes;

# Starts psql in the background on $node's database "postgres", running
# @args (e.g. '-c', $sql), its output in "$dir/$name.out" and ".err".
# Returns the IPC::Run harness.
sub start_psql
{
	my ($node, $dir, $name, @args) = @_;
	my @cmd = (
		$node->installed_command('psql'), '-XAtq',
		'-v', 'ON_ERROR_STOP=1',
		'-d', $node->connstr('postgres'), @args);
	return IPC::Run::start(
		\@cmd, '>', "$dir/$name.out", '2>', "$dir/$name.err",
		IPC::Run::timeout($PostgreSQL::Test::Utils::timeout_default));
}

# How many rows of $table (columns id, session, n) have an id not above the
# previous one of the same session, in the order n.
sub out_of_order
{
	my ($node, $table) = @_;
	return $node->safe_psql(
		'postgres', qq{
SELECT count(*)
  FROM (SELECT id, lag(id) OVER (PARTITION BY session ORDER BY n) AS prev
          FROM $table) AS s
 WHERE id <= prev});
}

# Waits until $condition (a sub) returns true, polling every 50 ms, for at
# most the framework's timeout; then dies, naming $what, rather than hang.
# Returns true, so that ok() can report the state reached.
sub wait_until
{
	my ($condition, $what) = @_;
	my $deadline = Time::HiRes::time() + $PostgreSQL::Test::Utils::timeout_default;
	until ($condition->())
	{
		die "timed out waiting for $what" if Time::HiRes::time() > $deadline;
		Time::HiRes::usleep(50_000);
	}
	return 1;
}

1;
