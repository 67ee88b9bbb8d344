# Worker-id leases across a failover: with synchronous standbys each lease
# function waits for its WAL record's confirmation (synchronous_commit = off
# too, wait event "Extension"; a cancel is 57014 though the grant was made);
# the standby replays leases; after promotion a ttl lease renews with its
# token and keeps its worker id, and a connection-scoped one's worker id is
# handed out again above the end of its window.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SnowflakeLease;
use SnowflakeStandby;
use SnowflakeTest;
use Test::More;

my ($ret, $out, $err);
my ($primary, $standby) = SnowflakeStandby::primary_with_standbys(
	settings => { 'snowflake.lease_workers' => 2, 'snowflake.lease_connection_window' => '2s' });
SnowflakeStandby::make_synchronous($primary) or die 'the standby did not become synchronous';

# With the standby stopped, a lease waits for it, though the session has
# synchronous_commit = off; it completes once the standby is back.
$standby->stop;
my $waiting_lease = q{
SELECT count(*) FROM pg_stat_activity
 WHERE wait_event_type = 'Extension' AND wait_event = 'Extension'
   AND query LIKE '%FROM snowflake_lease_worker(%'};
my $waiter = $primary->background_psql('postgres');
$waiter->query_until(qr/sent/, q{
SET synchronous_commit = off;
\\echo sent
SELECT 'granted', worker_id FROM snowflake_lease_worker('waits', interval '1 minute');
});
ok($primary->poll_query_until('postgres', "SELECT ($waiting_lease) = 1"),
	'with synchronous_commit = off, a lease waits for the synchronous standby');
is($primary->safe_psql('postgres', q{SELECT state FROM snowflake_leases WHERE holder = 'waits'}),
	'held', 'the primary has made the grant meanwhile');

# The C++ client's grant waits too; cancelled, it fails with the server's
# ERROR, and its grant, which it never read, ends with its connection.
my $cancelled = start_lease_client($primary, 'cancelled');
ok($primary->poll_query_until('postgres', "SELECT ($waiting_lease) = 2"),
	'a client\'s lease waits for the synchronous standby too');
is( $primary->safe_psql(
		'postgres', q{
SELECT pg_cancel_backend(pid) FROM pg_stat_activity
 WHERE wait_event = 'Extension' AND query LIKE '%FROM snowflake_lease_worker($1::text%'}),
	't', 'its wait is cancelled');
is(finish_lease_client($cancelled), 1, 'the client fails (status 1)');
like($cancelled->{stderr},
	qr/^error: SQLSTATE 57014: canceling statement due to user request$/m,
	'with the cancel\'s ERROR');
unlike($cancelled->{stdout}, qr/^lease /m, 'and uses no lease');
$primary->poll_query_until('postgres',
	q{SELECT state = 'disconnected' FROM snowflake_leases WHERE holder = 'cancelled'})
  or die 'the cancelled grant did not end with its connection';
pass('the grant made before the cancel ended with the client\'s connection');

$standby->start;
$primary->poll_query_until('postgres',
	q{SELECT sync_state = 'sync' FROM pg_stat_replication})
  or die 'the standby did not come back';
$primary->poll_query_until('postgres', "SELECT ($waiting_lease) = 0")
  or die 'the lease did not complete';
like($waiter->query_safe('SELECT 1'), qr/^granted\|12[67]$/m,
	'the waiting lease completes once the standby is back');
$waiter->quit;
$primary->safe_psql('postgres',
	q{SELECT snowflake_release_lease(token, NULL) FROM snowflake_leases WHERE holder = 'waits'});

# A ttl lease, renewed with an ID, and a connection-scoped lease held by an
# open session, both with synchronous_commit = off.
my ($ttl_token, $ttl_worker) = split /\|/, $primary->safe_psql('postgres', q{
SET synchronous_commit = off;
SELECT token, worker_id FROM snowflake_lease_worker('ttl holder', interval '10 minutes');});
my $holder = $primary->background_psql('postgres');
my ($conn_token, $conn_worker, $conn_not_after) = split /\|/, $holder->query_safe(q{
SET synchronous_commit = off;
SELECT token, worker_id, not_after FROM snowflake_lease_worker('connection holder');});
like($holder->query_safe(
		qq{SELECT expires_at IS NULL FROM snowflake_renew_lease($conn_token, NULL)}),
	qr/t/, 'the connection-scoped lease is held and renewed on the primary');
$conn_not_after = $holder->query_safe(
	qq{SELECT not_after FROM snowflake_leases WHERE token = $conn_token});
$primary->wait_for_catchup($standby);
is( $standby->safe_psql(
		'postgres', q{SELECT string_agg(holder, ',' ORDER BY holder) FROM snowflake_leases
		               WHERE holder LIKE '%holder'}),
	'connection holder,ttl holder',
	'the standby has both leases');
my $ttl_window = qq{SELECT state, (extract(epoch FROM not_after) * 1000)::bigint
  FROM snowflake_leases WHERE token = $ttl_token};
is($standby->safe_psql('postgres', $ttl_window), $primary->safe_psql('postgres', $ttl_window),
	'the ttl lease\'s window is the primary\'s');

# Leases are refused on the standby.
($ret, $out, $err) = $standby->psql('postgres',
	q{SELECT * FROM snowflake_lease_worker('on the standby', interval '1 minute')});
like($err, qr/cannot lease snowflake worker ids during recovery/,
	'a standby leases nothing');

# Fail over: the primary is gone, the standby takes over.
$primary->stop('immediate');
$holder->{run}->kill_kill;
$standby->promote;
$standby->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()')
  or die 'the standby was not promoted';

is($standby->safe_psql('postgres',
		qq{SELECT state FROM snowflake_leases WHERE token = $ttl_token}),
	'held', 'the ttl lease survived the promotion');
is($standby->safe_psql('postgres',
		qq{SELECT expires_at > now() FROM snowflake_renew_lease($ttl_token, NULL)}),
	't', 'its holder renews it on the new primary with its token');
is($standby->safe_psql('postgres',
		qq{SELECT state FROM snowflake_leases WHERE token = $conn_token}),
	'disconnected', 'the connection-scoped lease ended with its connection');
# Holders of worker id 127 vanished one after another, each pushing the next
# one's not_before a window further: wait for that state.
$standby->poll_query_until('postgres', q{
SELECT clock_timestamp() + interval '2 s' > max(not_after)
  FROM snowflake_leases WHERE state = 'disconnected'})
  or die 'the vanished holders\' windows did not come within reach';
my ($new_worker, $new_not_before) = split /\|/, $standby->safe_psql('postgres',
	q{SELECT worker_id, not_before FROM snowflake_lease_worker('after failover', interval '1 minute')});
is($new_worker, $conn_worker,
	'the new primary leases the worker id of the ended connection, not the held one');
# The promoted standby may lack the last renewals (not waited for): its
# first change counts every unreleased lease as renewed then, so the next
# holder starts above anything the old holder was promised.
is($standby->safe_psql('postgres',
		qq{SELECT '$new_not_before'::timestamptz >= '$conn_not_after'::timestamptz - interval '1 ms'}),
	't', 'above the end of the ended lease\'s window');
($ret, $out, $err) = $standby->psql('postgres',
	q{SELECT * FROM snowflake_lease_worker('one too many', interval '1 minute')});
like($err, qr/all 2 snowflake worker ids set aside for leases are leased/,
	'the ttl lease\'s worker id stays taken');
done_testing();
