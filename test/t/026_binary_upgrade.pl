# In binary-upgrade mode (the mode pg_upgrade starts both clusters in) the
# extension starts no background worker: pg_upgrade drops and recreates the
# database "postgres" of the new cluster, which fails while a worker holds a
# connection to it.
#
# 1. A cluster with the extension preloaded, started with -b as pg_upgrade
#    does: no snowflake worker runs, and "postgres" can be dropped.
# 2. pg_upgrade from an older major version to this one, both with the
#    extension preloaded as a user would have it, when
#    SNOWFLAKE_PG_UPGRADE_FROM names the older installation (a prefix with
#    bin/, the extension installed in it; test/run-tests.sh sets it when it
#    runs an older source-built version first).  Skipped, saying so,
#    otherwise.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $preload = qq(
shared_preload_libraries = 'snowflake'
snowflake.node_id = 1
);

my $workers = q{SELECT count(*) FROM pg_catalog.pg_stat_activity
	WHERE backend_type LIKE 'snowflake%'};

# 1. Binary-upgrade mode, started by hand as pg_upgrade starts it.
my $node = PostgreSQL::Test::Cluster->new('binary_upgrade');
$node->init;
$node->append_conf('postgresql.conf', $preload);
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION snowflake');
# Outside binary-upgrade mode both workers run, the registry's connected to
# "postgres".
ok($node->poll_query_until('postgres', "SELECT ($workers) = 2"),
	'both workers run in normal mode');
$node->stop;

my $log_offset = -s $node->logfile;
system_or_bail('pg_ctl', '-w', '-D', $node->data_dir, '-l', $node->logfile,
	'-o', '-b', 'start');
like(slurp_file($node->logfile, $log_offset),
	qr/LOG:  snowflake starts no background worker in binary-upgrade mode/,
	'the server says it starts no worker');
# Give a worker the time it takes to start and connect in normal mode, so
# that without the check one would be seen here.
$node->safe_psql('postgres', 'SELECT pg_catalog.pg_sleep(3)');
is($node->safe_psql('postgres', $workers), '0', 'no worker runs in binary-upgrade mode');
# What pg_upgrade's restore does first in the new cluster.
my ($ret, $stdout, $stderr) = $node->psql('template1', 'DROP DATABASE postgres');
is($ret, 0, 'DROP DATABASE postgres succeeds in binary-upgrade mode');
is($stderr, '', 'and reports nothing');
system_or_bail('pg_ctl', '-w', '-D', $node->data_dir, '-m', 'fast', 'stop');

# 2. pg_upgrade from an older major version.
SKIP:
{
	my $old_prefix = $ENV{SNOWFLAKE_PG_UPGRADE_FROM} // '';
	if ($old_prefix eq '')
	{
		my $why = 'SNOWFLAKE_PG_UPGRADE_FROM names no older installation '
		  . '(test/run-tests.sh sets it when an older source-built version runs first)';
		diag("skipping pg_upgrade: $why");
		skip $why, 4;
	}

	my $old = PostgreSQL::Test::Cluster->new('old', install_path => $old_prefix);
	my $new = PostgreSQL::Test::Cluster->new('new');
	# PostgreSQL 18's initdb turns data checksums on, older ones off, and
	# pg_upgrade needs both alike.
	$old->init(extra => ['--data-checksums']);
	$new->init(extra => ['--data-checksums']);
	for my $n ($old, $new)
	{
		$n->append_conf('postgresql.conf', $preload);
	}
	$old->start;
	$old->safe_psql(
		'postgres', q{
CREATE EXTENSION snowflake;
CREATE TABLE items (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), n int);
INSERT INTO items (n) SELECT g FROM generate_series(1, 1000) AS g;
});
	my $before = $old->safe_psql('postgres', 'SELECT count(*), max(id) FROM items');
	$old->stop;

	# pg_upgrade writes its reports into the current directory.
	my $cwd = PostgreSQL::Test::Utils::tempdir;
	chdir $cwd;
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
	$new->start;
	is($new->safe_psql('postgres', 'SELECT count(*), max(id) FROM items'),
		$before, 'the rows came along');
	ok($new->poll_query_until('postgres', "SELECT ($workers) = 2"),
		'both workers run after the upgrade');
	is($new->safe_psql('postgres',
			q{SELECT e.extversion = a.default_version
				FROM pg_extension AS e JOIN pg_available_extensions AS a ON a.name = e.extname
			   WHERE e.extname = 'snowflake'}),
		't', 'the extension came along, at the version both installations have');
	$new->stop;
}

done_testing();
