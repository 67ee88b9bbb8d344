# SnowflakeTest: small helpers that several TAP tests share.
package SnowflakeTest;

use strict;
use warnings;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes;

# Returns a node named $name that preloads snowflake: initialized (with
# init => [...] passed to init(), e.g. allows_streaming => 1), its settings
# appended, and started unless start => 0.  Options:
#   settings => { name => value, ... }  written as name = 'value', in the
#                order of the names ('snowflake.node_id' => 5)
#   conf     => text appended verbatim after them (include lines, comments)
#   install  => [...] passed to PostgreSQL::Test::Cluster->new
#   extension => a database (or [databases]) to CREATE EXTENSION snowflake in
sub new_node
{
	my ($name, %opt) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name, @{ $opt{install} // [] });
	$node->init(@{ $opt{init} // [] });
	$node->append_conf('postgresql.conf', node_conf(%{ $opt{settings} // {} })
		  . ($opt{conf} // ''));
	return $node if defined $opt{start} && !$opt{start};
	$node->start;
	my $dbs = $opt{extension} // [];
	$node->safe_psql($_, 'CREATE EXTENSION snowflake') for (ref $dbs ? @$dbs : ($dbs));
	return $node;
}

# The postgresql.conf lines that preload snowflake with %settings (see
# new_node), for a node made some other way (a standby, pg_upgrade's new
# cluster).
sub node_conf
{
	my (%settings) = @_;
	my $conf = "shared_preload_libraries = 'snowflake'\n";
	for my $key (sort keys %settings)
	{
		(my $value = $settings{$key}) =~ s/'/''/g;
		$conf .= "$key = '$value'\n";
	}
	return $conf;
}

# The major version of the PostgreSQL that pg_config on PATH names.
sub pg_major
{
	my ($major) = `pg_config --version` =~ /^PostgreSQL (\d+)/;
	die "pg_config on PATH did not answer" unless defined $major;
	return $major;
}

# For a component Debian packages for PostgreSQL 15 only (test/install-deps.sh
# installs it there): returns quietly when $present is true; on 15 dies,
# naming the package; elsewhere skips the whole test, saying $why.
sub require_tool
{
	my ($present, $what, $package, $why) = @_;
	return if $present;
	my $major = pg_major();
	die "$what is not installed: test/install-deps.sh installs $package" if $major == 15;
	plan skip_all => "$what is not installed for PostgreSQL $major ($why)";
}

# The first executable $program in @dirs or on PATH, or undef.
sub find_program
{
	my ($program, @dirs) = @_;
	my ($found) = grep { -x $_ } map { "$_/$program" } (@dirs, split(/:/, $ENV{PATH} // ''));
	return $found;
}

# Starts $node expecting the start to fail: one check, named $what, that it
# did not start (if it did, it is stopped again).  Returns what the server
# logged meanwhile, for the checks of why.
sub start_refused
{
	my ($node, $what) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	my $offset = -s $node->logfile;
	my $started = $node->start(fail_ok => 1);
	ok(!$started, $what);
	$node->stop if $started;
	return slurp_file($node->logfile, $offset);
}

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

# Opens the gates: waits until $sessions sessions on each node of @$nodes
# wait in database $db for the shared advisory lock $key that the node's
# background session $gates->{name} holds, releases them all at once, then
# checks that each run of @$runs ({name, run}, output in "$dir/NAME.err")
# finished, and closes the gate sessions.
sub open_gates
{
	my ($nodes, $db, $key, $sessions, $gates, $runs, $dir) = @_;
	for my $node (@$nodes)
	{
		ok( $node->poll_query_until(
				$db, qq{
SELECT count(*) = $sessions FROM pg_locks
 WHERE locktype = 'advisory' AND objid = $key AND mode = 'ShareLock' AND NOT granted}),
			$node->name . ": all $sessions sessions wait at the gate");
	}
	$gates->{ $_->name }->query_safe("SELECT pg_advisory_unlock($key)") for @$nodes;
	for my $run (@$runs)
	{
		ok($run->{run}->finish, "$run->{name} inserted its rows")
		  or diag(slurp_file("$dir/$run->{name}.err"));
	}
	$gates->{ $_->name }->quit for @$nodes;
	return;
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
