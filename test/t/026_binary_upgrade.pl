# In binary-upgrade mode (pg_upgrade's, -b) the extension starts no
# background worker, so "postgres" can be dropped and recreated as
# pg_upgrade does; outside it, the workers run.  027 runs a real pg_upgrade.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;

# log_min_messages = debug1: the postmaster logs each worker it registers.
my $registered = qr/registering background worker "snowflake/;

my $workers = q{SELECT count(*) FROM pg_catalog.pg_stat_activity
	WHERE backend_type LIKE 'snowflake%'};

# 1. Binary-upgrade mode, started by hand as pg_upgrade starts it.
my $node = SnowflakeTest::new_node('binary_upgrade',
	settings => { 'snowflake.node_id' => 1, log_min_messages => 'debug1' });
like(slurp_file($node->logfile), $registered,
	'in normal mode the log shows the workers being registered');
$node->safe_psql('postgres', 'CREATE EXTENSION snowflake');
# Outside binary-upgrade mode the reservation worker, the registry launcher
# and the registry of "postgres" run.
ok($node->poll_query_until('postgres', "SELECT ($workers) = 3"),
	'the workers run in normal mode');
$node->stop;

my $log_offset = -s $node->logfile;
system_or_bail('pg_ctl', '-w', '-D', $node->data_dir, '-l', $node->logfile,
	'-o', '-b', 'start');
like(slurp_file($node->logfile, $log_offset),
	qr/LOG:  snowflake starts no background worker in binary-upgrade mode/,
	'the server says it starts no worker');
# Workers are registered before connections are accepted: none now, none ever.
unlike(slurp_file($node->logfile, $log_offset),
	$registered, 'no worker is registered in binary-upgrade mode');
is($node->safe_psql('postgres', $workers), '0', 'no worker runs in binary-upgrade mode');
# What pg_upgrade's restore does first in the new cluster.
my ($ret, $stdout, $stderr) = $node->psql('template1', 'DROP DATABASE postgres');
is($ret, 0, 'DROP DATABASE postgres succeeds in binary-upgrade mode');
is($stderr, '', 'and reports nothing');
system_or_bail('pg_ctl', '-w', '-D', $node->data_dir, '-m', 'fast', 'stop');
done_testing();
