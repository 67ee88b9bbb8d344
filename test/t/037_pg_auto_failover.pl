# Failover under pg_auto_failover 2.0, set up as docs/high-availability.md
# says (commands and settings read from the page): a monitor, a primary
# node_a and a secondary node_b whose clock is 60 s behind.  Proves that
# replication is synchronous, so node_a's reservation is on node_b before an
# ID uses it; that node_a lost mid-load (rows, streamed IDs, a held lease)
# makes the monitor promote node_b, whose first generation warns of its clock
# and whose IDs are all above node_a's, none repeated; that the lease holds
# on node_b (renewal, a new grant's worker id and token, refusal once all are
# leased); and that node_a rejoins as a secondary that issues and leases
# nothing and replays the renewed lease.  Failover times are noted only.
use strict;
use warnings;
use File::Basename qw(basename);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes ();
use Text::ParseWords ();
use SnowflakeClock;
use SnowflakeDocs;
use SnowflakeTest;
use SnowflakeStandby;

chomp(my $sharedir = `pg_config --sharedir`);
chomp(my $bindir = `pg_config --bindir`);
die "pg_config on PATH did not answer" unless $sharedir ne '' && $bindir ne '';
SnowflakeTest::require_tool(-f "$sharedir/extension/pgautofailover.control",
	'pg_auto_failover', 'postgresql-15-auto-failover',
	'Debian packages it for PostgreSQL 15 only');
my $pg_autoctl = SnowflakeTest::find_program('pg_autoctl', $bindir);
SnowflakeTest::require_tool(defined $pg_autoctl, 'pg_autoctl',
	'postgresql-15-auto-failover', 'Debian packages it for PostgreSQL 15 only');
my $pg_ctl = "$bindir/pg_ctl";
my ($testname) = basename($0) =~ /^(.*)\.pl$/;

# The steps of docs/high-availability.md marked "run by: test/t/037..." are
# read from the page, the test's pg_ctl, directories and ports put in place
# of the guide's (each key of %subst, which the command must hold).
my $page = 'docs/high-availability.md';

# The arguments of the guide's "pg_autoctl create ..." command (run with "&").
sub autoctl_args
{
	my ($block, $prefix, %subst) = @_;
	my $command = SnowflakeDocs::substitute(SnowflakeDocs::command($block, $prefix),
		'/usr/lib/postgresql/15/bin/pg_ctl' => $pg_ctl, %subst);
	$command =~ s/\s+&$// or die "the guide runs \"$command\" in the foreground";
	my ($program, @args) = Text::ParseWords::shellwords($command);
	return @args;
}

# node_b's clock is this far behind node_a's; IDs may run this far ahead of
# it, so the promoted node_b continues at once, however slow the failover.
my $behind_s = 60;
my $max_drift_ms = 90_000;

# pg_autoctl's configuration, state and pid files go under the test's XDG
# directories (without the runtime one, it uses /tmp/pg_autoctl).
my $xdg = PostgreSQL::Test::Utils::tempdir();
mkdir "$xdg/run", 0700 or die "could not create $xdg/run: $!";
my %autoctl_env = (
	XDG_CONFIG_HOME => "$xdg/config",
	XDG_DATA_HOME => "$xdg/data",
	XDG_RUNTIME_DIR => "$xdg/run");

# Runs pg_autoctl @args as a service, %$env added to the environment.
my %services;    # name => pid, the process group's leader
my ($monitor, $node_a, $node_b);

sub start_pg_autoctl
{
	my ($name, $env, @args) = @_;
	$services{$name} = SnowflakeTest::start_service(
		"$PostgreSQL::Test::Utils::log_path/${testname}_${name}_pg_autoctl.log",
		{ %autoctl_env, %$env }, $pg_autoctl, @args);
	return;
}

# Kills a pg_autoctl service and its process group (SIGKILL), as the loss of
# its machine would; the postmaster is in that group.  pg_ctl stop -m immediate
# then returns once the postmaster is gone.
sub kill_node
{
	my ($name, $node) = @_;
	my $pid = delete $services{$name};
	if (defined $pid)
	{
		kill 'KILL', -$pid;
		waitpid $pid, 0;
	}
	PostgreSQL::Test::Utils::system_log($pg_ctl, '-D', $node->data_dir, '-m',
		'immediate', 'stop')
	  if -f $node->data_dir . '/postmaster.pid';
	return;
}

# Each pg_autoctl is asked to stop (SIGTERM), and killed if it has not within 30 s.
END
{
	my $exit_code = $?;
	SnowflakeTest::stop_service(delete $services{$_}, 'TERM')
	  for grep { exists $services{$_} } qw(node_a node_b monitor);
	kill_node('node_a', $node_a) if defined $node_a;
	kill_node('node_b', $node_b) if defined $node_b;
	kill_node('monitor', $monitor) if defined $monitor;
	$? = $exit_code;
}

# The monitor's view of the formation, as pg_autoctl show state prints it.
sub show_state
{
	local %ENV = (%ENV, %autoctl_env);
	my ($out, $err) = PostgreSQL::Test::Utils::run_command(
		[ $pg_autoctl, 'show', 'state', '--pgdata', $monitor->data_dir ]);
	return $out . $err;
}

# Waits until the monitor assigned each node its state and the node reached it.
sub wait_for_states
{
	my (%states) = @_;
	my $query = 'SELECT '
	  . join(
		' AND ',
		map {
			"EXISTS (SELECT FROM pgautofailover.node WHERE nodename = '$_'"
			  . " AND goalstate = '$states{$_}' AND reportedstate = '$states{$_}')"
		} sort keys %states);
	return 1 if $monitor->poll_query_until('pg_auto_failover', $query);
	diag show_state();
	return 0;
}

# --- the monitor -------------------------------------------------------------------
# PostgreSQL::Test::Cluster's settings come after pg_autoctl's include line,
# so pg_auto_failover's are set again.  The monitor's timeouts (10 s) leave
# a loaded machine's slow keeper reports room, so no healthy primary fails over.
$monitor = PostgreSQL::Test::Cluster->new('monitor');
$monitor->init;
$monitor->append_conf('postgresql.conf', q{
listen_addresses = '127.0.0.1'
max_connections = 40
} . SnowflakeDocs::block($page, 'monitor-settings'));
start_pg_autoctl(
	'monitor', {},
	autoctl_args(
		SnowflakeDocs::block($page, 'monitor-create'), 'pg_autoctl create monitor',
		'~/ha/monitor' => $monitor->data_dir,
		'--pgport 6000' => '--pgport ' . $monitor->port));
$monitor->poll_query_until('pg_auto_failover',
	q{SELECT count(*) = 1 FROM pgautofailover.formation WHERE formationid = 'default'})
  or die 'the monitor did not come up';

# The guide's block $block_name creates $name on port $guide_port; the rest
# of the block's commands then run with bash, as the docs tier runs them.
sub create_data_node
{
	my ($name, $node, $env, $block_name, $guide_port) = @_;
	my $block = SnowflakeDocs::block($page, $block_name);
	my $create = 'pg_autoctl create postgres';
	start_pg_autoctl(
		$name, $env,
		autoctl_args(
			$block, $create,
			"~/ha/$name" => $node->data_dir,
			"--pgport $guide_port" => '--pgport ' . $node->port,
			'127.0.0.1:6000' => '127.0.0.1:' . $monitor->port));
	my @commands = SnowflakeDocs::commands($block);
	shift @commands while @commands && index($commands[0], $create) != 0;
	shift @commands;
	my $rest = join("\n", @commands) . "\n";
	my %subst = ('~/ha/monitor' => $monitor->data_dir, "-p $guide_port " => '-p ' . $node->port . ' ');
	$rest = SnowflakeDocs::substitute($rest, map { $_ => $subst{$_} } grep { index($rest, $_) >= 0 } keys %subst);
	local %ENV = (%ENV, %autoctl_env);
	command_ok(
		[ 'timeout', $PostgreSQL::Test::Utils::timeout_default, 'bash', '-euo', 'pipefail', '-c', $rest ],
		"the guide's commands after $create, for $name");
	return;
}

# --- the primary -------------------------------------------------------------------
$node_a = PostgreSQL::Test::Cluster->new('node_a');
$node_a->init(allows_streaming => 1);
$node_a->append_conf('postgresql.conf', qq{
listen_addresses = '127.0.0.1'
max_connections = 40
timezone = 'UTC'
snowflake.lease_workers = 2
});
command_ok(
	[
		'bash', '-euo', 'pipefail', '-c',
		SnowflakeDocs::substitute(
			SnowflakeDocs::command(SnowflakeDocs::block($page, 'primary-create'),
				'cat >> ~/ha/node_a/postgresql.conf'),
			'~/ha/node_a' => $node_a->data_dir)
	],
	'the guide\'s postgresql.conf lines for node_a');
like(slurp_file($node_a->data_dir . '/postgresql.conf'),
	qr/^snowflake\.max_drift = $max_drift_ms\b/m,
	"the guide sets snowflake.max_drift = $max_drift_ms, above node_b's $behind_s s");
create_data_node('node_a', $node_a, {}, 'primary-create', 6001);
wait_for_states(node_a => 'single') or die 'node_a did not become the single node';
is($node_a->safe_psql('postgres', q{SELECT extversion IS NOT NULL FROM pg_extension WHERE extname = 'snowflake'}),
	't', 'the guide created the extension on node_a');
$node_a->safe_psql(
	'postgres', q{
-- IDs the clients saw from node_a, loaded on node_b after the failover.
CREATE TABLE streamed (id bigint NOT NULL);
} . $SnowflakeStandby::ids_schema);

# --- the secondary, its clock behind -----------------------------------------------
$node_b = PostgreSQL::Test::Cluster->new('node_b');
SnowflakeClock::write_offset($node_b, -$behind_s);
create_data_node('node_b', $node_b, { SnowflakeClock::faked_env($node_b) },
	'secondary-create', 6002);
wait_for_states(node_a => 'primary', node_b => 'secondary')
  or die 'node_b did not join as a secondary';
note show_state();

is( $node_b->safe_psql('postgres', 'SELECT pg_is_in_recovery(), current_setting(\'shared_preload_libraries\')'),
	"t|snowflake", 'node_b is a standby, with the extension preloaded from node_a\'s postgresql.conf');
SnowflakeStandby::check_behind($node_b, $behind_s, 0.5, "node_b's clock is $behind_s s behind");
my $node_b_standby = 'pgautofailover_standby_'
  . $monitor->safe_psql('pg_auto_failover',
	q{SELECT nodeid FROM pgautofailover.node WHERE nodename = 'node_b'});
ok( $node_a->poll_query_until(
		'postgres', qq{
SELECT current_setting('synchronous_standby_names') = 'ANY 1 ($node_b_standby)'
   AND (SELECT sync_state FROM pg_stat_replication
         WHERE application_name = '$node_b_standby') = 'quorum'}),
	'pg_auto_failover makes node_a replicate synchronously to node_b (ANY 1)');

# --- (e) a time-scoped lease, (a) IDs on node_a -------------------------------------
my $lease_columns = 'worker_id, token, not_before, not_after, expires_at';
my $lease = $node_a->safe_psql('postgres',
	"SELECT $lease_columns FROM snowflake_lease_worker('x', interval '1 minute')");
my ($lease_worker, $lease_token) = split /\|/, $lease;
like($lease_worker, qr/^12[67]$/, 'node_a leases a worker id for a minute');

my $dir = PostgreSQL::Test::Utils::tempdir();
my $streamers = 2;
my @runs = SnowflakeStandby::start_load($node_a, $dir, inserters => 1, streamers => $streamers);
ok( $node_a->poll_query_until(
		'postgres', 'SELECT count(*) >= 20000 FROM ids'),
	'sessions commit rows on node_a');
ok( $node_a->poll_query_until(
		'postgres', qq{
SELECT bool_and((pg_stat_file('$dir/stream_' || s || '.out', true)).size > 0)
  FROM generate_series(1, $streamers) AS s}),
	'while others stream IDs to their clients');
cmp_ok($node_a->safe_psql('postgres', 'SELECT reservations FROM snowflake_status()'),
	'>', 0, 'node_a wrote reservations');

# --- node_a is lost ------------------------------------------------------------------
my $killed_at = Time::HiRes::time();
kill_node('node_a', $node_a);
is(PostgreSQL::Test::Utils::system_log($pg_ctl, '-D', $node_a->data_dir, 'status') >> 8,
	3, 'node_a\'s pg_autoctl and postgres are gone');
ok(!$_->finish, 'a generating psql ended with node_a') for @runs;

my $streamed_file = "$dir/streamed.txt";
my ($streamed, $max_streamed) = SnowflakeStandby::check_streams($dir, $streamers,
	nonempty => 'from node_a', into => $streamed_file);

# --- (b) the monitor promotes node_b ------------------------------------------------
ok(wait_for_states(node_b => 'wait_primary'),
	'the monitor promotes node_b (wait_primary: a primary without a standby)');
my $promoted_at = Time::HiRes::time();

# --- (c) node_b generates ----------------------------------------------------------
my ($first, $stderr);
$node_b->psql(
	'postgres', 'SELECT snowflake_nextval()',
	stdout => \$first,
	stderr => \$stderr,
	on_error_die => 1);
my $first_at = Time::HiRes::time();
note show_state();

is( $node_b->safe_psql('postgres',
		"SELECT $lease_columns, state FROM snowflake_leases WHERE token = $lease_token"),
	"$lease|held",
	'the lease is held on node_b with its worker id, token and window');
my ($clock_gap) = $stderr =~ /\bWARNING:  system clock is (\d+) ms behind the snowflake reservation$/m;
ok(defined $clock_gap, 'node_b\'s first generation warns that its clock is behind the reservation')
  or diag "stderr: $stderr";

$node_b->safe_psql('postgres', "COPY streamed FROM '$streamed_file'");
my ($max_old, $rows_old) = split /\|/, $node_b->safe_psql('postgres', q{
SELECT greatest((SELECT max(id) FROM ids), (SELECT max(id) FROM streamed)),
       (SELECT count(*) FROM ids)});
note "node_a committed $rows_old rows that node_b has, and streamed $streamed IDs";
cmp_ok($max_streamed, '<=', $max_old, 'the streamed IDs are loaded');
is( $node_b->safe_psql('postgres', qq{
SELECT reserved_until >= snowflake_timestamp($max_old) FROM snowflake_status()}),
	't', 'node_b\'s reservation covers every ID node_a issued');
cmp_ok($first, '>', $max_old, 'node_b\'s first ID is above every ID node_a issued');

$node_b->safe_psql('postgres', 'CREATE TABLE batches (id bigint NOT NULL)');
for my $s (101 .. 102)
{
	$node_b->safe_psql('postgres', qq{
INSERT INTO ids (session, n) SELECT $s, g FROM generate_series(1, 10000) AS g;
INSERT INTO batches SELECT snowflake_nextval(1000);});
}
is( $node_b->safe_psql('postgres', qq{
SELECT (SELECT count(*) FROM ids WHERE session > 100 AND id <= $max_old)
     + (SELECT count(*) FROM batches WHERE id <= $max_old)}),
	'0', 'every ID node_b issues is above every ID node_a issued');
is( $node_b->safe_psql('postgres', qq{
SELECT count(*) - count(DISTINCT id)
  FROM (SELECT id FROM ids UNION ALL SELECT id FROM streamed
        UNION ALL SELECT id FROM batches UNION ALL SELECT $first) AS s}),
	'0', 'no ID occurs twice among node_a\'s and node_b\'s');
is(SnowflakeTest::out_of_order($node_b, 'ids'),
	'0', 'within each session, committed IDs strictly increase');

my ($gap_ids, $gap_ms) = split /\|/, $node_b->safe_psql('postgres', qq{
SELECT $first - $max_old,
       (extract(epoch FROM snowflake_timestamp($first) - snowflake_timestamp($max_old))
        * 1000)::bigint});
note "failover gap: node_b's first ID is $gap_ids IDs above node_a's last, "
  . "$gap_ms ms of timestamp";
note "node_b's clock was " . ($clock_gap // '?') . ' ms behind the reservation at its first ID';
note sprintf('from the kill: %.2f s until the monitor showed node_b promoted, '
	  . '%.2f s until node_b\'s first ID', $promoted_at - $killed_at, $first_at - $killed_at);
note "the monitor's events from the kill on (seconds after the kill):\n"
  . $monitor->safe_psql('pg_auto_failover', sprintf(q{
SELECT round(extract(epoch FROM eventtime - to_timestamp(%.3f))::numeric, 2), nodename,
       reportedstate, goalstate
  FROM pgautofailover.event
 WHERE eventtime >= to_timestamp(%.3f) ORDER BY eventid}, $killed_at, $killed_at));

# --- (e) the lease on the new primary ---------------------------------------------
my ($renewed, $renewed_expiry) = split /\|/, $node_b->safe_psql('postgres', qq{
SELECT expires_at > now(), expires_at FROM snowflake_renew_lease($lease_token, NULL)});
is($renewed, 't', 'its holder renews the lease on node_b with its token');
note "the lease expired at " . (split /\|/, $lease)[4]
  . " as node_a granted it, at $renewed_expiry as node_b renewed it (node_b's clock)";
my ($new_worker, $new_token) = split /\|/, $node_b->safe_psql('postgres',
	q{SELECT worker_id, token FROM snowflake_lease_worker('y', interval '1 minute')});
is($new_worker, 253 - $lease_worker, 'a new grant on node_b gets the other worker id');
cmp_ok($new_token, '>', $lease_token, 'with a larger token');
my ($ret, $out, $err) = $node_b->psql('postgres',
	q{SELECT * FROM snowflake_lease_worker('z', interval '1 minute')});
like($err, qr/ERROR:  all 2 snowflake worker ids set aside for leases are leased/,
	'the held lease\'s worker id is granted to nobody else');

# --- (d) node_a rejoins as a secondary ---------------------------------------------
start_pg_autoctl('node_a', {}, 'run', '--pgdata', $node_a->data_dir);
ok(wait_for_states(node_a => 'secondary', node_b => 'primary'),
	'node_a\'s pg_autoctl, started again, rejoins as a secondary');
note show_state();
is($node_a->safe_psql('postgres', 'SELECT pg_is_in_recovery()'), 't', 'node_a is a standby');
SnowflakeStandby::check_nextval_refused($node_a, 'on node_a', 'node_a issues no ID');
($ret, $out, $err) = $node_a->psql('postgres',
	q{SELECT * FROM snowflake_lease_worker('on node_a', interval '1 minute')});
like($err, qr/ERROR:  cannot lease snowflake worker ids during recovery/,
	'and leases nothing');
my $node_a_standby = 'pgautofailover_standby_'
  . $monitor->safe_psql('pg_auto_failover',
	q{SELECT nodeid FROM pgautofailover.node WHERE nodename = 'node_a'});
$node_b->wait_for_catchup($node_a_standby);
is( $node_a->safe_psql('postgres',
		"SELECT $lease_columns FROM snowflake_leases WHERE token = $lease_token"),
	$node_b->safe_psql('postgres',
		"SELECT $lease_columns FROM snowflake_leases WHERE token = $lease_token"),
	'node_a replays the lease as node_b renewed it');
is($node_b->safe_psql('postgres', 'SELECT node_collision FROM snowflake_status()'),
	'f', 'node_b does not take the failover for a node id collision');

done_testing();
