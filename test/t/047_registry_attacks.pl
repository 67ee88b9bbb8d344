# The registry in automatic mode against a database owner ("mallory", owner
# of "app"), with a peer heartbeating this node_id in app and
# on_node_collision = error: the collision must stand through all of it.
use strict;
use warnings;
use IPC::Run;
use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeRegistryPeer;

# debug1: the log shows "registering/unregistering background worker".
my $node = SnowflakeRegistryPeer::registry_node(
	'registry_attacks',
	{
		max_worker_processes => 24,
		max_prepared_transactions => 2,
		'snowflake.lease_workers' => 4,
		log_min_messages => 'debug1'
	});
$node->safe_psql('postgres', 'CREATE ROLE mallory LOGIN CREATEDB');
$node->safe_psql('postgres', 'CREATE DATABASE app OWNER mallory');
$node->safe_psql($_, 'CREATE EXTENSION snowflake') for 'postgres', 'app';

my %harnesses;
my $superuser = $node->safe_psql('postgres', 'SELECT current_user');

# psql in the background, as $user in $db, running each of @sql in one
# session whose application_name is $name; once the last, if a sleep, runs.
sub background
{
	my ($name, $db, $user, @sql) = @_;
	my @cmd = (
		$node->installed_command('psql'), '-XAtq', '-d',
		$node->connstr($db) . " application_name=$name",
		'-U', $user, map { ('-c', $_) } @sql);
	my $dir = $node->basedir;
	$harnesses{$name} = IPC::Run::start(\@cmd, '>', "$dir/$name.out", '2>', "$dir/$name.err");
	$node->poll_query_until('postgres',
		qq{SELECT count(*) = 1 FROM pg_stat_activity WHERE application_name = '$name' AND query ~ '^SELECT pg_sleep'})
	  if $sql[-1] =~ /^SELECT pg_sleep/;
	return;
}

# Ends the session $name (a backend in pg_sleep would not see its client go).
sub finish
{
	my ($name) = @_;
	$node->safe_psql('postgres',
		"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = '$name'");
	$harnesses{$name}->finish;
	return;
}

sub registry_pid
{
	my ($db) = @_;
	return $node->safe_psql(
		'postgres', qq{
SELECT coalesce(max(pid), 0) FROM pg_stat_activity
 WHERE backend_type = 'snowflake registry' AND datname = '$db'});
}

sub status
{
	my ($columns) = @_;
	return $node->safe_psql('postgres', "SELECT $columns FROM snowflake_status()");
}

sub nextval
{
	my ($db) = @_;
	my ($ret, $stdout, $stderr) =
	  $node->psql($db // 'app', 'SELECT snowflake_nextval() > 0', extra_params => [ '-U', 'mallory' ]);
	return $ret == 0 ? $stdout : $stderr;
}

# Waits until one registry runs in $db (one other than $old_pid, if given).
sub wait_registry
{
	my ($db, $old_pid) = @_;
	my $other = defined $old_pid ? "AND pid <> $old_pid" : '';
	return $node->poll_query_until(
		'postgres', qq{
SELECT count(*) = 1 FROM pg_stat_activity
 WHERE backend_type = 'snowflake registry' AND datname = '$db' $other});
}

# Waits until app's registry has completed rounds for 2 s after now.
sub wait_rounds_past_now
{
	my $now = $node->safe_psql('postgres', 'SELECT now()');
	return $node->poll_query_until(
		'postgres', qq{
SELECT registry_last_round > '$now'::timestamptz + interval '2 s' FROM snowflake_status()});
}

my $blocked = qr/ERROR:  \Q$SnowflakeRegistryPeer::collision\E/;
my $warned = qr/WARNING:  \Q$SnowflakeRegistryPeer::collision\E/;

# The registry of app, which was $old_pid, runs again ($restarted) and
# completes rounds, and the collision stands: no round since the log's
# $offset found the peer afresh ($not_cleared).
sub check_restarted_with_finding
{
	my ($old_pid, $offset, $restarted, $not_cleared) = @_;
	ok(wait_registry('app', $old_pid), $restarted);
	ok(wait_rounds_past_now(), 'and completes rounds');
	is(status('node_collision'), 't', 'the collision still stands');
	unlike(slurp_file($node->logfile, $offset), $warned, $not_cleared);
	return;
}

# Puts a running peer with this node_id into app's snowflake_nodes: its row,
# and a session ($name) that adds a beat every 50 ms, as replication would.
sub start_peer
{
	my ($name) = @_;
	$node->safe_psql('app', SnowflakeRegistryPeer::insert_sql());
	background($name, 'app', $superuser,
		SnowflakeRegistryPeer::beat_sql(beats => 100000, every => 0.05));
	return;
}

start_peer('peer');
ok($node->poll_query_until('postgres', 'SELECT node_collision FROM snowflake_status()'),
	'the registry of app finds the running peer');
like(nextval(), $blocked, 'on_node_collision = error refuses IDs in app');

# --- 1. failing DROP DATABASE ----------------------------------------------------
my $pid = registry_pid('app');
my $offset = -s $node->logfile;
my ($ret, $stdout, $stderr) =
  $node->psql('app', 'DROP DATABASE app', extra_params => [ '-U', 'mallory' ]);
like($stderr, qr/ERROR:  cannot drop the currently open database/,
	"the owner's DROP DATABASE of the current database fails (PostgreSQL's refusal)");
ok(wait_rounds_past_now(), 'the registry keeps completing rounds');
is(registry_pid('app'), $pid, 'the registry of app was not stopped');
unlike(slurp_file($node->logfile, $offset), $warned, 'and did not find the peer afresh');
is(status('node_collision'), 't', 'the collision stands');

# From another database, while a superuser's session is in app: each of the
# owner's DROPs stops the registry and fails; it comes back with its finding.
background('su_holder', 'app', $superuser, 'SELECT pg_sleep(3600)');
$node->safe_psql('postgres', 'GRANT pg_signal_backend TO mallory');
$offset = -s $node->logfile;
for my $drop ('DROP DATABASE app', 'DROP DATABASE app WITH (FORCE)')
{
	for my $attempt (1 .. 3)
	{
		($ret, $stdout, $stderr) = $node->psql('postgres', $drop,
			extra_params => [ '-U', 'mallory', '-c', "SET statement_timeout = '5s'" ]);
	}
	like(
		$stderr,
		$drop =~ /FORCE/
		? qr/ERROR:  must be a superuser to terminate superuser process|ERROR:  permission denied to terminate process/
		: qr/ERROR:  database "app" is being accessed by other users/,
		"the owner's $drop fails while a superuser's session is connected to app");
}
finish('su_holder');
$node->safe_psql('postgres', 'REVOKE pg_signal_backend FROM mallory');
check_restarted_with_finding($pid, $offset, "after the owner's failed DROPs the registry of app runs again",
	'no round cleared it: the peer was never found afresh');
ok(wait_rounds_past_now(), 'which keeps completing rounds');
is(status('node_collision'), 't', 'the collision stands');
$pid = registry_pid('app');

# A superuser's DROP stops the registry; failed, it restarts it with its finding.
background('holder', 'app', 'mallory', 'SELECT pg_sleep(3600)');
$offset = -s $node->logfile;
($ret, $stdout, $stderr) = $node->psql('postgres', 'DROP DATABASE app');
like($stderr, qr/ERROR:  database "app" is being accessed by other users/,
	"a superuser's DROP DATABASE app fails while a session is connected to it");
is(status('node_collision'), 't', 'the collision stands once the DROP failed');
check_restarted_with_finding($pid, $offset, 'the registry of app is started again',
	'no round cleared it: the peer was never found afresh');
like(nextval(), $blocked, 'IDs are still refused');
finish('holder');

# The owner drops databases with a running registry, which holds neither up.
$pid = registry_pid('app');
$node->safe_psql('postgres', 'GRANT pg_signal_backend TO mallory');
for my $db ('doomed', 'doomed_force')
{
	$node->safe_psql('postgres', "CREATE DATABASE $db OWNER mallory");
	$node->safe_psql($db, 'CREATE EXTENSION snowflake');
	ok(wait_registry($db), "$db has its registry");
	like(nextval($db), $blocked, "the collision is the server's: no ID in $db either");
}
background('own_holder', 'doomed_force', 'mallory', 'SELECT pg_sleep(3600)');
for my $drop ('DROP DATABASE doomed', 'DROP DATABASE doomed_force WITH (FORCE)')
{
	($ret, $stdout, $stderr) =
	  $node->psql('postgres', $drop, extra_params => [ '-U', 'mallory' ]);
	is($ret, 0, "the owner's $drop succeeds") or diag($stderr);
}
$harnesses{own_holder}->finish;
$node->safe_psql('postgres', 'REVOKE pg_signal_backend FROM mallory');
is( $node->safe_psql(
		'postgres', q{SELECT count(*) FROM pg_database WHERE datname LIKE 'doomed%'}),
	'0', 'both databases are gone');
ok( $node->poll_query_until(
		'postgres', q{SELECT count(*) = 0 FROM pg_stat_activity
 WHERE backend_type = 'snowflake registry' AND datname LIKE 'doomed%'}),
	'and no registry is left for them');
is(registry_pid('app'), $pid, "app's registry was not stopped by those DROPs");
is(status('node_collision'), 't', 'and its collision stands');
like(nextval(), $blocked, 'IDs in app are still refused');

# --- 2. a round queued behind VACUUM FULL ----------------------------------------
background('analyze', 'app', 'mallory', 'BEGIN', 'ANALYZE snowflake_nodes',
	'SELECT pg_sleep(3600)');
background('vacuum', 'app', 'mallory', 'VACUUM FULL snowflake_nodes');
ok( $node->poll_query_until(
		'postgres', q{
SELECT registry_problem = 'database "app": canceling statement due to lock timeout'
   AND registry_last_round < now() - interval '1 s'
  FROM snowflake_status()}),
	'a round behind a queued lock fails after the lock timeout, reported, and the last round ages');
is(status('node_collision'), 't', 'the last finding stands');
finish('analyze');
$harnesses{vacuum}->finish;
ok( $node->poll_query_until(
		'postgres', q{
SELECT registry_problem IS NULL AND registry_last_round > now() - interval '1 s'
  FROM snowflake_status()}),
	'the lock released, rounds complete again');

# --- 3. a template, a database that refuses connections ------------------------
$node->safe_psql('app', 'ALTER DATABASE app IS_TEMPLATE true', extra_params => [ '-U', 'mallory' ]);
$pid = registry_pid('app');
($ret, $stdout, $stderr) =
  $node->psql('postgres', 'DROP DATABASE app', extra_params => [ '-U', 'mallory' ]);
like($stderr, qr/ERROR:  cannot drop a template database/,
	"the owner's DROP of the template app fails too (PostgreSQL's refusal)");
ok(wait_rounds_past_now(), 'its registry completes rounds');
is(registry_pid('app'), $pid, 'and was not stopped');
$node->safe_psql('postgres', "SELECT pg_terminate_backend($pid)");
ok(wait_registry('app', $pid),
	'a template keeps its registry: it is started again when it exits');
is(status('node_collision'), 't', 'with its finding');

$node->safe_psql('postgres', 'ALTER DATABASE app ALLOW_CONNECTIONS false');
$pid = registry_pid('app');
$node->safe_psql('postgres', "SELECT pg_terminate_backend($pid)");
ok(wait_registry('app', $pid),
	'so does a database that refuses connections');
$node->safe_psql('postgres', 'ALTER DATABASE app ALLOW_CONNECTIONS true');

# After a restart the launcher's scan skips a template: the first ID starts it.
finish('peer');
$node->restart;
ok(wait_registry('postgres'),
	'after a restart the registry of postgres runs');
is(registry_pid('app'), '0', 'the scan starts none in the template app');
like(
	nextval(),
	qr/ERROR:  snowflake does not issue IDs or leases in template database "app"\n.*DETAIL:  No node registry runs in a template, so node-id collisions would go undetected there\./s,
	'no ID in a template, where no registry runs');
$node->safe_psql('postgres', 'ALTER DATABASE app IS_TEMPLATE false');
is(nextval(), 't', 'an ID in app once it is no template');
ok(wait_registry('app'),
	'and app has its registry');

# The extension in template1, so that new databases get it.
$node->safe_psql('template1', 'CREATE EXTENSION snowflake');
$node->safe_psql('postgres', 'CREATE ROLE bob LOGIN');
my ($t1_ret, $t1_out, $t1_err) =
  $node->psql('template1', 'SELECT snowflake_nextval()', extra_params => [ '-U', 'bob' ]);
like($t1_err, qr/ERROR:  snowflake does not issue IDs or leases in template database "template1"/,
	'a plain role gets no ID in template1');
($t1_ret, $t1_out, $t1_err) = $node->psql('template1',
	q{SELECT snowflake_lease_worker('svc:1', interval '1 minute')});
like($t1_err, qr/ERROR:  snowflake does not issue IDs or leases in template database "template1"/,
	'nor a lease, even to a superuser');
$node->safe_psql('postgres', 'CREATE DATABASE fresh');
ok(wait_registry('fresh'),
	'a database created from template1 gets a registry');
is(registry_pid('template1'), '0', 'template1 has none');
my ($copy_ret, $copy_out, $copy_err) =
  $node->psql('postgres', 'CREATE DATABASE copy TEMPLATE fresh');
like($copy_err, qr/ERROR:  source database "fresh" is being accessed by other users/,
	'a database with a registry cannot be a CREATE DATABASE template (operations.md says so)');
($copy_ret, $copy_out, $copy_err) =
  $node->psql('postgres', 'ALTER DATABASE fresh RENAME TO fresh_renamed');
like($copy_err, qr/ERROR:  database "fresh" is being accessed by other users/,
	'nor be renamed');
$node->safe_psql('postgres', 'CREATE DATABASE fresh2');
pass('CREATE DATABASE from template1 still works');
$node->safe_psql('postgres', 'DROP DATABASE fresh');
$node->safe_psql('postgres', 'DROP DATABASE fresh2');
$node->safe_psql('template1', 'DROP EXTENSION snowflake');

# --- 4. probes blocked by an open ALTER DATABASE ... RENAME ---------------------
for my $i (1, 2)
{
	background("rename$i", 'postgres', 'mallory', "CREATE DATABASE w$i", 'BEGIN',
		"ALTER DATABASE w$i RENAME TO w${i}x", 'SELECT pg_sleep(3600)');
}
# A new launcher probes w1 and w2 again, behind the renames' locks.
my $launcher = $node->safe_psql('postgres',
	"SELECT pid FROM pg_stat_activity WHERE backend_type = 'snowflake registry launcher'");
$node->safe_psql('postgres', "SELECT pg_terminate_backend($launcher)");
$node->poll_query_until('postgres',
	"SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'snowflake registry launcher' AND pid <> $launcher");
$node->safe_psql('postgres', 'CREATE DATABASE newapp');
$node->safe_psql('newapp', 'CREATE EXTENSION snowflake');
ok(wait_registry('newapp'),
	'a new database with the extension gets its registry');
ok( $node->poll_query_until(
		'postgres', q{SELECT registry_problem ~ 'database "w1": ' AND registry_problem ~ 'database "w2": '
                       FROM snowflake_status()}),
	'the databases whose connection waits for a lock are reported by name');
finish("rename$_") for 1, 2;
ok( $node->poll_query_until(
		'postgres', 'SELECT registry_problem IS NULL FROM snowflake_status()'),
	'the renames rolled back, the problem is gone');

# --- 5. CREATE EXTENSION committed with two-phase commit -------------------------
$node->safe_psql('postgres', 'CREATE DATABASE twopc');
my $twopc = $node->safe_psql('postgres', q{SELECT oid FROM pg_database WHERE datname = 'twopc'});
ok( $node->wait_for_log(
		qr/unregistering background worker "snowflake registry in database $twopc"/),
	'twopc was probed and found without the extension');
$node->safe_psql('twopc',
	"BEGIN; CREATE EXTENSION snowflake; PREPARE TRANSACTION 'x'");
$node->safe_psql('twopc', "COMMIT PREPARED 'x'");
is(nextval('twopc'), 't', 'an ID in twopc');
ok(wait_registry('twopc'),
	'the first ID starts the registry of a database whose CREATE EXTENSION was prepared');

# --- 6. named mode: a restarted registry keeps the finding -----------------------
$node->append_conf('postgresql.conf', "snowflake.database = 'app'\n");
$node->restart;
start_peer('peer2');
ok($node->poll_query_until('postgres', 'SELECT node_collision FROM snowflake_status()'),
	'named mode: the registry finds the running peer');
$pid = registry_pid('app');
$offset = -s $node->logfile;
$node->safe_psql('postgres', "SELECT pg_terminate_backend($pid)");
check_restarted_with_finding($pid, $offset, 'the static registry is restarted',
	'no first round cleared it: the peer was never found afresh');
finish('peer2');

$node->stop;
done_testing();
