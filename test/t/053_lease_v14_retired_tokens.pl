# The 1.4 to 1.5 lease import with three databases' 1.4 tables, whose tokens
# were counted apart: a token that the import leaves to a holder without
# carrying its lease must not come to name a lease carried later from a
# third table.  A renewal names its lease by the token alone: the holder's
# renewal would renew that other worker id's lease, and the holder would go
# on issuing IDs on its own worker id, past the window its next holder
# starts above.
#   1. a row held too (not carried, WARNING; its holder is told at its next
#      renewal), whose token a third table's row then has;
#   2. a carried lease, expired, that a later row of its worker id replaces
#      (1.4 renewed an expired lease until its worker id was leased again),
#      whose token a third table's row then has;
#   3. a released row of a worker id whose carried lease is held, under
#      that lease's token but another grant (1.4 answered its holder's
#      renewal "was released").
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use SnowflakeOldVersions;
use SnowflakeTest;
use Test::More;

my $fixture = SnowflakeOldVersions::v14_lease_fixture('v14retired', 8, qw(leases_now before_1 before_2 before_3));
my ($node, $layout, $first, $now_ms) = @$fixture{qw(node layout first now_ms)};
my $hour = 3_600_000;

# A 1.4 row of worker id $first + $w (see SnowflakeOldVersions::v14_lease_row).
sub row
{
	return SnowflakeOldVersions::v14_lease_row($fixture, @_);
}

sub update
{
	my ($db) = @_;
	my ($rc, $out, $err) = $node->psql($db, 'ALTER EXTENSION snowflake UPDATE');
	return ($rc, $err);
}

# The database that held the leases last: +1 held (token 2), +3 expired two
# hours ago (token 4).
SnowflakeOldVersions::insert_v14_leases($node, 'leases_now',
	row(1, 2, -60_000, $hour, 'x1', 60_000),
	row(3, 4, -3 * $hour, -2 * $hour, 'x3', 3 * $hour));
my ($rc, $err) = update('leases_now');
is($rc, 0, 'the database that held the leases updates first') or diag $err;

# An earlier database: +1 held too (token 12, not carried), +3 expired an
# hour ago (token 13: replaces token 4).
SnowflakeOldVersions::insert_v14_leases($node, 'before_1',
	row(1, 12, -60_000, $hour, 'y1', 60_000),
	row(3, 13, -2 * $hour, -$hour, 'y3', 2 * $hour));
($rc, $err) = update('before_1');
is($rc, 0, 'an earlier database updates') or diag $err;

# A third database: +5 held under token 12, +6 held under token 4.
SnowflakeOldVersions::insert_v14_leases($node, 'before_2',
	row(5, 12, -60_000, $hour, 'z5', 60_000),
	row(6, 4, -60_000, $hour, 'z6', 60_000));
($rc, $err) = update('before_2');
note "the third database's update: rc $rc, $err";

my $not_after = sub {
	my ($w) = @_;
	return $node->safe_psql('leases_now',
		"SELECT (extract(epoch FROM not_after) * 1000)::bigint FROM snowflake_leases
		  WHERE worker_id = $first + $w");
};

# 1. y1, +1's holder too, renews with token 12.
my $before5 = $not_after->(5);
# Each holder renews where it leased under 1.4: in its own database.
my ($rrc) = $node->psql('before_1', 'SELECT snowflake_renew_lease(12, NULL)');
isnt($rrc, 0, 'the renewal of the row held too (token 12, +1) is refused');
is($not_after->(5), $before5, 'and +5\'s lease is not renewed by it');

# 2. x3, +3's carried lease replaced, renews with token 4.
my $before6 = $not_after->(6);
($rrc) = $node->psql('leases_now', 'SELECT snowflake_renew_lease(4, NULL)');
isnt($rrc, 0, 'the renewal of the replaced carried lease (token 4, +3) is refused');
is($not_after->(6), $before6, 'and +6\'s lease is not renewed by it');

# 3. A released row of +1 under token 2, granted two hours ago: a holder
# that released, then renews (1.4 answered "was released").
SnowflakeOldVersions::insert_v14_leases($node, 'before_3',
	row(1, 2, -2 * $hour, -$hour, 'w1', 2 * $hour) =~ s/NULL, NULL\)$/NULL, now() - interval '90 minutes')/r);
($rc, $err) = update('before_3');
is($rc, 0, 'a database with a released row updates') or diag $err;
my $before1 = $not_after->(1);
($rrc) = $node->psql('before_3', 'SELECT snowflake_renew_lease(2, NULL)');
isnt($rrc, 0, 'the renewal of the released row (token 2, +1) is refused');
is($not_after->(1), $before1, 'and +1\'s carried lease is not renewed by it');
($rrc) = $node->psql('leases_now', 'SELECT snowflake_renew_lease(2, NULL)');
is($rrc, 0, 'the carried lease\'s own holder renews it');

$node->stop;
done_testing();
