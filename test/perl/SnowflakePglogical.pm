# SnowflakePglogical: a two-node bidirectional pglogical cluster for TAP
# tests, set up by docs/multi-primary.md's recipe: node N is "nodeN" with
# snowflake.node_id N, database "app" in the default replication set and a
# subscription "from_nodeM" (forward_origins '{}'), on Unix sockets.  Unlike
# the guide, snowflake.database is set to "app" only once the subscriptions
# replicate (register_nodes()).  Conflicts pglogical resolves are logged at
# WARNING here as "CONFLICT: remote ..."; conflicts() counts them.
package SnowflakePglogical;

use strict;
use warnings;
use Cwd ();
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes ();
use SnowflakeDocs;
use SnowflakeTest;
use SnowflakeTwoPrimaries;

# pglogical is required on 15 (Debian's package); elsewhere, built by
# test/install-pg-versions.sh when it can be, its absence skips the test.
{
	chomp(my $sharedir = `pg_config --sharedir`);
	die "pg_config on PATH did not answer" unless $sharedir ne '';
	SnowflakeTest::require_tool(-f "$sharedir/extension/pglogical.control",
		'pglogical', 'postgresql-15-pglogical',
		"Debian packages it for PostgreSQL 15 only; test/install-pg-versions.sh "
		  . "could not build it from Debian's source");
}

# The replicated database.
our $db = 'app';

# How long to wait for replication to connect or catch up (seconds).
our $timeout = $PostgreSQL::Test::Utils::timeout_default;

# How pglogical reports a conflict it resolved, or one it could not.
our $conflict_pattern =
  qr/CONFLICT: remote \w+ on relation|cannot apply conflicting row/;

# The guide's blocks run as they stand, with the test's node id, host and
# port in place of the guide's (127.0.0.1, ports 5433 and 5434).
our $page = 'docs/multi-primary.md';

# Where in each node's log the cluster was registered (register_nodes()):
# a conflict for a row of the first run may come before, never after.
our %registered_at;
my %guide_port = (node1 => 5433, node2 => 5434);

# Creates, configures and starts node $number (snowflake.node_id $number)
# with database "app" holding both extensions.  %opts: conf => extra lines
# for postgresql.conf.
sub create_node
{
	my ($number, %opts) = @_;
	my $node = PostgreSQL::Test::Cluster->new("node$number");
	$node->init;
	# Step 1 of the guide, then the tests' own lines.  The guide sets
	# on_node_collision = error; 014 shows warn first, then sets error.
	$node->append_conf('postgresql.conf',
		SnowflakeDocs::substitute(SnowflakeDocs::block($page, 'pglogical-config'),
			'snowflake.node_id = 1 ' => "snowflake.node_id = $number "));
	$node->append_conf(
		'postgresql.conf', qq(
snowflake.on_node_collision = warn
max_connections = 40
pglogical.conflict_log_level = warning
snowflake.node_id = $number
snowflake.registry_interval = 500
timezone = 'UTC'
restart_after_crash = on
) . ($opts{conf} // ''));
	$node->start;
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	$node->safe_psql($db,
		'CREATE EXTENSION snowflake; CREATE EXTENSION pglogical;');
	return $node;
}

# Nodes 1 and 2, not yet connected.
sub create_pair
{
	my (%opts) = @_;
	return (create_node(1, %opts), create_node(2, %opts));
}

# The DSN by which the other node reaches $node.
sub dsn
{
	my ($node) = @_;
	return sprintf('host=%s port=%d dbname=%s', $node->host, $node->port, $db);
}

sub node_name
{
	my ($node) = @_;
	return $node->name;
}

# The number N of node "nodeN", its snowflake.node_id unless changed.
sub node_number
{
	my ($node) = @_;
	my ($number) = $node->name =~ /(\d+)$/;
	return $number;
}

# Makes each node a pglogical node publishing @tables in the default
# replication set, subscribes each node to the other, and waits until both
# subscriptions replicate.  Steps 3 and 4 of docs/multi-primary.md.
sub connect_pair
{
	my ($nodes, @tables) = @_;
	for my $node (@$nodes)
	{
		my $name = node_name($node);
		my $dsn = dsn($node);
		$node->safe_psql($db,
			"SELECT pglogical.create_node(node_name := '$name', dsn := '$dsn')");
		$node->safe_psql($db,
			"SELECT pglogical.replication_set_add_table('default', '$_')")
		  for @tables;
	}
	# Step 4 of the guide: its "-- on nodeN" parts, with the provider's
	# host and port.
	my %parts = SnowflakeDocs::parts(SnowflakeDocs::block($page, 'pglogical-subscribe'),
		map { node_name($_) } @$nodes);
	my ($first, $second) = @$nodes;
	for my $pair ([ $first, $second ], [ $second, $first ])
	{
		my ($subscriber, $provider) = @$pair;
		$subscriber->safe_psql(
			$db,
			SnowflakeDocs::substitute(
				$parts{ node_name($subscriber) },
				'host=127.0.0.1 port=' . $guide_port{ node_name($provider) } =>
				  sprintf('host=%s port=%d', $provider->host, $provider->port)));
	}
	wait_replicating($_) for @$nodes;
	register_nodes($nodes);
	return;
}

# Points snowflake.database at "app" and restarts both nodes, so that each
# registers its instance only now that the subscriptions exist: a row
# inserted before would never reach the peer, and pglogical would skip its
# later heartbeats there as conflicts.  (Both stop, then both start: a
# manager that just started retries a failed apply worker within seconds.)
sub register_nodes
{
	my ($nodes) = @_;
	$_->stop for @$nodes;
	$_->append_conf('postgresql.conf', "snowflake.database = '$db'\n")
	  for @$nodes;
	$_->start for @$nodes;
	wait_replicating($_) for @$nodes;
	# Each instance's first heartbeat has reached the other node.
	for my $node (@$nodes)
	{
		my $instance = $node->safe_psql($db,
			'SELECT instance_id FROM snowflake_status()');
		$_->poll_query_until($db,
			"SELECT count(*) = 1 FROM snowflake_nodes WHERE instance_id = '$instance'")
		  or die node_name($_) . " did not receive the heartbeats of $instance"
		  for @$nodes;
	}
	# Whatever the first run's heartbeats caused has been applied: they lie
	# before these in each provider's WAL.
	$registered_at{ node_name($_) } = -s $_->logfile for @$nodes;
	return;
}

# Where in $node's log the cluster was registered (see %registered_at).
sub registered_offset
{
	my ($node) = @_;
	return $registered_at{ node_name($node) } // 0;
}

# Waits until every subscription of $node is "replicating".
#
# pglogical's manager restarts a failed apply worker only when it wakes (its
# idle sleep doubles up to 3 minutes): a subscription still down after
# $nudge_after seconds is disabled and enabled, as an operator would.
our $nudge_after = 10;

sub wait_replicating
{
	my ($node) = @_;
	my $name = node_name($node);
	# The guide's check.
	my $status_sql = SnowflakeDocs::block($page, 'pglogical-status');
	my $start = time;
	my $nudged = 0;
	while (time - $start < $timeout)
	{
		my @down = grep { !/\|replicating$/ } split /\n/,
		  $node->safe_psql($db, $status_sql);
		return 1 unless @down;
		if (!$nudged && time - $start >= $nudge_after)
		{
			for my $row (@down)
			{
				my ($sub) = split /\|/, $row;
				diag("$name: subscription $row after $nudge_after s; "
					  . 'disabling and enabling it');
				# The guide's restart of a subscription that stays down.
				$node->safe_psql($db,
					SnowflakeDocs::substitute(SnowflakeDocs::block($page, 'pglogical-restart'),
						"'from_node2'" => "'$sub'"));
			}
			$nudged = 1;
		}
		Time::HiRes::usleep(200_000);
	}
	die "the subscriptions of $name do not replicate: "
	  . $node->safe_psql($db, $status_sql);
}

# Waits until each node's subscriber has confirmed everything the node had
# written when the wait began: both subscriptions replicate, then
# pglogical.wait_slot_confirm_lsn(NULL, NULL) on each node as provider.
sub wait_caught_up
{
	my ($nodes) = @_;
	wait_replicating($_) for @$nodes;
	my $ms = $timeout * 1000;
	$_->safe_psql($db,
		"SET statement_timeout = $ms; SELECT pglogical.wait_slot_confirm_lsn(NULL, NULL)"
	) for @$nodes;
	return;
}

# The conflicts pglogical reported in $node's log from byte $offset on
# (default: since the cluster was registered), and how many.
sub conflict_lines
{
	my ($node, $offset) = @_;
	my $log = slurp_file($node->logfile, $offset // registered_offset($node));
	return grep { /$conflict_pattern/ } split /\n/, $log;
}

sub conflicts
{
	my ($node, $offset) = @_;
	my @lines = conflict_lines($node, $offset);
	diag(node_name($node) . ": $_") for @lines[ 0 .. ($#lines < 4 ? $#lines : 4) ];
	return scalar @lines;
}

# A digest of a table's rows (see SnowflakeTwoPrimaries::digest); $dbname
# defaults to "app".
sub digest
{
	return SnowflakeTwoPrimaries::digest(@_);
}

# Kills $node's postmaster with SIGKILL and waits until every process of the
# server (cwd in the data directory) has exited and the postmaster is
# reaped: a start is refused while postmaster.pid's PID exists.
sub kill9_and_wait
{
	my ($node) = @_;
	my $data_dir = Cwd::abs_path($node->data_dir);
	my ($postmaster) = split /\n/, slurp_file("$data_dir/postmaster.pid");
	$node->kill9;
	my $deadline = time + $timeout;
	while (time < $deadline)
	{
		my @left = grep {
			my $cwd = readlink "/proc/$_/cwd";
			defined $cwd && $cwd eq $data_dir
		} map { m{/proc/(\d+)$} ? $1 : () } glob '/proc/[0-9]*';
		return 1 unless @left || -e "/proc/$postmaster";
		Time::HiRes::usleep(100_000);
	}
	die node_name($node) . ": processes still running after SIGKILL of the postmaster";
}

1;
