# The 1.4 to 1.5 lease import (snowflake_lease_import_v14) against rows
# built to defeat it, with two databases' 1.4 tables.
#
# The database that held the leases last (leases_now) is updated first, as
# docs/operations.md says, then earlier databases, each with a table of its
# own whose tokens were counted apart.  After all updates:
#   1. a row the import does not carry (it keeps the table's lease of the
#      worker id instead) must not leave its holder a token that names
#      another worker id's carried lease: a renewal names its lease by the
#      token alone, so the holder's renewal would renew that lease and the
#      holder would go on issuing IDs on its own worker id;
#   2. a row held too (not carried, WARNING) may still issue IDs until its
#      not_after: the worker id's next holder must start above it;
#   3. a row of the same worker id with the same token as the carried
#      lease, but another lease (both tables' first grant is the first
#      lease worker id with token 1), must not be taken for the carried
#      one silently: its holder would share the carried lease;
#   5. a row not carried whose window ends before the kept held lease's
#      (a connection-scoped row: carried as ended, though its connection
#      may still issue IDs) must stay covered once the kept lease is
#      released: a release drops the kept lease's own not_after;
#   6. after 1.5 granted (the update order was not kept), a row that is
#      not carried (WARNING: "its holder is told at its next renewal")
#      must not keep a token that names a carried lease of another worker
#      id either;
#   4. a row whose token is INT64_MAX must not make every later grant's
#      token wrap to one negative token shared by every holder.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use SnowflakeOldVersions;
use SnowflakeTest;
use Test::More;

my @before = qw(before_s1 before_s2 before_s3 before_s4 before_s5 before_s6);
my $fixture = SnowflakeOldVersions::v14_lease_fixture('v14attack', 8, 'leases_now', @before);
my ($node, $layout, $first, $now_ms) = @$fixture{qw(node layout first now_ms)};
my $hour = 3_600_000;

# A 1.4 row of worker id $first + $w (see SnowflakeOldVersions::v14_lease_row).
sub row
{
	return SnowflakeOldVersions::v14_lease_row($fixture, @_);
}

sub insert_rows
{
	my ($db, @rows) = @_;
	return SnowflakeOldVersions::insert_v14_leases($node, $db, @rows);
}

sub update
{
	my ($db) = @_;
	my ($rc, $out, $err) = $node->psql($db, 'ALTER EXTENSION snowflake UPDATE',
		extra_params => [ '-v', 'VERBOSITY=verbose' ]);
	return ($rc, $err);
}

# The database updated first: +0 to +2 held for an hour (tokens 1 to 3),
# +3 expired two hours ago (token 4).
insert_rows('leases_now',
	row(0, 1, -60_000, $hour, 'x0', 60_000),
	row(1, 2, -60_000, $hour, 'x1', 60_000),
	row(2, 3, -60_000, $hour, 'x2', 60_000),
	row(3, 4, -3 * $hour, -2 * $hour, 'x3', 3 * $hour),
	row(5, 5, -60_000, $hour, 'x5', 60_000));
my ($rc, $err) = update('leases_now');
is($rc, 0, 'the database that held the leases updates first') or diag $err;

# 1. +3 under token 1, expired an hour ago: a later window than the carried
# lease's (token 4), so the import keeps token 4 raised, and token 1 stays
# with +0's held lease.
insert_rows('before_s1', row(3, 1, -2 * $hour, -$hour, 'y3', 2 * $hour));
($rc, $err) = update('before_s1');
isnt($rc, 0,
	'a row not carried whose token names another worker id\'s carried lease stops the update');
like($err, qr/lease 1 of worker id @{[$first + 3]}\b/,
	'and the message names that row');

# 2. +1 held too, under another token.
insert_rows('before_s2', row(1, 12, -60_000, $hour, 'y1', 60_000));
($rc, $err) = update('before_s2');
is($rc, 0, 'a database with a row held too updates');
like($err, qr/WARNING:  01000: snowflake lease 12 of worker id @{[$first + 1]}, taken under version 1\.4, was not carried/,
	'and warns of the row held too');

# 3. +2 held too, under the same token (3) as the carried lease, by
# another holder granted at another time.
insert_rows('before_s3', row(2, 3, -30_000, $hour + 30_000, 'y2', 30_000));
($rc, $err) = update('before_s3');
like($err, qr/lease 3 of worker id @{[$first + 2]}\b/,
	'another lease with the carried lease\'s token and worker id is not taken for it silently');

# 4. +4 under token INT64_MAX, expired.
insert_rows('before_s4', row(4, '9223372036854775807', -3 * $hour, -2 * $hour, 'y4', 3 * $hour));
($rc, $err) = update('before_s4');
note "the update of a row with token INT64_MAX: rc $rc, $err";

# 5. +5 connection-scoped (ttl NULL) in the earlier database, its window
# half an hour ahead: within the carried held lease's window.
insert_rows('before_s5', row(5, 13, -60_000, $hour / 2, 'y5', 60_000) =~ s/interval '1 hour'/NULL/r);
($rc, $err) = update('before_s5');
is($rc, 0, 'a database with a connection-scoped row of a held worker id updates') or diag $err;

# The holder of +1's carried lease (token 2) releases it, reporting nothing;
# the holder of the row held too (token 12) may issue IDs until its
# not_after.  Then grants take every worker id they can.
$node->safe_psql('leases_now', 'SELECT snowflake_release_lease(2, NULL)');
$node->safe_psql('leases_now', 'SELECT snowflake_release_lease(5, NULL)');
my @grants;
for my $i (1 .. 8)
{
	my ($grc, $out, $gerr) = $node->psql('leases_now',
		qq{SELECT worker_id || ' ' || token || ' '
		          || (extract(epoch FROM not_before) * 1000)::bigint
		     FROM snowflake_lease_worker('grant-$i', interval '1 hour')});
	last if $grc != 0;
	push @grants, [ split / /, $out ];
}
note 'grants: ' . join(', ', map { join ' ', @$_ } @grants);
ok(scalar(@grants) > 0, 'grants were made');
my @early = grep { $_->[0] == $first + 1 && $_->[2] < $now_ms + $hour - 1 } @grants;
is(scalar(@early), 0,
	'no grant of the worker id held too starts below the not_after of the row not carried');
@early = grep { $_->[0] == $first + 5 && $_->[2] < $now_ms + $hour / 2 - 1 } @grants;
is(scalar(@early), 0,
	'no grant of the worker id starts below the window of the connection-scoped row not carried');
my %tokens;
$tokens{ $_->[1] }++ for @grants;
is(scalar(grep { $tokens{$_} > 1 } keys %tokens), 0, 'no two grants share a token');
is(scalar(grep { $_->[1] <= 0 } @grants), 0, 'every grant\'s token is positive');

# 6. After those grants: +6 held under token 1, the token of +0's carried
# lease, still held.
insert_rows('before_s6', row(6, 1, -60_000, $hour, 'y6', 60_000));
($rc, $err) = update('before_s6');
isnt($rc, 0,
	'after grants, a row not carried whose token names another worker id\'s lease stops the update');
like($err, qr/lease 1 of worker id @{[$first + 6]}\b/, 'and the message names that row');

$node->stop;
done_testing();
