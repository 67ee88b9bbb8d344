# Restores of a base backup, and a clone, continue the IDs of the server
# whose history they continue: the floor is the backup's reservation raised
# by the RESERVE records replayed, + 1.  "origin" archives its WAL and issues
# IDs in phases a, (base backup) b, (restore point, target time) c, (clone
# backup) d.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes ();
use SnowflakeClock;
use SnowflakeTest;

my $behind_s = 600;

my $origin = SnowflakeTest::new_node(
	'origin',
	init => [ allows_streaming => 1, has_archiving => 1 ],
	settings => {
		timezone => 'UTC',
		'snowflake.sequence_bits' => 1,
		'snowflake.max_drift' => '1h'
	},
	extension => 'postgres');
$origin->safe_psql(
	'postgres', q{
CREATE TABLE ids (
    id    bigint PRIMARY KEY DEFAULT snowflake_nextval(),
    phase text NOT NULL
)});

# The IDs each phase issued, as the client saw them.
my %issued;

# Issues, in one session, $n rows of $phase and $n IDs in no row; returns all.
sub generate
{
	my ($node, $phase, $n) = @_;
	my @ids = split /\n/,
	  $node->safe_psql(
		'postgres', qq{
INSERT INTO ids (phase) SELECT '$phase' FROM generate_series(1, $n) RETURNING id;
SELECT snowflake_nextval() FROM generate_series(1, $n)});
	is(scalar(@ids), 2 * $n, "$phase: " . $node->name . " issued " . 2 * $n . " IDs");
	return @ids;
}

# The largest and smallest of IDs, compared as 64-bit integers, not floats.
sub max_id
{
	my $m = shift;
	for (@_) { $m = $_ if $_ > $m }
	return $m;
}

sub min_id
{
	my $m = shift;
	for (@_) { $m = $_ if $_ < $m }
	return $m;
}

# The IDs of the phases @phases.
sub issued_in
{
	return map { @{ $issued{$_} } } @_;
}

# The Unix time in ms of the timestamp expression $expr on $node.
sub unix_ms
{
	my ($node, $expr) = @_;
	return $node->safe_psql('postgres', "SELECT (extract(epoch FROM $expr) * 1000)::bigint");
}

sub reserved_ms
{
	my ($node) = @_;
	return unix_ms($node, '(SELECT reserved_until FROM snowflake_status())');
}

# The phases whose rows $node has, with their counts ("a:500,b:500").
sub phases_in
{
	my ($node) = @_;
	return $node->safe_psql('postgres',
		q{SELECT string_agg(phase || ':' || n, ',' ORDER BY phase)
		    FROM (SELECT phase, count(*) AS n FROM ids GROUP BY phase) AS p});
}

# A server made from $backup of origin, its clock $offset s off, restoring
# from origin's archive unless $clone, once recovery has ended.  It archives
# nothing, or the next restore would follow its new timeline.
sub restored
{
	my ($name, $backup, $offset, %opt) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init_from_backup($origin, $backup,
		has_restoring => !$opt{clone}, standby => 0);
	$node->append_conf('postgresql.conf', "archive_mode = off\n" . ($opt{conf} // ''));
	SnowflakeClock::start($node, $offset);
	$node->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()')
	  or die "$name did not end recovery";
	return $node;
}

# Checks that the IDs of $phase lie above all of @before, none repeated.
sub check_above
{
	my ($phase, $what, @before) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	my @new = @{ $issued{$phase} };
	cmp_ok(min_id(@new), '>', max_id(@before), "$phase: every ID lies above $what");
	my %seen;
	is(scalar(grep { $seen{$_}++ } @new, @before), 0, "$phase: no ID occurs twice");
	return;
}

# --- origin's history ----------------------------------------------------------------
$issued{a} = [ generate($origin, 'a', 1000) ];
$origin->backup('base');
$issued{b} = [ generate($origin, 'b', 1000) ];
# On a fast machine "b" can end inside the reservation the backup copied:
# IDs in no row are issued until a RESERVE record after the backup raises it.
my $backup_reserved = slurp_file($origin->backup_dir . '/base/snowflake.reservation') + 0;
$origin->poll_query_until('postgres', qq{
SELECT extract(epoch FROM reserved_until) * 1000 > $backup_reserved
  FROM snowflake_status(),
       (SELECT count(snowflake_nextval()) FROM generate_series(1, 200)) AS more})
  or die "origin's reservation stayed at the backup's";

# The target: a time after every commit of "b", then a restore point.  The
# reservation read around it bounds the one recovery to it replays.
my $target_time = $origin->safe_psql('postgres', 'SELECT clock_timestamp()');
my $reserved_before_target = reserved_ms($origin);
$origin->safe_psql('postgres', "SELECT pg_create_restore_point('before_c')");
my $reserved_after_target = reserved_ms($origin);

$origin->restart;
# "c" reaches beyond the reservation as of the target: 4000 IDs run 2 s ahead.
$issued{c} = [ generate($origin, 'c', 4000) ];
my @c_workers = split /\n/,
  $origin->safe_psql('postgres',
	'SELECT DISTINCT (snowflake_decode(id)).worker_id FROM ids WHERE phase = \'c\'');
is("@c_workers", '0', 'c: the rows of "c" have worker id 0 (the first session after the restart)');
my $c_max_ms = unix_ms($origin, '(snowflake_decode(' . max_id(@{ $issued{c} }) . ')).ts');
cmp_ok($c_max_ms, '>', $reserved_after_target + 1000,
	'c: the last IDs of "c" lie more than 1 s past the reservation as of the target');

$origin->backup('clone');
$issued{d} = [ generate($origin, 'd', 500) ];
my $last_ms = unix_ms($origin, '(snowflake_decode(' . max_id(issued_in(qw(a b c d))) . ')).ts');
my $last_segment = $origin->safe_psql('postgres', 'SELECT pg_walfile_name(pg_switch_wal())');
$origin->poll_query_until('postgres',
	"SELECT last_archived_wal >= '$last_segment' FROM pg_stat_archiver")
  or die "origin did not archive $last_segment";
$origin->stop;

# --- 1. restore to the end of the archive, clock 10 min behind -----------------------
my $to_end = restored('to_end', 'base', -$behind_s);
is(phases_in($to_end), 'a:1000,b:1000,c:4000,d:500',
	'to the end of the archive: every row of origin is there');
cmp_ok(reserved_ms($to_end), '>=', $last_ms,
	'the replayed reservation covers the last ID origin issued');
my $log_offset = -s $to_end->logfile;
$issued{end} = [ generate($to_end, 'end', 1000) ];
check_above('end', 'every ID origin issued (clock 10 min behind)', issued_in(qw(a b c d)));
like(
	slurp_file($to_end->logfile, $log_offset),
	qr/WARNING:  system clock is \d+ ms behind the snowflake reservation/,
	'the gap after recovery is a WARNING (no exact floor of a clean shutdown)');
$to_end->stop;

# --- 2. recovery to the restore point, clock 10 min behind: not guaranteed -----------
my $to_name = restored('to_name', 'base', -$behind_s,
	conf => "recovery_target_name = 'before_c'\nrecovery_target_action = 'promote'\n");
is(phases_in($to_name), 'a:1000,b:1000', 'to the restore point: the rows up to it, none after');
my $floor_reserved = reserved_ms($to_name);
ok( $floor_reserved >= $reserved_before_target && $floor_reserved <= $reserved_after_target,
	"its reservation is origin's as of the target ($reserved_before_target <= $floor_reserved <= $reserved_after_target)"
);
cmp_ok($floor_reserved, '>', $backup_reserved,
	"RESERVE records replayed up to the target raised the backup's snowflake.reservation ($backup_reserved)");
$issued{name} = [ generate($to_name, 'name', 2000) ];
check_above('name', 'every ID origin issued up to the target', issued_in(qw(a b)));
is( unix_ms($to_name, '(snowflake_decode(' . min_id(@{ $issued{name} }) . ')).ts'),
	$floor_reserved + 1,
	'its first ID has the floor, the reservation as of the target + 1 ms');
cmp_ok(min_id(@{ $issued{name} }), '<', max_id(@{ $issued{c} }),
	'NOT guaranteed: its IDs lie below IDs origin issued after the target');
my %c_ids = map { $_ => 1 } @{ $issued{c} };
my $same = grep { $c_ids{$_} } @{ $issued{name} };
cmp_ok($same, '>', 0, "NOT guaranteed: $same of its IDs are IDs origin issued after the target");
$to_name->stop;

# --- 2. point-in-time recovery to the target time, clock right -----------------------
# origin's IDs ran up to max_drift ahead of its clock; the restore starts after them.
SnowflakeTest::wait_until(sub { Time::HiRes::time() * 1000 > $last_ms + 1 },
	"the clock to pass origin's last ID");
my $to_time = restored('to_time', 'base', 0,
	conf => "recovery_target_time = '$target_time'\nrecovery_target_action = 'promote'\n");
is(phases_in($to_time), 'a:1000,b:1000', 'to the target time: the rows up to it, none after');
$issued{time} = [ generate($to_time, 'time', 1000) ];
check_above('time', 'every ID origin issued, after the target too', issued_in(qw(a b c d)));
$to_time->stop;

# --- 3. a clone started as a primary, origin stopped ---------------------------------
my $clone = restored('clone', 'clone', 0, clone => 1);
is(phases_in($clone), 'a:1000,b:1000,c:4000', 'the clone has the rows up to its backup');
$issued{clone} = [ generate($clone, 'clone', 1000) ];
check_above('clone', 'every ID origin issued, after the backup too', issued_in(qw(a b c d)));
$clone->stop;

done_testing();
