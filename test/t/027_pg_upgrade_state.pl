# pg_upgrade, and dump and restore, into a new data directory whose clock
# is 1 h behind the old one's.  The extension's state outside the catalog
# (snowflake.layout, snowflake.reservation) does not come along by itself.
#
# 1. pg_upgrade, from SNOWFLAKE_PG_UPGRADE_FROM (an older installation, set
#    by test/run-tests.sh when it ran an older source-built version before
#    this one) or else from this installation to itself:
#    - pg_upgrade's binary-upgrade start marks the new data directory, not
#      the old one;
#    - without the state files carried, the new server refuses to start
#      with SQLSTATE 55000 and says which files to copy;
#    - with the layout and reservation carried but a lease space set, it
#      still refuses until the lease files come too; then a lease taken
#      before the upgrade is held with its token and worker id;
#    - the files are carried by the recipe of docs/operations.md, read
#      from the page (SnowflakeDocs), first from a directory without the
#      lease files, then from the old data directory;
#    - with them carried and the clock 1 h back: the layout in force is
#      kept, old IDs decode as before, and snowflake_nextval() fails with
#      55000 after the bounded wait (max_drift 1 s), or, with max_drift
#      2 h, issues IDs above every old one.  Never a lower ID.
# 2. pg_dump and restore into a fresh cluster, its clock 1 h back, with the
#    documented procedure: the old reservation replaces the new one if it
#    is later.  New IDs lie above every old one.
# Both carry a table keyed by the snowflake type, with a foreign key of
# that type: its column types, constraints and JSON strings come along.
use strict;
use warnings;
use File::Copy;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;
use SnowflakeClock;
use SnowflakeDocs;

my %settings = (
	'snowflake.node_id' => 1,
	'snowflake.max_drift' => 1000,
	'snowflake.clock_wait_timeout' => 1000,
	'snowflake.lease_workers' => 2,
	timezone => 'UTC');
my $from = $ENV{SNOWFLAKE_PG_UPGRADE_FROM} // '';
my @install = $from eq '' ? () : (install_path => $from);

note 'pg_upgrade from ' . ($from eq '' ? 'this installation' : $from);
# PostgreSQL 18's initdb turns data checksums on, older ones off, and
# pg_upgrade needs both alike.
my @alike = (init => [ extra => ['--data-checksums'] ], settings => \%settings);
my $old = SnowflakeTest::new_node('old', install => \@install, @alike, start => 0);
my $new = SnowflakeTest::new_node('new', @alike, start => 0);
$old->start;
$old->safe_psql(
	'postgres', q{
CREATE EXTENSION snowflake;
CREATE TABLE items (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), n int);
INSERT INTO items (n) SELECT g FROM generate_series(1, 1000) AS g;
CREATE TABLE tagged (id snowflake PRIMARY KEY DEFAULT snowflake_nextval(),
                     parent snowflake REFERENCES tagged);
INSERT INTO tagged (id) SELECT id FROM items WHERE n <= 10;
UPDATE tagged SET parent = (SELECT min(id) FROM tagged) WHERE id > (SELECT min(id) FROM tagged);
});
my $decode_query = q{SELECT id, snowflake_decode(id) FROM items
	WHERE n IN (1, 500, 1000) ORDER BY n};
my $decoded_before = $old->safe_psql('postgres', $decode_query);
# The snowflake-typed table: its columns' types and the rows as JSON.
my $tagged_query = q{SELECT string_agg(format_type(atttypid, atttypmod), ',' ORDER BY attnum)
	FROM pg_attribute WHERE attrelid = 'tagged'::regclass AND attnum > 0
	UNION ALL SELECT json_agg(t ORDER BY id)::text FROM tagged AS t};
my $tagged_before = $old->safe_psql('postgres', $tagged_query);
like($tagged_before, qr/\Asnowflake,snowflake\n\[\{"id":"\d+","parent":null\}, \n \{"id":"\d+","parent":"\d+"\}/,
	'the snowflake-typed table before: JSON strings');
my $old_max = $old->safe_psql('postgres', 'SELECT max(id) FROM items');
my $old_lease = $old->safe_psql('postgres',
	q{SELECT token || '|' || worker_id FROM snowflake_lease_worker('before-upgrade', interval '1 hour')});
$old->stop;
my $old_layout = slurp_file($old->data_dir . '/snowflake.layout');
my $old_reservation = slurp_file($old->data_dir . '/snowflake.reservation');

# pg_upgrade writes its reports into the current directory.
chdir PostgreSQL::Test::Utils::tempdir;
command_ok(
	[
		'pg_upgrade', '--no-sync',
		'-d', $old->data_dir,
		'-D', $new->data_dir,
		'-b', $old->config_data('--bindir'),
		'-B', $new->config_data('--bindir'),
		'-s', $new->host,
		'-p', $old->port,
		'-P', $new->port,
	],
	'pg_upgrade with the extension preloaded in both clusters');
ok(-f $new->data_dir . '/snowflake.upgraded',
	'the binary-upgrade start marked the new data directory');
ok(!-e $new->data_dir . '/snowflake.reservation',
	'pg_upgrade did not carry the reservation');
ok(!-e $old->data_dir . '/snowflake.upgraded', 'the old data directory is not marked');

# --- the state files forgotten ----------------------------------------------
my $log_offset = -s $new->logfile;
ok(!SnowflakeClock::start($new, -3600, fail_ok => 1),
	'without the old state files, the new server does not start');
like(
	slurp_file($new->logfile, $log_offset),
	qr/FATAL:  this data directory was built by pg_upgrade, and snowflake's state files were not carried into it\n.*DETAIL:  Without the old data directory's snowflake.reservation, IDs could start below IDs that the old cluster issued.\n.*HINT:  Copy snowflake.layout, snowflake.reservation and, each if it exists, snowflake.leases and snowflake.lease_state from the old data directory into "[^"]+", or see "Upgrading PostgreSQL" in the snowflake documentation./s,
	'it says why, and which files to carry');
ok(!-e $new->data_dir . '/snowflake.reservation',
	'the refused start wrote no reservation');

# --- carried, clock 1 h back, max_drift 1 s ------------------------------
# The copy is the recipe of docs/operations.md ("Upgrading PostgreSQL"),
# read from the page and run with bash as the docs tier runs sh blocks.
my $copy_state = SnowflakeDocs::block('docs/operations.md', 'copy-state-files');
sub copy_state_files
{
	my ($from, $what) = @_;
	local $ENV{OLD_PGDATA} = $from;
	local $ENV{NEW_PGDATA} = $new->data_dir;
	command_ok([ 'bash', '-euo', 'pipefail', '-c', $copy_state ],
		"the documented copy of the state files, $what");
	return;
}
# First from a directory with the layout and the reservation alone: the
# recipe copies what exists and skips the rest.
my $partial = PostgreSQL::Test::Utils::tempdir;
for my $file ('snowflake.layout', 'snowflake.reservation')
{
	copy($old->data_dir . "/$file", "$partial/$file")
	  or die "copying $file: $!";
}
copy_state_files($partial, 'from a directory without lease files');
is(slurp_file($new->data_dir . '/snowflake.reservation'),
	slurp_file($old->data_dir . '/snowflake.reservation'),
	'the recipe copied the reservation');
ok(!-e $new->data_dir . '/snowflake.lease_state',
	'the binary-upgrade start created no lease state');
$log_offset = -s $new->logfile;
ok(!SnowflakeClock::start($new, -3600, fail_ok => 1),
	'with a lease space, the new server does not start without the lease files');
like(
	slurp_file($new->logfile, $log_offset),
	qr/FATAL:  this data directory was built by pg_upgrade, and snowflake's lease files were not carried into it\n.*DETAIL:  Without the old data directory's snowflake.leases and snowflake.lease_state, worker ids that applications still hold could be leased again./s,
	'it names the lease files');
copy_state_files($old->data_dir, 'from the old data directory');
is(slurp_file($new->data_dir . '/snowflake.lease_state'),
	slurp_file($old->data_dir . '/snowflake.lease_state'),
	'the recipe copied the lease state');
SnowflakeClock::start($new, -3600);
my ($old_token, $old_worker) = split /\|/, $old_lease;
is($new->safe_psql('postgres',
		"SELECT state || '|' || worker_id FROM snowflake_leases WHERE token = $old_token"),
	"held|$old_worker", 'the lease taken before the upgrade is held, on its worker id');
cmp_ok($new->safe_psql('postgres',
		q{SELECT token FROM snowflake_lease_worker('after-upgrade', interval '1 minute')}),
	'>', $old_token, 'a new grant gets a larger token');
my ($offset, $uncertainty) = SnowflakeClock::server_offset($new);
ok(abs($offset + 3600) < 1 + $uncertainty,
	sprintf('the new server clock is 1 h back (%.3f s, +/- %.3f s)', $offset, $uncertainty));
ok(!-e $new->data_dir . '/snowflake.upgraded', 'the marker is gone once the state came');
is($new->safe_psql('postgres', $decode_query), $decoded_before,
	'old IDs decode as before the upgrade');
my ($stdout, $stderr);
$new->psql(
	'postgres', "\\set VERBOSITY verbose\nSELECT snowflake_nextval()",
	stdout => \$stdout,
	stderr => \$stderr);
is($stdout, '', 'clock 1 h back, max_drift 1 s: no ID is issued');
like($stderr, qr/ERROR:  55000: system clock is \d+ ms behind the next snowflake ID/,
	'snowflake_nextval() fails with SQLSTATE 55000');
$new->stop;
is(slurp_file($new->data_dir . '/snowflake.layout'), $old_layout,
	'the layout in force is the old one');

# --- carried, clock 1 h back, max_drift 2 h ---------------------------------
$new->append_conf('postgresql.conf', "snowflake.max_drift = '2h'\n");
SnowflakeClock::start($new, -3600);
$new->safe_psql('postgres',
	'INSERT INTO items (n) SELECT g FROM generate_series(1001, 2000) AS g');
cmp_ok($new->safe_psql('postgres', 'SELECT min(id) FROM items WHERE n > 1000'),
	'>', $old_max, 'max_drift 2 h: every new ID lies above every old one');
is($new->safe_psql('postgres',
		'SELECT count(*), count(DISTINCT id), count(*) FILTER (WHERE (snowflake_decode(id)).node_id = 1) FROM items'),
	'2000|2000|2000', 'no ID repeats, and all are node 1');
is($new->safe_psql('postgres', $decode_query), $decoded_before,
	'old IDs still decode as before');
is($new->safe_psql('postgres', $tagged_query), $tagged_before,
	'pg_upgrade: the snowflake-typed table keeps its types and rows');
$new->command_checks_all(
	[ 'psql', '-X', '-d', $new->connstr('postgres'), '-c', 'INSERT INTO tagged VALUES (1, 2)' ],
	1, [qr/^$/], [qr/violates foreign key constraint "tagged_parent_fkey"/],
	'pg_upgrade: its foreign key is enforced');
$new->stop;

# --- dump and restore into a fresh cluster, clock 1 h back ------------------
# The old cluster is intact (pg_upgrade copied its files) and starts again.
$old->start;
my $dump = PostgreSQL::Test::Utils::tempdir . '/items.dump';
command_ok(
	[ 'pg_dump', '-Fc', '-d', $old->connstr('postgres'), '-f', $dump ],
	'pg_dump of the old cluster');
$old->stop;
$old_reservation = slurp_file($old->data_dir . '/snowflake.reservation');

my $fresh = SnowflakeTest::new_node('fresh', settings => \%settings, start => 0);
SnowflakeClock::start($fresh, -3600);
command_ok([ 'pg_restore', '-d', $fresh->connstr('postgres'), $dump ],
	'pg_restore into a fresh cluster');
$fresh->stop;
# The documented procedure: the later of the two reservations.
my $fresh_reservation = slurp_file($fresh->data_dir . '/snowflake.reservation');
cmp_ok($fresh_reservation + 0, '<', $old_reservation + 0,
	'the fresh cluster, 1 h back, reserved below the old IDs');
copy($old->data_dir . '/snowflake.reservation', $fresh->data_dir . '/snowflake.reservation')
  or die "copying the reservation: $!";
$fresh->append_conf('postgresql.conf', "snowflake.max_drift = '2h'\n");
SnowflakeClock::start($fresh, -3600);
is($fresh->safe_psql('postgres', $decode_query), $decoded_before,
	'restored IDs decode as before');
is($fresh->safe_psql('postgres', $tagged_query), $tagged_before,
	'restore: the snowflake-typed table keeps its types and rows');
$fresh->safe_psql('postgres',
	'INSERT INTO items (n) SELECT g FROM generate_series(1001, 2000) AS g');
cmp_ok($fresh->safe_psql('postgres', 'SELECT min(id) FROM items WHERE n > 1000'),
	'>', $old_max, 'after the restore, every new ID lies above every old one');
$fresh->stop;

done_testing();
