# A layout change under a lease of the old layout: within the layout
# check's 24 h reach it is accepted, beyond it refused.
use strict;
use warnings;
use SnowflakeLease;
use SnowflakeTest;
use Test::More;
use Time::HiRes ();

my $node = SnowflakeTest::new_node(
	'n3',
	settings => {
		%{ lease_settings(lease_workers => 4, epoch => '2025-01-01') },
		timezone => 'UTC',
		log_error_verbosity => 'verbose'
	},
	extension => 'postgres');

# A lease of the old layout that ends within the check's reach.
my ($near_worker, $near_token) = split /\|/, $node->safe_psql('postgres',
	q{SELECT worker_id, token FROM snowflake_lease_worker('near', interval '1 hour')});
$node->stop;
$node->append_conf('postgresql.conf', "snowflake.epoch = '2024-06-01'\n");
ok($node->start(fail_ok => 1),
	'an earlier epoch under a lease that ends within 24 hours: the server starts');
is($node->safe_psql('postgres', 'SHOW snowflake.epoch'),
	'2024-06-01', 'with the new epoch');

# The clock stepped back: the reservation lies 25 hours ahead of it, and
# a new lease's window starts there.
$node->stop;
my $ahead_ms = int(Time::HiRes::time() * 1000) + 25 * 3600 * 1000;
SnowflakeTest::write_file($node->data_dir . '/snowflake.reservation', "$ahead_ms\n");
$node->start;
my ($far_worker, $far_token, $far_not_before) = split /\|/, $node->safe_psql('postgres',
	q{SELECT worker_id, token, (extract(epoch FROM not_before) * 1000)::bigint
	    FROM snowflake_lease_worker('far', interval '1 hour')});
cmp_ok($far_not_before, '>=', $ahead_ms, "the far lease's window starts at the reservation");
my $far_until = $node->safe_psql('postgres',
	"SELECT (not_after - interval '1 ms')::text FROM snowflake_leases WHERE token = $far_token");
my $far_after = $node->safe_psql('postgres',
	"SELECT (not_after - interval '1 ms' - interval '24 hours')::text
	   FROM snowflake_leases WHERE token = $far_token");
$node->stop;

$node->append_conf('postgresql.conf', "snowflake.epoch = '2024-01-01'\n");
my $log = SnowflakeTest::start_refused($node,
	'an earlier epoch under a lease that reaches past 24 hours: refused');
like($log,
	qr/FATAL:  55000: the snowflake layout changed while leases of the old layout may issue IDs later than the layout check allows for\n/,
	'FATAL 55000 says the layout changed under a lease of the old layout');
like($log,
	qr/DETAIL:  The check takes earlier IDs to reach at most 24 hours past this start; 1 leases of the old layout reach further: worker id $far_worker of node 0 \(token $far_token, "far"\) until \Q$far_until\E\.\n/,
	'the DETAIL names the far lease and until when');
like($log,
	qr/HINT:  Restore the previous snowflake.\* layout settings, or start with this layout after \Q$far_after\E, when the leases lie within the check's reach\.\n/,
	'the HINT names the fix: the old layout, or a start 24 hours before the lease ends');

$node->append_conf('postgresql.conf', "snowflake.epoch = '2024-06-01'\n");
ok($node->start(fail_ok => 1), 'the previous layout restored: the server starts');
is($node->safe_psql('postgres',
		"SELECT worker_id || '|' || holder || '|' || (not_after - interval '1 ms')::text
		   FROM snowflake_leases WHERE token = $far_token"),
	"$far_worker|far|$far_until",
	'the far lease is kept with its window');
$node->stop;
done_testing();
