# snowflake_nextval() and worker-id leases behind PgBouncer in transaction
# mode, where a server connection serves many clients and outlives them; the
# numbered parts below say what each proves.  Fails on 15 without pgbouncer,
# skipped elsewhere.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SnowflakeLease qw(lease_settings);
use SnowflakeTest;
use Test::More;
use IPC::Run;

my $pgbouncer = SnowflakeTest::find_program('pgbouncer')
  // SnowflakeTest::find_program('pgbouncer', '/usr/sbin');
SnowflakeTest::require_tool(defined $pgbouncer, 'pgbouncer', "Debian's pgbouncer",
	"test/install-deps.sh installs Debian's pgbouncer, which the suite's runs on 15 need");

my $pgbench_clients = 40;    # per protocol
my $pgbench_transactions = 50;
my $pool_size = 4;

# Worker ids 126 and 127 are leased; sessions attach to 0 to 125.
my $node = SnowflakeTest::new_node(
	'pooled',
	settings => lease_settings(node_id => 1, lease_workers => 2, lease_connection_window => '2s'),
	extension => 'postgres');
$node->safe_psql('postgres', q{
CREATE TABLE issued (n bigserial, id bigint NOT NULL, session integer NOT NULL);
});
my $user = $node->safe_psql('postgres', 'SELECT current_user');

# PgBouncer in transaction mode: "pooled" with a pool of $pool_size server
# connections and "single" with one, both the node's "postgres".
my $dir = PostgreSQL::Test::Utils::tempdir('pgbouncer');
my $port = PostgreSQL::Test::Cluster::get_free_port();
my $log = "$PostgreSQL::Test::Utils::log_path/036_pgbouncer_pgbouncer.log";
my $server = 'host=' . $node->host . ' port=' . $node->port . ' dbname=postgres';
append_to_file("$dir/users.txt", qq{"$user" ""\n});
append_to_file(
	"$dir/pgbouncer.ini", qq{[databases]
pooled = $server
single = $server pool_size=1

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $port
unix_socket_dir =
auth_type = trust
auth_file = $dir/users.txt
admin_users = $user
pool_mode = transaction
default_pool_size = $pool_size
max_client_conn = 200
logfile = $log
});
my $bouncer_err = '';
my $bouncer = IPC::Run::start([ $pgbouncer, "$dir/pgbouncer.ini" ],
	'>', \my $bouncer_out, '2>', \$bouncer_err);
END
{
	local $?;
	$bouncer->kill_kill if defined $bouncer && $bouncer->pumpable;
}
SnowflakeTest::wait_until(
	sub {
		$bouncer->pump_nb;
		die "pgbouncer exited: $bouncer_err" unless $bouncer->pumpable;
		return -f $log
		  && PostgreSQL::Test::Utils::slurp_file($log) =~ /listening on 127\.0\.0\.1:\Q$port\E/;
	},
	'pgbouncer to listen');

# A connection string for PgBouncer's database $db.
sub pooled
{
	my ($db, $application_name) = @_;
	return "host=127.0.0.1 port=$port dbname=$db user=$user"
	  . (defined $application_name ? " application_name=$application_name" : '');
}

# Runs $sql as a new client of $db, errors verbose: (status, stdout, stderr).
sub client
{
	my ($db, $sql) = @_;
	my ($out, $err);
	my $ret = $node->psql(
		'postgres', "\\set VERBOSITY verbose\n$sql",
		connstr => pooled($db),
		stdout => \$out,
		stderr => \$err);
	return ($ret, $out, $err);
}

# The same, for SQL that must not fail; returns its output.
sub client_ok
{
	my ($db, $sql) = @_;
	my ($ret, $out, $err) = client($db, $sql);
	die "client of $db failed: $err" if $ret != 0;
	return $out;
}

# A client that stays connected (a BackgroundPsql session).
sub session
{
	my ($db, $application_name) = @_;
	return $node->background_psql('postgres',
		extra_params => [ '-d', pooled($db, $application_name) ]);
}

sub admin
{
	my ($command) = @_;
	return $node->safe_psql('postgres', $command, connstr => pooled('pgbouncer'));
}

sub lease_row
{
	my ($token, $columns) = @_;
	return $node->safe_psql('postgres',
		"SELECT $columns FROM snowflake_leases WHERE token = $token");
}

# Sets snowflake.allow_connection_leases, waits until a new backend sees it,
# and has PgBouncer replace its server connections (RECONNECT).
sub set_connection_leases
{
	my ($value) = @_;
	$node->safe_psql('postgres', "ALTER SYSTEM SET snowflake.allow_connection_leases = $value");
	$node->safe_psql('postgres', 'SELECT pg_reload_conf()');
	$node->poll_query_until('postgres',
		q{SELECT current_setting('snowflake.allow_connection_leases')}, $value)
	  or die "snowflake.allow_connection_leases did not become $value";
	admin('RECONNECT');
	return;
}

my $another_connection_hint =
  'Behind a connection pooler, take time-scoped leases (with a ttl) instead.';

# 1. snowflake_nextval() from 80 clients through 4 server connections.
my $script = "$dir/nextval.sql";
append_to_file($script,
	"INSERT INTO issued (id, session) VALUES (snowflake_nextval(), pg_backend_pid());\n");
my @runs;
for my $protocol ('simple', 'extended')
{
	my $run = { protocol => $protocol, out => '', err => '' };
	$run->{harness} = IPC::Run::start(
		[
			$node->installed_command('pgbench'), '-n', '-M', $protocol,
			'-c', $pgbench_clients, '-j', 2, '-t', $pgbench_transactions,
			'-f', $script, pooled('pooled')
		],
		'>', \$run->{out}, '2>', \$run->{err},
		IPC::Run::timeout($PostgreSQL::Test::Utils::timeout_default));
	push @runs, $run;
}
my $per_run = $pgbench_clients * $pgbench_transactions;
for my $run (@runs)
{
	$run->{harness}->finish;
	is($run->{harness}->result(0), 0, "pgbench in the $run->{protocol} protocol exits with 0")
	  or diag($run->{err});
	like($run->{out}, qr/^number of transactions actually processed: $per_run\/$per_run$/m,
		"its $pgbench_clients clients ran all $per_run transactions");
	like($run->{out}, qr/^number of failed transactions: 0 \(0\.000%\)$/m, 'none failed');
}
my $total = 2 * $per_run;
is($node->safe_psql('postgres', 'SELECT count(*), count(DISTINCT id) FROM issued'),
	"$total|$total", "all $total IDs were stored, and no ID repeats");
my ($sessions, $workers, $in_lease_space) = split /\|/, $node->safe_psql(
	'postgres', q{
SELECT count(DISTINCT i.session), count(DISTINCT d.worker_id),
       count(*) FILTER (WHERE d.worker_id >= 126)
  FROM issued AS i, snowflake_decode(i.id) AS d});
ok($sessions >= 1 && $sessions <= $pool_size,
	"PgBouncer ran the 80 clients' transactions on $sessions server connections "
	  . "(at most $pool_size)");
is($workers, $sessions, 'the IDs decode to one worker id per server connection');
is($in_lease_space, '0', 'and none to a worker id of the lease space');
is(SnowflakeTest::out_of_order($node, 'issued'),
	'0', 'the IDs of each server backend strictly increase');

# 2. A time-scoped lease through the pooler.  Its client keeps its
# transaction open, so that PgBouncer keeps its server connection for it
# and runs other clients on other server connections.
my $ttl_client = session('pooled', 'ttl_client');
my ($ttl_worker, $ttl_token, $ttl_pid, $ttl_expires) = split /\|/, $ttl_client->query_safe(q{
BEGIN;
SELECT worker_id, token, pg_backend_pid(), expires_at
  FROM snowflake_lease_worker('ttl client', interval '1 minute');});
is( client_ok(
		'pooled', qq{
SELECT pg_backend_pid() <> $ttl_pid, expires_at > '$ttl_expires'
  FROM snowflake_renew_lease($ttl_token, NULL)}),
	't|t',
	'another client, on another server connection, renews a time-scoped lease with its token');
$ttl_client->query_safe('COMMIT');
$ttl_client->quit;
is(lease_row($ttl_token, 'state, backend_pid IS NULL'),
	'held|t', 'the lease is held after its client left, and by no connection');
is(client_ok('pooled', "SELECT count(*) FROM snowflake_renew_lease($ttl_token, NULL)"),
	'1', 'a later client renews it');
is(client_ok('pooled', "SELECT snowflake_release_lease($ttl_token, NULL)"),
	't', 'another releases it');
is(lease_row($ttl_token, 'state'), 'released', 'the view shows it released');

# 3. snowflake.allow_connection_leases = off.  A session connected straight
# to the server takes a connection-scoped lease before.
my $direct = $node->background_psql('postgres');
my $direct_token =
  $direct->query_safe(q{SELECT token FROM snowflake_lease_worker('direct')});
set_connection_leases('off');
my ($ret, $out, $err) =
  client('pooled', q{SELECT * FROM snowflake_lease_worker('pooled connection')});
isnt($ret, 0, 'with snowflake.allow_connection_leases off, a connection-scoped grant fails');
like(
	$err,
	qr/ERROR:  55000: \Qconnection-scoped snowflake leases are turned off on this server\E
DETAIL:  \Qsnowflake.allow_connection_leases is off, as behind a transaction-mode connection pooler, where a server connection serves many clients and outlives each of them.\E
HINT:  \QPass a ttl, such as interval '1 minute', for a time-scoped lease, and renew it with its token before it ends.\E
/,
	'with SQLSTATE 55000, and says why and what to do instead');
($ret, $out, $err) = $node->psql('postgres',
	"\\set VERBOSITY verbose\nSELECT * FROM snowflake_lease_worker('direct connection')");
like($err, qr/ERROR:  55000: \Qconnection-scoped snowflake leases are turned off on this server\E/,
	'so does one on a direct connection');
is( $node->safe_psql('postgres',
		q{SELECT count(*) FROM snowflake_leases WHERE holder LIKE '% connection'}),
	'0', 'nothing was granted');
my $ttl2_token = client_ok('pooled',
	q{SELECT token FROM snowflake_lease_worker('pooled ttl', interval '1 minute')});
like($ttl2_token, qr/^\d+$/, 'a time-scoped grant through the pooler still works');
client_ok('pooled', "SELECT snowflake_release_lease($ttl2_token, NULL)");
is(lease_row($direct_token, 'state'),
	'held', 'the connection-scoped lease taken before is still held');
is($direct->query_safe("SELECT count(*) FROM snowflake_renew_lease($direct_token, NULL)"),
	'1', 'and its connection renews it');
is($direct->query_safe("SELECT snowflake_release_lease($direct_token, NULL)"),
	't', 'and releases it');
$direct->quit;

# 4. Connection-scoped leases through the pooler, allowed again.  The
# client keeps its transaction open while another client tries its token.
set_connection_leases('on');
my $conn_client = session('pooled', 'conn_client');
my ($conn_worker, $conn_token, $conn_pid) = split /\|/, $conn_client->query_safe(q{
BEGIN;
SELECT worker_id, token, pg_backend_pid() FROM snowflake_lease_worker('conn client');});
($ret, $out, $err) = client('pooled',
	"SELECT pg_backend_pid(); SELECT * FROM snowflake_renew_lease($conn_token, NULL)");
isnt($ret, 0, 'another client cannot renew a connection-scoped lease taken through the pooler');
isnt((split /\n/, $out)[0], $conn_pid, 'it ran on another server connection');
like(
	$err,
	qr/ERROR:  55000: \Qsnowflake lease $conn_token belongs to another connection\E
DETAIL:  \QA connection-scoped lease is held by the connection that took it, and ends with it.\E
HINT:  \QCall snowflake_renew_lease() on that connection. $another_connection_hint\E
/,
	'it is told the lease belongs to another connection, and to take time-scoped leases '
	  . 'behind a pooler');
($ret, $out, $err) =
  client('pooled', "SELECT snowflake_release_lease($conn_token, NULL)");
like($err,
	qr/\QHINT:  Call snowflake_release_lease() on that connection. $another_connection_hint\E/,
	'nor release it');
$conn_client->query_safe('COMMIT');
$conn_client->quit;
is(lease_row($conn_token, 'state, backend_pid, application_name'),
	"held|$conn_pid|conn_client",
	'the lease outlives its client: its server connection holds it');
my $next_worker = client_ok('pooled',
	q{SELECT worker_id FROM snowflake_lease_worker('next client')});
isnt($next_worker, $conn_worker,
	'a new client\'s grant gets the other worker id, not the one the gone client held');
($ret, $out, $err) =
  client('pooled', q{SELECT * FROM snowflake_lease_worker('third client')});
like(
	$err,
	qr/ERROR:  53400: \Qall 2 snowflake worker ids set aside for leases are leased\E
DETAIL:  \QNode 1 sets aside 2 worker ids (snowflake.lease_workers). Every lease is held by a connection.\E
/,
	'and a third finds both held by server connections');
admin('RECONNECT pooled');
SnowflakeTest::wait_until(sub { lease_row($conn_token, 'state') eq 'disconnected' },
	'the lease to end with its server connection');
is( $node->safe_psql('postgres',
		"SELECT count(*) FROM pg_stat_activity WHERE pid = $conn_pid"),
	'0',
	'once PgBouncer closed the server connection (RECONNECT), the lease ended');
SnowflakeTest::wait_until(
	sub {
		$node->safe_psql('postgres',
			q{SELECT count(*) FROM snowflake_leases WHERE state = 'held'}) eq '0';
	},
	'the next client\'s lease to end with its server connection');

# 5. One server connection for every client: a client renews and releases
# a connection-scoped lease that another client took.
my ($taken_token, $taken_pid) = split /\|/, client_ok('single',
	q{SELECT token, pg_backend_pid() FROM snowflake_lease_worker('first client')});
is( client_ok('single',
		"SELECT pg_backend_pid() FROM snowflake_renew_lease($taken_token, NULL)"),
	$taken_pid,
	'in a pool of one, the next client gets the same server connection, and renews '
	  . 'the lease the first one took');
is(client_ok('single', "SELECT snowflake_release_lease($taken_token, NULL)"),
	't', 'and releases it');

$bouncer->kill_kill;
undef $bouncer;
done_testing();
