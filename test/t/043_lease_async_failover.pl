# A lost grant's token is never handed out again across asynchronous
# failovers (README's map says what each step asserts); tokens lie above the
# promotion's millisecond times 1024.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use Test::More;
use SnowflakeStandby;

# "late": the second standby of the old primary, promoted at the end.
my ($primary, $standby, $late) = SnowflakeStandby::primary_with_standbys(
	settings => { 'snowflake.lease_workers' => 4 },
	standbys => [ 'standby', 'late' ]);

# The Unix millisecond by a node's clock.
sub now_ms
{
	my ($node) = @_;
	return $node->safe_psql('postgres',
		'SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint');
}

my $grant = q{SELECT worker_id, token FROM snowflake_lease_worker('%s', interval '10 minutes')};
my ($x_worker, $x_token) = split /\|/, $primary->safe_psql('postgres', sprintf($grant, 'X'));
# Without synchronous standbys a grant's record is flushed soon, not at
# once: wait for the insert position.
$primary->wait_for_catchup($standby, 'replay', $primary->lsn('insert'));
$primary->wait_for_catchup($late, 'replay', $primary->lsn('insert'));
is($standby->safe_psql('postgres', qq{SELECT state FROM snowflake_leases WHERE token = $x_token}),
	'held', 'an earlier grant reached the standby');

# Both standbys fall behind: their WAL receivers stop.
for my $behind ($standby, $late)
{
	$behind->safe_psql('postgres', q{ALTER SYSTEM SET primary_conninfo = ''});
	$behind->reload;
	$behind->poll_query_until('postgres', 'SELECT count(*) = 0 FROM pg_stat_wal_receiver')
	  or die 'the WAL receiver did not stop';
}
my ($a_worker, $a_token) = split /\|/, $primary->safe_psql('postgres', sprintf($grant, 'A'));
is($a_token, $x_token + 1, "A's grant on the old primary takes token $a_token");

# The primary fails; the standby, without A's grant, is promoted.
$primary->stop('immediate');
my $promoted_after_ms = now_ms($standby);
$standby->promote;
$standby->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()')
  or die 'the standby was not promoted';
my $timeline = q{SELECT ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::bigint};
is($standby->safe_psql('postgres', $timeline), '2', 'the promoted standby runs on timeline 2');
my ($b_worker, $b_token) = split /\|/, $standby->safe_psql('postgres', sprintf($grant, 'B'));
is($b_worker, $a_worker, "B gets A's worker id, which the new primary never saw leased");
my $granted_before_ms = now_ms($standby);
ok( $b_token > $promoted_after_ms * 1024 && $b_token <= $granted_before_ms * 1024 + 1,
	"but a token above the millisecond of the promotion times 1024 ($b_token), unlike A's");

# A, following the client rules, renews on the new primary: refused.
my ($ret, $out, $err) = $standby->psql('postgres',
	"\\set VERBOSITY verbose\nSELECT * FROM snowflake_renew_lease($a_token, NULL)");
like($err, qr/ERROR:  55000: snowflake lease $a_token is not held$/m,
	'the lost grant\'s renewal fails with SQLSTATE 55000: its holder must stop');
is($standby->safe_psql('postgres', qq{SELECT holder, state FROM snowflake_leases WHERE token = $b_token}),
	'B|held', 'B\'s lease is untouched');
is($standby->safe_psql('postgres', "SELECT expires_at > now() FROM snowflake_renew_lease($x_token, NULL)"),
	't', 'the replicated lease X renews on the new primary');

# A restart keeps the token counter (and forgets the stopped WAL receiver).
$standby->safe_psql('postgres', 'ALTER SYSTEM RESET primary_conninfo');
$standby->restart;
my (undef, $c_token) = split /\|/, $standby->safe_psql('postgres', sprintf($grant, 'C'));
ok($c_token > $b_token, "after a restart the next token lies above B's ($c_token)");

# A standby of the new primary replays the tokens, and once promoted (timeline
# 3) grants above both timelines.
$standby->backup('backup2');
my $standby2 = PostgreSQL::Test::Cluster->new('standby2');
$standby2->init_from_backup($standby, 'backup2', has_streaming => 1);
$standby2->start;
$standby->wait_for_catchup($standby2, 'replay', $standby->lsn('insert'));
is($standby2->safe_psql('postgres', q{SELECT string_agg(token::text, ',' ORDER BY token) FROM snowflake_leases}),
	"$x_token,$b_token,$c_token", 'a standby of the new primary replays its tokens');
$standby->stop('immediate');
$standby2->promote;
$standby2->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()')
  or die 'the second standby was not promoted';
is($standby2->safe_psql('postgres', $timeline), '3', 'promoted, it runs on timeline 3');
my (undef, $d_token) = split /\|/, $standby2->safe_psql('postgres', sprintf($grant, 'D'));
ok($d_token > $c_token, "its grants take tokens above the first new primary's ($d_token)");
$standby2->stop;

# The old primary's other standby, left on timeline 1, promoted now, takes
# timeline 2 as well; its tokens still lie above B's, renewed here in vain.
$late->promote;
$late->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()')
  or die 'the late standby was not promoted';
is($late->safe_psql('postgres', $timeline), '2', 'promoted later, it runs on timeline 2 too');
my ($e_worker, $e_token) = split /\|/, $late->safe_psql('postgres', sprintf($grant, 'E'));
is($e_worker, $b_worker, "E gets B's worker id, which this server never saw leased");
ok($e_token > $d_token, "but a token above every earlier promotion's ($e_token)");
($ret, $out, $err) = $late->psql('postgres',
	"\\set VERBOSITY verbose\nSELECT * FROM snowflake_renew_lease($b_token, NULL)");
like($err, qr/ERROR:  55000: snowflake lease $b_token is not held$/m,
	"B's renewal on the late standby fails with SQLSTATE 55000");

$late->stop;

# A restored base backup keeps timeline 1, and lacks every grant made after
# the copy (here X, A and all the rest): its tokens lie above them too.
my $restored = PostgreSQL::Test::Cluster->new('restored');
$restored->init_from_backup($primary, 'base');
$restored->start;
is($restored->safe_psql('postgres', $timeline), '1', 'a restored backup runs on timeline 1');
my (undef, $f_token) = split /\|/, $restored->safe_psql('postgres', sprintf($grant, 'F'));
ok($f_token > $e_token, "it grants tokens above every earlier start's ($f_token)");
($ret, $out, $err) = $restored->psql('postgres',
	"\\set VERBOSITY verbose\nSELECT * FROM snowflake_renew_lease($x_token, NULL)");
like($err, qr/ERROR:  55000: snowflake lease $x_token is not held$/m,
	"X's renewal on the restored backup fails with SQLSTATE 55000");

done_testing();
