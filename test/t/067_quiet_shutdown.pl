# The extension's background workers stop quietly, and a terminated one
# outside a shutdown is restarted.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeTest;

my @automatic = ('snowflake reservation', 'snowflake registry launcher', 'snowflake registry');

# Waits until each of @types runs once; returns their pids by type.
sub wait_for_workers
{
	my ($node, @types) = @_;
	my $list = join ', ', map { "'$_'" } @types;
	$node->poll_query_until('postgres',
		"SELECT count(DISTINCT backend_type) = " . scalar(@types)
		  . " FROM pg_stat_activity WHERE backend_type IN ($list)")
	  or die "the workers $list did not start";
	my %pids = map { split /\|/ } split /\n/, $node->safe_psql('postgres',
		"SELECT backend_type, pid FROM pg_stat_activity WHERE backend_type IN ($list)");
	return \%pids;
}

# Stops $node in $mode and checks what its log says from the stop on.
sub check_quiet_stop
{
	my ($node, $mode, @types) = @_;
	wait_for_workers($node, @types);
	my $offset = -s $node->logfile;
	$node->stop($mode);
	my $log = slurp_file($node->logfile, $offset);
	# A backend of the test's own last psql may still be exiting: the fast
	# stop's FATAL to it says nothing of snowflake.
	my $own = qr/\Q$ENV{PGAPPNAME}\E FATAL:  terminating connection due to administrator command/;
	my @loud = grep { /\b(WARNING|ERROR|FATAL|PANIC):/ && !/$own/ } split /\n/, $log;
	is_deeply(\@loud, [], "$mode stop: nothing at WARNING or above")
	  or diag($log);
	# PostgreSQL's logical replication launcher exits with 1 (so it restarts).
	unlike($log, qr/background worker "snowflake[^"]*" \(PID \d+\) exited with exit code [^0]/,
		"$mode stop: no snowflake worker exits with another code than 0");
	like($log, qr/background worker "\Q$_\E" \(PID \d+\) exited with exit code 0/,
		"$mode stop: $_ exits with code 0")
	  for @types;
	like($log, qr/database system is shut down/, "$mode stop: the server stopped");
}

my $node = SnowflakeTest::new_node('quiet',
	settings => { 'snowflake.database' => '', log_min_messages => 'debug1' },
	extension => 'postgres');
$node->safe_psql('postgres', 'SELECT snowflake_nextval()');

check_quiet_stop($node, 'smart', @automatic);
$node->start;
check_quiet_stop($node, 'fast', @automatic);

# Terminates the reservation worker $pid and waits until it runs again;
# returns the log from then on.
sub terminate_reservation
{
	my ($pid, $when) = @_;
	my $offset = -s $node->logfile;
	$node->safe_psql('postgres', "SELECT pg_terminate_backend($pid)");
	$node->poll_query_until('postgres',
		"SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'snowflake reservation' "
		  . "AND pid <> $pid")
	  or die "the reservation worker was not started again$when";
	return slurp_file($node->logfile, $offset);
}

# A worker terminated while the server runs comes back.
$node->start;
my $pids = wait_for_workers($node, @automatic);
my $log = terminate_reservation($pids->{'snowflake reservation'}, '');
like($log, qr/LOG:  snowflake reservation exits on SIGTERM/, 'a terminated worker says why');
like($log,
	qr/background worker "snowflake reservation" \(PID $pids->{'snowflake reservation'}\) exited with exit code 1/,
	'a terminated worker exits with code 1, so that it is started again');
unlike($log, qr/FATAL/, 'a terminated worker logs no FATAL');
is($node->safe_psql('postgres', 'SELECT snowflake_nextval() > 0'), 't',
	'IDs are issued after the worker came back');

# "stopping" forged into postmaster.pid by a role with pg_write_server_files:
# a worker terminated then still restarts (the sender of SIGTERM decides).
$pids = wait_for_workers($node, @automatic);
my $pidfile = $node->data_dir . '/postmaster.pid';
my $genuine = slurp_file($pidfile);
my @forged = split /\n/, $genuine;
$forged[7] = 'stopping';
$node->safe_psql('postgres',
	'CREATE ROLE file_writer LOGIN; GRANT pg_write_server_files TO file_writer');
$node->safe_psql('postgres',
	"COPY (SELECT unnest(ARRAY[" . join(', ', map { "'$_'" } @forged) . "])) TO '$pidfile'",
	extra_params => [ '-U', 'file_writer' ]);
like(slurp_file($pidfile), qr/^stopping$/m, 'the role wrote "stopping" into postmaster.pid');
$log = terminate_reservation($pids->{'snowflake reservation'}, ' under a forged postmaster.pid');
like($log,
	qr/background worker "snowflake reservation" \(PID $pids->{'snowflake reservation'}\) exited with exit code 1/,
	'under a forged "stopping", a terminated worker exits with code 1 and is started again');
unlike($log, qr/snowflake reservation shutting down/, 'and does not take the forged status for a shutdown');
SnowflakeTest::write_file($pidfile, $genuine);
$node->stop('fast');

# The registry of a named database stops as quietly.
my $named = SnowflakeTest::new_node('quiet_named',
	settings => { 'snowflake.database' => 'postgres', log_min_messages => 'debug1' },
	extension => 'postgres');
check_quiet_stop($named, 'fast', 'snowflake reservation', 'snowflake registry');

done_testing();
