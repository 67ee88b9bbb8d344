# Version 1.4's leases carried into 1.5 from two databases' tables.
#
# Under 1.4 a server leased worker ids from the table snowflake_worker_leases
# of the database snowflake.database named; if that setting moved, an
# earlier database keeps a table of its own, whose tokens were counted
# apart (each from 1).  docs/operations.md says to update first the database
# that held the leases, then the others.  The import
# (snowflake_lease_import_v14) must then:
#   - refuse a row whose token is not positive (token 0 reads as "never
#     leased": its worker id would be granted again at once);
#   - refuse a row whose token another worker id's carried lease has (a
#     renewal names its lease by the token alone);
#   - keep a held lease against the other table's row of the same worker id,
#     whatever their tokens, and warn for a row held too;
#   - keep, of two leases not held, one that covers what both holders may
#     have issued, so that the worker id's next holder starts above both.
# Found by the adversarial review of issue 28: before, the larger token won,
# so an old table's released row replaced a held lease and the worker id
# was granted again.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use SnowflakeOldVersions;
use SnowflakeTest;
use Test::More;

my $top = $ENV{TESTDIR} // '.';
my $node = SnowflakeTest::new_node('v14two',
	install => [ install_path => SnowflakeOldVersions::relocated_install('v14two') ],
	conf => slurp_file("$top/test/conf/regress.conf"));

for my $db (qw(leases_now leases_before))
{
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	$node->safe_psql($db,
		"CREATE EXTENSION snowflake VERSION '1.0'; ALTER EXTENSION snowflake UPDATE TO '1.4'");
}

my $layout = SnowflakeOldVersions::v14_layout($node, 'leases_now');
my $now_ms = $node->safe_psql('leases_now',
	'SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint');
my $hour = 3_600_000;

# A 1.4 row of worker id $worker: token, window (not_before, not_after) in
# ms from now, released or not, and the last timestamp its holder reported
# (Unix ms, or none).
sub row
{
	my ($worker, $token, $from, $to, $released, $last) = @_;
	return sprintf(
		"(0, %d, %d, 'app-%d', current_user, NULL, NULL, NULL, interval '1 hour', 3600000, "
		  . "'%s', now(), now(), %d, %d, %s, %s)",
		$worker, $token, $token, $layout, $now_ms + $from, $now_ms + $to,
		$last // 'NULL', $released ? "now() - interval '1 day'" : 'NULL');
}

sub insert_rows
{
	my ($db, @rows) = @_;
	return SnowflakeOldVersions::insert_v14_leases($node, $db, @rows);
}

sub update_fails
{
	my ($db, $expected, $what) = @_;
	my ($rc, $out, $err) = $node->psql($db, 'ALTER EXTENSION snowflake UPDATE',
		extra_params => [ '-v', 'VERBOSITY=verbose' ]);
	isnt($rc, 0, "$what: the update fails");
	like($err, qr/ERROR:  \Q$expected\E$/m, "$what: the error and its SQLSTATE");
	is($node->safe_psql($db, q{SELECT extversion FROM pg_extension WHERE extname = 'snowflake'}),
		'1.4', "$what: the database stays at 1.4");
	return;
}

# The database that holds the leases now: 124 to 126 held for an hour
# (tokens 1 to 3), 127's lease (token 4) expired two hours ago.
insert_rows('leases_now',
	row(124, 1, -60_000, $hour), row(125, 2, -60_000, $hour),
	row(126, 3, -60_000, $hour), row(127, 4, -3 * $hour, -2 * $hour));
$node->safe_psql('leases_now', 'ALTER EXTENSION snowflake UPDATE');
is( $node->safe_psql('leases_now',
		q{SELECT string_agg(worker_id || ':' || token || ':' || state, ' ' ORDER BY worker_id)
		    FROM snowflake_leases}),
	'124:1:held 125:2:held 126:3:held 127:4:expired',
	'the database updated first carries its four leases');

# The earlier database: a row with token 0.
insert_rows('leases_before', row(125, 0, -60_000, $hour));
update_fails('leases_before',
	'23514: token 0 of a snowflake 1.4 lease is not positive',
	'a 1.4 row with token 0');
$node->safe_psql('leases_before', 'DELETE FROM snowflake_worker_leases');

# A row held on 127 with token 1, the token of 124's lease.
insert_rows('leases_before', row(127, 1, -60_000, $hour));
update_fails('leases_before',
	"55000: snowflake lease 1 of worker id 127, taken under version 1.4, has the token "
	  . "of worker id 124's lease, carried from another database",
	'a 1.4 row whose token another carried lease has');
$node->safe_psql('leases_before', 'DELETE FROM snowflake_worker_leases');

# A row not carried (127 expired with a smaller token: the carried lease
# stays) whose token 3 names 126's held lease: its holder's renewal would
# renew 126's lease.
insert_rows('leases_before', row(127, 3, -$hour, -1_800_000));
update_fails('leases_before',
	"55000: snowflake lease 3 of worker id 127, taken under version 1.4, has the token "
	  . "of worker id 126's lease, carried from another database",
	'a 1.4 row not carried whose token another carried lease has');
$node->safe_psql('leases_before', 'DELETE FROM snowflake_worker_leases');

# 124: released a day ago with a larger token; 125: held too; 127: not held,
# released (its holder reported an ID of its window's end), a smaller token
# than the carried one, but its window ended later.
insert_rows('leases_before',
	row(124, 10, -2 * 86_400_000, -86_400_000, 1),
	row(125, 11, -60_000, $hour),
	row(127, 3, -$hour, -1_800_000, 1, $now_ms - 1_800_000 - 1));
my ($rc, $out, $err) = $node->psql('leases_before', 'ALTER EXTENSION snowflake UPDATE');
is($rc, 0, 'the earlier database then updates');
like(
	$err,
	qr/WARNING:  snowflake lease 11 of worker id 125, taken under version 1\.4, was not carried into version 1\.5\nDETAIL:  A lease of worker id 125 carried from another database is held too: version 1\.4 leased it from two databases' tables\.$/m,
	'a row whose worker id another carried lease holds is warned of, not carried');
unlike($err, qr/lease (10|3) of worker id/, 'the rows not held are merged without a warning');

is( $node->safe_psql('leases_now',
		q{SELECT string_agg(worker_id || ':' || token || ':' || state, ' ' ORDER BY worker_id)
		    FROM snowflake_leases}),
	'124:1:held 125:2:held 126:3:held 127:4:expired',
	'the held leases and the larger token of 127 stay');
is( $node->safe_psql('leases_now',
		q{SELECT (extract(epoch FROM last_timestamp) * 1000)::bigint FROM snowflake_leases }
		  . q{WHERE worker_id = 127}),
	$now_ms - 1_800_000 - 1,
	"127's kept lease covers what the other row's holder may have issued");

($rc, $out, $err) = $node->psql('leases_now',
	q{SELECT not_after > now() + interval '59 minutes' FROM snowflake_renew_lease(1, NULL)});
is($err, '', "the lease held on worker id 124 (token 1) still renews");
is($out, 't', 'and its window runs on');
is($node->safe_psql('leases_now',
		q{SELECT worker_id FROM snowflake_lease_worker('second-holder', interval '1 minute')}),
	'127', 'a new holder gets the one worker id no carried lease holds');

$node->stop;
done_testing();
