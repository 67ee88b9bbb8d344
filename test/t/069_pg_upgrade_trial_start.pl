# The pg_upgrade guard (snowflake.upgraded) arms whether or not the new
# cluster was started before.  One old cluster (a live lease, 1000 IDs) is
# upgraded three times.
use strict;
use warnings;
use File::Copy;
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use SnowflakeUpgrade;
use Test::More;

my %settings = ('snowflake.node_id' => 4, 'snowflake.lease_workers' => 2, timezone => 'UTC');
my @init = (init => [ extra => ['--data-checksums'] ]);
my $old = SnowflakeTest::new_node('old', @init, settings => \%settings);
my ($old_max, $old_token, $old_worker) = SnowflakeUpgrade::fill_old_cluster($old, 'app-A');
$old->stop;
my ($worker_bits) = split / /, slurp_file($old->data_dir . '/snowflake.leases');

chdir PostgreSQL::Test::Utils::tempdir;

sub upgrade_into
{
	my ($new) = @_;
	SnowflakeUpgrade::pg_upgrade_ok($old, $new, 'pg_upgrade into ' . $new->name);
	ok(-f $new->data_dir . '/snowflake.upgraded', $new->name . ' is marked');
	ok(!-e $old->data_dir . '/snowflake.upgraded', 'the old data directory is not marked');
	return;
}

sub copy_files
{
	my ($new, @files) = @_;
	for my $file (@files)
	{
		copy($old->data_dir . "/$file", $new->data_dir . "/$file")
		  or die "copying $file: $!";
	}
	return;
}

sub lease_held
{
	my ($new) = @_;
	SnowflakeUpgrade::lease_held_ok($new, $old_token, $old_worker,
		$new->name . ': app-A\'s lease is held, on its worker id');
	isnt($new->safe_psql('postgres',
			q{SELECT worker_id FROM snowflake_lease_worker('app-B', interval '1 minute')}),
		$old_worker, $new->name . ': a new grant gets another worker id');
	return;
}

# --- 1. a trial start before pg_upgrade ------------------------------------
my $trial = SnowflakeTest::new_node('trial', @init, settings => \%settings);
$trial->stop;
ok(-e $trial->data_dir . "/snowflake.$_", "the trial start made snowflake.$_")
  for qw(layout reservation leases lease_state);
upgrade_into($trial);
my $log = SnowflakeTest::start_refused($trial,
	'the upgraded server does not start on the trial start\'s state files');
like(
	$log,
	qr/FATAL:  this data directory was built by pg_upgrade, and its snowflake state files are its own, not the old data directory's\n.*DETAIL:  snowflake.reservation is the one this data directory held when pg_upgrade ran, made by a start before the upgrade; IDs could start below IDs that the old cluster issued.\n.*HINT:  Copy snowflake.layout, snowflake.reservation and, each if it exists, snowflake.leases and snowflake.lease_state from the old data directory into "[^"]+", or see "Upgrading PostgreSQL" in the snowflake documentation./s,
	'it says the files are its own, and which to copy');
copy_files($trial, 'snowflake.layout', 'snowflake.reservation');
$log = SnowflakeTest::start_refused($trial,
	'with the reservation carried, the trial start\'s lease state is refused');
like($log,
	qr/FATAL:  this data directory was built by pg_upgrade, and snowflake's lease files were not carried into it/,
	'it names the lease files');
SnowflakeUpgrade::copy_state_files_ok($old->data_dir, $trial, 'after the trial start');
$trial->start;
ok(!-e $trial->data_dir . '/snowflake.upgraded', 'the marker is gone once the files came');
$trial->safe_psql('postgres',
	'INSERT INTO items (n) SELECT g FROM generate_series(1001, 2000) AS g');
cmp_ok($trial->safe_psql('postgres', 'SELECT min(id) FROM items WHERE n > 1000'),
	'>', $old_max, 'every new ID lies above every old one');
is($trial->safe_psql('postgres', 'SELECT count(*), count(DISTINCT id) FROM items'),
	'2000|2000', 'no ID repeats');
lease_held($trial);
$trial->stop;

# --- 2. a first start with lease_workers = 0, then raised -------------------
my $zero = SnowflakeTest::new_node('zero', @init,
	settings => { %settings, 'snowflake.lease_workers' => 0 }, start => 0);
upgrade_into($zero);
copy_files($zero, 'snowflake.layout', 'snowflake.reservation');
my $offset = -s $zero->logfile;
$zero->start;
like(slurp_file($zero->logfile, $offset),
	qr/LOG:  snowflake keeps the pg_upgrade marker: the lease files of the old data directory were not carried/,
	'lease_workers = 0: it starts, and says the marker stays');
$zero->stop;
ok(-f $zero->data_dir . '/snowflake.upgraded', 'the marker stays');
$zero->append_conf('postgresql.conf', "snowflake.lease_workers = 2\n");
$log = SnowflakeTest::start_refused($zero, 'raised to 2, it does not start without the lease files');
like($log,
	qr/FATAL:  this data directory was built by pg_upgrade, and snowflake's lease files were not carried into it\n.*HINT:  Copy snowflake.leases and snowflake.lease_state from the old data directory/s,
	'it names the lease files');
copy_files($zero, 'snowflake.leases', 'snowflake.lease_state');
$zero->start;
ok(!-e $zero->data_dir . '/snowflake.upgraded', 'the marker is gone once the lease files came');
lease_held($zero);
$zero->stop;

# --- 3. the same, with the way out for an old cluster without leases ---------
my $none = SnowflakeTest::new_node('none', @init,
	settings => { %settings, 'snowflake.lease_workers' => 0 }, start => 0);
upgrade_into($none);
copy_files($none, 'snowflake.layout', 'snowflake.reservation');
$none->start;
$none->stop;
$none->append_conf('postgresql.conf', "snowflake.lease_workers = 2\n");
SnowflakeTest::start_refused($none, 'raised to 2, it does not start');
append_to_file($none->data_dir . '/snowflake.lease_state', '');
SnowflakeTest::write_file($none->data_dir . '/snowflake.leases', "$worker_bits 0\n");
$none->start;
ok(!-e $none->data_dir . '/snowflake.upgraded',
	'an empty lease state and no lease space: the operator\'s word removes the marker');
is($none->safe_psql('postgres', q{SELECT count(*) FROM snowflake_leases WHERE state = 'held'}),
	'0', 'and no lease is known');
$none->stop;

done_testing();
