# Keys converted by snowflake_convert_column() survive pg_dump and a psql
# restore, into the same cluster and into another with another node id: the
# rows, bigint key and referencing columns, snowflake_nextval() defaults
# without sequences, foreign keys, new IDs above the old and the old IDs'
# decoding all hold; snowflake_layout then has two first_id 0 rows (restored
# and recorded) describing the same layout.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;
use IPC::Run;

my $node = SnowflakeTest::new_node('convert', settings => { timezone => 'UTC' });

# --- the source database: serial and identity keys with foreign keys ---------
$node->safe_psql('postgres', 'CREATE DATABASE source');
$node->safe_psql(
	'source', q{
CREATE EXTENSION snowflake;
CREATE TABLE customers (
    id   serial PRIMARY KEY,
    name text NOT NULL
);
CREATE TABLE orders (
    id          integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    customer_id integer NOT NULL REFERENCES customers,
    placed      date NOT NULL DEFAULT '2026-01-01'
);
CREATE TABLE order_lines (
    order_id integer REFERENCES orders ON DELETE CASCADE,
    line     smallint,
    item     text,
    PRIMARY KEY (order_id, line)
);
CREATE TABLE categories (
    id        bigserial PRIMARY KEY,
    parent_id bigint REFERENCES categories,
    name      text
);
INSERT INTO customers (name) SELECT 'customer ' || g FROM generate_series(1, 200) AS g;
INSERT INTO orders (customer_id) SELECT g % 200 + 1 FROM generate_series(1, 1000) AS g;
INSERT INTO order_lines SELECT o.id, l, 'item ' || l FROM orders AS o, generate_series(1, 3) AS l;
INSERT INTO categories (name) VALUES ('root');
INSERT INTO categories (parent_id, name) SELECT 1, 'sub ' || g FROM generate_series(1, 10) AS g;
});

# Converts a column; returns its report as "table|column|old type" lines.
sub convert
{
	my ($table, $column) = @_;
	return $node->safe_psql('source',
		"SELECT affected_table, affected_column, old_type "
		  . "FROM snowflake_convert_column('$table', '$column')");
}

is(convert('customers', 'id'),
	"customers|id|integer\norders|customer_id|integer",
	'customers.id converts, with orders.customer_id');
is(convert('orders', 'id'),
	"orders|id|integer\norder_lines|order_id|integer",
	'orders.id converts, with order_lines.order_id');
is(convert('categories', 'id'),
	"categories|id|bigint\ncategories|parent_id|bigint",
	'categories.id converts; its self-reference is bigint already');

# New rows after the conversion, with snowflake IDs.
$node->safe_psql(
	'source', q{
INSERT INTO customers (name) SELECT 'new customer ' || g FROM generate_series(1, 20) AS g;
INSERT INTO orders (customer_id) SELECT id FROM customers WHERE name LIKE 'new%';
INSERT INTO order_lines SELECT id, 1, 'new item' FROM orders WHERE id > 1000;
INSERT INTO categories (parent_id, name)
    SELECT max(id), 'new sub' FROM categories;
});
is( $node->safe_psql(
		'source',
		q{SELECT count(*) FILTER (WHERE id > 1000000) FROM customers
		  UNION ALL SELECT count(*) FILTER (WHERE id > 1000000) FROM orders}),
	"20\n20",
	'the source issues snowflake IDs after the conversion');

# --- what a database holds, for comparison -----------------------------------
my @tables = qw(customers orders order_lines categories);

# One line per table: row count and a digest of its rows in key order.
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

# The decoded fields of every ID in the key columns.
sub decoded
{
	my ($n, $db) = @_;
	return $n->safe_psql(
		$db, q{
SELECT md5(string_agg(format('%s:%s', id, d), ',' ORDER BY id))
  FROM (SELECT id FROM customers UNION ALL SELECT id FROM orders
        UNION ALL SELECT id FROM categories) AS i,
       snowflake_decode(i.id) AS d});
}

# Type and default of the key and referencing columns, identities, and the
# sequences left.
sub columns
{
	my ($n, $db) = @_;
	return $n->safe_psql(
		$db, q{
SELECT c.relname, a.attname, format_type(a.atttypid, a.atttypmod),
       pg_get_expr(d.adbin, d.adrelid), a.attidentity
  FROM pg_attribute AS a
       JOIN pg_class AS c ON c.oid = a.attrelid
       LEFT JOIN pg_attrdef AS d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
 WHERE c.relname IN ('customers', 'orders', 'order_lines', 'categories')
   AND a.attname IN ('id', 'customer_id', 'order_id', 'parent_id')
 ORDER BY 1, 2;
SELECT count(*) AS sequences FROM pg_class WHERE relkind = 'S';
});
}

sub foreign_keys
{
	my ($n, $db) = @_;
	return $n->safe_psql(
		$db, q{
SELECT conrelid::regclass, conname, convalidated, pg_get_constraintdef(oid)
  FROM pg_constraint WHERE contype = 'f' ORDER BY conrelid::regclass::text, conname});
}

my $expected_columns = join(
	"\n",
	'categories|id|bigint|snowflake_nextval()|',
	'categories|parent_id|bigint||',
	'customers|id|bigint|snowflake_nextval()|',
	'order_lines|order_id|bigint||',
	'orders|customer_id|bigint||',
	'orders|id|bigint|snowflake_nextval()|',
	'0');
is(columns($node, 'source'), $expected_columns,
	'source: keys are bigint DEFAULT snowflake_nextval(), no sequence left');

my $source_contents = contents($node, 'source');
my $source_decoded = decoded($node, 'source');
my $source_foreign_keys = foreign_keys($node, 'source');
my $source_layout = $node->safe_psql('source',
	'SELECT first_id, epoch, node_bits, worker_bits, sequence_bits, recorded_at '
	  . 'FROM snowflake_layout ORDER BY 1, 6');

# --- pg_dump ----------------------------------------------------------------------
my $dump = PostgreSQL::Test::Utils::tempdir() . '/source.sql';
$node->command_ok([ 'pg_dump', '-d', $node->connstr('source'), '-f', $dump ],
	'pg_dump of the converted database');
my $dump_text = slurp_file($dump);
like($dump_text, qr/DEFAULT public\.snowflake_nextval\(\)/,
	'the dump declares the snowflake default');
unlike($dump_text, qr/CREATE SEQUENCE|GENERATED ALWAYS AS IDENTITY/,
	'the dump has no sequence and no identity');

# Restores the dump into $db of $n with psql, stopping at the first error;
# stderr must be free of errors and warnings.
sub restore
{
	my ($n, $db) = @_;
	$n->safe_psql('postgres', "CREATE DATABASE $db");
	my ($stdout, $stderr);
	my @cmd = (
		'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1',
		'-d', $n->connstr($db), '-f', $dump);
	my $ok = IPC::Run::run(\@cmd, '>', \$stdout, '2>', \$stderr);
	ok($ok, "$db: psql restores the dump with ON_ERROR_STOP=1");
	unlike($stderr, qr/\b(?:ERROR|WARNING|FATAL)\b/,
		"$db: the restore reports no error or warning");
}

# Everything a restored copy must show; $node_id is the restoring node's.
sub check_restored
{
	my ($n, $db, $node_id) = @_;

	is(contents($n, $db), $source_contents, "$db: the same rows");
	is(columns($n, $db), $expected_columns,
		"$db: keys are bigint DEFAULT snowflake_nextval(), no sequence or identity");
	is(foreign_keys($n, $db), $source_foreign_keys,
		"$db: the same foreign keys, validated");
	is(decoded($n, $db), $source_decoded,
		"$db: every ID decodes as in the source");

	# The layout history: the dumped rows, plus the row CREATE EXTENSION
	# recorded; all rows with the same first_id describe the same layout,
	# the running one.
	is( $n->safe_psql(
			$db,
			q{SELECT count(*) FROM (
			    SELECT first_id FROM snowflake_layout GROUP BY first_id
			    HAVING count(DISTINCT (epoch, node_bits, worker_bits, sequence_bits)) > 1) AS s}),
		0,
		"$db: no first_id with two different layouts");
	is( $n->safe_psql(
			$db,
			q{SELECT count(*) FROM snowflake_layout AS l, snowflake_status() AS s
			   WHERE (l.epoch, l.node_bits, l.worker_bits, l.sequence_bits)
			         IS DISTINCT FROM (s.epoch, s.node_bits, s.worker_bits, s.sequence_bits)}),
		0,
		"$db: every layout row is the running layout");
	my $restored_layout = $n->safe_psql($db,
		'SELECT first_id, epoch, node_bits, worker_bits, sequence_bits, recorded_at '
		  . 'FROM snowflake_layout ORDER BY 1, 6');
	my %restored_rows = map { $_ => 1 } split /\n/, $restored_layout;
	is(scalar(grep { !$restored_rows{$_} } split /\n/, $source_layout),
		0, "$db: the dumped layout rows are restored");
	is( $n->safe_psql($db, 'SELECT count(*), count(DISTINCT recorded_at) FROM snowflake_layout'),
		'2|2',
		"$db: plus the row CREATE EXTENSION recorded, with its own recorded_at");

	# New rows: IDs above every existing one, from this node, and the
	# foreign keys accept them.
	is( $n->safe_psql(
			$db, qq{
SELECT max(id) AS max_customer FROM customers \\gset
SELECT max(id) AS max_order FROM orders \\gset
SELECT max(id) AS max_category FROM categories \\gset
WITH c AS (INSERT INTO customers (name) VALUES ('after restore') RETURNING id),
     o AS (INSERT INTO orders (customer_id) SELECT id FROM c RETURNING id, customer_id),
     l AS (INSERT INTO order_lines SELECT id, 1, 'after restore' FROM o RETURNING order_id),
     g AS (INSERT INTO categories (parent_id, name) VALUES (:max_category, 'after restore') RETURNING id)
SELECT c.id > :max_customer, o.id > :max_order, g.id > :max_category,
       (snowflake_decode(c.id)).node_id = $node_id, (snowflake_decode(o.id)).node_id = $node_id,
       l.order_id = o.id
  FROM c, o, l, g;
}),
		't|t|t|t|t|t',
		"$db: inserts get IDs above every existing one, from node $node_id");
	my ($ret, $stdout, $stderr) = $n->psql($db,
		'INSERT INTO orders (customer_id) VALUES (-1)');
	like($stderr, qr/violates foreign key constraint "orders_customer_id_fkey"/,
		"$db: the foreign keys still check new rows");
}

# --- restore into a fresh database of the same cluster --------------------------
restore($node, 'restored');
check_restored($node, 'restored', 0);

# --- restore into another cluster, node 1 --------------------------------------------
my $other = SnowflakeTest::new_node('convert_other',
	settings => { 'snowflake.node_id' => 1, timezone => 'UTC' });
restore($other, 'seeded');
check_restored($other, 'seeded', 1);

$other->stop;
$node->stop;
done_testing();
