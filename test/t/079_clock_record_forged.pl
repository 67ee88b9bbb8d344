# A snowflake.clock whose boot times lie after the current boot time would
# hold a step "pending" until then: with a trusted offset a day behind,
# every snowflake_nextval() would wait and fail for years.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeTest;

my $node = SnowflakeTest::new_node('forged', extension => 'postgres');
my $first = $node->safe_psql('postgres', 'SELECT snowflake_nextval()');
$node->stop;

my $file = $node->data_dir . '/snowflake.clock';
ok(-e $file, 'a clean shutdown records the clock');
my @fields = split ' ', slurp_file($file);
is(scalar(@fields), 9, 'the record has the boot id and eight fields');

# The trusted offset a day behind, a step "pending" since a boot time
# centuries ahead (field 5).
my $day_us = 86400 * 1000000;
$fields[1] -= $day_us;
$fields[3] = $fields[1] + $day_us;
$fields[4] = '9000000000000000';
SnowflakeTest::write_file($file, join(' ', @fields) . "\n");

my $log_at = -s $node->logfile;
my $started = $node->start(fail_ok => 1);
is($started, 0, 'the server refuses to start');
my $log = slurp_file($node->logfile, $log_at);
like($log,
	qr/FATAL:  file ".*snowflake\.clock" does not hold a valid snowflake clock record/,
	'naming the file');
like($log, qr/DETAIL:  Field 5, a boot time of 9000000000000000 us, lies after the current boot time/,
	'saying what is wrong');
like($log, qr/HINT:  Remove the file/, 'with the fix');

unlink $file or die "could not remove $file: $!";
$node->start;
my $next = $node->safe_psql('postgres', 'SELECT snowflake_nextval()');
cmp_ok($next, '>', $first, 'without the file IDs continue above the last one');

$node->stop;
done_testing();
