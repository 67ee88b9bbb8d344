# Keys converted to the type snowflake (docs/snowflake-type.md's recipe)
# survive pg_dump and restore; a dump taken before the conversion, restored
# and converted, gives the same database.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;
use IPC::Run;

my $node = SnowflakeTest::new_node('convert_type', settings => { timezone => 'UTC' });
my $other = SnowflakeTest::new_node('convert_type_other',
	settings => { 'snowflake.node_id' => 1, timezone => 'UTC' });

# --- the source: bigint keys with snowflake IDs and foreign keys -------------
$node->safe_psql('postgres', 'CREATE DATABASE source');
$node->safe_psql(
	'source', q{
CREATE EXTENSION snowflake;
CREATE TABLE customers (
    id   bigint PRIMARY KEY DEFAULT snowflake_nextval(),
    name text NOT NULL UNIQUE
);
CREATE TABLE orders (
    id          bigint PRIMARY KEY DEFAULT snowflake_nextval(),
    customer_id bigint NOT NULL REFERENCES customers,
    placed      date NOT NULL DEFAULT '2026-01-01'
);
CREATE INDEX orders_customer ON orders (customer_id);
CREATE TABLE order_lines (
    order_id bigint REFERENCES orders ON DELETE CASCADE,
    line     smallint,
    item     text,
    PRIMARY KEY (order_id, line)
);
CREATE TABLE visits (
    customer_id bigint NOT NULL REFERENCES customers,
    day         date NOT NULL
) PARTITION BY RANGE (day);
CREATE TABLE visits_2025 PARTITION OF visits FOR VALUES FROM ('2025-01-01') TO ('2026-01-01');
CREATE TABLE visits_2026 PARTITION OF visits FOR VALUES FROM ('2026-01-01') TO ('2027-01-01');
CREATE INDEX visits_customer ON visits (customer_id);
INSERT INTO customers (name) SELECT 'customer ' || g FROM generate_series(1, 200) AS g;
INSERT INTO orders (customer_id)
    SELECT id FROM customers, generate_series(1, 5) ORDER BY name;
INSERT INTO order_lines SELECT o.id, l, 'item ' || l FROM orders AS o, generate_series(1, 3) AS l;
INSERT INTO visits SELECT id, date '2025-06-01' + (g * 37 % 500) FROM customers, generate_series(1, 2) AS g;
});

my @tables = qw(customers orders order_lines visits);

# One line per table: row count and a digest of its rows in order.
sub contents
{
	my ($n, $db) = @_;
	return $n->safe_psql(
		$db,
		join(
			"\nUNION ALL\n",
			map {
				"SELECT '$_', count(*), md5(coalesce(string_agg(t::text, ',' ORDER BY t::text), '')) FROM $_ AS t"
			} @tables));
}

# Type and default of every column of the tables and their partitions.
sub columns
{
	my ($n, $db) = @_;
	return $n->safe_psql(
		$db, q{
SELECT c.relname, a.attname, format_type(a.atttypid, a.atttypmod), pg_get_expr(d.adbin, d.adrelid)
  FROM pg_attribute AS a
       JOIN pg_class AS c ON c.oid = a.attrelid
       LEFT JOIN pg_attrdef AS d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
 WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p')
   AND c.relname NOT LIKE 'snowflake%' AND a.attnum > 0 AND NOT a.attisdropped
 ORDER BY 1, 2});
}

# The constraints and indexes of the tables and their partitions.
sub constraints_and_indexes
{
	my ($n, $db) = @_;
	return $n->safe_psql(
		$db, q{
SELECT c.relname, co.conname, co.contype, co.convalidated, pg_get_constraintdef(co.oid)
  FROM pg_constraint AS co JOIN pg_class AS c ON c.oid = co.conrelid
 WHERE c.relnamespace = 'public'::regnamespace AND c.relname NOT LIKE 'snowflake%'
 ORDER BY 1, 2;
SELECT c.relname, i.relname, pg_get_indexdef(i.oid)
  FROM pg_index AS x
       JOIN pg_class AS c ON c.oid = x.indrelid
       JOIN pg_class AS i ON i.oid = x.indexrelid
 WHERE c.relnamespace = 'public'::regnamespace AND c.relname NOT LIKE 'snowflake%'
 ORDER BY 1, 2});
}

my $bigint_columns = columns($node, 'source');
my $source_contents = contents($node, 'source');

# --- a dump before the conversion ----------------------------------------------
my $dir = PostgreSQL::Test::Utils::tempdir();
$node->command_ok(
	[ 'pg_dump', '-Fc', '-d', $node->connstr('source'), '-f', "$dir/before.dump" ],
	'pg_dump -Fc of the source before the conversion');

# --- the conversion -------------------------------------------------------------
# Converts the keys and their references in one transaction, as the docs do.
sub convert
{
	my ($n, $db) = @_;
	return $n->safe_psql(
		$db, q{
BEGIN;
ALTER TABLE customers ALTER COLUMN id TYPE snowflake;
ALTER TABLE orders ALTER COLUMN id TYPE snowflake, ALTER COLUMN customer_id TYPE snowflake;
ALTER TABLE order_lines ALTER COLUMN order_id TYPE snowflake;
ALTER TABLE visits ALTER COLUMN customer_id TYPE snowflake;
COMMIT;});
}

# Tables and plain indexes keep their files: no rewrite (partitions'
# indexes are built again, as docs/snowflake-type.md says).
my $files_query = q{SELECT string_agg(relname || ':' || relfilenode, ' ' ORDER BY relname)
  FROM pg_class WHERE relnamespace = 'public'::regnamespace
   AND (relkind = 'r' OR (relkind = 'i' AND NOT relispartition))
   AND relname NOT LIKE 'snowflake%'};
my $files_before = $node->safe_psql('source', $files_query);
is(convert($node, 'source'), '',
	'the keys convert, with orders.customer_id, order_lines.order_id and the partitioned visits.customer_id');
is($node->safe_psql('source', $files_query), $files_before,
	'no table or plain index was rewritten');

my $expected_columns = join(
	"\n",
	'customers|id|snowflake|snowflake_nextval()',
	'customers|name|text|',
	'order_lines|item|text|',
	'order_lines|line|smallint|',
	'order_lines|order_id|snowflake|',
	'orders|customer_id|snowflake|',
	'orders|id|snowflake|snowflake_nextval()',
	q{orders|placed|date|'2026-01-01'::date},
	'visits|customer_id|snowflake|',
	'visits|day|date|',
	'visits_2025|customer_id|snowflake|',
	'visits_2025|day|date|',
	'visits_2026|customer_id|snowflake|',
	'visits_2026|day|date|');
is(columns($node, 'source'), $expected_columns,
	'source: the keys and the columns that reference them are snowflake, defaults kept');
isnt($bigint_columns, $expected_columns, 'source: they were bigint before');
is(contents($node, 'source'), $source_contents,
	'source: the rows are the same as before the conversion');

my $source_schema = constraints_and_indexes($node, 'source');
like($source_schema, qr/^orders\|orders_customer_id_fkey\|f\|t\|FOREIGN KEY \(customer_id\) REFERENCES customers\(id\)$/m,
	'source: the foreign keys are there, validated');

# --- dumps after the conversion ----------------------------------------------------
$node->command_ok(
	[ 'pg_dump', '-Fc', '-d', $node->connstr('source'), '-f', "$dir/after.dump" ],
	'pg_dump -Fc of the converted source');
$node->command_ok(
	[ 'pg_dump', '-d', $node->connstr('source'), '-f', "$dir/after.sql" ],
	'pg_dump of the converted source, plain');
like(slurp_file("$dir/after.sql"),
	qr/^    id public\.snowflake DEFAULT public\.snowflake_nextval\(\) NOT NULL,$/m,
	'the plain dump declares the keys snowflake, with their default');

# Restores $file into a new database $db of $n (pg_restore or psql), which
# must stop at no error and print no warning.
sub restore
{
	my ($n, $db, $file) = @_;
	$n->safe_psql('postgres', "CREATE DATABASE $db");
	my @cmd =
	  $file =~ /\.dump$/
	  ? ('pg_restore', '--exit-on-error', '-d', $n->connstr($db), $file)
	  : ('psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', $n->connstr($db), '-f', $file);
	my ($stdout, $stderr);
	my $ok = IPC::Run::run(\@cmd, '>', \$stdout, '2>', \$stderr);
	ok($ok, "$db: $cmd[0] restores " . ($file =~ s{.*/}{}r));
	unlike($stderr, qr/\b(?:ERROR|WARNING|FATAL|error)\b/,
		"$db: the restore reports no error or warning");
}

# The SQLSTATE of the error $sql raises in $db of $n, or '' without one.
sub sqlstate_of
{
	my ($n, $db, $sql) = @_;
	my (undef, undef, $stderr) = $n->psql($db, "\\set VERBOSITY verbose\n$sql");
	return $stderr =~ /ERROR:  ([0-9A-Z]{5}):/ ? $1 : '';
}

# Everything a restored and converted copy must show.
sub check_copy
{
	my ($n, $db, $node_id) = @_;

	is(columns($n, $db), $expected_columns,
		"$db: the keys and the columns that reference them are snowflake, defaults kept");
	is(constraints_and_indexes($n, $db), $source_schema,
		"$db: the constraints and indexes of the source");
	is(contents($n, $db), $source_contents, "$db: the same rows");
	is( $n->safe_psql(
			$db, q{
SELECT json_typeof(to_json(c.id)), bool_and(to_json(c.id) #>> '{}' = c.id::text),
       bool_and(json_typeof(row_to_json(o) -> 'customer_id') = 'string')
  FROM customers AS c JOIN orders AS o ON o.customer_id = c.id
 GROUP BY 1}),
		'string|t|t',
		"$db: to_json() writes the keys as strings equal to their text");

	# The constraints and indexes still work.
	is(sqlstate_of($n, $db, 'INSERT INTO orders (customer_id) VALUES (-1)'),
		'23503', "$db: an order of no customer fails with 23503");
	is(sqlstate_of($n, $db, q{INSERT INTO order_lines VALUES (-1, 1, 'x')}),
		'23503', "$db: a line of no order fails with 23503");
	is(sqlstate_of($n, $db, q{INSERT INTO visits VALUES (-1, '2026-02-01')}),
		'23503', "$db: a visit of no customer fails with 23503");
	is(sqlstate_of($n, $db, 'INSERT INTO customers (id, name) SELECT min(id), $$twin$$ FROM customers'),
		'23505', "$db: a duplicate key fails with 23505");
	is( $n->safe_psql(
			$db, q{
SET enable_seqscan = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT * FROM orders WHERE customer_id = 1}),
		"Index Scan using orders_customer on orders\n  Index Cond: ((customer_id)::bigint = 1)",
		"$db: the index on a converted column serves it");

	# New rows: IDs above every restored one, of this node, type snowflake.
	is( $n->safe_psql(
			$db, qq{
SELECT max(id) AS max_customer FROM customers \\gset
SELECT max(id) AS max_order FROM orders \\gset
WITH c AS (INSERT INTO customers (name) VALUES ('after restore') RETURNING id),
     o AS (INSERT INTO orders (customer_id) SELECT id FROM c RETURNING id, customer_id),
     l AS (INSERT INTO order_lines SELECT id, 1, 'after restore' FROM o RETURNING order_id),
     v AS (INSERT INTO visits SELECT id, '2026-03-01' FROM c RETURNING customer_id)
SELECT c.id > :max_customer, o.id > :max_order, pg_typeof(c.id), pg_typeof(o.id),
       (snowflake_decode(c.id)).node_id = $node_id, (snowflake_decode(o.id)).node_id = $node_id,
       l.order_id = o.id, v.customer_id = c.id, json_typeof(to_json(o.id))
  FROM c, o, l, v;
DELETE FROM orders WHERE id = (SELECT max(id) FROM orders);
SELECT count(*) FROM order_lines WHERE order_id > :max_order;
}),
		"t|t|snowflake|snowflake|t|t|t|t|string\n0",
		"$db: DEFAULT snowflake_nextval() issues IDs above the restored ones, from node $node_id");
}

# --- restores of the converted database; then of the dump taken before, converted
for my $target ([ $node, 0 ], [ $other, 1 ])
{
	my ($n, $node_id) = @$target;
	for my $format ([ 'custom', 'after.dump' ], [ 'plain', 'after.sql' ])
	{
		my ($name, $file) = @$format;
		my $db = "node${node_id}_$name";
		restore($n, $db, "$dir/$file");
		check_copy($n, $db, $node_id);
	}
	my $db = "node${node_id}_before";
	restore($n, $db, "$dir/before.dump");
	is(columns($n, $db), $bigint_columns, "$db: restored as bigint");
	is(contents($n, $db), $source_contents, "$db: the same rows");
	is(convert($n, $db), '', "$db: the keys convert as in the source");
	check_copy($n, $db, $node_id);
}

$other->stop;
$node->stop;

done_testing();
