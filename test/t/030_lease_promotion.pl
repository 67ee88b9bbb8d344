# Worker-id leases across a failover.  The lease functions commit
# synchronously whatever synchronous_commit the session has, so with a
# synchronous standby a lease is on the standby before its client sees it:
#   - with the standby gone, a lease taken with synchronous_commit = off
#     waits for it;
#   - after a promotion, a ttl lease survives: its holder renews it with its
#     token on the new primary, and nobody else gets its worker id;
#   - a connection-scoped lease ended with its connection on the old
#     primary: the new primary hands its worker id out again, above the end
#     of its window.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my ($ret, $out, $err);
my $primary = PostgreSQL::Test::Cluster->new('primary');
$primary->init(allows_streaming => 1);
$primary->append_conf('postgresql.conf', q{
shared_preload_libraries = 'snowflake'
snowflake.lease_workers = 2
snowflake.lease_connection_window = 2s
});
$primary->start;
$primary->safe_psql('postgres', 'CREATE EXTENSION snowflake');
$primary->backup('backup');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'backup', has_streaming => 1);
$standby->append_conf('postgresql.conf', "cluster_name = 'standby'");
$standby->start;
$primary->append_conf('postgresql.conf', "synchronous_standby_names = 'standby'");
$primary->reload;
$primary->poll_query_until('postgres',
	q{SELECT sync_state = 'sync' FROM pg_stat_replication})
  or die 'the standby did not become synchronous';

# With the standby stopped, a lease waits for it, though the session has
# synchronous_commit = off; it completes once the standby is back.
$standby->stop;
my $waiter = $primary->background_psql('postgres');
$waiter->query_until(qr/sent/, q{
SET synchronous_commit = off;
\\echo sent
SELECT worker_id FROM snowflake_lease_worker('waits', interval '1 minute');
});
ok( $primary->poll_query_until(
		'postgres', q{
SELECT count(*) = 1 FROM pg_stat_activity
 WHERE wait_event = 'SyncRep' AND query LIKE '%snowflake_lease_worker%'}),
	'with synchronous_commit = off, a lease waits for the synchronous standby');
$standby->start;
$primary->poll_query_until('postgres',
	q{SELECT sync_state = 'sync' FROM pg_stat_replication})
  or die 'the standby did not come back';
$primary->poll_query_until('postgres',
	q{SELECT count(*) = 0 FROM pg_stat_activity WHERE wait_event = 'SyncRep'})
  or die 'the lease did not complete';
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
is($standby->safe_psql('postgres', q{SELECT count(*) FROM snowflake_worker_leases}),
	'2', 'the standby has both leases');

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
my ($new_worker, $new_not_before) = split /\|/, $standby->safe_psql('postgres',
	q{SELECT worker_id, not_before FROM snowflake_lease_worker('after failover', interval '1 minute')});
is($new_worker, $conn_worker,
	'the new primary leases the worker id of the ended connection, not the held one');
is($standby->safe_psql('postgres',
		qq{SELECT '$new_not_before'::timestamptz = '$conn_not_after'::timestamptz - interval '1 ms'}),
	't', 'above the end of the ended lease\'s window');
($ret, $out, $err) = $standby->psql('postgres',
	q{SELECT * FROM snowflake_lease_worker('one too many', interval '1 minute')});
like($err, qr/all 2 snowflake worker ids set aside for leases are leased/,
	'the ttl lease\'s worker id stays taken');

done_testing();
