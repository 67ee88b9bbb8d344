# SnowflakeUpgrade: the old cluster, pg_upgrade and the documented copy of
# the state files it does not carry, for 027 and 069.
package SnowflakeUpgrade;

use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeDocs;

# Fills the running $old: the extension, "items" with 1000 IDs, what
# $extra_sql adds, and a lease of $holder for an hour.  Returns the largest
# ID, the lease's token and its worker id.
sub fill_old_cluster
{
	my ($old, $holder, $extra_sql) = @_;
	$old->safe_psql('postgres', q{
CREATE EXTENSION snowflake;
CREATE TABLE items (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), n int);
INSERT INTO items (n) SELECT g FROM generate_series(1, 1000) AS g;
} . ($extra_sql // ''));
	my $max = $old->safe_psql('postgres', 'SELECT max(id) FROM items');
	my ($token, $worker) = split /\|/, $old->safe_psql('postgres',
		"SELECT token || '|' || worker_id FROM snowflake_lease_worker('$holder', interval '1 hour')");
	return ($max, $token, $worker);
}

# One check, named $what: pg_upgrade from the stopped $old into the stopped
# $new, run in the current directory (where it writes its reports).
sub pg_upgrade_ok
{
	my ($old, $new, $what) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
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
		$what);
	return;
}

# One check: docs/operations.md's recipe ("Upgrading PostgreSQL"), run with
# bash, copies the state files from $from into $new's data directory.
sub copy_state_files_ok
{
	my ($from, $new, $what) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	local $ENV{OLD_PGDATA} = $from;
	local $ENV{NEW_PGDATA} = $new->data_dir;
	command_ok(
		[ 'bash', '-euo', 'pipefail', '-c',
			SnowflakeDocs::block('docs/operations.md', 'copy-state-files') ],
		"the documented copy of the state files, $what");
	return;
}

# One check: the lease $token is held on $node, on worker id $worker.
sub lease_held_ok
{
	my ($node, $token, $worker, $what) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	is($node->safe_psql('postgres',
			"SELECT state || '|' || worker_id FROM snowflake_leases WHERE token = $token"),
		"held|$worker", $what);
	return;
}

1;
