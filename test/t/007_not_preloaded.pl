# Without shared_preload_libraries, CREATE EXTENSION fails and the C
# functions, however reached, raise an error whose hint names it.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('not_preloaded');
$node->init;
$node->start;

my $message = 'snowflake must be loaded via shared_preload_libraries';
my $hint = 'HINT:  Add snowflake to shared_preload_libraries in postgresql.conf '
  . 'and restart the server.';

# Runs SQL expected to fail and returns its stderr.
sub failing_sql
{
	my ($sql) = @_;
	my ($ret, $stdout, $stderr) = $node->psql('postgres', $sql);
	isnt($ret, 0, "fails: $sql");
	return $stderr;
}

my $stderr = failing_sql('CREATE EXTENSION snowflake');
like($stderr, qr/ERROR:  \Q$message\E/, 'CREATE EXTENSION names the cause');
like($stderr, qr/\Q$hint\E/, 'CREATE EXTENSION hints at the fix');
is($node->safe_psql('postgres',
		"SELECT count(*) FROM pg_extension WHERE extname = 'snowflake'"),
	'0', 'the extension was not created');

# The C functions themselves refuse too, even when declared by hand.
$node->safe_psql('postgres', q{
	CREATE FUNCTION nextval_by_hand() RETURNS bigint
		AS 'snowflake', 'snowflake_nextval' LANGUAGE C;
	CREATE FUNCTION decode_by_hand(bigint, OUT ts timestamptz, OUT node_id int,
		OUT worker_id int, OUT seq int)
		AS 'snowflake', 'snowflake_decode' LANGUAGE C STRICT;
	CREATE FUNCTION release_by_hand() RETURNS boolean
		AS 'snowflake', 'snowflake_release_worker' LANGUAGE C;
});
for my $call ('SELECT nextval_by_hand()', 'SELECT * FROM decode_by_hand(1)',
	'SELECT release_by_hand()')
{
	$stderr = failing_sql("\\set VERBOSITY verbose\n$call");
	like($stderr, qr/ERROR:  55000: \Q$message\E/, "SQLSTATE 55000 and message: $call");
	like($stderr, qr/\Q$hint\E/, "hint: $call");
}

# Loaded late, the library defines no settings of its own.
is($node->safe_psql('postgres',
		"LOAD 'snowflake'; SELECT count(*) FROM pg_settings WHERE name LIKE 'snowflake.%'"),
	'0', 'no settings without preloading');

$node->stop;
done_testing();
