# The 1.4 to 1.5 lease import after version 1.5 granted already (the update
# order was not kept): a row not carried (WARNING) whose holder may still
# issue IDs until its not_after must keep its worker id from a grant that
# starts below that not_after:
#   1. a worker id never leased in the server: the next grant takes it;
#   2. a worker id whose carried lease expired: the next grant starts
#      above the carried lease only;
#   3. a worker id a 1.5 grant holds: once released, the next grant starts
#      above the released lease only.
# The import must also never leave a token of the row to name a lease.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use SnowflakeOldVersions;
use SnowflakeTest;
use Test::More;

my $fixture = SnowflakeOldVersions::v14_lease_fixture('v14after', 4, 'leases_now', 'before');
my ($node, $layout, $first, $now_ms) = @$fixture{qw(node layout first now_ms)};
my $hour = 3_600_000;

# A 1.4 row of worker id $first + $w (see SnowflakeOldVersions::v14_lease_row).
sub row
{
	return SnowflakeOldVersions::v14_lease_row($fixture, @_);
}

# Grants one lease in leases_now: [worker id, token, not_before in ms].
sub grant
{
	my ($holder) = @_;
	return [ split / /, $node->safe_psql('leases_now',
		qq{SELECT worker_id || ' ' || token || ' '
		          || (extract(epoch FROM not_before) * 1000)::bigint
		     FROM snowflake_lease_worker('$holder', interval '1 hour')}) ];
}

# The database that held the leases: +1 expired two hours ago.
SnowflakeOldVersions::insert_v14_leases($node, 'leases_now',
	row(1, 1, -3 * $hour, -2 * $hour, 'x1', 3 * $hour));
my ($rc, $out, $err) = $node->psql('leases_now', 'ALTER EXTENSION snowflake UPDATE');
is($rc, 0, 'the database that held the leases updates') or diag $err;

# 1.5 grants before the earlier database is updated: +0 (never leased).
my $g0 = grant('g0');
is($g0->[0], $first, 'the first grant takes the first worker id');

# The earlier database: +0, +1 and +2 held for an hour (tokens 5 to 7).
SnowflakeOldVersions::insert_v14_leases($node, 'before',
	row(0, 5, -60_000, $hour, 'y0', 60_000),
	row(1, 6, -60_000, $hour, 'y1', 60_000),
	row(2, 7, -60_000, $hour, 'y2', 60_000));
($rc, $out, $err) = $node->psql('before', 'ALTER EXTENSION snowflake UPDATE');
is($rc, 0, 'the earlier database updates after 1.5 granted') or diag $err;
like($err, qr/WARNING:  snowflake lease 7 of worker id @{[$first + 2]}, taken under version 1\.4, was not carried into version 1\.5/,
	'and warns of the held rows not carried');

# Every later grant of +0, +1 or +2 starts above the held rows' not_after.
$node->safe_psql('leases_now', "SELECT snowflake_release_lease($g0->[1], NULL)");
my @grants;
for my $i (1 .. 4)
{
	my ($grc, $gout) = $node->psql('leases_now',
		qq{SELECT worker_id || ' ' || token || ' '
		          || (extract(epoch FROM not_before) * 1000)::bigint
		     FROM snowflake_lease_worker('g$i', interval '1 hour')});
	last if $grc != 0;
	push @grants, [ split / /, $gout ];
}
note 'grants: ' . join(', ', map { join ' ', @$_ } @grants);
for my $w (0 .. 2)
{
	my @early = grep { $_->[0] == $first + $w && $_->[2] < $now_ms + $hour - 1 } @grants;
	is(scalar(@early), 0,
		"no grant of worker id +$w starts below the not_after of the held row not carried");
}

# The rows' holders are told at their next renewal: their tokens name no lease.
for my $token (5 .. 7)
{
	($rc, $out, $err) = $node->psql('before', "SELECT snowflake_renew_lease($token, NULL)");
	isnt($rc, 0, "the renewal of the row not carried with token $token is refused");
}

$node->stop;
done_testing();
