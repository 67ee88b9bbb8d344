# The 1.4 to 1.5 lease import refuses a row whose window 1.4 could not have
# written (a table changed by hand): carried, its extreme values wrapped
# where the worker id's next window is computed and shown, and a grant
# handed the worker id out with a window in 1970.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use SnowflakeOldVersions;
use SnowflakeTest;
use Test::More;

my $top = $ENV{TESTDIR} // '.';
my $node = SnowflakeTest::new_node('v14windows',
	install => [ install_path => SnowflakeOldVersions::relocated_install('v14windows') ],
	conf => slurp_file("$top/test/conf/regress.conf") . "snowflake.lease_workers = 4\n");
$node->safe_psql('postgres', 'CREATE DATABASE leases_now');
$node->safe_psql('leases_now',
	"CREATE EXTENSION snowflake VERSION '1.0'; ALTER EXTENSION snowflake UPDATE TO '1.4'");

my $layout = SnowflakeOldVersions::v14_layout($node, 'leases_now');
my $first = $node->safe_psql('leases_now', 'SELECT (1 << worker_bits) - 4 FROM snowflake_status()');
my $now_ms = $node->safe_psql('leases_now',
	'SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint');
my $max = '9223372036854775807';
my $min = '-9223372036854775808';

# A held 1.4 row of worker id $first, token 1: window_ms, not_before_ms,
# not_after_ms, last_timestamp_ms as given.
sub row
{
	my ($window, $from, $to, $last) = @_;
	return "(0, $first, 1, 'h', current_user, NULL, NULL, NULL, interval '1 hour', $window, "
	  . "'$layout', now(), now(), $from, $to, $last, NULL)";
}

my $good_from = $now_ms - 60_000;
my $good_to = $now_ms + 3_600_000;
my @bad = (
	[ 'a window_ms of INT64_MAX', row($max, $good_from, $good_to, 'NULL') ],
	[ 'a window_ms of 0', row(0, $good_from, $good_to, 'NULL') ],
	[ 'a not_after_ms of INT64_MAX', row(3600000, 0, $max, 'NULL') ],
	[ 'a not_before_ms of INT64_MIN', row(3600000, $min, $good_to, 'NULL') ],
	[ 'a not_before_ms above not_after_ms', row(3600000, $good_to, $good_from, 'NULL') ],
	[ 'a negative last_timestamp_ms', row(3600000, $good_from, $good_to, -5) ]);
for my $case (@bad)
{
	my ($name, $row) = @$case;
	$node->safe_psql('leases_now', 'DELETE FROM snowflake_worker_leases');
	SnowflakeOldVersions::insert_v14_leases($node, 'leases_now', $row);
	my ($rc, $out, $err) = $node->psql('leases_now', 'ALTER EXTENSION snowflake UPDATE',
		extra_params => [ '-v', 'VERBOSITY=verbose' ]);
	isnt($rc, 0, "a row with $name stops the update");
	like($err, qr/ERROR:  23514: the window of snowflake 1\.4 lease 1 is out of range/,
		"and the message says why ($name)");
}

# The row corrected, the update carries it.
$node->safe_psql('leases_now', 'DELETE FROM snowflake_worker_leases');
SnowflakeOldVersions::insert_v14_leases($node, 'leases_now',
	row(3600000, $good_from, $good_to, 'NULL'));
my ($rc, $out, $err) = $node->psql('leases_now', 'ALTER EXTENSION snowflake UPDATE');
is($rc, 0, 'the corrected row is carried') or diag $err;
is($node->safe_psql('leases_now',
		"SELECT (extract(epoch FROM not_after) * 1000)::bigint FROM snowflake_leases WHERE token = 1"),
	$good_to, 'with its window');

$node->stop;
done_testing();
