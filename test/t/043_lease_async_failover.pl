# Tokens across an asynchronous failover (audit 2026-11-27, M2).  An
# asynchronous standby that missed a grant is promoted; the tokens it grants
# lie above its new timeline << 32, above every token of the old primary's
# timeline, so the lost grant's token is never handed out again, and its
# holder's renewal on the new primary fails with SQLSTATE 55000 (it must
# stop).  A restart of the new primary keeps its token counter, and a
# standby of it replays the tokens and, promoted in turn, grants above its
# own timeline's floor.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $primary = PostgreSQL::Test::Cluster->new('primary');
$primary->init(allows_streaming => 1);
$primary->append_conf('postgresql.conf', q{
shared_preload_libraries = 'snowflake'
snowflake.lease_workers = 4
});
$primary->start;
$primary->safe_psql('postgres', 'CREATE EXTENSION snowflake');
$primary->backup('backup');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'backup', has_streaming => 1);
$standby->start;

my $grant = q{SELECT worker_id, token FROM snowflake_lease_worker('%s', interval '10 minutes')};
my ($x_worker, $x_token) = split /\|/, $primary->safe_psql('postgres', sprintf($grant, 'X'));
$primary->wait_for_catchup($standby);
is($standby->safe_psql('postgres', qq{SELECT state FROM snowflake_leases WHERE token = $x_token}),
	'held', 'an earlier grant reached the standby');

# The standby falls behind: its WAL receiver stops.
$standby->safe_psql('postgres', q{ALTER SYSTEM SET primary_conninfo = ''});
$standby->reload;
$standby->poll_query_until('postgres', 'SELECT count(*) = 0 FROM pg_stat_wal_receiver')
  or die 'the WAL receiver did not stop';
my ($a_worker, $a_token) = split /\|/, $primary->safe_psql('postgres', sprintf($grant, 'A'));
is($a_token, $x_token + 1, "A's grant on the old primary takes token $a_token");

# The primary fails; the standby, without A's grant, is promoted.
$primary->stop('immediate');
$standby->promote;
$standby->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()')
  or die 'the standby was not promoted';
my $timeline = q{SELECT ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::bigint};
is($standby->safe_psql('postgres', $timeline), '2', 'the promoted standby runs on timeline 2');
my ($b_worker, $b_token) = split /\|/, $standby->safe_psql('postgres', sprintf($grant, 'B'));
is($b_worker, $a_worker, "B gets A's worker id, which the new primary never saw leased");
is($b_token, (2 << 32) + 1, 'but a token above timeline 2 << 32, unlike A\'s');

# A, following the client rules, renews on the new primary: refused.
my ($ret, $out, $err) = $standby->psql('postgres',
	"\\set VERBOSITY verbose\nSELECT * FROM snowflake_renew_lease($a_token, NULL)");
like($err, qr/ERROR:  55000: snowflake lease $a_token is not held$/m,
	'the lost grant\'s renewal fails with SQLSTATE 55000: its holder must stop');
is($standby->safe_psql('postgres', qq{SELECT holder, state FROM snowflake_leases WHERE token = $b_token}),
	'B|held', 'B\'s lease is untouched');
is($standby->safe_psql('postgres', "SELECT expires_at > now() FROM snowflake_renew_lease($x_token, NULL)"),
	't', 'the replicated lease X renews on the new primary');

# A restart keeps the token counter (and forgets the stopped WAL receiver's
# setting, which a standby of it would inherit).
$standby->safe_psql('postgres', 'ALTER SYSTEM RESET primary_conninfo');
$standby->restart;
my (undef, $c_token) = split /\|/, $standby->safe_psql('postgres', sprintf($grant, 'C'));
is($c_token, $b_token + 1, 'after a restart the next token follows B\'s');

# A standby of the new primary replays the tokens, and once promoted (timeline
# 3) grants above both timelines.
$standby->backup('backup2');
my $standby2 = PostgreSQL::Test::Cluster->new('standby2');
$standby2->init_from_backup($standby, 'backup2', has_streaming => 1);
$standby2->start;
$standby->wait_for_catchup($standby2);
is($standby2->safe_psql('postgres', q{SELECT string_agg(token::text, ',' ORDER BY token) FROM snowflake_leases}),
	"$x_token,$b_token,$c_token", 'a standby of the new primary replays its tokens');
$standby->stop('immediate');
$standby2->promote;
$standby2->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()')
  or die 'the second standby was not promoted';
is($standby2->safe_psql('postgres', $timeline), '3', 'promoted, it runs on timeline 3');
my (undef, $d_token) = split /\|/, $standby2->safe_psql('postgres', sprintf($grant, 'D'));
is($d_token, (3 << 32) + 1, 'its grants take tokens above timeline 3 << 32');

done_testing();
