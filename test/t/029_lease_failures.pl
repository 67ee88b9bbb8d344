# Worker-id leases when holders fail, with the C++ reference client, on a
# lease space of one worker id (127), so every lease hands the previous
# holder's worker id on: after a kill -9, an expired ttl lease, a woken
# zombie (refused), a client clock behind (refused), a lease kept by a failed
# pipeline, restarts and crashes (no lease lost, no token reused), a shrunk
# lease space (refused), vanishing holders and reuse order, the next holder's
# IDs lie above everything the previous one could have issued.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SnowflakeLease;
use Test::More;
use SnowflakeTest;
use List::Util qw(max min);

my $node = SnowflakeTest::new_node(
	'leases',
	settings => {
		%{ lease_settings(lease_workers => 1, lease_connection_window => '2s') },
		# Only explicit flushes write the WAL: a lease change that relied on
		# the WAL writer would be lost in the crash of section 5.
		wal_writer_delay => '10s'
	},
	extension => 'postgres');

sub lease_state
{
	return $node->safe_psql('postgres',
		q{SELECT state FROM snowflake_leases WHERE worker_id = 127});
}

# Unix ms of an ID's timestamp.
sub id_ms
{
	my ($id) = @_;
	return $node->safe_psql('postgres',
		"SELECT floor(extract(epoch FROM ts) * 1000)::bigint FROM snowflake_decode($id)");
}

# 1. kill -9 of a client with a connection-scoped lease.
my $dead = start_lease_client($node, 'dead', '--count', 1_000_000, '--rate', 2000);
my $dead_lease = wait_for_lease($dead);
is($dead_lease->{worker_id}, 127, 'the only lease worker id is 127');
SnowflakeTest::wait_until(sub { read_ids($dead) >= 200 }, 'the doomed client\'s IDs');
$dead->{harness}->signal('KILL');
finish_lease_client($dead);
my @dead_ids = read_ids($dead);
ok(@dead_ids >= 200, 'the killed client issued IDs (' . scalar(@dead_ids) . ')');
# Its backend notices the lost connection by itself; no window to wait for.
SnowflakeTest::wait_until(sub { lease_state() eq 'disconnected' }, 'the killed client\'s connection to end');

my $next = start_lease_client($node, 'after_kill', '--count', 1000);
my $next_lease = wait_for_lease($next);
is($next_lease->{worker_id}, 127, 'the dead client\'s worker id is leased again at once');
ok($next_lease->{not_before} >= id_ms(max(@dead_ids)),
	'the next holder\'s not_before is at or above the dead holder\'s last ID');
is(finish_lease_client($next), 0, 'the next holder ran');
my @next_ids = read_ids($next);
ok(min(@next_ids) > max(@dead_ids),
	'every ID of the next holder is above every ID of the killed one');

# 2. A ttl lease that runs out without a release; its client renews it until
# let go, so that the check below comes before its expiry.
my $lapsed = start_lease_client($node, 'lapsed', '--ttl', 5, '--count', 500, '--no-release',
	'--wait-stdin');
my $lapsed_lease = wait_for_lease($lapsed);
ok(wait_for_holding($lapsed), 'a client holds a ttl lease');
my ($ret, $out, $err) = $node->psql('postgres',
	q{SELECT * FROM snowflake_lease_worker('too early', interval '1 minute')});
like($err, qr/all 1 snowflake worker ids set aside for leases are leased/,
	'until the lease runs out, its worker id is not leased again');
is(finish_lease_client($lapsed), 0, 'the client exits without releasing its ttl lease');
like($lapsed->{stdout}, qr/^not released$/m, 'it says so');
SnowflakeTest::wait_until(sub { lease_state() eq 'expired' }, 'the lapsed lease to expire');
# Its renewals moved the end of its window.
$lapsed_lease->{not_after} = $node->safe_psql('postgres',
	qq{SELECT (extract(epoch FROM not_after) * 1000)::bigint FROM snowflake_leases
	    WHERE token = $lapsed_lease->{token}});
my $heir = start_lease_client($node, 'heir', '--count', 1000);
my $heir_lease = wait_for_lease($heir);
is($heir_lease->{worker_id}, 127, 'the expired worker id is leased again');
ok($heir_lease->{not_before} >= $lapsed_lease->{not_after} - 1,
	'the next holder starts at the end of the expired window, not at the last ID');
is(finish_lease_client($heir), 0, 'the next holder ran');
ok(min(read_ids($heir)) > max(read_ids($lapsed)),
	'its IDs are above the lapsed holder\'s');
ok(id_ms(min(read_ids($heir))) >= $lapsed_lease->{not_after},
	'and above every ID the lapsed holder could have issued (its whole window)');

# 3. A zombie: stopped past its expiry, its worker id leased to another,
# then woken up.
my $zombie = start_lease_client($node, 'zombie', '--ttl', 2, '--count', 1_000_000,
	'--rate', 1000);
my $zombie_lease = wait_for_lease($zombie);
SnowflakeTest::wait_until(sub { read_ids($zombie) >= 100 }, 'the zombie\'s IDs');
my $pid = $zombie->{harness}->{KIDS}[0]{PID};
kill 'STOP', $pid;
SnowflakeTest::wait_until(sub { lease_state() eq 'expired' }, 'the zombie\'s lease to expire');
# The zombie may have renewed before it was stopped: the view has its window.
my $zombie_not_after = $node->safe_psql('postgres',
	qq{SELECT (extract(epoch FROM not_after) * 1000)::bigint FROM snowflake_leases
	    WHERE token = $zombie_lease->{token}});
my $usurper = start_lease_client($node, 'usurper', '--ttl', 30, '--count', 1000,
	'--hold-ms', 3000);
my $usurper_lease = wait_for_lease($usurper);
is($usurper_lease->{worker_id}, 127, 'the zombie\'s worker id went to another client');
kill 'CONT', $pid;
is(finish_lease_client($zombie), 3, 'the zombie stops with "lease lost" (status 3)');
like($zombie->{stderr}, qr/lease lost: .*snowflake lease $zombie_lease->{token} is not held/,
	'its renewal was refused: its token no longer matches');
is(finish_lease_client($usurper), 0, 'the new holder ran');
my @zombie_ids = read_ids($zombie);
ok(id_ms(max(@zombie_ids)) < $zombie_not_after,
	'the zombie issued nothing at or past its expiry');
ok(min(read_ids($usurper)) > max(@zombie_ids),
	'the new holder\'s IDs are above every ID of the zombie');

# 4. A client whose clock is behind the database's is refused.
my $behind = start_lease_client($node, 'behind', '--clock-offset-ms', -5000);
is(finish_lease_client($behind), 1, 'a client with its clock 5 s behind gets no lease');
like($behind->{stderr},
	qr/SQLSTATE 22023: the client's clock is behind the database's by more than 1000 ms/,
	'and is told why');

# 4b. A lease read in a pipeline whose next statement fails, in the same
# implicit transaction: the failure does not undo it.
my $piped = start_lease_client($node, 'pipelined', '--acquire-in', 'pipeline', '--count', 500,
	'--wait-stdin', '--no-release');
my $piped_lease = wait_for_lease($piped);
is($piped_lease->{worker_id}, 127, 'a client leases in a pipeline whose next statement fails');
ok(wait_for_holding($piped), 'it issues IDs and holds the lease')
  or diag($piped->{stderr});
is( $node->safe_psql(
		'postgres', "SELECT state, holder FROM snowflake_leases WHERE token = $piped_lease->{token}"),
	'held|pipelined',
	'the view shows the lease held');
($ret, $out, $err) = $node->psql('postgres',
	q{SELECT * FROM snowflake_lease_worker('beside the pipeline', interval '1 minute')});
like($err, qr/all 1 snowflake worker ids set aside for leases are leased/,
	'nobody else gets its worker id while its connection lives');
is(finish_lease_client($piped), 0, 'the client exits without releasing');
SnowflakeTest::wait_until(sub { lease_state() eq 'disconnected' }, 'the pipelined lease to end with its connection');
my $piped_not_after = $node->safe_psql('postgres',
	qq{SELECT (extract(epoch FROM not_after) * 1000)::bigint FROM snowflake_leases
	    WHERE token = $piped_lease->{token}});
my $after_pipe = start_lease_client($node, 'after_pipeline', '--count', 500);
my $after_pipe_lease = wait_for_lease($after_pipe);
is($after_pipe_lease->{worker_id}, 127, 'the worker id is leased again once the connection ended');
ok($after_pipe_lease->{not_before} >= $piped_not_after - 1,
	'above the whole window of the pipelined lease: no overlap');
is(finish_lease_client($after_pipe), 0, 'the next holder ran');
ok(min(read_ids($after_pipe)) > max(read_ids($piped)),
	'its IDs are above the pipelined holder\'s');

# 5. Restarts lose no lease.  A ttl lease, renewed with an ID, then a clean
# restart and a crash restart.
my ($token, $not_after) = split /\|/, $node->safe_psql('postgres',
	q{SELECT token, (extract(epoch FROM not_after) * 1000)::bigint
	    FROM snowflake_lease_worker('survivor', interval '10 minutes')});
my $survivor_id = $node->safe_psql('postgres', qq{
SELECT ((floor(extract(epoch FROM not_before) * 1000)::bigint + 1
         - (extract(epoch FROM TIMESTAMPTZ '2025-01-01 UTC') * 1000)::bigint) << 22)
       | (127 << 12) | 5
  FROM snowflake_leases WHERE token = $token});
$node->safe_psql('postgres', "SELECT snowflake_renew_lease($token, $survivor_id)");
my $leases = q{SELECT token, state, holder, expires_at, last_timestamp FROM snowflake_leases};
my $before = $node->safe_psql('postgres', $leases);
ok(-f $node->data_dir . '/snowflake.lease_state', 'the lease table has its file');
$node->restart;
is($node->safe_psql('postgres', $leases),
	$before, 'a clean restart keeps the lease, its expiry and its last timestamp');
$node->stop('immediate');
$node->start;
is($node->safe_psql('postgres', $leases), $before, 'so does a crash restart');
is($node->safe_psql('postgres',
		"SELECT expires_at > now() FROM snowflake_renew_lease($token, NULL)"),
	't', 'its holder renews it after both');
($ret, $out, $err) = $node->psql('postgres',
	q{SELECT * FROM snowflake_lease_worker('intruder', interval '1 minute')});
isnt($ret, 0, 'and nobody else gets its worker id');

# A lease taken with synchronous_commit = off survives a crash too: the lease
# file is synced before the function returns, whatever the session says.
$node->safe_psql('postgres', "SELECT snowflake_release_lease($token, NULL)");
my $async_token = $node->safe_psql('postgres', q{
SET synchronous_commit = off;
SELECT token FROM snowflake_lease_worker('async session', interval '10 minutes');});
# Every token this node handed out so far, to compare after the crash.
my $max_token = max($async_token, $token,
	map { $_->{token} } $dead_lease, $next_lease, $lapsed_lease, $heir_lease,
	$zombie_lease, $usurper_lease, $piped_lease, $after_pipe_lease);
is($async_token, $max_token, 'tokens increase: the last grant has the largest');
$before = $node->safe_psql('postgres', $leases);
$node->stop('immediate');
$node->start;
is($node->safe_psql('postgres', $leases),
	$before, 'a lease taken with synchronous_commit = off survives a crash restart');
# A backend killed with SIGKILL makes an unclean crash (an immediate stop
# still fsyncs the lease file); with restart_after_crash off the postmaster
# exits and is started below.  Unsynced renewals survive in the page cache.
my $not_after_before_kill = $node->safe_psql('postgres',
	"SELECT not_after FROM snowflake_leases WHERE token = $async_token");
my $victim = $node->background_psql('postgres');
my $victim_pid = $victim->query_safe('SELECT pg_backend_pid()');
my $kill_offset = -s $node->logfile;
kill 'KILL', $victim_pid;
$node->wait_for_log(qr/database system is shut down/, $kill_offset);
eval { $victim->quit };
$node->stop('immediate', fail_ok => 1);
$node->start;
# After the crash, the next grant's token is new: above every token before.
$node->safe_psql('postgres', "SELECT snowflake_release_lease($async_token, NULL)");
is($node->safe_psql('postgres',
		"SELECT not_after FROM snowflake_leases WHERE token = $async_token"),
	$not_after_before_kill,
	'after a crash of PostgreSQL alone, the first change moves no lease\'s not_after');
my $after_crash_token = $node->safe_psql('postgres',
	q{SELECT token FROM snowflake_lease_worker('after the crash', interval '1 minute')});
ok($after_crash_token > $max_token,
	"a grant after a crash restart has a token above every earlier one ($after_crash_token > $max_token)");
$node->safe_psql('postgres', "SELECT snowflake_release_lease($after_crash_token, NULL)");
# A token granted and released right before a crash is not reused either.
$node->stop('immediate');
$node->start;
my $after_second_crash = $node->safe_psql('postgres',
	q{SELECT token FROM snowflake_lease_worker('after another crash', interval '1 minute')});
ok($after_second_crash > $after_crash_token,
	'nor after a crash that follows a release');
$node->safe_psql('postgres', "SELECT snowflake_release_lease($after_second_crash, NULL)");

# 6. The lease space cannot shrink at a restart: worker id 127 would go to
# sessions while its lease may still be in use.
my $last_session_id = $node->safe_psql('postgres', 'SELECT snowflake_nextval()');
$node->stop;
$node->append_conf('postgresql.conf', 'snowflake.lease_workers = 0');
like(SnowflakeTest::start_refused($node, 'a start with a smaller lease space is refused'),
	qr/FATAL:  snowflake.lease_workers cannot shrink from 1 to 0/,
	'and says why');
$node->append_conf('postgresql.conf', 'snowflake.lease_workers = 2');
# This run's generation floor lies just above what the previous run reserved
# (after a clean stop: its newest ID's millisecond), which the file keeps.
my $reserved_ms = slurp_file($node->data_dir . '/snowflake.reservation');
chomp $reserved_ms;
$node->start;
is($node->safe_psql('postgres', 'SELECT slots_total FROM snowflake_status()'),
	'126', 'a larger lease space is fine: sessions keep 126 worker ids');
my $grown = $node->safe_psql('postgres', q{
SELECT worker_id, (extract(epoch FROM not_before) * 1000)::bigint
  FROM snowflake_lease_worker('grown', interval '1 minute')});
is($grown, "126|$reserved_ms",
	'worker id 126, which sessions could use before, is leased from this run\'s generation floor');
ok((split /\|/, $grown)[1] >= id_ms($last_session_id),
	'at or above the previous run\'s last session ID');

# A lease of another layout cannot be renewed (its client has the old
# widths); one more worker bit moves the lease space to 254 and 255.
$node->safe_psql('postgres',
	q{SELECT snowflake_release_lease(token, NULL) FROM snowflake_leases WHERE holder = 'grown'});
my $old_token = $node->safe_psql('postgres',
	q{SELECT token FROM snowflake_lease_worker('old layout', interval '10 minutes')});
$node->append_conf('postgresql.conf', 'snowflake.worker_bits = 8');
$node->restart;
($ret, $out, $err) = $node->psql('postgres',
	"SELECT * FROM snowflake_renew_lease($old_token, NULL)");
like($err, qr/snowflake lease $old_token is not held.*\n.*another layout or lease space/,
	'after a layout change, an old lease is not held any more');
is($node->safe_psql('postgres',
		q{SELECT worker_id FROM snowflake_lease_worker('new layout', interval '1 minute')}),
	'254', 'the new lease space is leased');

# 7. Holders that vanish right after their grant push the worker id's
# not_before further ahead each time; a grant that would wait more than one
# connection window (two minutes here) is refused.
my $runaway = SnowflakeTest::new_node(
	'runaway',
	settings => lease_settings(lease_workers => 1, lease_connection_window => '120s'),
	extension => 'postgres');
my $vanish = q{SELECT (extract(epoch FROM not_before - clock_timestamp()) * 1000)::bigint,
                      (extract(epoch FROM not_before) * 1000)::bigint,
                      (extract(epoch FROM not_after) * 1000)::bigint
                 FROM snowflake_lease_worker('vanishes')};
my ($first_wait, undef, $first_not_after) = split /\|/, $runaway->safe_psql('postgres', $vanish);
ok($first_wait <= 0, 'the first holder need not wait');
# Until the first connection is gone, the worker id is still held.
my ($second_ret, $second_out, $second_err);
SnowflakeTest::wait_until(
	sub {
		($second_ret, $second_out, $second_err) = $runaway->psql('postgres', $vanish);
		die "unexpected: $second_err" if $second_ret != 0 && $second_err !~ /are leased/;
		return $second_ret == 0;
	},
	'the first holder\'s connection to end');
my ($second_wait, $second_not_before) = split /\|/, $second_out;
ok($second_not_before >= $first_not_after - 1,
	'the vanished holder\'s worker id is leased again above its whole window');
ok($second_wait > 0 && $second_wait <= 120_000,
	"the second holder waits for the first one's window ($second_wait ms)");
my ($third_ret, $third_out, $third_err);
SnowflakeTest::wait_until(
	sub {
		($third_ret, $third_out, $third_err) = $runaway->psql('postgres', $vanish);
		return $third_err !~ /are leased/;
	},
	'the second holder\'s connection to end');
like($third_err, qr/ERROR:  no snowflake worker id can be leased before /,
	'a third would wait for both windows: refused, naming the time');
$runaway->stop;

# 8. Reuse, least recently released first, and a client behind the last
# timestamp reported by a previous holder 5 s ahead; worker ids 126 and 127.
my $lru = SnowflakeTest::new_node('lru', settings => lease_settings(lease_workers => 2),
	extension => 'postgres');
my $lease_sql = q{SELECT worker_id, token FROM snowflake_lease_worker('%s', interval '1 minute')};
my ($a_worker, $a_token) = split /\|/, $lru->safe_psql('postgres', sprintf($lease_sql, 'a'));
my ($b_worker, $b_token) = split /\|/, $lru->safe_psql('postgres', sprintf($lease_sql, 'b'));
is("$a_worker|$b_worker", '126|127', 'never-leased ids first, lowest first');
# b reports an ID of its window 5 s ahead of the clock, and releases.
my $ahead_id = $lru->safe_psql(
	'postgres', qq{
SELECT (((extract(epoch FROM clock_timestamp() + interval '5 s') * 1000)::bigint
         - (extract(epoch FROM s.epoch) * 1000)::bigint) << 22)
       | (s.node_id::bigint << 19) | (${b_worker}::bigint << 12)
  FROM snowflake_status() AS s});
is($lru->safe_psql('postgres', "SELECT snowflake_release_lease($b_token, $ahead_id)"),
	't', 'b releases, reporting an ID 5 s ahead');
($ret, $out, $err) = $lru->psql('postgres',
	q{SELECT * FROM snowflake_lease_worker('c', interval '1 minute', clock_timestamp())});
like($err,
	qr/ERROR:  the client's clock is behind the last timestamp of the worker id's previous holder by more than 1000 ms/,
	'a client whose clock is behind b\'s last timestamp is refused');
$lru->safe_psql('postgres', "SELECT snowflake_release_lease($a_token, NULL)");
# Both free now; b's id was released first.
is( $lru->safe_psql(
		'postgres', qq{
SELECT worker_id, not_before = snowflake_timestamp($ahead_id)
  FROM snowflake_lease_worker('d', interval '1 minute')}),
	"$b_worker|t",
	'the id released longest ago (not the lowest) goes next, above its last reported ID');
$lru->stop;
done_testing();
