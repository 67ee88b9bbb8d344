# Nothing privileged finds the extension's tables by a schema name.  "app",
# a plain role owning the registry's database and so schema public, plants
# look-alikes of snowflake_nodes and snowflake_layout in schema "evil" (each
# makes app a superuser if a superuser runs it) and swaps the two schemas'
# names in a loop.  Meanwhile ~300 heartbeats land in the real table and
# app's sessions record the layout; no trojan runs.  Also: recording after
# a rename, refused in READ ONLY; both tables written as their owner, never
# while a deferrable trigger is on them; reading the history needs SELECT.
use strict;
use warnings;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeTest;

my $node = SnowflakeTest::new_node('schema_trojans');
$node->safe_psql('postgres', 'CREATE ROLE app LOGIN; CREATE DATABASE appdb OWNER app');
$node->safe_psql('appdb', 'CREATE EXTENSION snowflake');
# The registry's database exists before the registry starts.
$node->append_conf(
	'postgresql.conf', q(
snowflake.database = 'appdb'
snowflake.registry_interval = 100
));
$node->restart;

# The trojans: each raises a WARNING (kept in the log even if its
# transaction aborts) and, when it runs as a superuser, makes app one.
$node->safe_psql(
	'appdb', q{
SET ROLE app;
CREATE SCHEMA evil;
CREATE FUNCTION evil.pwn() RETURNS boolean LANGUAGE plpgsql COST 0.0001 AS $f$
BEGIN
  RAISE WARNING 'trojan ran as %', current_user;
  IF (SELECT r.rolsuper FROM pg_catalog.pg_roles r
       WHERE r.rolname OPERATOR(pg_catalog.=) current_user) THEN
    EXECUTE 'ALTER ROLE app SUPERUSER';
  END IF;
  RETURN true;
END $f$;
CREATE TABLE evil.nodes_t (node_id integer, instance_id uuid, system_identifier text,
  timeline integer, host text, port integer, data_directory text,
  started_at timestamptz, last_seen timestamptz, beats bigint);
INSERT INTO evil.nodes_t VALUES (0, gen_random_uuid(), '1', 1, 'h', 1, 'd', now(), now(), 1);
CREATE VIEW evil.snowflake_nodes AS SELECT * FROM evil.nodes_t WHERE evil.pwn();
CREATE FUNCTION evil.pwn_row() RETURNS trigger LANGUAGE plpgsql AS $f$
BEGIN
  PERFORM evil.pwn();
  RETURN NEW;
END $f$;
CREATE TABLE evil.snowflake_layout (first_id bigint, epoch timestamptz, node_bits integer,
  worker_bits integer, sequence_bits integer, recorded_at timestamptz DEFAULT now());
CREATE TRIGGER pwn BEFORE INSERT ON evil.snowflake_layout
  FOR EACH ROW EXECUTE FUNCTION evil.pwn_row();
});

# One swap per transaction: which schema is called "public" flips.  An even
# number of them, so a finished batch leaves the names as they were.
my $swaps = $node->basedir . '/swaps.sql';
{
	my $sql = "SET synchronous_commit = off;\n";
	for (1 .. 1000)
	{
		$sql .= "ALTER SCHEMA public RENAME TO real_ext \\; ALTER SCHEMA evil RENAME TO public;\n";
		$sql .= "ALTER SCHEMA public RENAME TO evil \\; ALTER SCHEMA real_ext RENAME TO public;\n";
	}
	PostgreSQL::Test::Utils::append_to_file($swaps, $sql);
}

# psql as app, named $name in the log.
sub psql_as_app
{
	my ($name, @args) = @_;
	return [
		$node->installed_command('psql'), '-XAtq', '-v', 'ON_ERROR_STOP=0',
		'-d', $node->connstr('appdb') . " user=app application_name=$name", @args
	];
}

# Between batches the names are the original ones: the real table.
sub own_beats
{
	return $node->safe_psql(
		'appdb', q{
SELECT n.beats FROM public.snowflake_nodes AS n, public.snowflake_status() AS s
 WHERE n.instance_id = s.instance_id});
}

# Runs $sql in appdb as app: (exit code, stdout, stderr).
sub as_app
{
	my ($sql) = @_;
	return $node->psql('appdb', $sql, extra_params => [ '-U', 'app' ]);
}

sub app_is_superuser
{
	return $node->safe_psql('postgres',
		"SELECT rolsuper FROM pg_roles WHERE rolname = 'app'");
}

is(app_is_superuser(), 'f', 'app is not a superuser');
SnowflakeTest::wait_until(sub { own_beats() ne '' }, 'the first heartbeat');
my $log_start = -s $node->logfile;

# --- the registry worker, while the names flip ------------------------------
my $first = own_beats();
my $previous = $first;
my $batches = 0;
my $steady = 1;
SnowflakeTest::wait_until(
	sub {
		my ($out, $err) = ('', '');
		IPC::Run::run(psql_as_app('swapper', '-f', $swaps), '>', \$out, '2>', \$err);
		$batches++;
		my $beats = own_beats();
		$steady = 0 if $beats <= $previous;
		$previous = $beats;
		return $beats - $first >= 300;
	},
	'300 heartbeats while the schema names flip');
ok($steady, "the heartbeat count grew across each of $batches batches of 2000 swaps");
is( $node->safe_psql(
		'appdb', 'SELECT registry_problem IS NULL FROM public.snowflake_status()'),
	't', 'the last round completed');
is($node->safe_psql('appdb', 'SELECT count(*) FROM evil.nodes_t'),
	'1', 'the look-alike view was never written through');
is(app_is_superuser(), 'f', 'app is still not a superuser');
my $log = slurp_file($node->logfile, $log_start);
unlike($log, qr/trojan ran/, 'no trojan ran');
unlike($log, qr/snowflake node registry cannot run/, 'no registry round failed');

# --- layout recording, while the names flip ---------------------------------
# Each recording is rolled back, which withdraws it; the path finds the
# functions under either name of their schema.
$node->safe_psql('appdb', 'DELETE FROM public.snowflake_layout');
$log_start = -s $node->logfile;
my $records = $node->basedir . '/records.sql';
PostgreSQL::Test::Utils::append_to_file($records,
	"SET search_path = public, evil;\n"
	  . "BEGIN; SELECT snowflake_nextval() > 0; ROLLBACK;\n" x 1000);
my ($records_out, $records_err) = ('', '');
my $recorder = IPC::Run::start(psql_as_app('recorder', '-f', $records),
	'>', \$records_out, '2>', \$records_err,
	# The timer only stops a hang.
	IPC::Run::timeout(3 * $PostgreSQL::Test::Utils::timeout_default));
while ($recorder->pumpable)
{
	IPC::Run::run(psql_as_app('swapper', '-f', $swaps), '>', \my $out, '2>', \my $err);
	$recorder->pump_nb;
}
$recorder->finish;
my $recorded = () = $records_out =~ /^t$/mg;
# Some miss the functions: a path looked up across a swap's commit can name
# one schema twice.
cmp_ok($recorded, '>=', 100, "$recorded of 1000 rolled-back recordings ran");

is(app_is_superuser(), 'f', 'app is still not a superuser after the recordings');
unlike(
	slurp_file($node->logfile, $log_start),
	qr/\] recorder WARNING:  trojan ran/,
	'no recording ran the trojan');

# --- recording after a rename, with a look-alike under the old name ----------
$node->safe_psql('appdb',
	'ALTER SCHEMA public RENAME TO real_ext; ALTER SCHEMA evil RENAME TO public');
my ($ret, $out, $err) = as_app('SELECT real_ext.snowflake_nextval() > 0');
is($out, 't', 'an ID after the rename');
is( $node->safe_psql(
		'appdb',
		'SELECT (SELECT count(*) FROM real_ext.snowflake_layout) || \' \' || '
		  . '(SELECT count(*) FROM public.snowflake_layout)'),
	'1 0', 'the layout was recorded in the real table, not the look-alike');
$node->safe_psql('appdb',
	'ALTER SCHEMA public RENAME TO evil; ALTER SCHEMA real_ext RENAME TO public');

# --- recording refuses in a READ ONLY transaction -----------------------------
$node->safe_psql('appdb', 'DELETE FROM public.snowflake_layout');
($ret, $out, $err) =
  as_app("\\set VERBOSITY verbose\nBEGIN READ ONLY;\nSELECT snowflake_nextval();");
like(
	$err,
	qr/ERROR:  25006: cannot execute snowflake_nextval\(\) in a read-only transaction
DETAIL:  The server's snowflake layout is not yet recorded in database "appdb", and recording it writes to snowflake_layout\.
HINT:  Call snowflake_nextval\(\) once in a read-write transaction after a layout change\./,
	'recording refuses in a READ ONLY transaction, as nextval() does');
($ret, $out, $err) = as_app('SELECT snowflake_nextval() > 0');
is($out, 't', 'and records in a read-write one');
is($node->safe_psql('appdb', 'SELECT count(*) FROM public.snowflake_layout'),
	'1', 'one layout recorded');

# --- who writes: the tables' owner, not the superuser ---------------------------
# A role of no rights owns both tables; triggers note who they run as, for
# the heartbeat and for a recording.
$node->safe_psql(
	'appdb', q{
CREATE ROLE keeper;
ALTER TABLE public.snowflake_nodes OWNER TO keeper;
ALTER TABLE public.snowflake_layout OWNER TO keeper;
CREATE TABLE public.writers (who name, what text);
GRANT INSERT ON public.writers TO PUBLIC;
CREATE FUNCTION public.note_writer() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO public.writers VALUES (current_user, TG_ARGV[0]);
  RETURN NULL;
END $$;
CREATE TRIGGER note AFTER INSERT ON public.snowflake_nodes
  FOR EACH ROW EXECUTE FUNCTION public.note_writer('heartbeat');
CREATE TRIGGER note AFTER INSERT ON public.snowflake_layout
  FOR EACH ROW EXECUTE FUNCTION public.note_writer('recording');
DELETE FROM public.snowflake_layout;
});
($ret, $out, $err) = as_app('SELECT snowflake_nextval() > 0');
is($out, 't', 'an ID, recorded by the new owner');
ok( $node->poll_query_until(
		'appdb', "SELECT count(DISTINCT what) = 2 FROM public.writers"),
	'the heartbeat and the recording wrote');
is( $node->safe_psql(
		'appdb',
		"SELECT string_agg(DISTINCT what || ': ' || who, '; ' ORDER BY what || ': ' || who)
           FROM public.writers"),
	'heartbeat: keeper; recording: keeper',
	'each ran as the table\'s owner');

# A deferred trigger would fire at commit, as whoever commits: neither table
# is written while it has one.
$node->safe_psql(
	'appdb', q{
CREATE CONSTRAINT TRIGGER note_at_commit AFTER INSERT ON public.snowflake_nodes
  DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW EXECUTE FUNCTION public.note_writer('heartbeat, at commit');
CREATE CONSTRAINT TRIGGER note_at_commit AFTER INSERT ON public.snowflake_layout
  DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW EXECUTE FUNCTION public.note_writer('recording, at commit');
DELETE FROM public.snowflake_layout;
});
ok( $node->poll_query_until(
		'appdb',
		q{SELECT registry_problem = 'table "snowflake_nodes" of the snowflake extension '
                                 || 'has a deferrable trigger, "note_at_commit"'
            FROM public.snowflake_status()}),
	'a deferrable trigger on snowflake_nodes fails the rounds, reported');
($ret, $out, $err) = as_app("\\set VERBOSITY verbose\nSELECT snowflake_nextval();");
like(
	$err,
	qr/ERROR:  55000: table "snowflake_layout" of the snowflake extension has a deferrable trigger, "note_at_commit"/,
	'a deferrable trigger on snowflake_layout refuses the recording');
is($node->safe_psql('appdb', "SELECT count(*) FROM public.writers WHERE what LIKE '%at commit'"),
	'0', 'neither deferred trigger fired');
$node->safe_psql('appdb',
	'DROP TRIGGER note_at_commit ON public.snowflake_nodes; '
	  . 'DROP TRIGGER note_at_commit ON public.snowflake_layout');
ok( $node->poll_query_until(
		'appdb', 'SELECT registry_problem IS NULL FROM public.snowflake_status()'),
	'rounds complete again without it');

# Reading the history is the caller's, as a query would be.
$node->safe_psql('appdb', 'REVOKE SELECT ON public.snowflake_layout FROM PUBLIC');
($ret, $out, $err) = as_app("\\set VERBOSITY verbose\nSELECT snowflake_decode(1);");
like(
	$err,
	qr/ERROR:  42501: permission denied for table snowflake_layout/,
	'decoding needs SELECT on snowflake_layout');

$node->stop;
done_testing();
