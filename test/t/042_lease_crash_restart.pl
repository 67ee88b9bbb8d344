# Leases across crashes.  Renewals and releases are written to
# snowflake.lease_state without fsync: a crash of PostgreSQL alone (a
# backend killed with restart_after_crash on or off, an immediate stop)
# loses none, and an expired lease stays expired while a running one keeps
# its not_after.  A crash of the machine (another boot id in the header)
# may have lost renewals: the first change after it settles, moving every
# lease a window on, even after a further crash; so does a restored backup.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SnowflakeLease;
use SnowflakeLeaseFile;
use SnowflakeTest;
use Test::More;

my $node = SnowflakeTest::new_node(
	'crashes',
	init => [ allows_streaming => 1 ],
	settings => lease_settings(lease_workers => 3),
	extension => 'postgres');

my $long_token = $node->safe_psql('postgres',
	q{SELECT token FROM snowflake_lease_worker('long', interval '1 hour')});

sub lease_row
{
	my ($token) = @_;
	return $node->safe_psql('postgres', qq{
SELECT worker_id, state, (extract(epoch FROM not_after) * 1000)::bigint
  FROM snowflake_leases WHERE token = $token});
}

# A one-second lease, left to expire, and a spare lease of the third worker
# id, whose release is the first change after the crash.  Returns both tokens.
sub expired_lease
{
	my ($holder) = @_;
	my $token = $node->safe_psql('postgres',
		qq{SELECT token FROM snowflake_lease_worker('$holder', interval '1 second')});
	my $spare = $node->safe_psql('postgres',
		q{SELECT token FROM snowflake_lease_worker('spare', interval '1 hour')});
	SnowflakeTest::wait_until(sub { (split /\|/, lease_row($token))[1] eq 'expired' },
		"lease $holder to expire");
	return ($token, $spare);
}

# Kills a backend with SIGKILL; the postmaster then restarts all processes
# or exits, as restart_after_crash says: waits until it has logged $logged.
sub kill_backend
{
	my ($logged) = @_;
	my $offset = -s $node->logfile;
	my $victim = $node->background_psql('postgres');
	my $pid = $victim->query_safe('SELECT pg_backend_pid()');
	kill 'KILL', $pid;
	eval { $victim->quit };
	$node->wait_for_log($logged, $offset);
	return;
}

# After each crash: the first change (the spare lease's release) must
# settle nothing.
sub unchanged_after
{
	my ($crash, $expired_token, $spare, $expired_before, $long_before) = @_;
	my ($expired_worker, undef, $expired_not_after) = split /\|/, $expired_before;
	$node->safe_psql('postgres', "SELECT snowflake_release_lease($spare, NULL)");
	is(lease_row($expired_token), $expired_before,
		"$crash: the lease that had expired is still expired, with its not_after");
	is(lease_row($long_token), $long_before,
		"$crash: the running lease is held, with the same not_after");
	# The expired lease's worker id, freed first, goes next, above its window.
	my ($worker, $not_before) = split /\|/, $node->safe_psql(
		'postgres', q{
SELECT worker_id, (extract(epoch FROM not_before) * 1000)::bigint
  FROM snowflake_lease_worker('next', interval '1 minute')});
	ok( $worker == $expired_worker && $not_before >= $expired_not_after - 1,
		"$crash: its worker id is leased again above its window ($worker, $not_before >= $expired_not_after - 1)"
	);
	$node->safe_psql('postgres',
		q{SELECT snowflake_release_lease(token, NULL) FROM snowflake_leases
		   WHERE holder = 'next' AND state = 'held'});
}

# 1. A backend killed, the postmaster reinitializing itself.
$node->append_conf('postgresql.conf', 'restart_after_crash = on');
$node->restart;
my ($expired, $spare) = expired_lease('expired 1');
my ($expired_before, $long_before) = (lease_row($expired), lease_row($long_token));
kill_backend(qr/all server processes terminated; reinitializing/);
$node->poll_query_until('postgres', 'SELECT true')
  or die 'the server did not come back after its crash';
unchanged_after('a crash restart of the postmaster', $expired, $spare, $expired_before, $long_before);

# 2. A backend killed, the postmaster exiting (restart_after_crash = off), a start.
$node->append_conf('postgresql.conf', 'restart_after_crash = off');
$node->restart;
($expired, $spare) = expired_lease('expired 2');
($expired_before, $long_before) = (lease_row($expired), lease_row($long_token));
kill_backend(qr/database system is shut down/);
$node->stop('immediate', fail_ok => 1);
is(read_lease_header(lease_file($node))->{clean}, 0,
	'the crash left the lease file not cleanly shut down');
$node->start;
unchanged_after('a crash and a start', $expired, $spare, $expired_before, $long_before);

# 3. An immediate stop and a start.
($expired, $spare) = expired_lease('expired 3');
($expired_before, $long_before) = (lease_row($expired), lease_row($long_token));
$node->stop('immediate');
$node->start;
unchanged_after('an immediate stop and a start', $expired, $spare, $expired_before, $long_before);

# 4. A crash of the machine: the same crash, and a header recording another
# boot of the machine, as after a reboot.  The first change settles.
($expired, $spare) = expired_lease('expired 4');
my $before_kill_ms = $node->safe_psql('postgres',
	q{SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint});
kill_backend(qr/database system is shut down/);
$node->stop('immediate', fail_ok => 1);
my $file = lease_file($node);
my $header = read_lease_header($file);
like($header->{boot_id}, qr/^[0-9a-f-]{36}$/, 'the header records the boot id');
write_lease_header($file, boot_id => '00000000-0000-0000-0000-000000000000');
$node->start;
is(read_lease_header($file)->{settle}, 1,
	'after a crash in another boot, the header says a settle is pending');
# A crash before the first change leaves the settle due.
kill_backend(qr/database system is shut down/);
$node->stop('immediate', fail_ok => 1);
$node->start;
is(read_lease_header($file)->{settle}, 1, 'a crash before the first change leaves it pending');
$node->safe_psql('postgres', "SELECT snowflake_release_lease($spare, NULL)");
my (undef, $state, $not_after) = split /\|/, lease_row($expired);
ok($state eq 'held' && $not_after >= $before_kill_ms + 1000,
	"then the first change moves every lease not released a window past the crash ($state, $not_after)");
($state, $not_after) = (split /\|/, lease_row($long_token))[1, 2];
ok($state eq 'held' && $not_after >= $before_kill_ms + 3_600_000,
	'the running lease too');
is(read_lease_header($file)->{settle}, 0, 'and the header says the settle is done');

# 5. A backup restored on the same machine may lack later renewals: it settles too.
SnowflakeTest::wait_until(sub { (split /\|/, lease_row($expired))[1] eq 'expired' },
	'the settled lease to expire again');
$node->backup('copy');
$node->stop;
my $restored = PostgreSQL::Test::Cluster->new('restored');
$restored->init_from_backup($node, 'copy');
$restored->start;
$restored->safe_psql('postgres', "SELECT snowflake_renew_lease($long_token, NULL)");
is($restored->safe_psql('postgres', "SELECT state FROM snowflake_leases WHERE token = $expired"),
	'held', 'a backup restored on the same machine settles at its first change');

done_testing();
