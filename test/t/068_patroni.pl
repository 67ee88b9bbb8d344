# Switchover, restart and hard failover under Patroni 3.0 with etcd 3.4,
# set up with docs/high-availability.md's DCS block and driven with its
# patronictl commands: two members on loopback.  Failover times are noted
# only.
use strict;
use warnings;
use File::Basename qw(basename);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes ();
use SnowflakeDocs;
use SnowflakeTest;

my $patroni = SnowflakeTest::find_program('patroni');
my $patronictl = SnowflakeTest::find_program('patronictl');
my $etcd = SnowflakeTest::find_program('etcd');
SnowflakeTest::require_tool(defined $patroni && defined $patronictl, 'Patroni',
	'patroni', 'test/install-deps.sh installs it');
SnowflakeTest::require_tool(defined $etcd, 'etcd', 'etcd-server',
	'test/install-deps.sh installs it');
chomp(my $bindir = `pg_config --bindir`);
die 'pg_config on PATH did not answer' unless $bindir ne '';
my ($testname) = basename($0) =~ /^(.*)\.pl$/;
my $page = 'docs/high-availability.md';
my $user = getpwuid($<);
my $base = PostgreSQL::Test::Utils::tempdir('patroni');

# Starts @command as the service $name, its output in tmp_check/log.
my %services;    # name => pid
sub start_service
{
	my ($name, @command) = @_;
	$services{$name} = SnowflakeTest::start_service(
		"$PostgreSQL::Test::Utils::log_path/${testname}_${name}.log", {}, @command);
	return;
}

sub stop_service
{
	my ($name, $signal) = @_;
	my $pid = delete $services{$name};
	SnowflakeTest::stop_service($pid, $signal) if defined $pid;
	return;
}

my %node;    # name => PostgreSQL::Test::Cluster (ports, directories, psql)

# Patroni stops its postgres on SIGTERM; etcd last.
END
{
	my $exit_code = $?;
	stop_service($_, 'TERM') for grep { exists $services{$_} } qw(node1 node2);
	for my $n (values %node)
	{
		PostgreSQL::Test::Utils::system_log("$bindir/pg_ctl", '-D', $n->data_dir, '-m',
			'immediate', 'stop')
		  if -f $n->data_dir . '/postmaster.pid';
	}
	stop_service('etcd', 'TERM');
	$? = $exit_code;
}

# etcd, one member, on loopback.
my ($etcd_port, $peer_port) = (PostgreSQL::Test::Cluster::get_free_port(),
	PostgreSQL::Test::Cluster::get_free_port());
start_service('etcd', $etcd, '--name', 'sf', '--data-dir', "$base/etcd",
	'--listen-client-urls', "http://127.0.0.1:$etcd_port",
	'--advertise-client-urls', "http://127.0.0.1:$etcd_port",
	'--listen-peer-urls', "http://127.0.0.1:$peer_port",
	'--initial-advertise-peer-urls', "http://127.0.0.1:$peer_port",
	'--initial-cluster', "sf=http://127.0.0.1:$peer_port");

# The page's DCS block, with a 10 s leader key so that the failover is short.
my $dcs = SnowflakeDocs::block($page, 'patroni-dcs');
$dcs = SnowflakeDocs::substitute($dcs,
	"  dcs:\n" => "  dcs:\n    ttl: 10\n    loop_wait: 1\n    retry_timeout: 3\n");
like($dcs, qr/synchronous_mode: true/, 'the page sets synchronous_mode: true');

sub patroni_config
{
	my ($name) = @_;
	my $n = $node{$name};
	my $rest_port = PostgreSQL::Test::Cluster::get_free_port();
	my $port = $n->port;
	my $socket = $n->host;
	my $data = $n->data_dir;
	my $logdir = $n->basedir . '/log';
	return <<"YAML" . $dcs;
scope: sf
name: $name
restapi:
  listen: 127.0.0.1:$rest_port
  connect_address: 127.0.0.1:$rest_port
etcd3:
  hosts: 127.0.0.1:$etcd_port
postgresql:
  listen: 127.0.0.1:$port
  connect_address: 127.0.0.1:$port
  data_dir: $data
  bin_dir: $bindir
  pgpass: $base/$name.pgpass
  authentication:
    superuser:
      username: $user
    replication:
      username: replicator
      password: replicator
  pg_hba:
    - local all all trust
    - host all all 127.0.0.1/32 trust
    - host replication all 127.0.0.1/32 trust
  parameters:
    unix_socket_directories: '$socket'
    logging_collector: 'on'
    log_directory: '$logdir'
    log_filename: 'postgresql.log'
    log_line_prefix: '%m [%p] '
YAML
}

my %config;    # name => the member's YAML file
for my $name (qw(node1 node2))
{
	$node{$name} = PostgreSQL::Test::Cluster->new($name);
	mkdir $node{$name}->basedir . '/log';
	$config{$name} = "$base/$name.yml";
	open my $fh, '>', $config{$name} or die "cannot write $config{$name}: $!";
	print $fh patroni_config($name);
	close $fh;
}

sub start_member
{
	my ($name) = @_;
	start_service($name, $patroni, $config{$name});
}

# patronictl's view: name => { Role, State, ... }.
sub members
{
	my ($stdout, $stderr);
	IPC::Run::run([ $patronictl, '-c', $config{node1}, 'list', '-f', 'json' ],
		'>', \$stdout, '2>', \$stderr);
	return {} unless defined $stdout && $stdout =~ /^\[/;
	my %members;
	# The JSON is one flat object per member.
	while ($stdout =~ /\{([^{}]*)\}/g)
	{
		my $obj = $1;
		my %m = $obj =~ /"(\w+)":\s*"?([^",]*)"?/g;
		$members{ $m{Member} } = \%m if defined $m{Member};
	}
	return \%members;
}

# Waits until $leader leads and $replica streams from it as its synchronous
# standby in the DCS too (a switchover needs that), or, with no replica,
# until $leader leads; returns the time.
sub wait_for_roles
{
	my ($leader, $replica, $what) = @_;
	my $deadline = Time::HiRes::time() + 90;
	while (Time::HiRes::time() < $deadline)
	{
		my $m = members();
		my $ok = ($m->{$leader}{Role} // '') eq 'Leader'
		  && ($m->{$leader}{State} // '') eq 'running';
		# Patroni 3.0 shows a streaming replica as "running": ask the leader.
		if ($ok && defined $replica)
		{
			my ($rc, $state) = $node{$leader}->psql('postgres',
				"SELECT state FROM pg_stat_replication WHERE application_name = '$replica'");
			$ok = ($m->{$replica}{Role} // '') eq 'Sync Standby'
			  && ($m->{$replica}{State} // '') eq 'running'
			  && $rc == 0 && $state eq 'streaming';
		}
		return Time::HiRes::time() if $ok;
		Time::HiRes::sleep(0.1);
	}
	die "$what: patronictl list never showed it:\n" . `$patronictl -c $config{node1} list`;
}

# The page's sh block $name, with the test's config file.
sub run_block
{
	my ($name) = @_;
	my $block = SnowflakeDocs::substitute(SnowflakeDocs::block($page, $name),
		'/etc/patroni/config.yml' => $config{node1});
	for my $command (SnowflakeDocs::commands($block))
	{
		my @argv = split ' ', $command;
		$argv[0] = $patronictl if $argv[0] eq 'patronictl';
		my ($stdout, $stderr);
		IPC::Run::run(\@argv, '>', \$stdout, '2>', \$stderr)
		  or die "$command failed: $stdout$stderr";
		note "$command:\n$stdout";
	}
}

start_member('node1');
wait_for_roles('node1', undef, 'node1 bootstraps the cluster');
$node{node1}->safe_psql('postgres',
	'CREATE EXTENSION snowflake; CREATE TABLE ids (id bigint PRIMARY KEY, phase int NOT NULL)');
start_member('node2');
wait_for_roles('node1', 'node2', 'node2 joins as a streaming replica');

is($node{node2}->safe_psql('postgres',
	"SELECT current_setting('shared_preload_libraries') || ' ' || current_setting('snowflake.node_id')"),
	'snowflake 1', 'the DCS settings reach the replica: preloaded, node id 1');
$node{node1}->poll_query_until('postgres',
	"SELECT current_setting('synchronous_standby_names') = 'node2'")
  or die 'synchronous_mode did not name node2';
pass('synchronous_mode names the replica in synchronous_standby_names');

# Writes 2000 IDs of phase $phase through $leader; returns them.
sub write_ids
{
	my ($leader, $phase) = @_;
	my $ids = $node{$leader}->safe_psql('postgres',
		"INSERT INTO ids SELECT snowflake_nextval(), $phase FROM generate_series(1, 2000) "
		  . 'RETURNING id');
	return [ split /\n/, $ids ];
}

my @phases;    # [ name, [ids] ]
push @phases, [ 'before the switchover', write_ids('node1', 1) ];

run_block('patroni-switchover');
wait_for_roles('node2', 'node1', 'the switchover makes node2 the leader');
push @phases, [ 'after the switchover', write_ids('node2', 2) ];

# A setting changed and the members restarted in the page's order.
run_block('patroni-restart');
wait_for_roles('node2', 'node1', 'the restarts keep node2 the leader');
is($node{$_}->safe_psql('postgres', 'SHOW snowflake.max_drift'), '90s',
	"$_ runs with the setting edit-config changed") for qw(node1 node2);
push @phases, [ 'after the restarts', write_ids('node2', 3) ];

# The leader is lost at once: its Patroni and its postgres killed.
my $postmaster = (split /\n/, slurp_file($node{node2}->data_dir . '/postmaster.pid'))[0];
my $killed_at = Time::HiRes::time();
stop_service('node2', 'KILL');
kill 'KILL', $postmaster;
my $promoted_at = wait_for_roles('node1', undef, 'Patroni promotes node1');
push @phases, [ 'after the failover', write_ids('node1', 4) ];
my $first_at = Time::HiRes::time();
note sprintf('from the kill: %.2f s until patronictl showed node1 the leader, '
	  . '%.2f s until node1 had written 2000 IDs', $promoted_at - $killed_at,
	$first_at - $killed_at);

start_member('node2');
wait_for_roles('node1', 'node2', 'node2, started again, rejoins as a streaming replica');
is($node{node1}->safe_psql('postgres',
	"SELECT state FROM pg_stat_replication WHERE application_name = 'node2'"),
	'streaming', 'node2 streams from node1');
my $patroni_log = slurp_file("$PostgreSQL::Test::Utils::log_path/${testname}_node2.log");
like($patroni_log, qr/pg_rewind/, 'Patroni rewound node2 (pg_rewind)');
push @phases, [ 'after the rejoin', write_ids('node1', 5) ];

# Every ID distinct, each phase's above every earlier phase's.
my %seen;
my $repeats = 0;
for my $phase (@phases)
{
	$seen{$_}++ and $repeats++ for @{ $phase->[1] };
}
is($repeats, 0, 'no ID occurs twice in ' . scalar(keys %seen) . ' IDs');
for my $i (1 .. $#phases)
{
	my ($earlier_max) = sort { $b <=> $a } map { @{ $_->[1] } } @phases[ 0 .. $i - 1 ];
	my ($min) = sort { $a <=> $b } @{ $phases[$i][1] };
	cmp_ok($min, '>', $earlier_max, "every ID $phases[$i][0] is above every earlier one");
}
$node{node1}->poll_query_until('postgres',
	"SELECT replay_lsn >= pg_current_wal_lsn() FROM pg_stat_replication WHERE application_name = 'node2'");
is($node{node2}->safe_psql('postgres', 'SELECT count(DISTINCT id) FROM ids'),
	scalar(keys %seen), 'node2 holds every ID the leaders wrote');

# The page's list of what the log shows, as patterns.
my @explained = (
	qr/could not receive data from WAL stream/,
	qr/could not connect to the primary server/,
	qr/could not send end-of-streaming message to primary/,
	qr/terminating (connection|walreceiver process|background worker "snowflake [^"]+") due to administrator command/,
	qr/the database system is (starting up|shutting down|not yet accepting connections|in recovery mode)/,
	qr/requested starting point \S+ on timeline \d+ is not in this server's history/,
	qr/could not start WAL streaming/,
	qr/replication slot "node\d" does not exist/,
	qr/highest timeline \d+ of the primary is behind recovery timeline \d+/,
	qr/system clock is \d+ ms behind the snowflake reservation/);
for my $name (qw(node1 node2))
{
	my @loud = grep {
		my $line = $_;
		/\b(WARNING|ERROR|FATAL|PANIC):/ && !grep { $line =~ $_ } @explained
	} split /\n/, slurp_file($node{$name}->basedir . '/log/postgresql.log');
	is_deeply(\@loud, [], "the log of $name has no WARNING, ERROR or FATAL the page does not explain");
}

done_testing();
