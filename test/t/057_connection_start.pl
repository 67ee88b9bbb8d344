# A new connection pays nothing for the extension, and the sharing of what
# sessions found never skips a failing check.
use strict;
use warnings;
use SnowflakeTest;
use Test::More;

my $node = SnowflakeTest::new_node('connstart');
$node->safe_psql('postgres', 'CREATE DATABASE app');
$node->safe_psql('app', 'CREATE EXTENSION snowflake');

# Runs $sql first in a new session, in one transaction: "output|scans" of
# pg_depend and pg_extension (pg_stat_xact_sys_tables).
sub first_statements
{
	my ($sql, %opt) = @_;
	my $db = delete $opt{db} // 'app';
	my $out = $node->safe_psql(
		$db, qq{BEGIN;
$sql;
SELECT sum(coalesce(seq_scan, 0) + coalesce(idx_scan, 0))
  FROM pg_stat_xact_sys_tables WHERE relname IN ('pg_depend', 'pg_extension');
COMMIT;}, %opt);
	return join('|', split /\n/, $out);
}

is(first_statements('SELECT 1'), '1|0',
	"a new session's SELECT 1 reads neither pg_depend nor pg_extension");

# The first session of the database checks in full and shares what it found.
my ($first) = first_statements('SELECT snowflake_nextval() > 0') =~ /^t\|(\d+)$/;
ok(defined $first && $first > 0, 'the first session of a database checks its catalog');
is(first_statements('SELECT snowflake_nextval() > 0'), 't|0',
	"a later new session's first snowflake_nextval() reads neither pg_depend nor pg_extension");

# A new session whose first query compares an ID's timestamp: rewritten.
like(
	$node->safe_psql(
		'app', q{CREATE TABLE events (id bigint PRIMARY KEY);
EXPLAIN (COSTS OFF) SELECT * FROM events WHERE snowflake_timestamp(id) >= '2026-01-01 00:00:00+00'}
	),
	qr/Index Cond: \(id >= snowflake_timestamp_lower_id\(/,
	"the rewrite serves a new session's first query");

# DROP and CREATE EXTENSION: a conflicting history (an epoch 1000 days
# earlier) must still refuse a new session's first ID.
$node->safe_psql(
	'app', q{DROP EXTENSION snowflake;
CREATE EXTENSION snowflake;
UPDATE snowflake_layout SET epoch = epoch - interval '1000 days';});
my ($ret, $out, $err) = $node->psql('app', "\\set VERBOSITY sqlstate\nSELECT snowflake_nextval()");
like($err, qr/ERROR:  55000$/,
	'after DROP and CREATE EXTENSION, a conflicting history refuses the first ID');
($ret, $out, $err) = $node->psql('app', 'SELECT snowflake_nextval()');
like(
	$err,
	qr/ERROR:  the server's snowflake layout differs from the layout recorded in database "app"/,
	'and so does the next session');

# A recording that rolls back is not shared: the next session records.
$node->safe_psql(
	'app', q{DROP EXTENSION snowflake;
CREATE EXTENSION snowflake;
DELETE FROM snowflake_layout;});
$node->safe_psql('app', 'BEGIN; SELECT snowflake_nextval(); ROLLBACK;');
is($node->safe_psql('app', 'SELECT count(*) FROM snowflake_layout'),
	'0', 'the rolled-back recording left no row');
# Nor is a history the session's own transaction wrote, then rolled back.
$node->safe_psql(
	'app', q{BEGIN;
INSERT INTO snowflake_layout (first_id, epoch, node_bits, worker_bits, sequence_bits)
    SELECT 0, epoch, node_bits, worker_bits, sequence_bits FROM snowflake_status();
SELECT snowflake_nextval();
ROLLBACK;});
is($node->safe_psql('app', 'SELECT count(*) FROM snowflake_layout'),
	'0', 'the row put in by hand rolled back');
is($node->safe_psql('app', 'SELECT snowflake_nextval() > 0; SELECT count(*) FROM snowflake_layout'),
	"t\n1", 'the next session records the layout');
# A session that recorded shares nothing (its transaction could still
# roll back); the next one finds the row committed and shares that.
($first) = first_statements('SELECT snowflake_nextval() > 0') =~ /^t\|(\d+)$/;
ok(defined $first && $first > 0, 'the session after the recording checks in full');
is(first_statements('SELECT snowflake_nextval() > 0'), 't|0',
	'and the session after that finds it shared');

# Each session reads the history as itself.
$node->safe_psql(
	'app', q{CREATE ROLE app LOGIN;
REVOKE SELECT ON snowflake_layout FROM PUBLIC;});
($ret, $out, $err) = $node->psql(
	'app', "\\set VERBOSITY verbose\nSELECT snowflake_nextval()",
	extra_params => [ '-U', 'app' ]);
like(
	$err,
	qr/ERROR:  42501: permission denied for table snowflake_layout$/m,
	'without SELECT on snowflake_layout, a new session gets no ID');
$node->safe_psql('app', 'GRANT SELECT ON snowflake_layout TO app');
($ret, $out, $err) = $node->psql('app', 'SELECT snowflake_nextval() > 0',
	extra_params => [ '-U', 'app' ]);
is("$out|$err", 't|', 'with it, it does');

# A database dropped and created again with its OID, from the same template:
# the same OIDs come back, but what an earlier session found is forgotten.
$node->safe_psql('postgres', 'CREATE DATABASE tmpl');
$node->safe_psql('tmpl', 'CREATE EXTENSION snowflake');
# A template, which the registry keeps out of from the next start.
$node->safe_psql('postgres', 'ALTER DATABASE tmpl IS_TEMPLATE true');
$node->restart;

# Creates the database copy from tmpl (with "OID n" if given), once no
# registry round is connected to tmpl.
sub create_copy
{
	my ($oid) = @_;
	my $sql = 'CREATE DATABASE copy' . (defined $oid ? " OID $oid" : '') . ' TEMPLATE tmpl';
	SnowflakeTest::wait_until(sub { ($node->psql('postgres', $sql))[0] == 0 },
		'nobody connected to tmpl, for CREATE DATABASE copy');
	return;
}
create_copy();
my $copy_oid = $node->safe_psql('postgres', q{SELECT oid FROM pg_database WHERE datname = 'copy'});
($first) = first_statements('SELECT snowflake_nextval() > 0', db => 'copy') =~ /^t\|(\d+)$/;
ok(defined $first && $first > 0, "the copy's first session checks in full");
is(first_statements('SELECT snowflake_nextval() > 0', db => 'copy'), 't|0',
	"the copy's next session finds it shared");
$node->safe_psql('postgres', 'DROP DATABASE copy');
create_copy($copy_oid);
is($node->safe_psql('postgres', q{SELECT oid FROM pg_database WHERE datname = 'copy'}),
	$copy_oid, 'the copy is back with its OID');
($first) = first_statements('SELECT snowflake_nextval() > 0', db => 'copy') =~ /^t\|(\d+)$/;
ok(defined $first && $first > 0,
	"the copy created again checks in full: nothing of the dropped one's is shared");

$node->stop;
done_testing();
