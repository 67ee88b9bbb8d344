# SnowflakeTest: small helpers that several TAP tests share.
package SnowflakeTest;

use strict;
use warnings;
use IPC::Run;
use POSIX ();
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

# Shared by 036-084

# Runs @command in the background in a process group of its own (so that
# it and what it starts can be killed at once), its output appended to $log,
# %$env added to its environment.  Returns its pid, the group's leader.
sub start_service
{
	my ($log, $env, @command) = @_;
	my $pid = fork();
	die "could not fork: $!" unless defined $pid;
	return $pid if $pid;
	POSIX::setsid();
	%ENV = (%ENV, %$env);
	open STDIN, '<', '/dev/null' or POSIX::_exit(126);
	open STDOUT, '>>', $log or POSIX::_exit(126);
	open STDERR, '>&', \*STDOUT or POSIX::_exit(126);
	exec(@command) or POSIX::_exit(127);
}

# Sends $signal to the service $pid and waits up to 30 s for it to exit;
# if it has not, kills its process group (SIGKILL) and reaps it.
sub stop_service
{
	my ($pid, $signal) = @_;
	kill $signal, $pid;
	my $deadline = Time::HiRes::time() + 30;
	Time::HiRes::sleep(0.1)
	  while waitpid($pid, POSIX::WNOHANG()) == 0 && Time::HiRes::time() < $deadline;
	if (waitpid($pid, POSIX::WNOHANG()) == 0)
	{
		kill 'KILL', -$pid;
		waitpid $pid, 0;
	}
	return;
}

# Waits until $node's registry completed rounds for 0.6 s after now: one
# check.
sub wait_registry_round
{
	my ($node) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	my $since = $node->safe_psql('postgres', 'SELECT clock_timestamp()');
	ok( $node->poll_query_until(
			'postgres',
			qq{SELECT registry_last_round > '$since'::timestamptz + interval '0.6 s'
			     FROM snowflake_status()}),
		$node->name . ': the registry completed rounds since');
	return;
}

# Polls $query on $node's "postgres" for up to $seconds (not the default
# 180 s, so that a stalled worker fails the test rather than outlasting it);
# true once it returns 't'.
sub true_within
{
	my ($node, $query, $seconds) = @_;
	my $end = Time::HiRes::time() + $seconds;
	while (Time::HiRes::time() < $end)
	{
		return 1 if $node->safe_psql('postgres', $query) eq 't';
		Time::HiRes::sleep(0.2);
	}
	return 0;
}

# Shared by 001-035

# Writes $text to $file, replacing what it held.
sub write_file
{
	my ($file, $text) = @_;
	open my $fh, '>', $file or die "could not write $file: $!";
	print $fh $text;
	close $fh or die "could not close $file: $!";
	return;
}

# A node, not started, whose postgresql.conf includes snowflake.conf last,
# written by write_settings; %opt as new_node's.
sub settings_node
{
	my ($name, %opt) = @_;
	my $node = new_node($name, %opt, conf => "include 'snowflake.conf'\n", start => 0);
	write_settings($node);
	return $node;
}

# Replaces $node's snowflake.conf: the preload list (preload => ..., default
# snowflake) and the snowflake.* %settings.
sub write_settings
{
	my ($node, %settings) = @_;
	my $preload = delete $settings{preload} // 'snowflake';
	write_file($node->data_dir . '/snowflake.conf',
		join('', "shared_preload_libraries = '$preload'\n",
			map { "snowflake.$_ = '$settings{$_}'\n" } sort keys %settings));
	return;
}

# Kills backend $pid with SIGKILL and waits until the server has restarted
# (two checks); returns the log offset before the kill.
sub crash_backend
{
	my ($node, $pid) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	my $offset = -s $node->logfile;
	ok(kill('KILL', $pid), "SIGKILL sent to backend $pid");
	$node->wait_for_log(qr/all server processes terminated; reinitializing/, $offset);
	# Polling earlier can fail: a psql that cannot connect exits unread.
	$node->wait_for_log(qr/database system is ready to accept connections/, $offset);
	ok($node->poll_query_until('postgres', 'SELECT true'),
		'the server accepts connections again after the crash restart');
	return $offset;
}

# A layout with 3 node and 7 worker bits as the server's messages name it.
sub layout_text
{
	my ($epoch, $seq_bits) = @_;
	return "epoch $epoch 00:00:00+00, 3 node bits, 7 worker bits, $seq_bits sequence bits";
}

1;
