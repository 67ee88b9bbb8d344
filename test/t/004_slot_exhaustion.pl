# Worker-slot exhaustion, as documented: with snowflake.worker_bits = 1 there
# are two slots; a third session's first snowflake_nextval() waits
# snowflake.claim_timeout and then fails with SQLSTATE 53400 and the
# documented message.  A session that waits longer gets the slot a holder
# frees, whether the holder calls snowflake_release_worker() or disconnects,
# and takes over that worker id.  No ID is ever issued twice.  The server
# warns at startup that the slots are fewer than max_connections.

use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $short_timeout_ms = 200;
my $long_timeout = '60s';	# "forever" for a waiter; the test ends it sooner

my $node = PostgreSQL::Test::Cluster->new('slots');
$node->init;
$node->append_conf(
	'postgresql.conf', qq(
shared_preload_libraries = 'snowflake'
snowflake.worker_bits = 1
snowflake.claim_timeout = '${short_timeout_ms}ms'
));
$node->start;

# Every ID any session issues goes into "issued", to check that none repeats.
$node->safe_psql('postgres',
	'CREATE EXTENSION snowflake; CREATE TABLE issued (id bigint NOT NULL)');

my $issue_one = 'INSERT INTO issued VALUES (snowflake_nextval()) RETURNING id';

# A session that has claimed a worker slot and stays connected.
sub open_holder
{
	my $session = $node->background_psql('postgres');
	$session->query_safe($issue_one);
	return $session;
}

sub backend_pid
{
	my ($session) = @_;
	return $session->query_safe('SELECT pg_backend_pid()');
}

# The worker id whose slot this session holds, from snowflake_workers.
sub held_worker_id
{
	my ($session) = @_;
	return $session->query_safe(
		'SELECT worker_id FROM snowflake_workers WHERE pid = pg_backend_pid()');
}

# Issues $count IDs in the session and records them.
sub issue_ids
{
	my ($session, $count) = @_;
	my $issued = $session->query_safe(
		"WITH new AS (INSERT INTO issued "
		  . "SELECT snowflake_nextval() FROM generate_series(1, $count) "
		  . "RETURNING id) SELECT count(*) FROM new");
	is($issued, $count, "session issued $count IDs");
}

sub slots_used
{
	return $node->safe_psql('postgres',
		'SELECT slots_used FROM snowflake_status()');
}

# Sends the session's first snowflake_nextval() without waiting for it.
sub start_claim
{
	my ($session) = @_;
	$session->query_until(qr/claiming\n/,
		"\\echo claiming\n$issue_one;\n");
}

# Waits until the backend sleeps in the slot-claim loop.
sub wait_until_claim_blocked
{
	my ($case, $pid) = @_;
	ok( $node->poll_query_until(
			'postgres',
			"SELECT wait_event_type = 'Extension' AND state = 'active' "
			  . "FROM pg_stat_activity WHERE pid = $pid"),
		"$case: the waiter sleeps in the slot-claim loop");
}

# Collects the result of start_claim(); returns the ID, or undef.
sub finish_claim
{
	my ($session) = @_;
	my $out = $session->query_until(qr/^\d+\n/m, '');
	return $out =~ /^(\d+)$/m ? $1 : undef;
}

sub decoded_worker_id
{
	my ($id) = @_;
	return $node->safe_psql('postgres',
		"SELECT worker_id FROM snowflake_decode($id)");
}

# A waiter with a long claim_timeout takes the slot that $free_slot frees.
sub check_handover
{
	my ($case, $holder, $free_slot) = @_;
	my $freed_worker = held_worker_id($holder);
	my $waiter = $node->background_psql('postgres');
	$waiter->query_safe("SET snowflake.claim_timeout = '$long_timeout'");
	my $waiter_pid = backend_pid($waiter);

	start_claim($waiter);
	wait_until_claim_blocked($case, $waiter_pid);
	is(slots_used(), 2, "$case: both slots still held while the waiter waits");

	$free_slot->($holder);

	my $id = finish_claim($waiter);
	ok(defined $id, "$case: the waiting session gets an ID");
	is(decoded_worker_id($id // 0), $freed_worker,
		"$case: the ID carries the freed worker id $freed_worker");
	is(held_worker_id($waiter), $freed_worker,
		"$case: snowflake_workers shows the waiter in the freed slot");
	return $waiter;
}

# --- startup warning ---------------------------------------------------------

my $max_connections = $node->safe_psql('postgres', 'SHOW max_connections');
ok( $node->log_contains(
		qr/WARNING:  \Qsnowflake.worker_bits = 1 gives 2 worker slots, fewer than max_connections ($max_connections)\E\n/
	),
	'startup warns that the worker slots are fewer than max_connections');

# --- exhaustion ----------------------------------------------------------------

my $holder1 = open_holder();
my $holder2 = open_holder();
is(slots_used(), 2, 'two holders take both slots');
isnt(held_worker_id($holder1), held_worker_id($holder2),
	'the holders have different worker ids');

# The server measures the wait, from before the call to after the error.
my ($stdout, $stderr);
$node->psql(
	'postgres', q(
\set VERBOSITY verbose
SELECT clock_timestamp() AS started \gset
SELECT snowflake_nextval();
SELECT round(extract(epoch FROM clock_timestamp() - :'started') * 1000);
),
	stdout => \$stdout,
	stderr => \$stderr,
	on_error_stop => 0);
like(
	$stderr,
	qr/\bERROR:  53400: all 2 snowflake worker slots are in use$/m,
	'a third session fails with SQLSTATE 53400 and the documented message');
like(
	$stderr,
	qr/^DETAIL:  Waited $short_timeout_ms ms for a session to release one\.$/m,
	'the DETAIL names the claim timeout');
like(
	$stderr,
	qr/^HINT:  \QRaise snowflake.worker_bits or snowflake.claim_timeout, or end sessions that called snowflake_nextval().\E$/m,
	'the HINT says how to get more slots');
unlike($stdout, qr/^\d{6,}$/m, 'the third session got no ID');
my ($waited_ms) = $stdout =~ /^(\d+)$/m;
# A little slack below the timeout for rounding; no tight bound either way.
ok(defined $waited_ms && $waited_ms >= $short_timeout_ms - 10,
	"the third session failed only after waiting about ${short_timeout_ms} ms"
	  . ' (waited ' . ($waited_ms // '?') . ' ms)');
ok(defined $waited_ms && $waited_ms < 30000,
	'the third session did not wait much longer than the timeout');
is(slots_used(), 2, 'the failed claim took no slot');

# --- handover by snowflake_release_worker() -------------------------------

issue_ids($holder1, 3000);
issue_ids($holder2, 100);

my $waiter1 = check_handover(
	'release',
	$holder1,
	sub {
		my ($holder) = @_;
		is($holder->query_safe('SELECT snowflake_release_worker()'),
			't', 'snowflake_release_worker() reports a released slot');
		is($holder->query_safe('SELECT snowflake_release_worker()'),
			'f', 'a second snowflake_release_worker() has nothing to release');
	});
issue_ids($waiter1, 3000);

# --- handover by disconnect -----------------------------------------------

issue_ids($holder2, 3000);
my $waiter2 = check_handover(
	'disconnect',
	$holder2,
	sub {
		my ($holder) = @_;
		$holder->quit;
	});
issue_ids($waiter2, 3000);

# --- no duplicates --------------------------------------------------------

is( $node->safe_psql(
		'postgres', 'SELECT count(*) - count(DISTINCT id) FROM issued'),
	0,
	'no ID was issued twice');
cmp_ok($node->safe_psql('postgres', 'SELECT count(*) FROM issued'),
	'>=', 12000, 'all sessions recorded their IDs');

$holder1->quit;
$waiter1->quit;
$waiter2->quit;
$node->stop;

done_testing();
