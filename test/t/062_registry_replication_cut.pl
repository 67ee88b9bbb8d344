# Another role cannot keep snowflake_nodes out of replication unnoticed:
# (1) a decoy and a trojan in a database owner's new public; (2) with pub
# publishing to sub, the owners cutting the table out are reported.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeDocs;
use SnowflakeTest;

my %conf = ('snowflake.registry_interval' => 200);
my $pub = SnowflakeTest::new_node('pub',
	init => [ allows_streaming => 'logical' ],
	settings => { %conf, 'snowflake.node_id' => 1 });
my $sub = SnowflakeTest::new_node('sub', settings => { %conf, 'snowflake.node_id' => 2 });

for my $node ($pub, $sub)
{
	$node->safe_psql('postgres', 'CREATE ROLE app LOGIN; CREATE DATABASE appdb OWNER app');
	$node->safe_psql('appdb', 'CREATE EXTENSION snowflake');
}

# 1. The decoy and the trojan, in a database of their own.
$pub->safe_psql('postgres', 'CREATE DATABASE decoydb OWNER app');
$pub->safe_psql('decoydb', 'CREATE EXTENSION snowflake');
$pub->safe_psql(
	'decoydb', q{
SET ROLE app;
CREATE TABLE public.orders (id bigint PRIMARY KEY DEFAULT snowflake_nextval());
ALTER SCHEMA public RENAME TO snowpub;
CREATE SCHEMA public;
CREATE TABLE public.snowflake_nodes (x integer);
CREATE FUNCTION public.snowflake_publication_tables() RETURNS SETOF regclass
LANGUAGE plpgsql AS $f$
BEGIN
  RAISE WARNING 'trojan ran as %', current_user;
  RETURN QUERY SELECT 'public.snowflake_nodes'::regclass;
END $f$;
ALTER DATABASE decoydb SET search_path = public, snowpub;
});
my $log_offset = -s $pub->logfile;
my ($rc, $out, $err) = $pub->psql('decoydb',
	SnowflakeDocs::block('docs/multi-primary.md', 'native-publication'));
is($rc, 0, 'the recipe of multi-primary.md step 3 runs in the owner\'s swapped schemas');
is( $pub->safe_psql(
		'decoydb', q{
SET search_path = pg_catalog;
SELECT string_agg(pr.prrelid::regclass::text, ',' ORDER BY pr.prrelid::regclass::text)
  FROM pg_publication_rel AS pr JOIN pg_publication AS p ON p.oid = pr.prpubid
 WHERE p.pubname = 'multi_primary'}),
	'public.snowflake_nodes,snowpub.orders,snowpub.snowflake_nodes',
	'the publication carries the extension\'s snowflake_nodes, the decoy being just another table');
is( $pub->safe_psql(
		'decoydb', q{
SELECT count(*) FROM pg_publication_rel AS pr
  JOIN pg_depend AS d ON d.objid = pr.prrelid AND d.classid = 'pg_class'::regclass
   AND d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e'
  JOIN pg_extension AS e ON e.oid = d.refobjid AND e.extname = 'snowflake'
  JOIN pg_class AS c ON c.oid = pr.prrelid AND c.relname = 'snowflake_nodes'}),
	'1', 'by the extension\'s membership');
unlike(slurp_file($pub->logfile, $log_offset), qr/trojan ran/,
	'the owner\'s snowflake_publication_tables() never runs for the superuser');
unlike($err, qr/trojan ran/, 'nor warns the superuser\'s session');

# 2. pub publishes snowflake_nodes, sub subscribes.
$pub->safe_psql('appdb', 'CREATE PUBLICATION multi_primary FOR TABLE snowflake_nodes');
$pub->safe_psql('appdb', 'ALTER PUBLICATION multi_primary OWNER TO app');
my $connstr = $pub->connstr . ' dbname=appdb';
$sub->safe_psql('appdb',
	"CREATE SUBSCRIPTION s CONNECTION '$connstr' PUBLICATION multi_primary WITH (copy_data = false)"
);
$sub->poll_query_until('appdb', 'SELECT count(*) > 0 FROM snowflake_nodes WHERE node_id = 1')
  or die 'pub\'s heartbeats do not reach sub';

sub problem
{
	my ($node) = @_;
	return $node->safe_psql('appdb',
		q{SELECT coalesce(registry_problem, 'none') FROM snowflake_status()});
}

# Waits for $node's registry_problem to match $like (LIKE, or 'none'), then
# checks it; the extension is in $schema (default public).
sub wait_problem
{
	my ($node, $like, $what, $schema) = @_;
	$schema //= 'public';
	my $cond = $like eq 'none' ? q{registry_problem IS NULL} : qq{registry_problem LIKE '$like'};
	ok( $node->poll_query_until('appdb', "SELECT $cond FROM $schema.snowflake_status()"),
		$node->name . ": $what")
	  or diag('registry_problem: ' . problem($node));
	return;
}

wait_problem($pub, 'none', 'no problem while the publication carries snowflake_nodes');
wait_problem($sub, 'none', 'no problem while the subscription carries snowflake_nodes');

$log_offset = -s $pub->logfile;
$pub->safe_psql('appdb', 'SET ROLE app; ALTER PUBLICATION multi_primary DROP TABLE snowflake_nodes');
wait_problem($pub,
	'database "appdb": publication "multi_primary" no longer carries snowflake_nodes',
	'the publication\'s owner dropping snowflake_nodes from it is reported');
like(
	slurp_file($pub->logfile, $log_offset),
	qr/WARNING:  snowflake node registry in database "appdb": publication "multi_primary" no longer carries snowflake_nodes.*\n.*DETAIL:  The heartbeats of other nodes no longer reach.*\n.*HINT:  Add it back/,
	'and logged with the fix');
$pub->safe_psql('appdb', 'ALTER PUBLICATION multi_primary ADD TABLE public.snowflake_nodes');
wait_problem($pub, 'none', 'the report clears once the table is published again');

$log_offset = -s $sub->logfile;
$sub->safe_psql('appdb', 'SET ROLE app; ALTER SCHEMA public RENAME TO moved');
wait_problem($sub,
	'database "appdb": snowflake_nodes was renamed from public.snowflake_nodes to moved.snowflake_nodes while a subscription carries it%',
	'the schema\'s owner renaming it is reported', 'moved');
like(
	slurp_file($sub->logfile, $log_offset),
	qr/WARNING:  snowflake node registry in database "appdb": snowflake_nodes was renamed.*\n.*\n.*HINT:  Rename it back/,
	'and logged with the fix');
$sub->safe_psql('appdb', 'SET ROLE app; ALTER SCHEMA moved RENAME TO public');
wait_problem($sub, 'none', 'the report clears once the schema has its name again');

$pub->safe_psql('appdb', 'SET ROLE app; ALTER PUBLICATION multi_primary DROP TABLE snowflake_nodes');
$sub->safe_psql('appdb', 'ALTER SUBSCRIPTION s REFRESH PUBLICATION WITH (copy_data = false)');
wait_problem($sub, 'database "appdb": subscription "s" no longer carries snowflake_nodes',
	'a subscription refreshed after its publisher stopped publishing the table is reported');
$pub->safe_psql('appdb', 'ALTER PUBLICATION multi_primary ADD TABLE public.snowflake_nodes');
$sub->safe_psql('appdb', 'ALTER SUBSCRIPTION s REFRESH PUBLICATION WITH (copy_data = false)');
wait_problem($sub, 'none', 'and clears once it carries it again');

# A subscription that is dropped is forgotten, not reported.
$sub->safe_psql('appdb', 'DROP SUBSCRIPTION s');
wait_problem($sub, 'none', 'a dropped subscription is no problem');

done_testing();
