# Snowflake IDs on a Citus cluster set up with docs/citus.md's blocks
# (settings, every-node, coordinator, tables; the first three through
# SnowflakeCitus.pm): a coordinator (node id 1) and workers 2 and 3 (Citus
# 14: skipped on 15).
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeCitus;
use SnowflakeDocs;
use SnowflakeTest;

SnowflakeCitus::require_citus();
my $page = $SnowflakeCitus::page;

my $coord = SnowflakeCitus::node('coordinator', 1);
my $w1 = SnowflakeCitus::node('worker1', 2);
my $w2 = SnowflakeCitus::node('worker2', 3);
my @nodes = ($coord, $w1, $w2);
my %node_id = (coordinator => 1, worker1 => 2, worker2 => 3);
my %id_of_port = map { ($_->port => $node_id{ $_->name }) } @nodes;

SnowflakeCitus::create_cluster($coord, $w1, $w2);
$coord->safe_psql('postgres', SnowflakeDocs::block($page, 'tables'));
$coord->safe_psql('postgres', q{
INSERT INTO kinds VALUES (1, 'click'), (2, 'view');
CREATE TABLE event_archive (id bigint PRIMARY KEY, origin int NOT NULL);
SELECT create_distributed_table('event_archive', 'id', colocate_with => 'events');
CREATE TABLE event_copies (src_id bigint NOT NULL, id bigint NOT NULL DEFAULT snowflake_nextval(),
                           PRIMARY KEY (src_id, id));
SELECT create_distributed_table('event_copies', 'src_id', colocate_with => 'none');});

is( $coord->safe_psql('postgres', q{
SELECT string_agg(format('%s:%s', nodeport, shouldhaveshards), ' ' ORDER BY nodeport)
  FROM pg_dist_node WHERE isactive AND noderole = 'primary'}),
	join(' ', map { $_->port . ':' . ($_ == $coord ? 'f' : 't') } sort { $a->port <=> $b->port } @nodes),
	'a coordinator and two workers that hold shards');
for my $node ($w1, $w2)
{
	is($node->safe_psql('postgres', q{SELECT extversion FROM pg_extension WHERE extname = 'snowflake'}),
		$coord->safe_psql('postgres', q{SELECT extversion FROM pg_extension WHERE extname = 'snowflake'}),
		$node->name . ': CREATE EXTENSION snowflake on the coordinator created it here too');
}

# --- 1. concurrent INSERTs through every node ----------------------------------
my $sessions = 2;
my $per_session = 200;
my $gate_key = 4242;
my $dir = PostgreSQL::Test::Utils::tempdir();
my %gate;
for my $node (@nodes)
{
	$gate{ $node->name } = $node->background_psql('postgres');
	$gate{ $node->name }->query_safe("SELECT pg_advisory_lock($gate_key)");
}
my @runs;
for my $node (@nodes)
{
	my $origin = $node_id{ $node->name };
	for my $s (1 .. $sessions)
	{
		my $session = $origin * 10 + $s;
		my $name = $node->name . "_session$s";
		open my $fh, '>', "$dir/$name.sql" or die "$dir/$name.sql: $!";
		print $fh "SELECT pg_advisory_lock_shared($gate_key);\n",
		  "SELECT pg_advisory_unlock_shared($gate_key);\n";
		print $fh "INSERT INTO events (origin, session, n, kind_id) VALUES ($origin, $session, $_, "
		  . (1 + $_ % 2) . ");\n"
		  for 1 .. $per_session;
		close $fh;
		push @runs,
		  { name => $name, run => SnowflakeTest::start_psql($node, $dir, $name, '-f', "$dir/$name.sql") };
	}
}
SnowflakeTest::open_gates(\@nodes, 'postgres', $gate_key, $sessions, \%gate, \@runs, $dir);

my $per_node = $sessions * $per_session;
is($coord->safe_psql('postgres', 'SELECT count(*), count(DISTINCT id) FROM events'),
	3 * $per_node . '|' . 3 * $per_node, 'every ID of the concurrent INSERTs is distinct');
is( $coord->safe_psql('postgres', q{
SELECT string_agg(format('%s:%s', origin, c), ' ' ORDER BY origin)
  FROM (SELECT origin, count(*) AS c FROM events
         WHERE (snowflake_decode(id)).node_id = origin GROUP BY origin) AS o}),
	"1:$per_node 2:$per_node 3:$per_node",
	'every ID decodes to the node that ran its INSERT');
is( $w2->safe_psql('postgres', q{
SELECT count(*) FROM (
    SELECT id, lag(id) OVER (PARTITION BY session ORDER BY n) AS prev FROM events) AS s
 WHERE id <= prev}),
	'0', "each session's IDs increase");
# The rows are stored on both workers, whichever node made them.
is( $coord->safe_psql('postgres', q{
SELECT string_agg(r.result, ' ' ORDER BY s.nodeport, r.shardid)
  FROM run_command_on_shards('events',
           $$SELECT string_agg(DISTINCT origin::text, ',' ORDER BY origin::text) FROM %s$$) AS r
  JOIN citus_shards AS s USING (shardid)}),
	join(' ', ('1,2,3') x 4),
	"each of the four shards holds rows of all three nodes");

# --- 2. INSERT ... SELECT ------------------------------------------------------
my $pull = q{INSERT INTO events (origin, session, n, kind_id)
SELECT 2, 90, g, kind_id FROM kinds, generate_series(1, 50) AS g};
like($w1->safe_psql('postgres', "EXPLAIN (COSTS OFF) $pull"),
	qr/INSERT\/SELECT method: pull to coordinator/,
	'INSERT ... SELECT from the reference table: pulled to the node that runs it');
$w1->safe_psql('postgres', $pull);
is( $coord->safe_psql('postgres', q{
SELECT count(*), count(*) FILTER (WHERE (snowflake_decode(id)).node_id = 2) FROM events WHERE session = 90}),
	'100|100', "its 100 rows got worker1's IDs (node id 2)");

my $repartition = 'INSERT INTO event_copies (src_id) SELECT id FROM events';
like($w2->safe_psql('postgres', "EXPLAIN (COSTS OFF) $repartition"),
	qr/INSERT\/SELECT method: repartition/,
	'INSERT ... SELECT into a table distributed otherwise: repartitioned');
$w2->safe_psql('postgres', $repartition);
my $copies = 3 * $per_node + 100;
is($coord->safe_psql('postgres', 'SELECT count(*) FROM event_copies'), $copies, "$copies copies");
# Each shard's new IDs are those of the worker that stores it.
my @shards = split /\n/, $coord->safe_psql('postgres', q{
SELECT s.nodeport, r.result
  FROM run_command_on_shards('event_copies',
           $$SELECT string_agg(DISTINCT (snowflake_decode(id)).node_id::text, ',') FROM %s$$) AS r
  JOIN citus_shards AS s USING (shardid)
 ORDER BY r.shardid});
is( join(' ', map { my ($port, $ids) = split /\|/; $ids } @shards),
	join(' ', map { my ($port) = split /\|/; $id_of_port{$port} } @shards),
	'repartitioned: the IDs of each shard are those of the worker that stores it');
is(scalar(@shards), 4, 'event_copies has four shards');

my $pushdown = 'INSERT INTO event_archive SELECT id, origin FROM events';
my $plan = $coord->safe_psql('postgres', "EXPLAIN (COSTS OFF) $pushdown");
ok($plan !~ /INSERT\/SELECT method/ && $plan =~ /Insert on event_archive_\d+/,
	'INSERT ... SELECT into a colocated table: pushed down to the shards')
  or diag($plan);
$coord->safe_psql('postgres', $pushdown);
is( $coord->safe_psql('postgres', q{
SELECT count(*) FROM events e FULL JOIN event_archive a USING (id)
 WHERE e.id IS NULL OR a.id IS NULL OR e.origin <> a.origin}),
	'0', 'pushed down: the keys are copied as they are');

my $made = 3 * $per_node + 100;
is( $coord->safe_psql('postgres', q{
SELECT count(*), count(DISTINCT id)
  FROM (SELECT id FROM events UNION ALL SELECT id FROM event_copies) AS ids}),
	($made + $copies) . '|' . ($made + $copies),
	'every ID made in the test is distinct');

# --- 3. snowflake_timestamp(id) predicates on the shards -----------------------
$coord->safe_psql('postgres', 'ANALYZE events');
my ($lo, $hi, $one) = split /\|/, $coord->safe_psql(
	'postgres', q{
SELECT (SELECT snowflake_timestamp(id) FROM events ORDER BY id OFFSET 300 LIMIT 1),
       (SELECT snowflake_timestamp(id) FROM events ORDER BY id OFFSET 900 LIMIT 1),
       (SELECT snowflake_timestamp(id) FROM events ORDER BY id OFFSET 600 LIMIT 1)});
my %forms = (
	ge_lt => "snowflake_timestamp(id) >= '$lo' AND snowflake_timestamp(id) < '$hi'",
	gt_le => "snowflake_timestamp(id) > '$lo' AND snowflake_timestamp(id) <= '$hi'",
	between => "snowflake_timestamp(id) BETWEEN '$lo' AND '$hi'",
	lt => "snowflake_timestamp(id) < '$lo'",
	ge => "snowflake_timestamp(id) >= '$hi'",
	eq => "snowflake_timestamp(id) = '$one'",
	decode_ts => "(snowflake_decode(id)).ts >= '$hi'");
my $shard_ids = $coord->safe_psql('postgres',
	q{SELECT string_agg(shardid::text, ' ' ORDER BY shardid) FROM citus_shards WHERE table_name = 'events'::regclass});

# The shards' tasks of a query, from EXPLAIN with every task shown.
sub tasks
{
	my ($where) = @_;
	return $coord->safe_psql('postgres',
		"SET citus.explain_all_tasks = on; EXPLAIN (COSTS OFF) SELECT id FROM events WHERE $where");
}
my $narrow = tasks($forms{eq});
my @pkeys = $narrow =~ /(?:Index Scan using|Index Only Scan using|Bitmap Index Scan on) events_pkey_(\d+)/g;
is(join(' ', sort @pkeys), $shard_ids, "every shard's task scans its primary key")
  or diag($narrow);
my @conds = $narrow =~ /Index Cond: \(\(id >= snowflake_timestamp_lower_id\(/g;
is(scalar(@conds), 4, 'with the range of id from the rewrite as its index condition');

my %on;
for my $form (sort keys %forms)
{
	$on{$form} = $coord->safe_psql('postgres',
		"SELECT count(*), md5(string_agg(id::text, ',' ORDER BY id)) FROM events WHERE $forms{$form}");
}

# A SET on the coordinator does not reach the workers' planners.
my $set_off = $coord->safe_psql('postgres',
	"SET snowflake.rewrite_timestamp_comparisons = off; SET citus.explain_all_tasks = on;
EXPLAIN (COSTS OFF) SELECT id FROM events WHERE $forms{eq}");
like($set_off, qr/Index Cond: \(\(id >= snowflake_timestamp_lower_id\(/,
	'a SET on the coordinator alone leaves the shards rewritten');

for my $node (@nodes)
{
	$node->safe_psql('postgres',
		'ALTER SYSTEM SET snowflake.rewrite_timestamp_comparisons = off; SELECT pg_reload_conf()');
}
for my $node (@nodes)
{
	ok($node->poll_query_until('postgres', 'SHOW snowflake.rewrite_timestamp_comparisons', 'off'),
		$node->name . ': rewrite off');
}
my $off_plan;
SnowflakeTest::wait_until(
	sub {
		$off_plan = tasks($forms{eq});
		$off_plan !~ /snowflake_timestamp_lower_id/;
	},
	'the shards planned without the rewrite');
is(scalar(() = $off_plan =~ /Filter: \(snowflake_timestamp\(id\) = /g),
	4, 'off on every node: each shard filters on snowflake_timestamp(id)');
for my $form (sort keys %forms)
{
	my $off = $coord->safe_psql('postgres',
		"SELECT count(*), md5(string_agg(id::text, ',' ORDER BY id)) FROM events WHERE $forms{$form}");
	is($on{$form}, $off, "$form: the same rows with and without the rewrite ($off)");
}
ok((split /\|/, $on{ge_lt})[0] > 0 && (split /\|/, $on{eq})[0] > 0, 'the ranges are not empty');
for my $node (@nodes)
{
	$node->safe_psql('postgres',
		'ALTER SYSTEM RESET snowflake.rewrite_timestamp_comparisons; SELECT pg_reload_conf()');
}

# --- 4. snowflake_decode() in distributed queries ------------------------------
my $by_node = 'SELECT (snowflake_decode(id)).node_id, count(*) FROM events GROUP BY 1';
like($coord->safe_psql('postgres', "EXPLAIN (COSTS OFF, VERBOSE) $by_node"),
	qr/Query: SELECT \(public\.snowflake_decode\(id\)\)\.node_id AS node_id, count\(\*\) AS count FROM public\.events_\d+ events WHERE true GROUP BY \(public\.snowflake_decode\(id\)\)\.node_id/,
	"the GROUP BY on the decoded node id runs in the shards' queries");
is($coord->safe_psql('postgres', "$by_node ORDER BY 1"),
	"1|$per_node\n2|" . ($per_node + 100) . "\n3|$per_node",
	'the count of IDs per node id');

my ($ret, $ret_out, $ret_err) = (undef, '', '');
$ret = $w1->psql('postgres',
	"\\set VERBOSITY verbose\nINSERT INTO events (origin, session, n, kind_id) VALUES (2, 91, 1, 1) RETURNING snowflake_decode(id)",
	stdout => \$ret_out, stderr => \$ret_err);
like($ret_err, qr/ERROR:  0A000: non-IMMUTABLE functions are not allowed in the RETURNING clause/,
	'Citus refuses snowflake_decode() in RETURNING');
like($w1->safe_psql('postgres',
		'INSERT INTO events (origin, session, n, kind_id) VALUES (2, 91, 1, 1) RETURNING id'),
	qr/^\d+$/, 'RETURNING id works');

# --- 5. snowflake_convert_column() --------------------------------------------
$coord->safe_psql('postgres', q{
CREATE TABLE legacy (id bigserial PRIMARY KEY, note text);
SELECT create_distributed_table('legacy', 'id');
INSERT INTO legacy (note) VALUES ('a'), ('b');
CREATE TABLE tenants_legacy (tenant int, id bigserial, note text, PRIMARY KEY (tenant, id));
SELECT create_distributed_table('tenants_legacy', 'tenant');
INSERT INTO tenants_legacy (tenant, note) VALUES (1, 'a'), (2, 'b');});
my ($conv_out, $conv_err) = ('', '');
$coord->psql('postgres', "\\set VERBOSITY verbose\nSELECT * FROM snowflake_convert_column('legacy', 'id')",
	stdout => \$conv_out, stderr => \$conv_err);
like($conv_err, qr/ERROR:  XX000: cannot execute ALTER TABLE command involving partition column/,
	'on the distribution column: Citus refuses the ALTER TABLE (with XX000, its own choice)');
for my $node (@nodes)
{
	is($node->safe_psql('postgres', q{SELECT pg_get_expr(adbin, adrelid) FROM pg_attrdef
WHERE adrelid = 'legacy'::regclass}),
		q{nextval('legacy_id_seq'::regclass)}, $node->name . ': legacy.id is unchanged');
}
is( $coord->safe_psql('postgres', q{SELECT affected_table, affected_column, old_type, action
  FROM snowflake_convert_column('tenants_legacy', 'id')}),
	q{tenants_legacy|id|bigint|DEFAULT snowflake_nextval() replaces nextval('public.tenants_legacy_id_seq'::regclass); sequence public.tenants_legacy_id_seq dropped},
	'on another bigserial column: converted');
for my $node (@nodes)
{
	is( $node->safe_psql('postgres', q{
SELECT pg_get_expr(adbin, adrelid), to_regclass('tenants_legacy_id_seq') IS NULL
  FROM pg_attrdef WHERE adrelid = 'tenants_legacy'::regclass}),
		'snowflake_nextval()|t',
		$node->name . ': the default is snowflake_nextval() and the sequence is gone');
	$node->safe_psql('postgres', "INSERT INTO tenants_legacy (tenant, note) VALUES ($node_id{$node->name} + 10, 'new')");
}
is( $coord->safe_psql('postgres', q{
SELECT string_agg(format('%s:%s', tenant, id < 3 OR (snowflake_decode(id)).node_id = tenant - 10), ' ' ORDER BY tenant)
  FROM tenants_legacy}),
	'1:t 2:t 11:t 12:t 13:t',
	'old rows keep their keys; new ones get IDs of the node that inserted them');

# --- 6. without the mesh each registry sees only its own node -----------------
for my $node (@nodes)
{
	ok($node->poll_query_until('postgres', 'SELECT count(*) > 0 FROM snowflake_nodes'),
		$node->name . ': the registry has beaten');
	is($node->safe_psql('postgres', 'SELECT string_agg(node_id::text, \' \') FROM snowflake_nodes'),
		$node_id{ $node->name },
		$node->name . ': its registry lists only its own node id');
}

# --- 7. a distribution column of type snowflake --------------------------------
$coord->safe_psql('postgres', q{
CREATE TABLE api_items (id snowflake PRIMARY KEY DEFAULT snowflake_nextval(), note text);
SELECT create_distributed_table('api_items', 'id', colocate_with => 'none');});
for my $node (@nodes)
{
	$node->safe_psql('postgres',
		"INSERT INTO api_items (note) SELECT 'from ' || g FROM generate_series(1, 20) AS g");
}
is( $coord->safe_psql('postgres', q{
SELECT count(*), count(DISTINCT id), string_agg(DISTINCT (snowflake_decode(id)).node_id::text, ' ')
  FROM api_items}),
	'60|60|1 2 3', 'a snowflake distribution column: 60 distinct IDs, from every node');
my $one_item = $coord->safe_psql('postgres', 'SELECT max(id) FROM api_items');
my $routed = $coord->safe_psql('postgres',
	"EXPLAIN (COSTS OFF) SELECT note FROM api_items WHERE id = $one_item");
like($routed, qr/Task Count: 1\b/, 'a lookup by = on the snowflake key goes to one shard');
like($routed, qr/Index Scan using api_items_pkey_\d+/, "and that shard's task uses its primary key");
is( $coord->safe_psql('postgres',
		"SELECT to_json(id)::text = '\"' || id || '\"', row_to_json(i)::text LIKE '{\"id\":\"%' FROM api_items AS i WHERE id = $one_item"),
	't|t', "the coordinator's JSON writes the snowflake key as a string");
my ($colo_out, $colo_err) = ('', '');
$coord->psql('postgres', q{
CREATE TABLE api_events (id snowflake PRIMARY KEY);
SELECT create_distributed_table('api_events', 'id', colocate_with => 'events');},
	stdout => \$colo_out, stderr => \$colo_err);
like($colo_err, qr/ERROR:  cannot colocate tables events and api_events/,
	'Citus does not colocate a snowflake key with a bigint key');

$_->stop for @nodes;
done_testing();
