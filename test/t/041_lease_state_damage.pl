# A damaged snowflake.lease_state (a zeroed block of a leased or unleased
# worker id, a torn block, a zeroed header) stops the server at start,
# naming the file, the block and the fix; the restored file's header keeps
# the node id and the largest token.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SnowflakeLease;
use SnowflakeLeaseFile;
use SnowflakeTest;
use Test::More;

my $node = SnowflakeTest::new_node('damage', settings => lease_settings(lease_workers => 2),
	extension => 'postgres');

my $leases = q{SELECT worker_id, token, state, holder, not_before, not_after
                 FROM snowflake_leases ORDER BY worker_id};
my ($a_worker, $a_token) = split /\|/, $node->safe_psql('postgres',
	q{SELECT worker_id, token FROM snowflake_lease_worker('A', interval '1 hour')});
my ($b_worker, $b_token) = split /\|/, $node->safe_psql('postgres',
	q{SELECT worker_id, token FROM snowflake_lease_worker('B', interval '1 hour')});
is("$a_worker|$b_worker", '126|127', 'A and B lease worker ids 126 and 127');
my $before = $node->safe_psql('postgres', $leases);
$node->stop;

my $file = lease_file($node);
my $good = slurp_file($file);
is(length($good), 128 * 512, 'the file has a block for each of the 128 worker ids');
is(scalar(grep { lease_block($file, $_) eq "\0" x 512 } 1 .. 127),
	0, 'and no block of zeros');

# Starts the damaged node: it must refuse, with this detail.
sub refuses
{
	my ($damage, $detail) = @_;
	my $log = SnowflakeTest::start_refused($node, "$damage: the server refuses to start");
	like(
		$log,
		qr/FATAL:  file "\Q$file\E" does not hold a valid snowflake lease state\n.*DETAIL:  \Q$detail\E\n.*HINT:  Restore snowflake.lease_state from a backup of this data directory.  Otherwise, stop every application that holds a worker-id lease of this server, then remove the file: the server forgets every lease and its history, leases worker ids again from this run's generation floor, and numbers tokens anew, so a holder still running would share its worker id with the next holder./,
		"$damage: the log names the file, the block and the fix");
	SnowflakeTest::write_file($file, $good);
}

# Two one-hour leases, a clean stop: B's block zeroed.
write_lease_block($file, $b_worker, "\0" x 512);
refuses('a zeroed block of a lease',
	"Block $b_worker, the lease state of worker id $b_worker, holds only zeros.");
write_lease_block($file, 5, "\0" x 512);
refuses('a zeroed block of a worker id never leased',
	'Block 5, the lease state of worker id 5, holds only zeros.');
# A torn write: the second half of A's block is another write's.
write_lease_block($file, $a_worker, lease_block($file, $a_worker) =~ s/^(.{256}).*/$1 . ('x' x 256)/sre);
refuses('a torn block',
	"The checksum of block $a_worker, the lease state of worker id $a_worker, is wrong.");
write_lease_block($file, 0, "\0" x 512);
refuses('a zeroed header', 'Its header (block 0) holds only zeros.');
write_lease_header($file, clean => 0);
write_lease_block($file, 0, substr(lease_block($file, 0), 0, 16) . pack('q<', 1));
refuses('a header whose checksum is wrong', 'The checksum of its header (block 0) is wrong.');

$node->start;
is($node->safe_psql('postgres', $leases), $before,
	'the restored file has both leases back');
$node->stop;

$node->start;
my $header = read_lease_header($file);
is(sprintf('%x|%d|%d|%d|%d', @$header{qw(magic crc_ok blocks node_id last_token)}),
	"534c4833|1|128|" . $node->safe_psql('postgres', 'SHOW snowflake.node_id') . "|$b_token",
	'the header: its magic and checksum, 128 blocks, the node id, the largest token');
is($node->safe_psql('postgres', qq{SELECT expires_at > now() FROM snowflake_renew_lease($b_token, NULL)}),
	't', 'B renews its lease');
$node->safe_psql('postgres', "SELECT snowflake_release_lease($a_token, NULL)");
my $c_token = $node->safe_psql('postgres',
	q{SELECT token FROM snowflake_lease_worker('C', interval '1 hour')});
ok($c_token > $b_token, "the next grant takes a larger token ($c_token; each start raises them)");
is(read_lease_header($file)->{last_token}, $c_token, 'which the header keeps');
$node->restart;
is($node->safe_psql('postgres', q{SELECT holder FROM snowflake_leases WHERE state = 'held' ORDER BY worker_id}),
	"C\nB", 'after a restart in the new format the leases are still there');

# The header's largest token is a lower bound the next start keeps.
$node->safe_psql('postgres', "SELECT snowflake_release_lease($c_token, NULL)");
$node->stop;
# (Above any start's own raise: the Unix millisecond times 1024 is below 2^51.)
my $high = 1 << 60;
write_lease_header($file, last_token => $high);
$node->start;
my $last = $node->safe_psql('postgres',
	q{SELECT token FROM snowflake_lease_worker('after the header', interval '1 hour')});
is($last, $high + 1, 'the header\'s largest token counts: the next grant takes the one above');

done_testing();
