# A full disk while snowflake.reservation is written (its temporary copy a
# link to /dev/full).
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;
use Time::HiRes ();

plan skip_all => '/dev/full is not a character device here' unless -c '/dev/full';

my $node = SnowflakeTest::new_node(
	'full',
	settings => { 'snowflake.reserve_ahead' => '50ms' },
	extension => 'postgres');
$node->safe_psql('postgres',
	'CREATE TABLE ids (id bigint PRIMARY KEY);
	 INSERT INTO ids SELECT snowflake_nextval() FROM generate_series(1, 1000)');

my $file = $node->data_dir . '/snowflake.reservation';
my $temporary = "$file.tmp";

# The newest ID's timestamp as Unix ms, and the file's reservation.
my $newest_ms_sql = q{SELECT (extract(epoch FROM max(snowflake_timestamp(id))) * 1000)::bigint FROM ids};
sub file_ms { my $t = slurp_file($file); $t =~ /^(\d+)\n\z/ or die "not one number: $t"; return $1 }

# The reservation worker may be writing the temporary file at that moment:
# wait until its rename has taken it away.
sub disk_full
{
	my $deadline = time() + $PostgreSQL::Test::Utils::timeout_default;
	until (symlink('/dev/full', $temporary))
	{
		die "symlink $temporary: $!" unless $!{EEXIST} && time() < $deadline;
		Time::HiRes::usleep(1_000);
	}
}
sub disk_free { unlink($temporary) or die "unlink $temporary: $!" }

disk_full();
# Calls until one needs the reservation extended.
my ($ok, $err) = (1, '');
for (my $i = 0; $ok && $i < 2000; $i++)
{
	my ($rc, $out);
	$rc = $node->psql('postgres',
		"INSERT INTO ids SELECT snowflake_nextval() RETURNING 1",
		stdout => \$out, stderr => \$err, extra_params => [ '-v', 'VERBOSITY=verbose' ]);
	$ok = $rc == 0;
	Time::HiRes::usleep(10_000) if $ok;
}
ok(!$ok, 'with a full disk, a call that needs the reservation extended fails');
like($err,
	qr/ERROR:  53100: could not write file "\Q$temporary\E": No space left on device/,
	'with SQLSTATE 53100, naming the temporary file and ENOSPC');
my $kept = file_ms();
cmp_ok($node->safe_psql('postgres', $newest_ms_sql), '<=', $kept,
	'no ID lies past the reservation on disk');
is($node->safe_psql('postgres',
		'SELECT (extract(epoch FROM reserved_until) * 1000)::bigint FROM snowflake_status()'),
	$kept, 'the reservation in force is the one on disk');
my ($rc) = $node->psql('postgres', 'SELECT snowflake_nextval()');
isnt($rc, 0, 'the next call fails too');
is(file_ms(), $kept, 'the file keeps its last whole value');

disk_free();
my $max_before = $node->safe_psql('postgres', 'SELECT max(id) FROM ids');
my $first_after = $node->safe_psql('postgres',
	'INSERT INTO ids SELECT snowflake_nextval() RETURNING id');
cmp_ok($first_after, '>', $max_before, 'with space again, IDs continue above every earlier one');
cmp_ok(file_ms(), '>', $kept, 'and the reservation moves on');

# A clean shutdown on a full disk: the file keeps the reservation.
my $newest_ms = $node->safe_psql('postgres', $newest_ms_sql);
disk_full();
my $offset = -s $node->logfile;
$node->stop;
like(slurp_file($node->logfile, $offset),
	qr/LOG:  could not write file "\Q$temporary\E": No space left on device/,
	'a clean shutdown on a full disk logs the failed write');
cmp_ok(file_ms(), '>=', $newest_ms, 'the file still covers every ID');
disk_free();
$node->start;
my $max_stored = $node->safe_psql('postgres', 'SELECT max(id) FROM ids');
my $restarted = $node->safe_psql('postgres', 'SELECT snowflake_nextval()');
cmp_ok($restarted, '>', $max_stored, 'after the restart IDs continue above every earlier one');
unlike(slurp_file($node->logfile), qr/PANIC/, 'no PANIC in the log');
$node->stop;
done_testing();
