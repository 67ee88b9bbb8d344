# SnowflakeLease: runs the C++ reference client of worker-id leases
# (clients/cpp/lease_client, built by "make lease-client") against a node,
# for the lease TAP tests.
package SnowflakeLease;

use strict;
use warnings;
use Exporter 'import';
use IPC::Run;
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;

our @EXPORT = qw(start_lease_client wait_for_lease wait_for_holding finish_lease_client
  read_ids lease_settings);

# The database the clients connect to (leases are the server's).
our $database = 'postgres';

# The settings of a node that leases worker ids, for SnowflakeTest::new_node's
# settings: enough connections for many clients, and snowflake.NAME for each
# NAME => value given (lease_workers => 2).
sub lease_settings
{
	my (%settings) = @_;
	return { max_connections => 120, map { ("snowflake.$_" => $settings{$_}) } keys %settings };
}

# Starts the client against $node's $database as holder $name, its IDs in
# "$tmp_check/$name.ids", with options @args (--ttl, --count, --wait-stdin,
# ...).  Its stdin stays open until finish_lease_client(): a client started
# with --wait-stdin keeps its lease until then, a gate that needs no timing.
# Returns a hash: name, ids (the file), stdin, stdout, stderr, harness.
sub start_lease_client
{
	my ($node, $name, @args) = @_;
	my $client = {
		name => $name,
		ids => "$PostgreSQL::Test::Utils::tmp_check/$name.ids",
		stdin => '',
		stdout => '',
		stderr => ''
	};
	unlink $client->{ids};
	my $program = ($ENV{TESTDIR} // '.') . '/clients/cpp/lease_client';
	$client->{timeout} = IPC::Run::timeout($PostgreSQL::Test::Utils::timeout_default);
	$client->{harness} = IPC::Run::start(
		[
			$program, '--dsn', $node->connstr($database),
			'--holder', $name, '--out', $client->{ids}, @args
		],
		'<', \$client->{stdin}, '>', \$client->{stdout}, '2>', \$client->{stderr},
		$client->{timeout});
	return $client;
}

# Waits for the client's lease line; returns it as a hash (worker_id,
# node_id, token, not_before, not_after), or undef if the client exited
# without one.
sub wait_for_lease
{
	my ($client) = @_;
	while ($client->{stdout} !~ /^lease /m)
	{
		last unless $client->{harness}->pumpable;
		$client->{harness}->pump;
	}
	return undef
	  unless $client->{stdout} =~
	  /^lease worker_id=(\d+) node_id=(\d+) token=(\d+) not_before=(\d+) not_after=(\d+)$/m;
	return {
		worker_id => $1,
		node_id => $2,
		token => $3,
		not_before => $4,
		not_after => $5
	};
}

# Waits until a client started with --wait-stdin has written its IDs and
# holds its lease ("holding"); false if it exited first.
sub wait_for_holding
{
	my ($client) = @_;
	while ($client->{stdout} !~ /^holding$/m)
	{
		return 0 unless $client->{harness}->pumpable;
		$client->{harness}->pump;
	}
	return 1;
}

# Waits for the client to exit (closing its stdin first, which lets a
# client started with --wait-stdin go on); returns its exit status.
sub finish_lease_client
{
	my ($client) = @_;
	$client->{harness}->finish;
	$client->{status} = $? >> 8;
	return $client->{status};
}

# The IDs the client wrote, in order.
sub read_ids
{
	my ($client) = @_;
	open my $fh, '<', $client->{ids} or return ();
	chomp(my @ids = <$fh>);
	close $fh;
	return grep { /^\d+$/ } @ids;
}

1;
