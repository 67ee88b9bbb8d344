# SnowflakeRegistryPeer: a node whose registry runs often and refuses IDs on
# a collision, and a running peer with its node id faked in snowflake_nodes
# (its beat count growing, as replication from a live instance would make it).
package SnowflakeRegistryPeer;

use strict;
use warnings;
use Test::More;
use SnowflakeTest;

# The error (and WARNING) of a collision with node id 0, the default.
our $collision = 'snowflake node_id 0 is also used by another running instance';

# Returns a started node $name with snowflake preloaded, registry rounds
# every 200 ms and snowflake.on_node_collision = error, and %settings (see
# SnowflakeTest::new_node); %opt: conf (more lines), extension.
sub registry_node
{
	my ($name, $settings, %opt) = @_;
	return SnowflakeTest::new_node(
		$name,
		settings => {
			'snowflake.registry_interval' => 200,
			'snowflake.on_node_collision' => 'error',
			%{ $settings // {} }
		},
		%opt);
}

# The peer's row and beats: %peer may set instance (a uuid), system (its
# system identifier), host, port, beats (how many) and every (seconds
# between two).
sub _peer
{
	my (%peer) = @_;
	return (
		instance => '00000000-0000-4000-8000-000000000001',
		system => '1',
		host => 'elsewhere',
		port => 5432,
		beats => 3000,
		every => 0.1,
		%peer);
}

# SQL that puts the peer's row, with node id 0, into snowflake_nodes (in
# place of any row of that instance).
sub insert_sql
{
	my %p = _peer(@_);
	return qq{
DELETE FROM snowflake_nodes WHERE instance_id = '$p{instance}';
INSERT INTO snowflake_nodes (node_id, instance_id, system_identifier, timeline, host,
                             port, data_directory, started_at, last_seen, beats)
VALUES (0, '$p{instance}', '$p{system}', 1, '$p{host}', $p{port}, '/elsewhere', now(), now(), 1)};
}

# SQL that adds a beat to the peer's row every so often, one transaction
# each, until it has added them all.
sub beat_sql
{
	my %p = _peer(@_);
	return qq{
DO \$\$
BEGIN
    FOR i IN 1 .. $p{beats} LOOP
        UPDATE snowflake_nodes SET beats = beats + 1 WHERE instance_id = '$p{instance}';
        COMMIT;
        PERFORM pg_sleep($p{every});
    END LOOP;
END
\$\$};
}

# Puts the peer (%peer, see above) into the snowflake_nodes of $node's
# database "postgres" and starts its beats in a background session "peer";
# returns the session's IPC::Run harness.
sub start_peer
{
	my ($node, %peer) = @_;
	$node->safe_psql('postgres', insert_sql(%peer));
	return SnowflakeTest::start_psql($node, $node->basedir, 'peer', '-c', beat_sql(%peer));
}

# Sets snowflake.on_node_collision to $policy with ALTER SYSTEM and a
# reload (in $db), and checks that it is in force.
sub set_policy
{
	my ($node, $db, $policy) = @_;
	$node->safe_psql($db,
		"ALTER SYSTEM SET snowflake.on_node_collision = '$policy'; SELECT pg_reload_conf()");
	ok($node->poll_query_until($db, 'SHOW snowflake.on_node_collision', $policy),
		"on_node_collision is $policy after the reload");
	return;
}

1;
