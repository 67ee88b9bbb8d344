# snowflake_convert_column() on a Citus distributed table reads the
# workers' shards, where the rows are.  Skipped where Citus cannot run (see
# SnowflakeCitus).
use strict;
use warnings;
use Test::More;
use SnowflakeCitus;

SnowflakeCitus::require_citus();

my $coord = SnowflakeCitus::node('coordinator', 1);
my $w1 = SnowflakeCitus::node('worker1', 2);
my $w2 = SnowflakeCitus::node('worker2', 3);
my @nodes = ($coord, $w1, $w2);
SnowflakeCitus::create_cluster($coord, $w1, $w2);

$coord->safe_psql('postgres', q{
CREATE TABLE imported (tenant int, id bigserial, PRIMARY KEY (tenant, id));
SELECT create_distributed_table('imported', 'tenant');
INSERT INTO imported (tenant, id) VALUES (1, 1), (2, 9223372036854775807);});

# The coordinator's own table is empty: the values are in the shards.
is($coord->safe_psql('postgres', q{
SELECT count(*) FROM pg_catalog.pg_dist_partition WHERE logicalrelid = 'imported'::regclass}),
	'1', 'imported is distributed');

my ($out, $err) = ('', '');
$coord->psql('postgres',
	"\\set VERBOSITY verbose\nSELECT * FROM snowflake_convert_column('imported', 'id')",
	stdout => \$out, stderr => \$err);
like($err,
	qr/ERROR:  55000: column "id" of table "imported" has values at or above the snowflake IDs issued now\nDETAIL:  Its largest value, 9223372036854775807, /,
	'a shard value at or above the current IDs is refused');
for my $node (@nodes)
{
	is($node->safe_psql('postgres', q{SELECT pg_get_expr(adbin, adrelid) FROM pg_attrdef
WHERE adrelid = 'imported'::regclass}),
		q{nextval('imported_id_seq'::regclass)}, $node->name . ': imported.id is unchanged');
}

$coord->safe_psql('postgres', q{
UPDATE imported SET id = 2 WHERE tenant = 2;});
is($coord->safe_psql('postgres', q{SELECT affected_table, affected_column, old_type
  FROM snowflake_convert_column('imported', 'id')}),
	'imported|id|bigint', 'below the current IDs it converts');
for my $node (@nodes)
{
	is($node->safe_psql('postgres', q{SELECT pg_get_expr(adbin, adrelid) FROM pg_attrdef
WHERE adrelid = 'imported'::regclass}),
		'snowflake_nextval()', $node->name . ': the default is snowflake_nextval()');
}

done_testing();
