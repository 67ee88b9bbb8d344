# snowflake's metrics through the real postgres_exporter, run as
# docs/operations.md says, and the horizon warning.  A layout of 34
# timestamp bits from an epoch 100 days back, under libfaketime at noon UTC
# (no step crosses midnight).
use strict;
use warnings;
use HTTP::Tiny;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SnowflakeClock;
use SnowflakeDocs;
use SnowflakeRegistryPeer;
use SnowflakeTest;
use Test::More;

my $exporter = SnowflakeTest::find_program('prometheus-postgres-exporter', '/usr/bin');
SnowflakeTest::require_tool(defined $exporter, 'prometheus-postgres-exporter',
	'prometheus-postgres-exporter', 'the test runs the real exporter');

# The layout: 8 + 2 + 19 bits below the timestamp leave it 34, 2^34 ms
# (198.8 days) from an epoch 100 days back: about 99 days left.
my $day = 86400;
my $epoch_unix = (int(time() / $day) - 100) * $day;
my @t = gmtime($epoch_unix);
my $epoch = sprintf('%04d-%02d-%02d', $t[5] + 1900, $t[4] + 1, $t[3]);
my $horizon_unix = $epoch_unix + 2**34 / 1000;

# The node's clock at the next noon UTC (an offset of 0 to 24 h ahead).
my $offset = (43200 - time() % $day) % $day;

my $node = SnowflakeTest::new_node(
	'metrics',
	start => 0,
	settings => {
		timezone => 'UTC',
		'snowflake.epoch' => $epoch,
		'snowflake.node_bits' => 8,
		'snowflake.worker_bits' => 2,
		'snowflake.sequence_bits' => 19,
		'snowflake.lease_workers' => 1,
		'snowflake.registry_interval' => 200,
		'snowflake.clock_step_confirmation' => '1s'
	});
# Started at the true time, then stepped to noon before the worker is forked
# again under the faked clock (see SnowflakeClock.pm); the step is accepted
# after the confirmation of 1 s.
SnowflakeClock::start($node, 0);

sub status
{
	my ($columns) = @_;
	return $node->safe_psql('postgres', "SELECT $columns FROM snowflake_status()");
}

# --- the horizon warning at the worker's start ------------------------------------
my $warning = qr/WARNING:  the snowflake layout runs out of timestamps in (\d+) days$/m;
my $detail =
  qr/DETAIL:  Its last millisecond is ([^;\n]+); from then on no ID can be issued\.$/m;
my $hint = qr/HINT:  See "Changing the layout" in the snowflake documentation\.$/m;

sub warnings_since
{
	my ($from) = @_;
	my $log = slurp_file($node->logfile, $from);
	return scalar(() = $log =~ /$warning/g);
}

# The first worker warned (on 15 under the real clock); the one forked under
# the faked clock warns at its start too, and then once a day.
$node->wait_for_log($warning, 0);
SnowflakeClock::set_offset($node, $offset) if $offset > 1;
my $from = -s $node->logfile;
SnowflakeClock::refork_reservation_worker($node);
$node->wait_for_log($warning, $from);
$node->safe_psql('postgres', 'CREATE EXTENSION snowflake');
$node->poll_query_until('postgres',
	'SELECT clock_step_pending_ms IS NULL FROM snowflake_status()')
  or die 'the step to noon was never accepted';
my $steps_forward = $offset > 1 ? 1 : 0;
my $log = slurp_file($node->logfile, $from);
my ($days) = $log =~ $warning;
my ($last_ms) = $log =~ $detail;
is($days, status('horizon_seconds / 86400'),
	'the warning counts the whole days left until the horizon');
is($last_ms, status(q{horizon - interval '1 ms'}),
	'its DETAIL names the last millisecond of the layout');
like($log, $hint, 'its HINT points to "Changing the layout"');
cmp_ok($days, '<', 365, 'less than a year is left');

# --- the exporter, as docs/operations.md runs it ----------------------------------
$node->safe_psql('postgres', SnowflakeDocs::block('docs/operations.md', 'exporter-role'));

# Look-alikes of the queries' operators and functions, planted where a role
# could; the queries name pg_catalog's, so none runs.  Each records its runs.
$node->safe_psql('postgres', q{
CREATE TABLE planted_runs (who name);
GRANT INSERT ON planted_runs TO PUBLIC;
CREATE FUNCTION public.planted_div(bigint, numeric) RETURNS numeric LANGUAGE sql
    AS $$ INSERT INTO public.planted_runs VALUES (current_user); SELECT 0::numeric $$;
CREATE OPERATOR public./ (LEFTARG = bigint, RIGHTARG = numeric, FUNCTION = public.planted_div);
CREATE FUNCTION public.clock_timestamp() RETURNS timestamptz LANGUAGE sql
    AS $$ INSERT INTO public.planted_runs VALUES (current_user); SELECT now() $$;
CREATE FUNCTION public.unnest(text[]) RETURNS SETOF text LANGUAGE sql
    AS $$ INSERT INTO public.planted_runs VALUES (current_user); SELECT 'held'::text $$;
});

my $http_port = PostgreSQL::Test::Cluster::get_free_port();
my $command = SnowflakeDocs::block('docs/operations.md', 'exporter');
my %local = (
	'host=/var/run/postgresql' => 'host=' . $node->host,
	'port=5432' => 'port=' . $node->port,
	'dbname=app' => 'dbname=postgres',
	'127.0.0.1:9187' => "127.0.0.1:$http_port");
while (my ($docs, $here) = each %local)
{
	$command =~ s/\Q$docs\E/$here/ or die "the exporter's command in docs/operations.md lacks $docs";
}
# exec: the harness's process is the exporter, which kill_kill then ends.
$command =~ s/^(\s*)prometheus-postgres-exporter\b/$1exec prometheus-postgres-exporter/m
  or die "the exporter's command in docs/operations.md does not start prometheus-postgres-exporter";
note "exporter: $command";
my $dir = $node->basedir;
my $exporter_run = IPC::Run::start([ 'bash', '-c', $command ],
	'>', "$dir/exporter.out", '2>', "$dir/exporter.err");

# Scrapes /metrics: the values by name (and state, for the lease counts),
# and the TYPE of each metric; undef while the exporter does not answer.
sub scrape
{
	my $response =
	  HTTP::Tiny->new(timeout => 10)->get("http://127.0.0.1:$http_port/metrics");
	return undef unless $response->{success};
	my (%value, %type);
	for my $line (split /\n/, $response->{content})
	{
		if ($line =~ /^# TYPE (\S+) (\S+)$/)
		{
			$type{$1} = $2;
		}
		elsif ($line =~ /^(\w+)(?:\{([^}]*)\})? (\S+)$/)
		{
			my ($name, $labels, $number) = ($1, $2 // '', $3);
			$name .= ":$1" if $labels =~ /\bstate="([^"]*)"/;
			$value{$name} = $number;
		}
	}
	return { value => \%value, type => \%type, text => $response->{content} };
}

# The value of metric $name (":state" for a lease count) in a new scrape.
sub metric
{
	my ($name) = @_;
	my $scraped = scrape() or die 'the exporter does not answer';
	die "no metric $name in the scrape" unless defined $scraped->{value}{$name};
	return $scraped->{value}{$name};
}

# Waits until the metric satisfies $test (a sub of its value): one check.
sub wait_metric
{
	my ($name, $test, $what) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	ok( SnowflakeTest::wait_until(
			sub {
				my $scraped = scrape();
				return $scraped
				  && defined $scraped->{value}{$name}
				  && $test->($scraped->{value}{$name});
			},
			$name),
		$what);
	return;
}

SnowflakeTest::wait_until(
	sub { my $s = scrape(); $s && defined $s->{value}{snowflake_ids_issued_total} },
	'the exporter serves the snowflake metrics');

my %types = (
	(map { ("snowflake_$_" => 'counter') }
		  qw(ids_issued_total overflow_waits_total clock_steps_back_total
		  clock_steps_forward_total reservations_total)),
	(map { ("snowflake_$_" => 'gauge') }
		  qw(largest_step_back_seconds largest_step_forward_seconds
		  last_clock_step_timestamp_seconds clock_step_pending_seconds drift_seconds
		  reserved_ahead_seconds slots_total slots_used slots_shared sessions_attached
		  node_collision registry_problem registry_round_age_seconds horizon_seconds
		  clock_skewed_peers clock_skew_seconds leases_count)));
my $first = scrape();
is($node->safe_psql('postgres', 'SELECT count(*) FROM planted_runs'), '0',
	"the queries run none of the look-alikes planted in the extension's schema");
for my $name (sort keys %types)
{
	is($first->{type}{$name}, $types{$name}, "$name is a $types{$name}");
}
is($first->{value}{pg_up}, 1, 'the exporter reaches the server');
is($first->{value}{snowflake_clock_skewed_peers} . '|' . $first->{value}{snowflake_clock_skew_seconds},
	'0|0', 'a node alone compares no clock: no skewed peer, no skew');
like(
	$first->{text},
	qr/^snowflake_leases_count\{server="[^"]+",state="held"\} 0$/m,
	'each metric has the label server, the lease counts also state');
for my $state (qw(held disconnected expired released))
{
	is($first->{value}{"snowflake_leases_count:$state"}, 0, "no lease is $state yet");
}

# --- the horizon, IDs -------------------------------------------------------------
my $horizon_seconds = $first->{value}{snowflake_horizon_seconds};
cmp_ok(abs($horizon_seconds - ($horizon_unix - (time() + $offset))), '<', 60,
	'horizon_seconds counts down to 2^34 ms after the epoch, by the server clock');

my $issued = metric('snowflake_ids_issued_total');
my $reservations = metric('snowflake_reservations_total');
$node->safe_psql('postgres', 'SELECT count(*) FROM snowflake_nextval(1000)');
is(metric('snowflake_ids_issued_total'), $issued + 1000,
	'1000 IDs move ids_issued_total by 1000');
cmp_ok(metric('snowflake_reservations_total'), '>', $reservations,
	'the first IDs wrote a reservation');

# --- leases -----------------------------------------------------------------------
my $token = $node->safe_psql('postgres',
	q{SELECT token FROM snowflake_lease_worker('metrics test', interval '1 hour')});
is(metric('snowflake_leases_count:held'), 1, 'a granted lease is counted as held');
$node->safe_psql('postgres', "SELECT snowflake_release_lease($token, NULL)");
is(metric('snowflake_leases_count:held'), 0, 'the released lease is no longer held');
is(metric('snowflake_leases_count:released'), 1, 'it is counted as released');

# --- the registry -----------------------------------------------------------------
is(metric('snowflake_registry_problem'), 0, 'the registry has no problem');
# On 15 the registry runs under the real clock, the exporter under the faked
# one: the age is measured from its value while rounds complete.
my $age = metric('snowflake_registry_round_age_seconds');
$node->safe_psql(
	'postgres', q{
CREATE FUNCTION public.nodes_noop() RETURNS trigger LANGUAGE plpgsql AS 'BEGIN RETURN NULL; END';
CREATE CONSTRAINT TRIGGER nodes_deferred AFTER INSERT ON snowflake_nodes
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION public.nodes_noop();
});
wait_metric('snowflake_registry_problem', sub { $_[0] == 1 },
	'a deferrable trigger on snowflake_nodes makes registry_problem 1');
wait_metric('snowflake_registry_round_age_seconds', sub { $_[0] > $age + 2 },
	'while rounds fail, registry_round_age_seconds grows by 10 intervals');
$node->safe_psql('postgres', 'DROP TRIGGER nodes_deferred ON snowflake_nodes');
wait_metric('snowflake_registry_problem', sub { $_[0] == 0 },
	'registry_problem is 0 again once rounds complete');
wait_metric('snowflake_registry_round_age_seconds', sub { $_[0] < $age + 1 },
	'and registry_round_age_seconds falls back');

is(metric('snowflake_node_collision'), 0, 'no collision yet');
my $peer = SnowflakeRegistryPeer::start_peer($node);
wait_metric('snowflake_node_collision', sub { $_[0] == 1 },
	'a peer heartbeating with this node id makes node_collision 1');
$node->safe_psql(
	'postgres', q{
SELECT pg_terminate_backend(pid) FROM pg_stat_activity
 WHERE query LIKE '%SET beats = beats + 1%' AND pid <> pg_backend_pid();
DELETE FROM snowflake_nodes WHERE instance_id = '00000000-0000-4000-8000-000000000001'});
$peer->finish;
wait_metric('snowflake_node_collision', sub { $_[0] == 0 },
	'node_collision is 0 again once the peer is gone');

# --- slots and sessions -----------------------------------------------------------
is(metric('snowflake_slots_total'), 3, 'slots_total: 2^2 worker ids, one leased');
is(metric('snowflake_sessions_attached'), 0, 'no session is attached');
my @holders = map {
	SnowflakeTest::start_psql($node, $dir, "holder$_", '-c',
		'SELECT snowflake_nextval()', '-c', 'SELECT pg_sleep(3600)')
} 1 .. 4;
ok($node->poll_query_until('postgres', 'SELECT sessions_attached = 4 FROM snowflake_status()'),
	'four sessions attached');
is(metric('snowflake_sessions_attached'), 4, 'sessions_attached counts them');
is(metric('snowflake_slots_used'), 3, 'they use all three slots');
is(metric('snowflake_slots_shared'), 1, 'and share one');
cmp_ok(metric('snowflake_drift_seconds'), '<', 2, 'IDs are not ahead of the clock');
cmp_ok(metric('snowflake_reserved_ahead_seconds'), '<', 3,
	'the reservation runs at most reserve_ahead past the newest ID');

# --- the clock steps back ---------------------------------------------------------
is(metric('snowflake_clock_steps_back_total'), 0, 'no clock step back yet');
is(metric('snowflake_largest_step_back_seconds'), 0, 'so no largest one');
is(metric('snowflake_clock_steps_forward_total'), $steps_forward,
	'the step forward to noon is counted');
is(metric('snowflake_clock_step_pending_seconds'), 0, 'and no longer pending');
is(metric('snowflake_overflow_waits_total'), 0, 'and no session waited');
SnowflakeClock::set_offset($node, $offset - 600);
wait_metric('snowflake_clock_steps_back_total', sub { $_[0] == 1 },
	'a step back of the clock moves clock_steps_back_total to 1');
cmp_ok(abs(metric('snowflake_largest_step_back_seconds') - 600),
	'<', 1, 'largest_step_back_seconds is the 600 s step');
cmp_ok(metric('snowflake_last_clock_step_timestamp_seconds'), '>', 0,
	'last_clock_step_timestamp_seconds says when the clock stepped');
my $drift = metric('snowflake_drift_seconds');
ok($drift > 300 && $drift <= 601, "the newest IDs are now ${drift} s ahead of the clock");
my $ahead = metric('snowflake_reserved_ahead_seconds');
ok($ahead > 300 && $ahead <= 603, "the reservation runs ${ahead} s ahead of the clock");

my ($ret, $stdout, $stderr) = $node->psql('postgres',
	'SET snowflake.clock_wait_timeout = 0; SELECT snowflake_nextval()');
like($stderr, qr/ERROR:  system clock is \d+ ms behind the next snowflake ID/,
	'a session that may not wait for the clock fails');
is(metric('snowflake_overflow_waits_total'), 1, 'its wait is counted in overflow_waits_total');

$node->safe_psql('postgres',
	q{SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(3600)'});
$_->finish for @holders;
ok($node->poll_query_until('postgres', 'SELECT sessions_attached = 0 FROM snowflake_status()'),
	'the four sessions detached');
is(metric('snowflake_sessions_attached'), 0, 'sessions_attached is 0 again');

# --- a day later ------------------------------------------------------------------
is(warnings_since($from), 1, 'the worker warned once today, however often it looked');
$horizon_seconds = metric('snowflake_horizon_seconds');
SnowflakeClock::set_offset($node, $offset - 600 + $day);
$node->wait_for_log($warning, $from + length($log));
# The status reports the trusted time: the day counts once it is accepted.
$node->poll_query_until('postgres',
	'SELECT clock_step_pending_ms IS NULL FROM snowflake_status()')
  or die 'the step of a day was never accepted';
my $lowered = $horizon_seconds - metric('snowflake_horizon_seconds');
ok($lowered >= $day && $lowered < $day + 300,
	"a day later horizon_seconds is a day lower ($lowered s)");
my $next_log = slurp_file($node->logfile, $from + length($log));
my ($next_days) = $next_log =~ $warning;
is($next_days, $days - 1, 'the next day the warning counts a day less');

# The worker looks again (it counts another step back), and does not warn again.
SnowflakeClock::set_offset($node, $offset - 605 + $day);
wait_metric('snowflake_clock_steps_back_total', sub { $_[0] == 2 },
	'the worker counted the next step back');
is(warnings_since($from), 2, 'the warning appeared exactly once on the new day');

$exporter_run->kill_kill;
$node->stop;

# --- the widest layout: 62 timestamp bits outlast timestamptz ---------------------
my $wide = SnowflakeTest::new_node(
	'metrics_wide',
	settings => {
		'snowflake.node_bits' => 0,
		'snowflake.worker_bits' => 0,
		'snowflake.sequence_bits' => 1
	},
	extension => 'postgres');
is( $wide->safe_psql(
		'postgres', q{
SELECT timestamp_bits, horizon,
       abs(horizon_seconds - (2::numeric ^ 62 / 1000
                              - extract(epoch FROM clock_timestamp() - epoch))) <= 2
  FROM snowflake_status()}),
	'62|infinity|t',
	'the widest layout: horizon infinity, horizon_seconds 2^62 ms from the epoch');
$wide->stop;

done_testing();
