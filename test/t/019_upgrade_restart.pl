# Upgrade from 1.0, then a quick restart: 1.0 kept no reservation file and let
# IDs run up to 60 s ahead.  A node issues IDs 55 s ahead (libfaketime), stops
# and loses its reservation file; restarted at once with the real clock and
# max_drift 45 s, every new ID is above every old one (floor: start + 60 s +
# 1 ms), and the reservation file is written as the server starts.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeTest;
use Time::HiRes qw(time);
use SnowflakeClock;

my $node = SnowflakeTest::new_node(
	'upgrade',
	settings => {
		timezone => 'UTC',
		'snowflake.max_drift' => '45s',
		'snowflake.clock_wait_timeout' => '60s'
	},
	start => 0);
my $reservation_file = $node->data_dir . '/snowflake.reservation';

# Waits until the reservation file exists; returns its content.
sub reservation_written
{
	SnowflakeTest::wait_until(sub { -e $reservation_file }, 'the reservation file');
	return slurp_file($reservation_file);
}

SnowflakeClock::start($node, 55);
my $first_run_file = reservation_written();
ok(defined $first_run_file,
	'a new data directory gets a reservation file as the server starts');
$node->safe_psql(
	'postgres', q{
CREATE EXTENSION snowflake;
CREATE TABLE ids (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), run int NOT NULL);
INSERT INTO ids (run) SELECT 1 FROM generate_series(1, 20000)});
my $max_old = $node->safe_psql('postgres', 'SELECT max(id) FROM ids');
my $max_old_ms = $node->safe_psql('postgres',
	"SELECT (extract(epoch FROM (snowflake_decode($max_old)).ts) * 1000)::bigint");
cmp_ok($max_old_ms, '>', time() * 1000 + 30_000, 'the old IDs lie well ahead of the real clock');
$node->stop;

# The state snowflake 1.0 left behind.
unlink $reservation_file or die "could not remove $reservation_file: $!";

$node->start;
# pg_postmaster_start_time() is taken a moment after snowflake reads the
# clock for its floor: allow 5 s of start-up.
my $start_ms = $node->safe_psql('postgres',
	'SELECT (extract(epoch FROM pg_postmaster_start_time()) * 1000)::bigint') - 5000;
my $file = reservation_written();
ok(defined $file, 'the reservation file is written again as the server starts');
like($file // '', qr/^\d+\n\z/, 'it holds one Unix time in ms');
cmp_ok($file // 0, '>=', $start_ms + 60_000,
	'it holds the floor - 1: at least the start + 60 s');

$node->safe_psql('postgres',
	'INSERT INTO ids (run) SELECT 2 FROM generate_series(1, 20000)');
my ($min_new, $min_new_ms) = split /\|/, $node->safe_psql(
	'postgres', q{
SELECT id, (extract(epoch FROM (snowflake_decode(id)).ts) * 1000)::bigint
  FROM ids WHERE run = 2 ORDER BY id LIMIT 1});
cmp_ok($min_new, '>', $max_old, 'every new ID is larger than every ID issued before the restart');
cmp_ok($min_new_ms, '>', $start_ms + 60_000,
	'the new IDs start past the start + 60 s, the furthest 1.0 could reach');
is($node->safe_psql('postgres', 'SELECT count(*) - count(DISTINCT id) FROM ids'),
	'0', 'no ID occurs twice');
$node->stop;
done_testing();
