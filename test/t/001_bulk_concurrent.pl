# Bulk, concurrent ID generation: four sessions, started together and really
# running at the same time, insert 2 million rows into a table whose primary
# key defaults to snowflake_nextval() (what it proves: test/README.md).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;

my $sessions = 4;
my $statements = 5;                 # per session
my $rows_per_statement = 100_000;
my $total_rows = $sessions * $statements * $rows_per_statement;

# The lock the sessions queue on so that they all start at the same moment.
my $start_gate = 4242;

# One session's psql script: wait at the gate, log the start, insert in
# several statements, log the end.
sub session_script
{
	my ($session) = @_;
	my $script = "SELECT pg_advisory_lock_shared($start_gate);\n"
	  . "SELECT pg_advisory_unlock_shared($start_gate);\n"
	  . "INSERT INTO session_log VALUES ($session, clock_timestamp(), NULL);\n";
	$script .= "INSERT INTO bulk (session, stmt, n) SELECT $session, $_, g "
	  . "FROM generate_series(1, $rows_per_statement) AS g;\n"
	  for 1 .. $statements;
	return $script
	  . "UPDATE session_log SET finished = clock_timestamp() WHERE session = $session;\n";
}

my $node = SnowflakeTest::new_node('bulk', settings => { max_wal_size => '2GB' },
	extension => 'postgres');

$node->safe_psql(
	'postgres', q{
CREATE TABLE bulk (
    id      bigint PRIMARY KEY DEFAULT snowflake_nextval(),
    session integer NOT NULL,
    stmt    integer NOT NULL,
    n       integer NOT NULL
);
CREATE TABLE session_log (
    session  integer PRIMARY KEY,
    started  timestamptz NOT NULL,
    finished timestamptz
);
});

# Close the gate, start the sessions, and open it once all four queue on it.
my $dir = PostgreSQL::Test::Utils::tempdir();
my %gate = (bulk => $node->background_psql('postgres'));
$gate{bulk}->query_safe("SELECT pg_advisory_lock($start_gate)");
my @runs;
for my $session (1 .. $sessions)
{
	my $name = "session_$session";
	append_to_file("$dir/$name.sql", session_script($session));
	push @runs,
	  { name => $name, run => SnowflakeTest::start_psql($node, $dir, $name, '-f', "$dir/$name.sql") };
}
SnowflakeTest::open_gates([$node], 'postgres', $start_gate, $sessions, \%gate, \@runs, $dir);

# The sessions overlapped: some instant lies inside every session's run.
is( $node->safe_psql(
		'postgres', qq{
SELECT count(*) = $sessions AND max(started) < min(finished)
  FROM session_log}),
	't',
	'all sessions were inserting at the same time');

is( $node->safe_psql(
		'postgres', 'SELECT count(*), count(DISTINCT id) FROM bulk'),
	"$total_rows|$total_rows",
	"$total_rows rows, no duplicate ID");

is( $node->safe_psql(
		'postgres', q{
SELECT count(*) FROM (
    SELECT id, lag(id) OVER (PARTITION BY session ORDER BY stmt, n) AS prev
      FROM bulk) AS ordered
 WHERE id <= prev}),
	'0',
	'within each session, IDs strictly increase in insertion order');

# One worker id per session, none shared; node id and timestamps sane.
my $per_session = $node->safe_psql(
	'postgres', q{
SELECT session, count(*), count(DISTINCT d.worker_id), min(d.worker_id),
       bool_and(d.node_id = 0),
       bool_and(d.ts BETWEEN now() - interval '1 hour'
                         AND now() + interval '1 hour')
  FROM bulk, LATERAL snowflake_decode(id) AS d
 GROUP BY session ORDER BY session});
my %worker_of;
for my $line (split /\n/, $per_session)
{
	my ($session, $rows, $workers, $worker, $node_ok, $ts_ok) =
	  split /\|/, $line;
	is($rows, $statements * $rows_per_statement,
		"session $session inserted all its rows");
	is($workers, 1, "session $session used a single worker id");
	is("$node_ok|$ts_ok", 't|t',
		"session $session: node id 0 and a current timestamp in its IDs");
	$worker_of{$session} = $worker;
}
my %sessions_of_worker;
$sessions_of_worker{ $worker_of{$_} }++ for keys %worker_of;
is(scalar(keys %sessions_of_worker),
	$sessions, 'every session had a worker id of its own')
  or diag explain \%worker_of;

# Counters: every ID was counted, and every slot came back on exit.
cmp_ok(
	$node->safe_psql('postgres', 'SELECT ids_issued FROM snowflake_status()'),
	'>=', $total_rows, 'snowflake_status() counted every issued ID');
ok( $node->poll_query_until(
		'postgres', 'SELECT slots_used = 0 FROM snowflake_status()'),
	'the sessions released their slots when they exited');

$node->stop;
done_testing();
