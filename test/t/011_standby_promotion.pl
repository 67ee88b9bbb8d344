# A synchronous standby whose clock is 60 s behind: on the hot standby
# snowflake_nextval() fails (25006) while decoding works; cut off while the
# primary generates past its replayed reservation, then promoted, it warns
# once about the gap and continues at once, every new ID above every ID the
# old primary issued that anyone saw (replicated rows, streamed IDs, rows
# committed locally, read back by starting the old primary alone).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeTest;
use Time::HiRes qw(time);
use SnowflakeClock;
use SnowflakeStandby;

my $inserters = 3;
my $streamers = 2;
# Far enough behind that the gap outlasts a loaded machine's steps to the
# first generation.
my $standby_behind_s = 60;
my $standby_drift_ms = 90_000;

my ($primary, $standby) = SnowflakeStandby::primary_with_standbys(
	settings => { timezone => 'UTC' },
	sql => $SnowflakeStandby::ids_schema
	  . 'INSERT INTO ids (session, n) SELECT 0, g FROM generate_series(1, 1000) AS g',
	start_standbys => 0);
$standby->append_conf('postgresql.conf',
	"snowflake.max_drift = $standby_drift_ms\n");
SnowflakeStandby::start_behind($standby, $standby_behind_s, 0.5,
	"the standby clock is $standby_behind_s s back");

ok(SnowflakeStandby::make_synchronous($primary), 'the standby replicates synchronously');

# --- case 5: the hot standby -------------------------------------------------------
$primary->safe_psql('postgres',
	'INSERT INTO ids (session, n) SELECT 0, g FROM generate_series(1001, 2000) AS g');
$primary->wait_for_catchup($standby);
my $sample = $primary->safe_psql('postgres', 'SELECT max(id) FROM ids');
my $decoded = $primary->safe_psql('postgres',
	"SELECT ts, node_id, worker_id, seq FROM snowflake_decode($sample)");
is($standby->safe_psql('postgres',
		"SELECT ts, node_id, worker_id, seq FROM snowflake_decode($sample)"),
	$decoded, 'snowflake_decode() works on the standby, as on the primary');

my $stderr = SnowflakeStandby::check_nextval_refused($standby, 'on the hot standby',
	'no ID is issued on the standby');
like(
	$stderr,
	qr/^HINT:  \Qsnowflake_nextval() works only on a primary; snowflake_decode() works everywhere.\E$/m,
	'the documented HINT');

my $primary_reserved = $primary->safe_psql('postgres',
	'SELECT reserved_until FROM snowflake_status()');
$primary->wait_for_catchup($standby);
is( $standby->safe_psql(
		'postgres',
		"SELECT reserved_until >= '$primary_reserved' FROM snowflake_status()"),
	't',
	"the standby replayed the primary's reservation");

# --- case 4: promotion under load --------------------------------------------------
my $dir = PostgreSQL::Test::Utils::tempdir();

my @runs = SnowflakeStandby::start_load($primary, $dir,
	inserters => $inserters, streamers => $streamers);

ok( $primary->poll_query_until(
		'postgres', qq{
SELECT count(DISTINCT session) = $inserters + 1 AND count(*) >= 20000 FROM ids}),
	'the sessions commit rows on the primary');
ok(SnowflakeStandby::wait_streaming_ids($dir, $streamers),
	'the clients receive streamed IDs');
ok(SnowflakeStandby::wait_reservations($primary), 'the primary wrote reservations');

# The standby stops receiving WAL while the load goes on past its last
# replayed reservation: no unconfirmed reservation may reach a client.
$standby->append_conf('postgresql.conf', "primary_conninfo = ''\n");
$standby->reload;
ok( $primary->poll_query_until(
		'postgres', 'SELECT count(*) = 0 FROM pg_stat_replication'),
	'the standby no longer receives WAL');
ok( $standby->poll_query_until(
		'postgres', 'SELECT pg_last_wal_replay_lsn() = pg_last_wal_receive_lsn()'),
	'the standby replayed all it received');
my $standby_reserved_ms = $standby->safe_psql('postgres',
	'SELECT (extract(epoch FROM reserved_until) * 1000)::bigint FROM snowflake_status()');
ok( $primary->poll_query_until(
		'postgres',
		"SELECT extract(epoch FROM clock_timestamp()) * 1000 > $standby_reserved_ms + 1000"),
	"the primary's clock passes the standby's reservation");
$primary->stop('immediate');
ok(!$_->finish, 'a generating psql ended with the primary') for @runs;
$standby->promote;
ok($standby->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()'),
	'the standby is promoted');

# IDs the clients saw from the primary, in order (whole lines only).
my ($streamed, $max_streamed) = SnowflakeStandby::check_streams($dir, $streamers);
is( $standby->safe_psql(
		'postgres',
		"SELECT (extract(epoch FROM (snowflake_decode($max_streamed)).ts) * 1000)::bigint"
		  . " <= $standby_reserved_ms"),
	't',
	'no streamed ID lies beyond the reservation the standby had confirmed');

# --- the promoted standby generates -------------------------------------------------
my $log_offset = -s $standby->logfile;
my $max_replicated = $standby->safe_psql('postgres', 'SELECT max(id) FROM ids');
my $reserved = $standby->safe_psql('postgres',
	'SELECT (extract(epoch FROM reserved_until) * 1000)::bigint FROM snowflake_status()');
my $max_seen_ms = $standby->safe_psql('postgres',
	'SELECT (extract(epoch FROM (snowflake_decode(greatest('
	  . "$max_replicated, $max_streamed))).ts) * 1000)::bigint");
cmp_ok($reserved, '>=', $max_seen_ms,
	'the promoted standby holds a reservation covering every ID seen');

my $started = time();
$standby->psql(
	'postgres', q{
CREATE TABLE after_promotion AS
  SELECT snowflake_nextval() AS id, clock_timestamp() AS c
    FROM generate_series(1, 1000)},
	stderr => \$stderr,
	on_error_die => 1);
my $elapsed = time() - $started;
my ($gap) = $stderr =~ /WARNING:  system clock is (\d+) ms behind the snowflake reservation/;
# The call read the clock between $started and its end.
my $expected_gap = $reserved - int($started * 1000 - $standby_behind_s * 1000);
ok( defined $gap
	  && $gap <= $expected_gap + 1000
	  && $gap >= $expected_gap - 1000 * $elapsed - 1000,
	"the first generation is warned about the gap ($expected_gap ms expected)")
  or diag "stderr: $stderr";
cmp_ok($gap // 0, '<=', $standby_drift_ms, 'the gap is within max_drift');
# A wait for the clock would last most of the 60 s gap; quiet, it takes 0.1 s.
ok($elapsed < 30, sprintf('and IDs come without waiting for the clock (%.2f s)', $elapsed));
for my $s (1 .. 2)
{
	$standby->safe_psql(
		'postgres', qq{
INSERT INTO ids (session, n) SELECT 100 + $s, g FROM generate_series(1, 10000) AS g;
INSERT INTO after_promotion
  SELECT snowflake_nextval(), clock_timestamp() FROM generate_series(1, 1000)});
}
my @gaps = slurp_file($standby->logfile, $log_offset)
  =~ /WARNING:  system clock is \d+ ms behind the snowflake reservation/g;
is(scalar(@gaps), 1, 'the WARNING is logged once');

my $min_new = $standby->safe_psql(
	'postgres', q{
SELECT least((SELECT min(id) FROM after_promotion),
             (SELECT min(id) FROM ids WHERE session > 100))});
cmp_ok($min_new, '>', $max_replicated,
	'every new ID is above every row the standby received');
cmp_ok($min_new, '>', $max_streamed,
	'every new ID is above every ID the clients saw from the primary');
is( $standby->safe_psql(
		'postgres', qq{
SELECT count(*) FROM after_promotion, snowflake_decode(id) AS d
 WHERE d.ts - c >= interval '$standby_drift_ms ms' + interval '1 ms'}),
	'0',
	'no new ID runs more than max_drift ahead of the standby clock');

# The old primary, started alone, shows what it committed locally, including
# commits whose confirmation from the standby it never received.
$primary->append_conf('postgresql.conf', "synchronous_standby_names = ''\n");
$primary->start;
my ($max_primary, $primary_rows) = split /\|/,
  $primary->safe_psql('postgres', 'SELECT max(id), count(*) FROM ids');
note "the old primary committed $primary_rows rows; $streamed IDs were streamed";
cmp_ok($min_new, '>', $max_primary,
	'every new ID is above every row the old primary committed');
$primary->stop;

$standby->stop;
done_testing();
