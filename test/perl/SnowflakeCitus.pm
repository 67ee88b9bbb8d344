# SnowflakeCitus: the Citus cluster of the tests of docs/citus.md (049,
# 051): nodes on loopback with the page's settings, and the cluster set up
# with the page's blocks (every-node, coordinator), read through
# SnowflakeDocs.
#
#   SnowflakeCitus::require_citus();          # skips where Citus cannot run
#   my $coord = SnowflakeCitus::node('coordinator', 1);
#   SnowflakeCitus::create_cluster($coord, $w1, $w2);
package SnowflakeCitus;

use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use Test::More;
use SnowflakeDocs;
use SnowflakeTest;

our $page = 'docs/citus.md';

# Citus 14 supports PostgreSQL 16 to 18: skips the whole test elsewhere,
# and wherever test/install-pg-versions.sh did not install Citus.
sub require_citus
{
	my $major = SnowflakeTest::pg_major();
	plan skip_all => "Citus 14 supports PostgreSQL 16 to 18, not $major"
	  if $major < 16 || $major > 18;
	chomp(my $sharedir = `pg_config --sharedir`);
	die "pg_config on PATH did not answer" unless $sharedir ne '';
	SnowflakeTest::require_tool(-f "$sharedir/extension/citus.control",
		'Citus', 'citus', 'test/install-pg-versions.sh builds it from ../shared/citus/');
	return;
}

# A node with the page's settings and its own node id, listening on
# loopback for the other nodes, started.  %opt: init => [...] passed to
# init(), conf => text appended after the settings.
sub node
{
	my ($name, $node_id, %opt) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init(@{ $opt{init} // [] });
	$node->append_conf('postgresql.conf',
		SnowflakeDocs::substitute(SnowflakeDocs::block($page, 'settings'),
			'snowflake.node_id = 1' => "snowflake.node_id = $node_id")
		  . "listen_addresses = '127.0.0.1'\ncitus.shard_count = 4\n"
		  . ($opt{conf} // ''));
	$node->start;
	return $node;
}

# The page's blocks every-node (on each node) and coordinator (on the
# first), with the test's ports for the page's hosts coordinator,
# worker-1 and worker-2.
sub create_cluster
{
	my ($coord, $w1, $w2) = @_;
	$_->safe_psql('postgres', SnowflakeDocs::block($page, 'every-node')) for ($coord, $w1, $w2);
	$coord->safe_psql(
		'postgres',
		SnowflakeDocs::substitute(
			SnowflakeDocs::block($page, 'coordinator'),
			"'coordinator', 5432" => "'127.0.0.1', " . $coord->port,
			"'worker-1', 5432" => "'127.0.0.1', " . $w1->port,
			"'worker-2', 5432" => "'127.0.0.1', " . $w2->port));
	return;
}

1;
