# Changing the ID layout across a restart: the same layout records nothing; a
# layout whose every ID is provably larger (more sequence bits, an earlier
# epoch) is appended to snowflake_layout while old IDs decode as before; one
# that could go back is refused by the data directory's record (no start) and
# by a database's history (55000); an aborted recording is recorded again.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;
use Time::HiRes ();

my $epoch = '2025-01-01';
my $node_id = 5;

# max_drift 10 s lets IDs run densely after restart_with's floor.
my %base = (node_id => $node_id, max_drift => '10s', epoch => $epoch);
*describe_layout = \&SnowflakeTest::layout_text;

my $node = SnowflakeTest::settings_node('layout', settings => { timezone => 'UTC' });

# Replaces the snowflake.* settings with the base ones plus %settings.
sub write_settings
{
	SnowflakeTest::write_settings($node, %base, @_);
}

# Restarts with %settings from a reservation 5 s ahead, written as an
# operator may, so that IDs run ahead of the clock, densely packed.
sub restart_with
{
	$node->stop;
	my $file = $node->data_dir . '/snowflake.reservation';
	my $reservation = slurp_file($file) + 0;
	my $now_ms = int(Time::HiRes::time() * 1000);
	$reservation = $now_ms if $now_ms > $reservation;
	SnowflakeTest::write_file($file, $reservation + 5000 . "\n");
	write_settings(@_);
	$node->start;
}

# Issues $count IDs in one session, tagged with $phase.
sub issue_ids
{
	my ($phase, $count) = @_;
	$node->safe_psql('postgres', "INSERT INTO ids (phase, id) SELECT '$phase', snowflake_nextval() "
		  . "FROM generate_series(1, $count)");
}

sub layout_rows
{
	return $node->safe_psql('postgres', 'SELECT count(*) FROM snowflake_layout');
}

# The IDs of $phase whose snowflake_decode() disagrees with splitting them by
# hand ($seq_bits sequence bits, 3 node bits, 7 worker bits, $epoch_text).
sub hand_decode_mismatches
{
	my ($phase, $seq_bits, $epoch_text) = @_;
	my $worker_shift = $seq_bits;
	my $node_shift = $seq_bits + 7;
	my $ts_shift = $seq_bits + 10;
	return $node->safe_psql('postgres',
		qq{
SELECT count(*)
  FROM ids, snowflake_decode(id) AS d
 WHERE phase = '$phase'
   AND (d.ts, d.node_id, d.worker_id, d.seq) IS DISTINCT FROM
       (timestamptz '$epoch_text+00' + (id >> $ts_shift) * interval '1 ms',
        ((id >> $node_shift) & 7)::int,
        ((id >> $worker_shift) & 127)::int,
        (id & ((1 << $seq_bits) - 1))::int)
});
}

# 't' if every ID of $phase is larger than every ID of the other phases.
sub above_all_others
{
	my ($phase) = @_;
	return $node->safe_psql('postgres',
		qq(SELECT (SELECT min(id) FROM ids WHERE phase = '$phase') >
		          (SELECT max(id) FROM ids WHERE phase <> '$phase')));
}

# Old IDs whose decoding changed since the snapshot in decoded_before.
sub changed_decodes
{
	return $node->safe_psql('postgres',
		q{
SELECT count(*)
  FROM decoded_before AS b, snowflake_decode(b.id) AS d
 WHERE (d.ts, d.node_id, d.worker_id, d.seq) IS DISTINCT FROM
       (b.ts, b.node_id, b.worker_id, b.seq)
});
}

# Stops the server and checks that it refuses to start with %settings,
# naming the layout it last ran with ($last) and the new one ($now).
sub refused_start
{
	my ($case, $last, $now, %settings) = @_;
	$node->stop;
	write_settings(%settings);
	my $log = SnowflakeTest::start_refused($node, "$case: the server refuses to start");
	like(
		$log,
		qr/FATAL:  \Qthe snowflake layout differs from the layout this data directory last ran with\E\n/,
		"$case: the log gives the reason");
	like(
		$log,
		qr/DETAIL:  \QLast: $last. Now: $now. Not every new ID would be larger than every ID already issued.\E\n/,
		"$case: the log names both layouts");
}

# --- the first layout ---------------------------------------------------------
write_settings();
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION snowflake');
$node->safe_psql('postgres', 'CREATE TABLE ids (phase text NOT NULL, id bigint NOT NULL)');

is( $node->safe_psql('postgres',
		q(SET TimeZone = 'UTC';
		  SELECT first_id, epoch, node_bits, worker_bits, sequence_bits
		    FROM snowflake_layout)),
	'0|2025-01-01 00:00:00+00|3|7|12',
	'CREATE EXTENSION records the running layout with first_id 0');
issue_ids('initial', 5000);

# --- (a) restart with the same layout ---------------------------------------
restart_with();
issue_ids('same', 5000);
is(layout_rows(), 1, 'same layout: no new row is recorded');
is(above_all_others('same'), 't', 'same layout: IDs after the restart are larger');
is(hand_decode_mismatches($_, 12, $epoch),
	0, "same layout: $_ IDs decode with 12 sequence bits")
  for qw(initial same);
is($node->safe_psql('postgres', q(SELECT max(d.seq) FROM ids, snowflake_decode(id) AS d)),
	4095, 'same layout: the sequence runs up to 4095');

$node->safe_psql('postgres',
	q(CREATE TABLE decoded_before AS
	  SELECT d.*, id FROM ids, snowflake_decode(id) AS d));

# --- (b) sequence_bits 12 -> 13: accepted --------------------------------------
restart_with(sequence_bits => 13);
my $max_old = $node->safe_psql('postgres', 'SELECT max(id) FROM ids');
issue_ids('seq13', 10000);

is(layout_rows(), 2, 'sequence_bits 13: one row is appended');
my ($first_id, $row) = split /\|/, $node->safe_psql('postgres',
	q(SET TimeZone = 'UTC';
	  SELECT first_id, format('%s/%s/%s/%s', epoch, node_bits, worker_bits,
	                          sequence_bits)
	    FROM snowflake_layout WHERE first_id > 0));
is($row, '2025-01-01 00:00:00+00/3/7/13',
	'sequence_bits 13: the new row records the running layout');
cmp_ok($first_id, '>', $max_old,
	'sequence_bits 13: its first_id lies above every old ID');
is( $node->safe_psql('postgres',
		qq(SELECT min(id) > $max_old AND min(id) >= $first_id
		     FROM ids WHERE phase = 'seq13')),
	't',
	'sequence_bits 13: every new ID is larger than every old ID');
is(changed_decodes(), 0,
	'sequence_bits 13: old IDs decode exactly as before the change');
is(hand_decode_mismatches('seq13', 13, $epoch),
	0, 'sequence_bits 13: new IDs decode with 13 sequence bits');
is( $node->safe_psql('postgres',
		q(SELECT max(d.seq), min(d.node_id), max(d.node_id)
		    FROM ids, snowflake_decode(id) AS d WHERE phase = 'seq13')),
	"8191|$node_id|$node_id",
	'sequence_bits 13: the sequence runs up to 8191, node id unchanged');

# --- (c) back to sequence_bits 12, (d) a later epoch: refused --------------------
# Each refused at start and, without the data directory's record of its
# layout (as a database restored elsewhere), by the database's history, whose
# DETAIL names both layouts ($tail ends it).
my $later_epoch = '2025-06-01';
for my $change (
	[ 'sequence_bits 13 -> 12', $epoch, 12, 'layouts',
		' Not every new ID would be larger than every ID already issued.', '$' ],
	[ 'later epoch', $later_epoch, 13, 'epochs', '', '' ])
{
	my ($case, $now_epoch, $bits, $named, $tail, $end) = @$change;
	my ($last, $now) = (describe_layout($epoch, 13), describe_layout($now_epoch, $bits));
	refused_start($case, $last, $now, sequence_bits => $bits, epoch => $now_epoch);
	my $layout_file = $node->data_dir . '/snowflake.layout';
	my $saved_file = slurp_file($layout_file);
	unlink $layout_file or die "could not remove the layout file: $!";
	$node->start;
	my ($rc, $stdout, $stderr) =
	  $node->psql('postgres', "SET TimeZone = 'UTC';\n\\set VERBOSITY verbose\nSELECT snowflake_nextval();");
	isnt($rc, 0, "$case: snowflake_nextval() fails");
	is($stdout, '', "$case: no ID is issued");
	like(
		$stderr,
		qr/\bERROR:  55000: \Qthe server's snowflake layout differs from the layout recorded in database "postgres"\E$/m,
		"$case: SQLSTATE 55000 and the documented message");
	like(
		$stderr,
		qr/^HINT:  \QRestore the recorded snowflake.* settings, or see "Changing the layout" in the snowflake documentation.\E$/m,
		"$case: the HINT points to the documentation");
	like($stderr, qr/^DETAIL:  \QRecorded: $last. Running: $now.$tail\E$end/m,
		"$case: the DETAIL names both $named");
	is(layout_rows(), 2, "$case: nothing is recorded");
	is(changed_decodes(), 0, "$case: old IDs still decode");
	is(hand_decode_mismatches('seq13', 13, $epoch),
		0, "$case: 13-bit IDs still decode with 13 bits")
	  if $bits == 12;
	$node->stop;
	SnowflakeTest::write_file($layout_file, $saved_file);
}

# --- restoring the recorded layout works again ---------------------------------
write_settings(sequence_bits => 13);
$node->start;
issue_ids('restored', 1000);
is(layout_rows(), 2, 'restored layout: no new row is recorded');
is(above_all_others('restored'), 't', 'restored layout: new IDs are larger than all earlier ones');

# --- an earlier epoch: accepted ---------------------------------------------
my $earlier_epoch = '2024-01-01';
restart_with(sequence_bits => 13, epoch => $earlier_epoch);
issue_ids('earlier', 1000);
is(layout_rows(), 3, 'earlier epoch: a third row is appended');
is(above_all_others('earlier'), 't', 'earlier epoch: new IDs are larger than all earlier ones');
is(hand_decode_mismatches('earlier', 13, $earlier_epoch),
	0, 'earlier epoch: new IDs decode from the earlier epoch');
is(hand_decode_mismatches('restored', 13, $epoch),
	0, 'earlier epoch: IDs of the previous layout decode from its epoch');
is(changed_decodes(), 0, 'earlier epoch: the oldest IDs decode as before');

# --- an aborted recording is recorded again --------------------------------------
# A second database sees the next change first, its first call rolled back.
$node->safe_psql('postgres', 'CREATE DATABASE other');
$node->safe_psql('other',
	'CREATE EXTENSION snowflake; CREATE TABLE ids (id bigint NOT NULL)');
restart_with(sequence_bits => 14, epoch => $earlier_epoch);
is( $node->safe_psql(
		'other', q(
BEGIN;
SELECT snowflake_nextval() > 0;
ROLLBACK;
SELECT count(*) FROM snowflake_layout;
INSERT INTO ids SELECT snowflake_nextval();
SELECT count(*) FROM snowflake_layout;
)),
	"t\n1\n2",
	'a layout recorded by an aborted transaction is recorded by the next call');
is( $node->safe_psql(
		'postgres', q(
BEGIN;
SAVEPOINT first_call;
SELECT snowflake_nextval() > 0;
ROLLBACK TO first_call;
SELECT count(*) FROM snowflake_layout;
INSERT INTO ids (phase, id) SELECT 'seq14', snowflake_nextval();
COMMIT;
SELECT count(*) FROM snowflake_layout;
)),
	"t\n3\n4",
	'a layout recorded in an aborted savepoint is recorded by the next call');
$node->safe_psql('other',
	'INSERT INTO ids SELECT snowflake_nextval() FROM generate_series(1, 1000)');

# --- the data directory guards databases that missed a change ------------------
# An earlier epoch with 13 bits would pass the history "postgres" had before
# the 14-bit run, but the 14-bit IDs would be larger: refused.
refused_start(
	'back below a layout another database used',
	describe_layout($earlier_epoch, 14),
	describe_layout('2023-06-01', 13),
	sequence_bits => 13,
	epoch => '2023-06-01');
write_settings(sequence_bits => 14, epoch => $earlier_epoch);
$node->start;

my $other_ids = $node->safe_psql('other', 'SELECT string_agg(id::text, \',\') FROM ids');
is( $node->safe_psql('postgres',
		"SELECT count(*) - count(DISTINCT id) FROM "
		  . "(SELECT id FROM ids UNION ALL SELECT unnest('{$other_ids}'::bigint[])) AS s"),
	0,
	'no ID was issued twice across all layouts and both databases');

$node->stop;
done_testing();
