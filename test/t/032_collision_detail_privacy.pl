# A node-id collision tells a client only the other instance's id, which
# every role may read in snowflake_nodes; where it runs (host, port, system
# identifier) goes to the server log alone.  With a faked running peer: under
# error, an unprivileged role's snowflake_nextval() DETAIL names the instance
# only; under warn, the WARNING is logged and the session hears nothing;
# snowflake_status() shows the collision, not the peer.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeTest;
use SnowflakeRegistryPeer;

my $node = SnowflakeRegistryPeer::registry_node('collision_privacy',
	{ 'snowflake.database' => 'postgres' }, extension => 'postgres');
$node->safe_psql(
	'postgres', q{
CREATE ROLE regress_nobody LOGIN;
CREATE ROLE regress_stats LOGIN IN ROLE pg_read_all_stats});

my $peer = '00000000-0000-4000-8000-0000000000aa';
my $host = 'db-secret-host.internal';
my $port = 6543;
my $system = '7431000000000000001';
my $secret = qr/\Q$host\E|\b$port\b|$system/;
my $where = qr/\Q$host\E|$system/;	# no port: numbers abound in a status row

# Runs $sql as $role in a new session; returns its exit code and stderr.
sub as_role
{
	my ($role, $sql) = @_;
	my ($ret, $stdout, $stderr) = $node->psql('postgres', $sql, extra_params => [ '-U', $role ]);
	return ($ret, $stderr, $stdout);
}

my ($ret, $stderr, $stdout) =
  as_role('regress_nobody', 'SELECT snowflake_nextval() > 0');
is($ret, 0, 'regress_nobody generates IDs before any collision');
($ret, $stderr) = as_role('regress_nobody', 'SELECT host FROM snowflake_nodes');
like($stderr, qr/permission denied/,
	'regress_nobody may not read the host column of snowflake_nodes');

# --- the peer ---------------------------------------------------------------------
my $beating = SnowflakeRegistryPeer::start_peer(
	$node,
	instance => $peer,
	system => $system,
	host => $host,
	port => $port);
ok($node->poll_query_until('postgres', 'SELECT node_collision FROM snowflake_status()'),
	'the registry finds the running peer');

# --- on_node_collision = error ------------------------------------------------------
my $log_offset = -s $node->logfile;
($ret, $stderr) = as_role('regress_nobody', 'SELECT snowflake_nextval()');
isnt($ret, 0, 'snowflake_nextval() fails for regress_nobody');
like(
	$stderr,
	qr/ERROR:  snowflake node_id 0 is also used by another running instance$/m,
	'the error');
like(
	$stderr,
	qr/^DETAIL:  \Qsnowflake_nodes shows instance $peer heartbeating; IDs from the two could collide, and snowflake.on_node_collision is "error".\E$/m,
	'its DETAIL names the other instance');
unlike($stderr, $secret,
	'and not its host, port or system identifier');
unlike($stderr, qr/ on host /, 'nor any host at all');

ok( $node->wait_for_log(
		qr/ERROR:  snowflake node_id 0 is also used by another running instance\n[^\n]*DETAIL:  \Qsnowflake_nodes shows instance $peer on host $host port $port (timeline 1, system $system) heartbeating; IDs from the two could collide\E/,
		$log_offset),
	'the server log has the host, port, timeline and system identifier');

($ret, $stderr) = as_role('regress_stats', 'SELECT snowflake_nextval()');
isnt($ret, 0, 'snowflake_nextval() fails for a member of pg_read_all_stats too');
like($stderr, qr/DETAIL:  \Qsnowflake_nodes shows instance $peer heartbeating;\E/,
	'with the same DETAIL');
unlike($stderr, $secret, 'which has no host, port or system identifier either');

# snowflake_status() flags the collision and names no peer.
($ret, $stderr, $stdout) = as_role('regress_nobody',
	'SELECT s::text, node_collision FROM snowflake_status() AS s');
is($ret, 0, 'regress_nobody reads snowflake_status()');
like($stdout, qr/\|t$/, 'it shows node_collision');
unlike($stdout, $where, 'and not where the peer runs');

# --- on_node_collision = warn -------------------------------------------------------
SnowflakeRegistryPeer::set_policy($node, 'postgres', 'warn');
($ret, $stderr) = as_role('regress_nobody', 'SELECT snowflake_nextval() > 0');
is($ret, 0, 'with warn, regress_nobody gets IDs');
is($stderr, '', 'and no message at all');

# The registry's WARNING is in the log: the collision is found afresh after
# the peer's row goes and comes back.
$log_offset = -s $node->logfile;
$node->safe_psql(
	'postgres', qq{
CREATE TABLE peer_row AS SELECT * FROM snowflake_nodes WHERE instance_id = '$peer';
DELETE FROM snowflake_nodes WHERE instance_id = '$peer'});
ok( $node->poll_query_until(
		'postgres', 'SELECT NOT node_collision FROM snowflake_status()'),
	'the collision clears while the row is gone');
$node->safe_psql('postgres',
	'INSERT INTO snowflake_nodes SELECT * FROM peer_row; DROP TABLE peer_row');
ok( $node->wait_for_log(
		qr/WARNING:  snowflake node_id 0 is also used by another running instance\n[^\n]*DETAIL:  \Qsnowflake_nodes shows instance $peer on host $host port $port (timeline 1, system $system) heartbeating.\E/,
		$log_offset),
	"the registry's WARNING in the log names where the peer runs");
($ret, $stderr) = as_role('regress_nobody', 'SELECT snowflake_nextval() > 0');
is($ret, 0, 'IDs go on under warn');
is($stderr, '', 'and the session hears nothing of the peer');

$node->stop;
$beating->finish;
done_testing();
