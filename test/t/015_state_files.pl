# The state files snowflake.reservation, snowflake.layout and
# snowflake.lease_state are parsed strictly: each kind of damage makes the
# server refuse to start (FATAL, XX001) with a DETAIL saying what is wrong and
# a HINT saying what to do, leaving the file as it was; with the good files
# back the server starts, IDs continue above the earlier ones.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;

my $node = SnowflakeTest::new_node(
	'state_files',
	settings => { log_error_verbosity => 'verbose', 'snowflake.lease_workers' => 2 },
	extension => 'postgres');
my $max_before = $node->safe_psql('postgres',
	'SELECT max(snowflake_nextval()) FROM generate_series(1, 1000)');
my $lease_before = $node->safe_psql('postgres',
	q{SELECT token || '|' || worker_id FROM snowflake_lease_worker('state-files', interval '1 hour')});
$node->stop;

my $reservation_file = $node->data_dir . '/snowflake.reservation';
my $layout_file = $node->data_dir . '/snowflake.layout';
my $good_reservation = slurp_file($reservation_file);
my $good_layout = slurp_file($layout_file);
like($good_reservation, qr/^\d+\n\z/, 'the reservation file holds one number');
is($good_layout, "1735689600000 3 7 12\n", 'the layout file holds the default layout');

*write_file = \&SnowflakeTest::write_file;

# The last millisecond of the default layout: epoch 2025-01-01, 41 bits.
my $last_ms = 1735689600000 + 2**41 - 1;

my $reservation_hint =
  qr/HINT:  \QRestore the file from a backup of the data directory, or write in it, on one line, a Unix time in milliseconds later than every ID this server can have issued, such as the current time plus 86460000 ms (at most the last millisecond of the running layout): \E(\d+)\.\n/;
my $layout_hint =
  qr/HINT:  \QRestore the file from a backup of the data directory, or write in it, on one line, the layout this data directory last ran with: its epoch in Unix milliseconds and its node, worker and sequence bits, separated by spaces.\E\n/;

# Writes $content into $file, expects the start to fail with the FATAL,
# SQLSTATE, DETAIL and HINT, and checks the file was left alone.
sub refused
{
	my ($case, $file, $what, $content, $detail, $hint) = @_;
	write_file($file, $content);
	my $log = SnowflakeTest::start_refused($node, "$case: the server refuses to start");
	like(
		$log,
		qr/FATAL:  XX001: \Qfile "$file" does not hold a valid snowflake $what\E\n/,
		"$case: FATAL with SQLSTATE XX001 names the file");
	like($log, qr/DETAIL:  \Q$detail\E\n/, "$case: the DETAIL says what is wrong");
	like($log, $hint, "$case: the HINT says what to do");
	is(slurp_file($file), $content, "$case: the file is left as it was");
	return $log;
}

my $now_ms = int(time() * 1000);
my $log = refused('empty reservation', $reservation_file, 'reservation', '',
	'The file is empty.', $reservation_hint);
my ($suggested) = $log =~ $reservation_hint;
ok( defined $suggested
	  && $suggested >= $now_ms + 86460000
	  && $suggested < $now_ms + 86460000 + 600_000,
	'the HINT suggests the current time plus 86460000 ms')
  or diag "suggested: " . ($suggested // 'none');

my $no_newline = 'The file does not end with a newline; it may have been cut short.';
for my $case (
	[ 'reservation cut short', substr($good_reservation, 0, 9), $no_newline ],
	[ 'reservation without its newline', substr($good_reservation, 0, -1), $no_newline ],
	[   'junk after the reservation', "1795431208833xyz\n",
		'"1795431208833xyz" is not a decimal integer.'
	],
	[   'reservation out of range', "99999999999999999999999\n",
		'"99999999999999999999999" is out of range.'
	],
	[   'reservation just beyond int64', "9223372036854775808\n",
		'"9223372036854775808" is out of range.'
	],
	[ 'negative reservation', "-5\n", 'The reservation, -5, is negative.' ],
	[   'reservation beyond the layout', "9223372036854775807\n",
		"The reservation, 9223372036854775807 (Unix ms), lies beyond the last millisecond of the running layout, $last_ms."
	],
	[ 'two reservations', "1 2\n", 'The line holds 2 space-separated fields, not 1.' ],
	[   'a second line', $good_reservation . $good_reservation,
		'The file holds more than one line.'
	],
	[ 'a blank line', "\n", 'The line is empty.' ],
	[ 'a plus sign', "+1795431208833\n", '"+1795431208833" is not a decimal integer.' ])
{
	my ($case, $content, $detail) = @$case;
	refused($case, $reservation_file, 'reservation', $content, $detail, $reservation_hint);
}
write_file($reservation_file, $good_reservation);

for my $case (
	[ 'layout cut short', "1735689600000 3 7 1", $no_newline ],
	[   'layout with three fields', "1735689600000 3 7\n",
		'The line holds 3 space-separated fields, not 4.'
	],
	[   'layout with five fields', "1735689600000 3 7 12 1\n",
		'The line holds 5 space-separated fields, not 4.'
	],
	[   'layout with two spaces', "1735689600000 3  7 12\n",
		'The line holds 5 space-separated fields, not 4.'
	],
	[ 'junk in the layout', "1735689600000 3 7 12abc\n", '"12abc" is not a decimal integer.' ],
	[   'layout width out of range', "1735689600000 3 7 4294967308\n",
		'The width 4294967308 is out of range.'
	],
	[   'layout epoch out of range', "99999999999999999999 3 7 12\n",
		'"99999999999999999999" is out of range.'
	],
	[   'layout without sequence bits', "1735689600000 3 7 0\n",
		'The widths 3, 7 and 0 do not form a valid layout.'
	])
{
	my ($case, $content, $detail) = @$case;
	refused($case, $layout_file, 'layout', $content, $detail, $layout_hint);
}
write_file($layout_file, $good_layout);

# The lease state: worker ids 126 and 127 (7 worker bits, 2 leased), one
# 512-byte block each at its worker id's offset.
my $lease_file = $node->data_dir . '/snowflake.lease_state';
my $good_lease_state = slurp_file($lease_file);
is(length($good_lease_state), 128 * 512, 'the lease state holds a block per worker id');
my $lease_hint =
  qr/HINT:  \QRestore snowflake.lease_state from a backup of this data directory.  Otherwise, stop every application that holds a worker-id lease of this server, then remove the file: the server forgets every lease and its history, leases worker ids again from this run's generation floor, and numbers tokens anew, so a holder still running would share its worker id with the next holder.\E\n/;
my (undef, $leased_worker) = split /\|/, $lease_before;
refused('lease state cut', $lease_file, 'lease state', $good_lease_state . 'x',
	'Its size is not a multiple of 512 bytes.', $lease_hint);
my $flipped = $good_lease_state;
substr($flipped, $leased_worker * 512 + 100, 1) ^= "\x01";
refused('a lease image with a wrong checksum', $lease_file, 'lease state', $flipped,
	"The checksum of block $leased_worker, the lease state of worker id $leased_worker, is wrong.",
	$lease_hint);
my $junk = $good_lease_state;
substr($junk, $leased_worker * 512, 4) = 'junk';
refused('a block that is no lease image', $lease_file, 'lease state', $junk,
	"Block $leased_worker, the lease state of worker id $leased_worker, does not start with a lease image.",
	$lease_hint);
write_file($lease_file, $good_lease_state);

# --- the good files back -------------------------------------------------------
ok($node->start(fail_ok => 1), 'with the good files back, the server starts');
my $min_after = $node->safe_psql('postgres',
	'SELECT min(snowflake_nextval()) FROM generate_series(1, 1000)');
cmp_ok($min_after, '>', $max_before, 'and IDs continue above the earlier ones');
my ($lease_token) = split /\|/, $lease_before;
is($node->safe_psql('postgres', "SELECT state || '|' || worker_id FROM snowflake_leases WHERE token = $lease_token"),
	"held|$leased_worker", 'and the lease taken before is held');
$node->stop;
done_testing();
