# Operations on the lease state that must not forget a live lease: an empty
# snowflake.lease_state is damage, and a lease space shrunk under a live
# lease is refused even without snowflake.leases.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use SnowflakeLease;
use SnowflakeLeaseFile;
use SnowflakeTest;
use Test::More;

my $node = SnowflakeTest::new_node('ops', settings => lease_settings(lease_workers => 4),
	extension => 'postgres');
my $file = lease_file($node);
my ($a_worker, $a_token) = split /\|/, $node->safe_psql('postgres',
	q{SELECT worker_id, token FROM snowflake_lease_worker('A', interval '1 hour')});
is($a_worker, 124, 'A leases worker id 124');
$node->stop;

# A zero-length file (a copy that ran out of disk).
my $good = slurp_file($file);
truncate $file, 0 or die "truncate $file: $!";
my $log = SnowflakeTest::start_refused($node, 'an empty lease state: the server refuses to start');
like($log,
	qr/FATAL:  file "\Q$file\E" does not hold a valid snowflake lease state\n.*DETAIL:  The file is empty, in a data directory that snowflake ran in before.\n.*HINT:  Restore snowflake.lease_state from a backup of this data directory./,
	'the log names the file, the damage and the fix');
open my $fh, '>:raw', $file or die "open $file: $!";
print $fh $good;
close $fh;

# The lease space shrinks to 1 and snowflake.leases went first.
$node->append_conf('postgresql.conf', "snowflake.lease_workers = 1\n");
unlink $node->data_dir . '/snowflake.leases' or die "unlink: $!";
$log = SnowflakeTest::start_refused($node, 'a lease space shrunk under a live lease: refused');
like($log,
	qr/FATAL:  snowflake.lease_workers = 1 leaves out worker ids whose leases may still issue IDs\n.*DETAIL:  Sessions would issue IDs with the worker ids of 1 leases: worker id 124 of node 0 \(token $a_token, "A"\) until .*\n.*HINT:  Set snowflake.lease_workers to at least 4 until /,
	'the log names the lease, until when, and the lease space it needs');

# Back to 4, A releases, then the shrink starts.
$node->append_conf('postgresql.conf', "snowflake.lease_workers = 4\n");
$node->start;
$node->safe_psql('postgres', "SELECT snowflake_release_lease($a_token, NULL)");
$node->stop;
$node->append_conf('postgresql.conf', "snowflake.lease_workers = 1\n");
unlink $node->data_dir . '/snowflake.leases' or die "unlink: $!";
ok($node->start(fail_ok => 1), 'once A released its lease, the smaller lease space starts');
is($node->safe_psql('postgres', 'SHOW snowflake.lease_workers'), '1', 'with 1 lease worker');
$node->stop;
done_testing();
