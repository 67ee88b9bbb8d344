# Whether a reservation waits for the synchronous standbys is the server's
# decision: with the standby stopped and its confirmed reservation run out, a
# session with synchronous_commit = off waits for an ID (until its
# statement_timeout) instead of issuing one; with the standby back, IDs come
# again, above the earlier ones.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeStandby;

my ($primary, $standby) = SnowflakeStandby::primary_with_standbys();
ok(SnowflakeStandby::make_synchronous($primary), 'the standby replicates synchronously');

my $before = $primary->safe_psql('postgres', 'SELECT snowflake_nextval()');
ok($before > 0, 'IDs while the standby confirms');

$standby->stop;
ok( $primary->poll_query_until(
		'postgres', q{
SELECT clock_timestamp() > reserved_until + interval '300 ms' FROM snowflake_status()}),
	'the confirmed reservation has run out');

my ($ret, $stdout, $stderr) = $primary->psql(
	'postgres', q{
SET synchronous_commit = off;
SET statement_timeout = '3s';
SELECT snowflake_nextval();
});
isnt($ret, 0, 'a session with synchronous_commit = off gets no ID');
like(
	$stderr,
	qr/ERROR:  canceling statement due to statement timeout/,
	'it waited for the standby until its statement_timeout');
is($stdout, '', 'no ID was returned');

$standby->start;
my $after = $primary->safe_psql(
	'postgres', q{
SET synchronous_commit = off;
SET statement_timeout = '60s';
SELECT snowflake_nextval();
});
ok($after > $before, 'with the standby back, IDs come again, above the earlier ones');

$primary->stop;
$standby->stop;
done_testing();
