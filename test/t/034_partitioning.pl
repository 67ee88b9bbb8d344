# Tables range-partitioned by day on their snowflake key (docs/partitioning.md):
# the documented DO block and pg_partman 4.7 (on 15 only) make partitions at
# UTC-midnight bounds, rows land in their day's partition, a timestamp
# predicate prunes to its day, retention drops whole days; after a layout
# change inserts fail until the documented steps are run.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;
use POSIX ();
use SnowflakeDocs;

# The page's recipes run as they stand, with this run's days and names.
my $page = 'docs/partitioning.md';

# 2025-01-01 00:00:00 UTC, the default snowflake.epoch: ID 0.
my $epoch_unix = 1735689600;
my $day_ms = 86_400_000;
# One day in IDs: milliseconds << (node_bits + worker_bits + sequence_bits).
my $day_ids = $day_ms << 22;
my $day_ids_13 = $day_ms << 23;

my $node = SnowflakeTest::new_node('partitioning', settings => { timezone => 'UTC' });

# Runs $sql expecting it to fail; returns its stderr, in verbose form.
sub failing
{
	my ($db, $sql) = @_;
	my ($rc, undef, $stderr) = $node->psql($db, "\\set VERBOSITY verbose\n$sql");
	isnt($rc, 0, "fails: $sql");
	return $stderr;
}

# The date of day $k after the epoch, as YYYYMMDD or YYYY-MM-DD.
sub day_name { return POSIX::strftime('%Y%m%d', gmtime($epoch_unix + $_[0] * 86400)); }
sub day_date { return POSIX::strftime('%Y-%m-%d', gmtime($epoch_unix + $_[0] * 86400)); }

# "name|FOR VALUES FROM ('a') TO ('b')" for each partition of $parent.
sub partitions
{
	my ($db, $parent) = @_;
	return $node->safe_psql(
		$db, qq{
SELECT c.relname, pg_get_expr(c.relpartbound, c.oid)
  FROM pg_inherits AS i JOIN pg_class AS c ON c.oid = i.inhrelid
 WHERE i.inhparent = '$parent'::regclass
 ORDER BY c.relname});
}

sub bound
{
	my ($name, $from, $to) = @_;
	return "$name|FOR VALUES FROM ('$from') TO ('$to')";
}

# The relations a plan scans, sorted, and its "Subplans Removed" count.
sub plan_scans
{
	my ($plan) = @_;
	my %seen;
	$seen{$1} = 1
	  while $plan =~
	  /(?:Seq Scan|Bitmap Heap Scan|Index Scan using \S+|Index Only Scan using \S+) on (\w+)/g;
	my ($removed) = $plan =~ /Subplans Removed: (\d+)/;
	return (join(',', sort keys %seen), $removed // 0);
}

# "Today" is read once, so a run must not straddle a UTC midnight (150 s is
# ten times the test's quiet-machine run time).
my $to_midnight = $node->safe_psql('postgres',
	q{SELECT extract(epoch FROM date_trunc('day', now() AT TIME ZONE 'UTC') + interval '1 day'
	                            - (now() AT TIME ZONE 'UTC'))::integer});
if ($to_midnight < 150)
{
	note "waiting $to_midnight s for the UTC date to change";
	$node->poll_query_until('postgres',
		qq{SELECT (now() AT TIME ZONE 'UTC')::date > date '${\ $node->safe_psql('postgres', q{SELECT (now() AT TIME ZONE 'UTC')::date})}'})
	  or die 'the UTC date did not change';
}
my $today = $node->safe_psql('postgres',
	q{SELECT (now() AT TIME ZONE 'UTC')::date - date '2025-01-01'});

is( $node->safe_psql(
		'postgres',
		q{CREATE EXTENSION snowflake;
		  SELECT timestamp_bits, node_bits + worker_bits + sequence_bits
		    FROM snowflake_status()}),
	'41|22',
	'the default layout: 41 timestamp bits, shift 22');
is( $node->safe_psql(
		'postgres',
		q{SELECT snowflake_id_interval('1 day'), snowflake_id_interval('1 hour'),
		         snowflake_id_interval('7 days')}),
	join('|', $day_ids, 3_600_000 << 22, 7 * $day_ids),
	'snowflake_id_interval: milliseconds << 22');
for my $span ('1 month', '1 year', '0', '-1 day', '1 microsecond', '1.5 ms')
{
	like(
		failing('postgres', "SELECT snowflake_id_interval('$span')"),
		qr/ERROR:  22023: the span of snowflake IDs must/,
		"snowflake_id_interval('$span') is refused with 22023");
}

# --- plain declarative partitioning --------------------------------------------
# The DO block of docs/partitioning.md, verbatim: a partition for today and
# for each of the next 2 days (UTC), by name if it does not exist yet.
my $plain_recipe = q{
DO $$
DECLARE
    today date := (now() AT TIME ZONE 'UTC')::date;
    d date;
BEGIN
    FOR d IN SELECT today + n FROM generate_series(0, 2) AS n LOOP
        EXECUTE format('CREATE TABLE IF NOT EXISTS %I PARTITION OF events FOR VALUES FROM (%s) TO (%s)',
                       'events_' || to_char(d, 'YYYYMMDD'),
                       snowflake_min_id(d::timestamp AT TIME ZONE 'UTC'),
                       snowflake_min_id((d + 1)::timestamp AT TIME ZONE 'UTC'));
    END LOOP;
END
$$;
};

# Run first from 5 days back, for the rows of past days below, and from a
# session far from UTC: the bounds are still UTC midnights.
my $from_5_days_back = $plain_recipe =~ s/generate_series\(0, 2\)/generate_series(-5, 2)/r;
$node->safe_psql(
	'postgres', qq{
CREATE TABLE events (
    id      bigint PRIMARY KEY DEFAULT snowflake_nextval(),
    payload text
) PARTITION BY RANGE (id);
SET TimeZone = 'America/Los_Angeles';
$from_5_days_back
});

is( partitions('postgres', 'events'),
	join("\n",
		map { bound('events_' . day_name($_), $_ * $day_ids, ($_ + 1) * $day_ids) }
		  ($today - 5 .. $today + 2)),
	'plain: the DO block makes 8 day partitions at multiples of the day interval');
is( $node->safe_psql(
		'postgres', q{
SELECT string_agg(DISTINCT to_char(snowflake_timestamp(b), 'HH24:MI:SS.MS TZ'), ',')
  FROM pg_class AS c,
       LATERAL (SELECT (regexp_match(pg_get_expr(c.relpartbound, c.oid),
                                     'FROM \(''(\d+)''\) TO \(''(\d+)''\)')) AS m) AS r,
       LATERAL unnest(ARRAY[r.m[1]::bigint, r.m[2]::bigint]) AS b
 WHERE c.relispartition AND c.relkind = 'r' AND c.relname LIKE 'events_%'}),
	'00:00:00.000 UTC',
	'plain: every bound decodes to a UTC midnight');

# Rows of chosen days: each day's first three IDs and its last ID; around
# 10:00 on day -2, the IDs just outside and just inside one hour.
my $hour = day_date($today - 2) . ' 10:00:00+00';
$node->safe_psql(
	'postgres', qq{
INSERT INTO events (id, payload)
SELECT snowflake_min_id(d) + n, 'day'
  FROM generate_series(-5, -1) AS k,
       LATERAL (SELECT timestamptz '${\ day_date($today)} 00:00+00' + k * interval '1 day' AS d) AS s,
       generate_series(0, 2) AS n;
INSERT INTO events (id, payload)
SELECT snowflake_max_id(timestamptz '${\ day_date($today)} 00:00+00' + k * interval '1 day' - interval '1 ms'), 'last'
  FROM generate_series(-4, 0) AS k;
INSERT INTO events (id, payload) VALUES
    (snowflake_max_id(timestamptz '$hour' - interval '1 ms'), 'before the hour'),
    (snowflake_min_id(timestamptz '$hour'), 'hour start'),
    (snowflake_max_id(timestamptz '$hour' + interval '1 hour' - interval '1 ms'), 'hour end'),
    (snowflake_min_id(timestamptz '$hour' + interval '1 hour'), 'after the hour');
INSERT INTO events (payload) SELECT 'now' FROM generate_series(1, 100);
});

# The partition named after the UTC day of each row's timestamp.
my $misplaced = q{
SELECT count(*) FROM events
 WHERE substr(tableoid::regclass::text, 1, 15)
       <> 'events_' || to_char(snowflake_timestamp(id) AT TIME ZONE 'UTC', 'YYYYMMDD')};
is($node->safe_psql('postgres', $misplaced), 0,
	'plain: every row is in the partition of its UTC day');
is( $node->safe_psql(
		'postgres', q{
SELECT tableoid::regclass, count(*) FROM events WHERE payload <> 'now'
 GROUP BY 1 ORDER BY 1}),
	join("\n",
		'events_' . day_name($today - 5) . '|4',
		'events_' . day_name($today - 4) . '|4',
		'events_' . day_name($today - 3) . '|4',
		'events_' . day_name($today - 2) . '|8',
		'events_' . day_name($today - 1) . '|4'),
	'plain: a day\'s first and last IDs land in its partition');
is( $node->safe_psql(
		'postgres',
		q{SELECT count(*), count(DISTINCT tableoid) <= 2 FROM events WHERE payload = 'now'}),
	'100|t',
	'plain: the 100 snowflake_nextval() rows are in the partition of their day');

# One hour of day -2, written five ways, and its first millisecond.
my @hour_predicates = (
	[   '>= and <',
		"snowflake_timestamp(id) >= timestamptz '$hour' "
		  . "AND snowflake_timestamp(id) < timestamptz '$hour' + interval '1 hour'",
		'hour start,hour end'
	],
	[   '> and <=',
		"snowflake_timestamp(id) > timestamptz '$hour' - interval '1 ms' "
		  . "AND snowflake_timestamp(id) <= timestamptz '$hour' + interval '1 hour' - interval '1 ms'",
		'hour start,hour end'
	],
	[   'BETWEEN',
		"snowflake_timestamp(id) BETWEEN timestamptz '$hour' "
		  . "AND timestamptz '$hour' + interval '1 hour' - interval '1 ms'",
		'hour start,hour end'
	],
	[   '(snowflake_decode(id)).ts',
		"(snowflake_decode(id)).ts >= timestamptz '$hour' "
		  . "AND (snowflake_decode(id)).ts < timestamptz '$hour' + interval '1 hour'",
		'hour start,hour end'
	],
	[ '=', "snowflake_timestamp(id) = timestamptz '$hour'", 'hour start' ]);
for my $case (@hour_predicates)
{
	my ($form, $where, $expected) = @$case;
	my ($scans, $removed) = plan_scans(
		$node->safe_psql('postgres', "EXPLAIN (COSTS OFF) SELECT * FROM events WHERE $where"));
	is("$scans / $removed", 'events_' . day_name($today - 2) . ' / 7',
		"plain, $form: scans only its day's partition, 7 subplans removed");
	my $rows = "SELECT id, payload FROM events WHERE $where ORDER BY id";
	my $on = $node->safe_psql('postgres', $rows);
	is($on, $node->safe_psql('postgres', "SET snowflake.rewrite_timestamp_comparisons = off; $rows"),
		"plain, $form: the same rows with the rewrite off");
	is(join(',', map { (split /\|/)[1] } split /\n/, $on), $expected,
		"plain, $form: exactly the rows of the hour");
}
{
	my ($scans, $removed) = plan_scans(
		$node->safe_psql(
			'postgres',
			"SET snowflake.rewrite_timestamp_comparisons = off; EXPLAIN (COSTS OFF) "
			  . "SELECT * FROM events WHERE $hour_predicates[0][1]"));
	is(scalar(my @all = split /,/, $scans) . " / $removed", '8 / 0',
		'plain: with the rewrite off, every partition is scanned');
}

# The last hour, bound by now(): pruned when the executor starts; the plan
# and the expected partitions are read in one transaction, so at one now().
{
	my $out = $node->safe_psql(
		'postgres', q{
BEGIN;
EXPLAIN (COSTS OFF) SELECT * FROM events WHERE snowflake_timestamp(id) >= now() - interval '1 hour';
SELECT string_agg('events_' || to_char(d, 'YYYYMMDD'), ',' ORDER BY d)
  FROM generate_series(((now() - interval '1 hour') AT TIME ZONE 'UTC')::date,
                       (now() AT TIME ZONE 'UTC')::date + 2, interval '1 day') AS d;
COMMIT;});
	my @lines = split /\n/, $out;
	my $expected = pop @lines;
	my $plan = join "\n", @lines;
	my ($scans, $removed) = plan_scans($plan);
	like($plan,
		qr/id >= snowflake_timestamp_lower_id\(\(now\(\) - '01:00:00'::interval\), true\)/,
		'plain: >= now() - 1 hour is planned as a range of id');
	like($plan,
		qr/snowflake_timestamp_ge\(id, \(now\(\) - '01:00:00'::interval\)\)/,
		'plain: >= now() - 1 hour keeps snowflake_timestamp_ge() beside the range');
	is($scans, $expected,
		'plain: >= now() - 1 hour scans only the partitions from that hour on');
	is($removed, 8 - scalar(my @scanned = split /,/, $expected),
		'plain: >= now() - 1 hour: the partitions of the older days are removed');
	my $rows = q{SELECT count(*), count(*) FILTER (WHERE payload = 'now') FROM events
	              WHERE snowflake_timestamp(id) >= now() - interval '1 hour'};
	my $on = $node->safe_psql('postgres', $rows);
	like($on, qr/^\d+\|100$/, 'plain: the last hour holds the 100 new rows');
	is($node->safe_psql('postgres', "SET snowflake.rewrite_timestamp_comparisons = off; $rows"),
		$on, 'plain: the last hour, the same with the rewrite off');
}

# Dropping day -5's partition drops exactly its rows.
{
	my $rows = q{SELECT md5(string_agg(id::text || payload, ',' ORDER BY id)), count(*) FROM events};
	my $others = $node->safe_psql(
		'postgres',
		qq{SELECT md5(string_agg(id::text || payload, ',' ORDER BY id)), count(*) FROM events
		    WHERE (snowflake_timestamp(id) AT TIME ZONE 'UTC')::date <> '${\ day_date($today - 5)}'});
	my $all = partitions('postgres', 'events');
	$node->safe_psql('postgres', 'DROP TABLE events_' . day_name($today - 5));
	is($node->safe_psql('postgres', $rows), $others,
		'plain: dropping a day\'s partition drops exactly that day\'s rows');

	# The one-statement form gives the DO block's bounds.
	$node->safe_psql(
		'postgres', qq{
CREATE TABLE events_${\ day_name($today - 5)} PARTITION OF events
    FOR VALUES FROM (snowflake_min_id('${\ day_date($today - 5)} 00:00+00')) TO (snowflake_min_id('${\ day_date($today - 4)} 00:00+00'));
});
	is(partitions('postgres', 'events'), $all,
		'plain: CREATE TABLE ... FROM (snowflake_min_id(day)) gives the same bounds');
	$node->safe_psql('postgres', 'DROP TABLE events_' . day_name($today - 5));
}

# --- pg_partman, before the layout change ----------------------------------------
my $major = $node->safe_psql('postgres',
	q{SELECT current_setting('server_version_num')::int / 10000});
my $have_partman = $node->safe_psql('postgres',
	q{SELECT count(*) FROM pg_available_extensions WHERE name = 'pg_partman'});
die "pg_partman is not installed for PostgreSQL 15: test/install-deps.sh installs "
  . "postgresql-15-partman"
  if $major == 15 && !$have_partman;
my $no_partman =
  "pg_partman is not installed for PostgreSQL $major (Debian packages it for "
  . "the system PostgreSQL 15 only)";

# The days of the partman table: B = today - 5.
my $b = $today - 5;

sub partman_partition
{
	my ($table, $k, $interval) = @_;
	return bound("${table}_p" . ($k * $interval), $k * $interval, ($k + 1) * $interval);
}

sub partman_partitions
{
	my ($table, @days) = @_;
	return join("\n", "${table}_default|DEFAULT",
		map { partman_partition($table, $_, $day_ids) } @days);
}

subtest 'pg_partman: create_parent, premake, run_maintenance, retention' => sub {
	plan skip_all => $no_partman unless $have_partman;

	$node->safe_psql('postgres', 'CREATE DATABASE pm');
	$node->safe_psql('pm', 'CREATE EXTENSION snowflake');
	# The page's recipe, started 5 days back (B) for the rows of past days.
	is( $node->safe_psql(
			'pm',
			SnowflakeDocs::substitute(
				SnowflakeDocs::block($page, 'partman-create'),
				'p_start_partition := snowflake_min_id(now())' =>
				  "p_start_partition := snowflake_min_id('${\ day_date($b)} 00:00+00')")),
		't',
		'create_parent() succeeds');
	$node->safe_psql(
		'pm', q{
CREATE TABLE audit (
    id      bigint PRIMARY KEY DEFAULT snowflake_nextval(),
    payload text
) PARTITION BY RANGE (id);
});
	is(partitions('pm', 'events'), partman_partitions('events', $b .. $b + 3),
		'create_parent(): the start day and 3 premade days, at the day bounds, and a default');
	is( $node->safe_psql(
			'pm',
			q{SELECT partition_interval, premake, retention IS NULL, retention_keep_table
			    FROM partman.part_config WHERE parent_table = 'public.events'}),
		"$day_ids|3|t|t",
		'part_config: the interval in IDs, premake 3, no retention');

	# Rows of days B to B+2: maintenance keeps 3 partitions above B+2's.
	$node->safe_psql(
		'pm', qq{
INSERT INTO events (id, payload)
SELECT snowflake_min_id(timestamptz '${\ day_date($b)} 00:00+00' + k * interval '1 day') + n, 'day'
  FROM generate_series(0, 2) AS k, generate_series(0, 2) AS n;
SELECT partman.run_maintenance();
});
	is(partitions('pm', 'events'), partman_partitions('events', $b .. $b + 5),
		'run_maintenance(): 3 partitions above the one holding the largest ID');

	# Real rows of today (B+5): 3 more above today's.
	$node->safe_psql(
		'pm', q{
INSERT INTO events (payload) SELECT 'now' FROM generate_series(1, 20);
SELECT partman.run_maintenance();
});
	# The day of the largest ID, under the first layout.
	my $max_day = $node->safe_psql('pm', "SELECT max(id) / $day_ids FROM events");
	is(partitions('pm', 'events'), partman_partitions('events', $b .. $max_day + 3),
		'run_maintenance(): new rows of today make 3 partitions above today\'s');
	is( $node->safe_psql(
			'pm',
			"SELECT count(*) FROM events WHERE tableoid::regclass::text "
			  . "<> 'events_p' || (id - id % $day_ids)"),
		0,
		'every row is in the partition of its day');
	is( $node->safe_psql(
			'pm',
			"SELECT count(*) FROM events WHERE snowflake_timestamp(id - id % $day_ids) "
			  . "= date_trunc('day', snowflake_timestamp(id))"),
		29,
		'each partition\'s lower bound is the UTC midnight of its rows\' day');

	# With retention_keep_table left true, the old days are detached only.
	is( $node->safe_psql(
			'pm', qq{
BEGIN;
UPDATE partman.part_config SET retention = snowflake_id_interval('2 days')::text
 WHERE parent_table = 'public.events';
SELECT partman.run_maintenance();
SELECT string_agg(relname || ' ' || relispartition, ',' ORDER BY relname)
  FROM pg_class WHERE relname LIKE 'events_p%' AND relkind = 'r'
   AND relname::text < 'events_p${\ (($max_day - 2) * $day_ids)}';
ROLLBACK;}),
		"\n" . join(',', map { 'events_p' . ($_ * $day_ids) . ' false' } ($b .. $b + 2)),
		'retention_keep_table true: the old days are detached, not dropped');

	# The page's retention, 2 days here.
	$node->safe_psql('pm',
		SnowflakeDocs::substitute(SnowflakeDocs::block($page, 'partman-retention'),
			"snowflake_id_interval('7 days')" => "snowflake_id_interval('2 days')"));

	# Retention counts from the largest ID in the child partitions, not
	# from now(): one row of 3 days ahead drops today's partition too.
	is( $node->safe_psql(
			'pm', qq{
BEGIN;
INSERT INTO events (id, payload)
VALUES (snowflake_min_id(timestamptz '${\ day_date($max_day + 3)} 00:00+00'), 'ahead');
SELECT partman.run_maintenance();
SELECT string_agg(c.relname, ',' ORDER BY c.relname)
  FROM pg_inherits AS i JOIN pg_class AS c ON c.oid = i.inhrelid
 WHERE i.inhparent = 'events'::regclass;
ROLLBACK;}),
		"\n"
		  . join(',', 'events_default',
			map { 'events_p' . ($_ * $day_ids) } ($max_day + 1 .. $max_day + 6)),
		'retention: a row 3 days ahead makes run_maintenance() drop today\'s partition');

	$node->safe_psql('pm', 'SELECT partman.run_maintenance()');
	is(partitions('pm', 'events'), partman_partitions('events', $max_day - 2 .. $max_day + 3),
		'retention 2 days: keeps the day of the largest ID and the 2 before, drops the rest');
	is( $node->safe_psql(
			'pm',
			q{SELECT payload, count(*) FROM events GROUP BY 1 ORDER BY 1}),
		'now|20',
		'retention: the rows of the dropped days are gone');

	# A row in the default partition does not count (counted, this one,
	# 30 days ahead, would drop today's partition).
	is( $node->safe_psql(
			'pm', qq{
BEGIN;
INSERT INTO events (id, payload)
VALUES (snowflake_min_id(timestamptz '${\ day_date($max_day + 30)} 00:00+00'), 'in default');
SELECT tableoid::regclass FROM events WHERE payload = 'in default';
SELECT partman.drop_partition_id('public.events');
ROLLBACK;}),
		"events_default\n0",
		'retention: a row in the default partition does not count');

	# The second table gets a partition of today and one premade.
	is( $node->safe_psql(
			'pm', qq{
SELECT partman.create_parent('public.audit', p_control := 'id', p_type := 'native',
    p_interval := snowflake_id_interval('1 day')::text, p_premake := 1,
    p_start_partition := snowflake_min_id(now())::text);
INSERT INTO audit (payload) VALUES ('before');
SELECT count(*) FROM audit WHERE tableoid = ('audit_p' || (id - id % $day_ids))::regclass}),
		"t\n1",
		'create_parent() from snowflake_min_id(now()): the row of today is in today\'s partition');
	my $audit_day = $node->safe_psql('pm', "SELECT max(id) / $day_ids FROM audit");
	is(partitions('pm', 'audit'), partman_partitions('audit', $audit_day .. $audit_day + 1),
		'create_parent() rounds snowflake_min_id(now()) down to the start of today');
};

# --- the layout changes: one more sequence bit -----------------------------------
# The plain table's rows, and today's count, before the change.
my $plain_before = $node->safe_psql('postgres',
	q{SELECT md5(string_agg(id::text || payload, ',' ORDER BY id)) FROM events});
my $plain_today_old = $node->safe_psql('postgres',
	"SELECT count(*) FROM events_" . day_name($today));

$node->append_conf('postgresql.conf', "snowflake.sequence_bits = 13\n");
$node->restart;

is($node->safe_psql('postgres', q{SELECT snowflake_id_interval('1 day')}),
	$day_ids_13, 'after the change the day is twice as many IDs');
is( $node->safe_psql(
		'postgres',
		qq{SELECT snowflake_min_id('${\ day_date($today - 1)} 00:00+00'),
		          snowflake_min_id('${\ day_date($today + 1)} 00:00+00')}),
	($today - 1) * $day_ids . '|' . ($today + 1) * $day_ids_13,
	'after the change snowflake_min_id() gives the old layout\'s IDs before it, the new after');

# --- plain partitioning after the change -----------------------------------------
like(
	failing('postgres', q{INSERT INTO events (payload) VALUES ('new')}),
	qr/ERROR:  23514: no partition of relation "events" found for row/,
	'plain: a new row finds no partition (23514)');
is( $node->safe_psql(
		'postgres',
		'SELECT count(*) FROM events_'
		  . day_name($today + 1)
		  . ' UNION ALL SELECT count(*) FROM events_'
		  . day_name($today + 2)),
	"0\n0",
	'plain: the partitions made ahead are empty');

# The steps of docs/partitioning.md, with this run's days in place of the
# example's (2026-11-25), and its step 3, the daily DO block.
my $rest_of_today = 'events_' . day_name($today) . '_2';
$node->safe_psql(
	'postgres',
	SnowflakeDocs::substitute(
		SnowflakeDocs::block($page, 'plain-layout-change'),
		'events_20261125_2' => $rest_of_today,
		'events_20261126' => 'events_' . day_name($today + 1),
		'events_20261127' => 'events_' . day_name($today + 2))
	  . $plain_recipe);
$node->safe_psql('postgres', q{INSERT INTO events (payload) SELECT 'new' FROM generate_series(1, 50)});

is( partitions('postgres', 'events'),
	join("\n",
		(map { bound('events_' . day_name($_), $_ * $day_ids, ($_ + 1) * $day_ids) }
			  ($today - 4 .. $today)),
		bound($rest_of_today, $today * $day_ids_13, ($today + 1) * $day_ids_13),
		(map { bound('events_' . day_name($_), $_ * $day_ids_13, ($_ + 1) * $day_ids_13) }
			  ($today + 1 .. $today + 2))),
	'plain: the rest of today and the days ahead at the new layout\'s day bounds');
is($node->safe_psql('postgres', $misplaced), 0,
	'plain: after the change every row is in the partition of its UTC day');
is( $node->safe_psql(
		'postgres',
		q{SELECT count(*) FROM events WHERE payload = 'new' AND tableoid::regclass::text LIKE '%\_2'}),
	50,
	'plain: the new rows of today are in the partition of the rest of today');
is( $node->safe_psql(
		'postgres',
		"SELECT md5(string_agg(id::text || payload, ',' ORDER BY id)) FROM events "
		  . "WHERE payload <> 'new'"),
	$plain_before,
	'plain: the old rows are where they were');

# Today, across the change: both of today's partitions, nothing else.
{
	my $where =
	    "snowflake_timestamp(id) >= timestamptz '${\ day_date($today)} 00:00+00' "
	  . "AND snowflake_timestamp(id) < timestamptz '${\ day_date($today + 1)} 00:00+00'";
	my ($scans, $removed) = plan_scans(
		$node->safe_psql('postgres', "EXPLAIN (COSTS OFF) SELECT * FROM events WHERE $where"));
	is($scans, join(',', 'events_' . day_name($today), $rest_of_today),
		'plain: today scans the partition of each layout');
	my $rows = "SELECT count(*) FROM events WHERE $where";
	is($node->safe_psql('postgres', $rows), $plain_today_old + 50,
		'plain: today holds the rows of both layouts');
	is($node->safe_psql('postgres', "SET snowflake.rewrite_timestamp_comparisons = off; $rows"),
		$plain_today_old + 50, 'plain: today, the same with the rewrite off');
}

# --- pg_partman after the change ----------------------------------------------------
subtest 'pg_partman: a layout change' => sub {
	plan skip_all => $no_partman unless $have_partman;

	my $max_day = $node->safe_psql('pm', "SELECT max(id) / $day_ids FROM events");
	my $old = partman_partitions('events', $max_day - 2 .. $max_day + 3);
	is(partitions('pm', 'events'), $old, 'the partitions before');

	$node->safe_psql('pm', q{INSERT INTO events (payload) SELECT 'new' FROM generate_series(1, 3)});
	is( $node->safe_psql('pm',
			q{SELECT tableoid::regclass, count(*) FROM events WHERE payload = 'new' GROUP BY 1}),
		'events_default|3',
		'new rows land in the default partition');
	my $new_min = $node->safe_psql('pm', q{SELECT min(id) FROM events WHERE payload = 'new'});
	my $failure = failing('pm', q{SELECT partman.run_maintenance()});
	like(
		$failure,
		qr/updated partition constraint for default partition "events_default" would be violated by some row/,
		'run_maintenance() fails, on the new rows in the default partition');
	# It made a partition for every old-interval step up to the new IDs,
	# and fails attaching the one that holds them.
	my $attached = $new_min - $new_min % $day_ids;
	like(
		$failure,
		qr/ATTACH PARTITION public\.events_p$attached FOR VALUES FROM \('$attached'\) TO \('${\ ($attached + $day_ids)}'\)/,
		'run_maintenance() fails attaching the old-interval partition of the new IDs');
	is(partitions('pm', 'events'), $old, 'the failed run_maintenance() leaves no partition');

	# The steps of docs/partitioning.md, for each table.
	my $steps = sub {
		my ($table) = @_;
		return $node->safe_psql('pm',
			SnowflakeDocs::substitute(SnowflakeDocs::block($page, 'partman-layout-change'),
				'public.events' => "public.$table"));
	};
	is($steps->('events'), "3\nf\n",
		'events: partition_data_id() moves the 3 new rows, and makes their partition');

	# The day of the change, under the new layout.
	my $new_day = $node->safe_psql('pm', "SELECT max(id) / $day_ids_13 FROM events");
	is( partitions('pm', 'events'),
		join("\n", $old,
			map { partman_partition('events', $_, $day_ids_13) } ($new_day .. $new_day + 3)),
		'events: today and 3 premade days at the new layout\'s day bounds, the old ones kept');
	is( $node->safe_psql('pm',
			q{SELECT count(*) FROM ONLY events_default}),
		0, 'events: the default partition is empty');
	is( $node->safe_psql(
			'pm',
			"SELECT count(*) FROM events WHERE payload = 'new' "
			  . "AND tableoid::regclass::text = 'events_p' || (id - id % $day_ids_13)"),
		3,
		'events: the new rows are in the partition of their day');
	is( $node->safe_psql(
			'pm',
			q{SELECT partition_interval, retention IS NULL
			    FROM partman.part_config WHERE parent_table = 'public.events'}),
		"$day_ids_13|t",
		'events: part_config has the new interval, and no retention');

	# No new row in the default partition: create_partition_id() makes
	# today's partition.
	my $audit_old = partitions('pm', 'audit');
	is($steps->('audit'), "0\nt\n",
		'audit: nothing to move, create_partition_id() makes today\'s partition');
	is( partitions('pm', 'audit'),
		join("\n", $audit_old, partman_partition('audit', $new_day, $day_ids_13)),
		'audit: today\'s partition at the new layout\'s day bounds');
	$node->safe_psql(
		'pm', q{
INSERT INTO audit (payload) VALUES ('after');
SELECT partman.run_maintenance('public.audit');
});
	is( partitions('pm', 'audit'),
		join("\n", $audit_old,
			map { partman_partition('audit', $_, $day_ids_13) } ($new_day .. $new_day + 1)),
		'audit: the first new row makes run_maintenance() premake under the new layout');

	# Retention set again drops every partition of the old layout at once,
	# today's included.
	$node->safe_psql(
		'pm', q{
UPDATE partman.part_config SET retention = snowflake_id_interval('2 days')::text
 WHERE parent_table = 'public.events';
SELECT partman.run_maintenance('public.events');
});
	is( partitions('pm', 'events'),
		join("\n",
			'events_default|DEFAULT',
			map { partman_partition('events', $_, $day_ids_13) } ($new_day .. $new_day + 3)),
		'retention set again: every old-layout partition is dropped, today\'s too');
	is($node->safe_psql('pm', q{SELECT payload, count(*) FROM events GROUP BY 1}),
		'new|3', 'retention set again: only the rows of the new layout are left');
};

subtest 'pg_partman: a key of the snowflake type is refused' => sub {
	plan skip_all => $no_partman unless $have_partman;

	$node->safe_psql('postgres', 'CREATE DATABASE pm_typed');
	$node->safe_psql('pm_typed', q{
CREATE EXTENSION snowflake;
CREATE SCHEMA partman;
CREATE EXTENSION pg_partman SCHEMA partman;
CREATE TABLE typed_events (id snowflake PRIMARY KEY DEFAULT snowflake_nextval())
    PARTITION BY RANGE (id);});
	my ($ret, $out, $err) = $node->psql('pm_typed', qq{
SELECT partman.create_parent(p_parent_table := 'public.typed_events', p_control := 'id',
                             p_type := 'native', p_interval := '$day_ids')});
	like($err,
		qr/pg_partman only supports partitioning of data types that are integer or date\/timestamp\. Supplied column is of type snowflake/,
		'create_parent() refuses a snowflake key');
};

$node->stop;
done_testing();
