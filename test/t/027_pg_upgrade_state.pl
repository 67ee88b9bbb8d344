# pg_upgrade (from SNOWFLAKE_PG_UPGRADE_FROM, or this installation to
# itself), dump and restore, and the Debian pg_upgradecluster hook, into new
# data directories whose clock is 1 h behind; test/README.md lists what each
# part proves.
use strict;
use warnings;
use File::Copy;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;
use SnowflakeClock;
use SnowflakeDocs;
use SnowflakeUpgrade;

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
my ($old_max, $old_token, $old_worker) = SnowflakeUpgrade::fill_old_cluster($old, 'before-upgrade', q{
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
$old->stop;
my $old_layout = slurp_file($old->data_dir . '/snowflake.layout');
my $old_reservation = slurp_file($old->data_dir . '/snowflake.reservation');

# pg_upgrade writes its reports into the current directory.
chdir PostgreSQL::Test::Utils::tempdir;
SnowflakeUpgrade::pg_upgrade_ok($old, $new, 'pg_upgrade with the extension preloaded in both clusters');
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
# docs/operations.md's recipe, first from a directory without lease files.
my $partial = PostgreSQL::Test::Utils::tempdir;
for my $file ('snowflake.layout', 'snowflake.reservation')
{
	copy($old->data_dir . "/$file", "$partial/$file")
	  or die "copying $file: $!";
}
SnowflakeUpgrade::copy_state_files_ok($partial, $new, 'from a directory without lease files');
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
SnowflakeUpgrade::copy_state_files_ok($old->data_dir, $new, 'from the old data directory');
is(slurp_file($new->data_dir . '/snowflake.lease_state'),
	slurp_file($old->data_dir . '/snowflake.lease_state'),
	'the recipe copied the lease state');
SnowflakeClock::start($new, -3600);
SnowflakeUpgrade::lease_held_ok($new, $old_token, $old_worker,
	'the lease taken before the upgrade is held, on its worker id');
cmp_ok($new->safe_psql('postgres',
		q{SELECT token FROM snowflake_lease_worker('after-upgrade', interval '1 minute')}),
	'>', $old_token, 'a new grant gets a larger token');
my ($offset, $uncertainty) = SnowflakeClock::server_offset($new);
ok(abs($offset + 3600) < 1 + $uncertainty,
	sprintf('the new server clock is 1 h back (%.3f s, +/- %.3f s)', $offset, $uncertainty));
ok(!-e $new->data_dir . '/snowflake.upgraded', 'the marker is gone once the state came');
is($new->safe_psql('postgres', $decode_query), $decoded_before,
	'old IDs decode as before the upgrade');
my (undef, $stdout, $stderr) =
  $new->psql('postgres', "\\set VERBOSITY verbose\nSELECT snowflake_nextval()");
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

# --- 3. the pg_upgradecluster hook --------------------------------------------
# Stubs of pg_lsclusters -j and pg_ctlcluster for clusters 15 (old) and 18
# (new), and a stand-in for pg_upgradecluster, whose command line the hook
# reads the old cluster's name from and which runs it as run-parts does.
my $bin = PostgreSQL::Test::Utils::tempdir;
my $hook = "$bin/snowflake-15";
copy(SnowflakeDocs::root() . '/debian/pg_upgradecluster-hook', $hook) or die "copy: $!";
chmod 0755, $hook;
SnowflakeTest::write_file("$bin/pg_upgradecluster",
	"#!/bin/bash\n# pg_upgradecluster [OPTIONS] OLD_VERSION OLD_CLUSTER\n"
	  . "\"$hook\" 15 \"\$HOOK_NEW_CLUSTER\" 18 \"\$HOOK_PHASE\"\nexit \$?\n");
chmod 0755, "$bin/pg_upgradecluster";

# %clusters: "VERSION/NAME" => a node, or a plain directory.
sub stub_clusters
{
	my (%clusters) = @_;
	my ($ls, $ctl) = ('', '');
	for my $name (sort keys %clusters)
	{
		my $c = $clusters{$name};
		my $dir = ref $c ? $c->data_dir : $c;
		my $spaced = "$bin/data of " . ($name =~ s{/}{ }r);
		unlink $spaced;
		symlink $dir, $spaced or die "symlink: $!";
		$ls .= "\"$name\") d=\"$spaced\" ;;\n";
		$ctl .= sprintf "\"%s\") d=\"%s\" l=\"%s\" ;;\n", $name, $dir, $c->logfile if ref $c;
	}
	SnowflakeTest::write_file("$bin/pg_lsclusters",
		"#!/bin/bash\n# pg_lsclusters -j VERSION CLUSTER\n"
		  . "[ \"\$1\" = -j ] || exit 2\ncase \"\$2/\$3\" in\n$ls*) exit 1 ;;\nesac\n"
		  . "r=0; [ -f \"\$d/postmaster.pid\" ] && r=1\n"
		  . "printf '[{\"version\":\"%s\",\"cluster\":\"%s\",\"pgdata\":\"%s\",\"running\":%s,\"recovery\":0}]\\n' \"\$2\" \"\$3\" \"\$d\" \"\$r\"\n");
	SnowflakeTest::write_file("$bin/pg_ctlcluster",
		"#!/bin/bash\n# pg_ctlcluster VERSION CLUSTER start|stop [-o OPTIONS]\n"
		  . "case \"\$1/\$2\" in\n$ctl*) exit 1 ;;\nesac\n"
		  . "if [ \"\$4\" = -o ]; then exec pg_ctl -w -D \"\$d\" -l \"\$l\" -o \"\$5\" \"\$3\"; fi\n"
		  . "exec pg_ctl -w -D \"\$d\" -l \"\$l\" \"\$3\"\n");
	chmod 0755, "$bin/pg_lsclusters", "$bin/pg_ctlcluster";
	return;
}

# Runs the hook's $phase under the stand-in of "pg_upgradecluster @args"
# (default: 15 main), for the new cluster main; returns (ok, stdout, stderr).
sub hook
{
	my ($phase, %opts) = @_;
	local %ENV = (%ENV, PATH => "$bin:$ENV{PATH}", HOOK_PHASE => $phase,
		HOOK_NEW_CLUSTER => 'main', %{ $opts{env} // {} });
	my ($out, $err) = ('', '');
	my $ok = IPC::Run::run([ "$bin/pg_upgradecluster", @{ $opts{args} // [ '15', 'main' ] } ],
		'>', \$out, '2>', \$err);
	return ($ok, $out, $err);
}

sub run_hook
{
	my ($phase, $what, %opts) = @_;
	my ($ok, $out, $err) = hook($phase, %opts);
	ok($ok, "the hook's $phase phase, $what") or diag("$out$err");
	return $out;
}

sub refused_hook
{
	my ($phase, $what, $refusal, %opts) = @_;
	my ($ok, $out, $err) = hook($phase, %opts);
	ok(!$ok, "the hook's $phase phase refuses: $what");
	like($err, $refusal, "$what: the refusal says why and the fix");
	return;
}

# A lease live across the upgrade ($lease, or a new one), and the newest ID.
sub before_hook
{
	my ($lease) = @_;
	$old->start;
	$lease //= $old->safe_psql('postgres',
		q{SELECT token || '|' || worker_id FROM snowflake_lease_worker('hooked', interval '1 hour')});
	$old->safe_psql('postgres', 'INSERT INTO items (n) SELECT -1 FROM generate_series(1, 100)');
	return ($lease, $old->safe_psql('postgres', 'SELECT max(id) FROM items'));
}
sub lease_state_of
{
	my ($node, $token) = @_;
	return $node->safe_psql('postgres',
		"SELECT state || '|' || worker_id FROM snowflake_leases WHERE token = $token");
}
sub check_after_hook
{
	my ($node, $lease, $max, $what) = @_;
	my ($token, $worker) = split /\|/, $lease;
	is(lease_state_of($node, $token), "held|$worker",
		"$what: the live lease is held, on its worker id");
	$node->safe_psql('postgres', 'INSERT INTO items (n) SELECT -2 FROM generate_series(1, 100)');
	cmp_ok($node->safe_psql('postgres', 'SELECT min(id) FROM items WHERE n = -2'),
		'>', $max, "$what: every new ID lies above every old one");
	$node->safe_psql('postgres', 'DELETE FROM items WHERE n = -2');
	return;
}
sub grant
{
	my ($node, $holder) = @_;
	return $node->safe_psql('postgres',
		"SELECT token || '|' || worker_id FROM snowflake_lease_worker('$holder', interval '1 hour')");
}

# pg_upgrade's methods (upgrade, link, clone), with --rename: the old
# cluster 15/legacy becomes 18/main, and another cluster 15/main exists.
my ($hook_lease, $hook_max) = before_hook();
# A second database with the extension: the restore creates it twice.
$old->safe_psql('postgres', 'CREATE DATABASE second');
$old->safe_psql('second', 'CREATE EXTENSION snowflake');
$old->stop;
my $decoy = PostgreSQL::Test::Utils::tempdir;
SnowflakeTest::write_file("$decoy/snowflake.reservation", "1\n");
my $hooked = SnowflakeTest::new_node('hooked', @alike, start => 0);
stub_clusters('15/legacy' => $old, '15/main' => $decoy, '18/main' => $hooked);
my @rename = (args => [ '--method=upgrade', '--rename', 'main', '15', 'legacy' ]);
like(run_hook('init', 'pg_upgrade --rename', @rename), qr/carried snowflake.reservation/,
	'init carries the reservation while the old cluster is down');
is(slurp_file($hooked->data_dir . '/snowflake.reservation'),
	slurp_file($old->data_dir . '/snowflake.reservation'),
	'with --rename, from the old cluster, not from the old version\'s cluster of the new name');
is(slurp_file($hooked->data_dir . '/snowflake.lease_state'),
	slurp_file($old->data_dir . '/snowflake.lease_state'), 'and the lease state');
SnowflakeUpgrade::pg_upgrade_ok($old, $hooked, 'pg_upgrade after the init phase');
ok(!-e $hooked->data_dir . '/snowflake.upgraded', 'with the files carried, no marker');
$hooked->append_conf('postgresql.conf', "snowflake.max_drift = '2h'\n");
# pg_upgradecluster starts the new cluster before finish: a lease is
# released and another granted there first.
SnowflakeClock::start($hooked, -3600);
$hooked->safe_psql('postgres', "SELECT snowflake_release_lease($old_token, NULL)");
my $started_lease = grant($hooked, 'after-start');
like(run_hook('finish', 'pg_upgrade --rename', @rename), qr/18\/main holds the state of 15\/legacy/,
	'finish finds the files carried, by their contents');
check_after_hook($hooked, $hook_lease, $hook_max, 'pg_upgrade through the hook, clock 1 h back');
is(lease_state_of($hooked, (split /\|/, $started_lease)[0]), "held|$old_worker",
	'the lease granted before finish is held');
ok(!-e $hooked->data_dir . '/snowflake.carried',
	'the first start removes the note that the files were carried');
$hooked->stop;

# dump: pg_upgradecluster started both clusters with a temporary pg_hba.conf;
# init restarts the new one with it; a lease granted after that is kept.
($hook_lease, $hook_max) = before_hook($hook_lease);
$old->safe_psql('postgres', "SELECT snowflake_release_lease($old_token, NULL)");
my $restored = SnowflakeTest::new_node('restored', settings => \%settings, start => 0);
$restored->append_conf('postgresql.conf', "snowflake.max_drift = '2h'\n");
my $hba = "$bin/restricted hba.conf";
copy($restored->data_dir . '/pg_hba.conf', $hba) or die "copy: $!";
stub_clusters('15/main' => $old, '18/main' => $restored);
SnowflakeClock::write_offset($restored, -3600);
my %faked = SnowflakeClock::faked_env($restored);
{
	local %ENV = (%ENV, %faked);
	system("$bin/pg_ctlcluster", '18', 'main', 'start', '-o', "-c hba_file='$hba'") == 0
	  or die 'the restored cluster did not start';
}
$restored->_update_pid(1);
like(run_hook('init', 'dump', env => \%faked), qr/carried snowflake.lease_state/,
	'init carries the lease state while both clusters run');
$restored->_update_pid(1);
is($restored->safe_psql('postgres', 'SHOW hba_file'), $hba,
	'init starts the new cluster again with pg_upgradecluster\'s pg_hba.conf');
command_ok([ 'pg_dump', '-Fc', '-d', $old->connstr('postgres'), '-f', $dump ], 'pg_dump');
command_ok([ 'pg_restore', '-d', $restored->connstr('postgres'), $dump ], 'pg_restore');
$old->stop;
$restored->stop;
SnowflakeClock::start($restored);
my $restored_lease = grant($restored, 'after-restore');
like(run_hook('finish', 'dump'), qr/18\/main holds the state of 15\/main/,
	'finish finds the new cluster holding the old state, and writes nothing');
is(lease_state_of($restored, (split /\|/, $restored_lease)[0]), "held|$old_worker",
	'the lease granted after the new cluster started is kept');
check_after_hook($restored, $hook_lease, $hook_max, 'dump through the hook');
$restored->stop;

# A new cluster with leases of its own, not the old ones (a dump without the
# hook at init): finish refuses, then merges; a rerun changes nothing.
my $merged = SnowflakeTest::new_node('merged', settings => \%settings, extension => 'postgres');
my ($hook_token, $hook_worker) = split /\|/, $hook_lease;
my %fresh = map { (split /\|/)[1] => (split /\|/)[0] } grant($merged, 'fresh-a'), grant($merged, 'fresh-b');
stub_clusters('15/main' => $old, '18/main' => $merged);
$merged->stop;
my $before_refusal = slurp_file($merged->data_dir . '/snowflake.lease_state');
refused_hook('finish', 'two held leases of one worker id',
	qr/worker id $hook_worker in 15\/main \(token $hook_token, holder "hooked".*worker id $hook_worker in 18\/main \(token $fresh{$hook_worker}, holder "fresh-.*both held.*\n.*fix: .*snowflake_release_lease\($fresh{$hook_worker}, NULL\)/);
is(slurp_file($merged->data_dir . '/snowflake.lease_state'), $before_refusal,
	'a refusal writes nothing');
$merged->start;
$merged->safe_psql('postgres', "SELECT snowflake_release_lease($fresh{$hook_worker}, NULL)");
refused_hook('finish', 'the new cluster runs without the old state',
	qr/18\/main runs and does not hold the state of 15\/main \(snowflake.lease_state.*differ\)\n.*fix: stop 18\/main .*SNOWFLAKE_OLD_CLUSTER=main .*snowflake-15 15 main 18 finish/);
$merged->stop;
like(run_hook('finish', 'the new cluster stopped'), qr/carried snowflake.lease_state/,
	'finish merges the lease states while the new cluster is stopped');
SnowflakeTest::write_file($merged->data_dir . '/snowflake.lease_state.snowflake-hook', "half written\n");
like(run_hook('finish', 'again'), qr/18\/main holds the state of 15\/main/,
	'a second run changes nothing');
ok(!-e $merged->data_dir . '/snowflake.lease_state.snowflake-hook',
	'and removes what a run that failed half way left');
$merged->start;
my ($other_worker) = grep { $_ != $hook_worker } keys %fresh;
is(lease_state_of($merged, $fresh{$other_worker}), "held|$other_worker",
	'the new cluster\'s own lease on the other worker id is held');
is(lease_state_of($merged, $hook_token), "held|$hook_worker",
	'the old cluster\'s lease is held, on its worker id');
cmp_ok($merged->safe_psql('postgres', 'SELECT snowflake_nextval()'), '>', $hook_max,
	'new IDs lie above every old one');
$merged->stop;
done_testing();
