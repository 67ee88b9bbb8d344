# Damage to snowflake.clock and snowflake.primary_settings (015 covers the
# others).
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use SnowflakeStandby;
use SnowflakeTest;
use Test::More;

my ($primary, $standby) = SnowflakeStandby::primary_with_standbys(
	settings => {
		log_error_verbosity => 'verbose',
		'snowflake.lease_workers' => 2,
		'snowflake.node_id' => 3
	});

# --- snowflake.clock on the primary ---
my $max_before = $primary->safe_psql('postgres',
	'SELECT max(snowflake_nextval()) FROM generate_series(1, 1000)');
$primary->stop;
my $clock_file = $primary->data_dir . '/snowflake.clock';
ok(-s $clock_file, 'a clean shutdown leaves snowflake.clock');
my $good_clock = slurp_file($clock_file);
like($good_clock, qr/^-?\d+( -?\d+){8}\n\z/, 'it holds the boot key and eight fields of trust');

my $clock_hint =
  qr/HINT:  \QRemove the file: the server then trusts the clock as it starts.\E\n/;
for my $case (
	[ 'empty', '', 'The file is empty.' ],
	[ 'too few fields', "1 2 3\n", 'The line holds 3 space-separated fields, not 9.' ])
{
	my ($name, $content, $detail) = @$case;
	SnowflakeTest::write_file($clock_file, $content);
	my $log = SnowflakeTest::start_refused($primary,
		"snowflake.clock $name: the server refuses to start");
	like($log,
		qr/FATAL:  XX001: \Qfile "$clock_file" does not hold a valid snowflake clock record\E\n/,
		"snowflake.clock $name: FATAL XX001 names the file");
	like($log, qr/DETAIL:  \Q$detail\E\n/, "snowflake.clock $name: the DETAIL says what is wrong");
	like($log, $clock_hint, "snowflake.clock $name: the HINT says to remove it");
}
unlink $clock_file or die "unlink $clock_file: $!";
ok($primary->start(fail_ok => 1), 'snowflake.clock removed: the server starts');
my $min_after = $primary->safe_psql('postgres',
	'SELECT min(snowflake_nextval()) FROM generate_series(1, 1000)');
cmp_ok($min_after, '>', $max_before, 'IDs continue above every earlier one');

# --- snowflake.primary_settings on the standby ---
ok(standby_replays(), 'the standby replays the restarted primary');
my $standby_file = $standby->data_dir . '/snowflake.primary_settings';
my $primary_file = $primary->data_dir . '/snowflake.primary_settings';
# Node id, lease workers, then the layout: worker, node and sequence bits
# and the epoch in ms.
my $settings = $primary->safe_psql('postgres',
	q{SELECT format('3 2 %s %s %s %s', worker_bits, node_bits, sequence_bits,
	                (extract(epoch FROM epoch) * 1000)::bigint)
	    FROM snowflake_status()}) . "\n";
like($settings, qr/^3 2 7 /, 'node id 3, 2 lease workers, 7 worker bits');
is(slurp_file($primary_file), $settings,
	"the primary's file: node id 3, 2 lease workers and its layout");
is(slurp_file($standby_file), $settings, 'the standby keeps the same, as replayed');

my $settings_hint =
  qr/HINT:  \QCopy snowflake.primary_settings from the primary's data directory, or remove it: this server then checks the primary's settings at every LEASE record and at the primary's next SETTINGS record.\E\n/;

# Whether the standby replays the primary's WAL written up to now.
sub standby_replays
{
	my $lsn = $primary->lsn('insert');
	return $standby->poll_query_until('postgres',
		"SELECT pg_last_wal_replay_lsn() >= '$lsn'::pg_lsn");
}

# Has the standby replay a record past the last checkpoint, stops it,
# damages its file and expects its start to be refused.
sub standby_refused
{
	my ($name, $content, $detail) = @_;
	$primary->safe_psql('postgres', 'CREATE TABLE wal_written (); DROP TABLE wal_written');
	standby_replays() or die 'the standby does not replay';
	$standby->stop;
	SnowflakeTest::write_file($standby_file, $content);
	my $log = SnowflakeTest::start_refused($standby,
		"snowflake.primary_settings $name: the standby's recovery stops");
	like($log,
		qr/FATAL:  XX001: \Qfile "$standby_file" does not hold a valid snowflake primary settings file\E\n/,
		"snowflake.primary_settings $name: FATAL XX001 names the file");
	like($log, qr/DETAIL:  \Q$detail\E\n/,
		"snowflake.primary_settings $name: the DETAIL says what is wrong");
	like($log, $settings_hint,
		"snowflake.primary_settings $name: the HINT names both fixes");
}

(my $junk = $settings) =~ s/^3 /three /;
standby_refused('junk', $junk, '"three" is not a decimal integer.');
SnowflakeTest::write_file($standby_file, slurp_file($primary_file));
ok($standby->start(fail_ok => 1), "the primary's file copied: the standby starts");
ok(standby_replays(), "and replays the primary's WAL");

standby_refused('cut short', "3 2", 'The file does not end with a newline; it may have been cut short.');
unlink $standby_file or die "unlink $standby_file: $!";
ok($standby->start(fail_ok => 1), 'the file removed: the standby starts');
ok(standby_replays(), "and replays the primary's WAL");

# --- snowflake.primary_settings on the primary, after a crash ---
$primary->stop('immediate');
SnowflakeTest::write_file($primary_file, "junk\n");
ok($primary->start(fail_ok => 1),
	'a damaged primary_settings on a primary: its crash recovery does not stop');
ok( SnowflakeTest::wait_until(
		sub { slurp_file($primary_file) eq $settings },
		'the primary to write snowflake.primary_settings again'),
	'the primary writes its file whole again');
$standby->stop;
$primary->stop;
done_testing();
