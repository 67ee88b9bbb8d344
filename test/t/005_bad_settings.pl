# Bad snowflake.* settings (layout, node id, epoch) stop the server with the
# documented FATAL message; corrected, the server starts with them; a valid
# non-default layout issues IDs that decode to the configured node id.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;

my $node = SnowflakeTest::settings_node('settings');

# Starts the server with %settings; it must fail with FATAL $message.
sub check_refused
{
	my ($case, $message, %settings) = @_;
	SnowflakeTest::write_settings($node, %settings);
	like(SnowflakeTest::start_refused($node, "$case: the server does not start"),
		qr/FATAL:  \Q$message\E\n/, "$case: the log says why");
}

# Starts the server with %settings and checks it runs them; stops it again.
sub check_accepted
{
	my ($case, %settings) = @_;
	SnowflakeTest::write_settings($node, %settings);
	# Each case is a new layout on a directory that issued no IDs: reset the
	# record of the last layout and lease space (their changes: 006, 029).
	unlink $node->data_dir . '/snowflake.layout', $node->data_dir . '/snowflake.leases';

	ok($node->start(fail_ok => 1), "$case: the server starts");
	for my $name (sort keys %settings)
	{
		is($node->safe_psql('postgres', "SHOW snowflake.$name"),
			$settings{$name}, "$case: snowflake.$name is $settings{$name}");
	}
	$node->stop;
	unlink $node->data_dir . '/snowflake.leases';
}

# Each case, in order: [refused => case, FATAL message, settings] or
# [accepted => case, settings].
for my $c (
	[ refused => 'lease_workers 128 with 7 worker bits',
		'snowflake.lease_workers 128 leaves no worker id to sessions', lease_workers => 128 ],
	[ accepted => 'lease_workers 127 with 7 worker bits', lease_workers => 127 ],
	[ refused => 'node_id 8 with 3 node bits',
		'snowflake.node_id 8 is out of range for snowflake.node_bits = 3', node_id => 8 ],
	[ accepted => 'node_id 8 with 4 node bits', node_id => 8, node_bits => 4 ],
	[ refused => 'node_id 1 with no node bits',
		'snowflake.node_id 1 is out of range for snowflake.node_bits = 0', node_id => 1, node_bits => 0 ],
	[ accepted => 'node_id 0 with no node bits', node_id => 0, node_bits => 0 ],
	[ refused => '29 timestamp bits',
		'snowflake.node_bits (10) + snowflake.worker_bits (12) + '
		  . 'snowflake.sequence_bits (12) leave 29 bits for the timestamp',
		node_bits => 10, worker_bits => 12, sequence_bits => 12 ],
	[ accepted => '37 timestamp bits', node_bits => 10, worker_bits => 6, sequence_bits => 10 ],
	[ refused => 'epoch in the future', 'snowflake.epoch "2999-01-01" is in the future',
		epoch => '2999-01-01' ],
	[ refused => 'malformed epoch', 'invalid value for snowflake.epoch: "yesterday"',
		epoch => 'yesterday' ],
	[ refused => 'epoch too far back for 31 timestamp bits',
		'snowflake.epoch "2000-01-01" is too far in the past for 31 timestamp bits',
		epoch => '2000-01-01', node_bits => 8, worker_bits => 12, sequence_bits => 12 ],
	[ accepted => 'epoch with time of day', epoch => '2025-06-30 23:59:59.999' ])
{
	my ($kind, @args) = @$c;
	$kind eq 'refused' ? check_refused(@args) : check_accepted(@args);
}

# --- values the GUC machinery would replace by the default ---------------------
# PostgreSQL only warns and runs with the default, which could let two
# primaries issue the same IDs: each must stop the server.
for my $bad (
	[ node_id => -1 ],
	[ node_id => 70000 ],
	[ node_id => 'one' ],
	[ node_bits => 17 ],
	[ worker_bits => -1 ],
	[ sequence_bits => 0 ],
	[ max_drift => '2d' ],
	[ registry_interval => '10ms' ],
	[ on_node_collision => 'stop' ])
{
	my ($name, $value) = @$bad;
	check_refused("$name $value", qq{invalid value for parameter "snowflake.$name": "$value"},
		$name => $value);
}
ok($node->log_contains(qr/DETAIL:  snowflake.node_id must be an integer from 0 to 65535\./),
	'the detail gives the allowed range');
ok($node->log_contains(qr/DETAIL:  snowflake.sequence_bits must be an integer from 1 to 24\./),
	'the detail gives the allowed range of sequence_bits');
ok( $node->log_contains(
		qr/DETAIL:  snowflake.max_drift must be an integer from 0 ms to 86400000 ms\./),
	'the detail gives the range in milliseconds');
check_refused(
	'a misspelt setting',
	'unrecognized configuration parameter "snowflake.node_bit"',
	node_bit => 4);
check_accepted('max_drift with a unit', max_drift => '2s', registry_interval => '1min');

# Each refusal above carried SQLSTATE 22023.
$node->append_conf('postgresql.conf', "log_error_verbosity = verbose");
check_refused(
	'a misspelt setting, verbose',
	'22023: unrecognized configuration parameter "snowflake.nodeid"',
	nodeid => 1);
check_refused(
	'node_id -1, verbose',
	'22023: invalid value for parameter "snowflake.node_id": "-1"',
	node_id => -1);
$node->append_conf('postgresql.conf', "log_error_verbosity = default");

# --- a valid non-default layout issues working IDs ---------------------------
check_accepted(
	'non-default layout',
	epoch => '2024-06-01 12:30',
	node_bits => 5,
	node_id => 31,
	worker_bits => 6,
	sequence_bits => 10);
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION snowflake');

is( $node->safe_psql(
		'postgres', q(
SET TimeZone = 'UTC';
SELECT epoch, timestamp_bits, node_bits, worker_bits, sequence_bits, node_id
  FROM snowflake_status()
)),
	'2024-06-01 12:30:00+00|42|5|6|10|31',
	'snowflake_status() reports the configured layout');

my ($node_id, $worker_id, $seq_ok, $ts_near_now) = split /\|/,
  $node->safe_psql(
	'postgres', q(
SELECT d.node_id, d.worker_id, d.seq BETWEEN 0 AND 1023,
       abs(extract(epoch FROM d.ts - now())) < 60
  FROM snowflake_decode(snowflake_nextval()) AS d
));
is($node_id, 31, 'a new ID decodes to node id 31');
cmp_ok($worker_id, '<', 64, 'its worker id fits 6 bits');
is($seq_ok, 't', 'its sequence fits 10 bits');
is($ts_near_now, 't', 'its timestamp is close to now');

# The same ID split by hand: timestamp | 5 node bits | 6 worker | 10 sequence.
is( $node->safe_psql(
		'postgres', q(
SELECT (id >> 16) & 31 = 31
   AND d.ts = timestamptz '2024-06-01 12:30:00+00'
              + (id >> 21) * interval '1 millisecond'
  FROM snowflake_nextval() AS id, snowflake_decode(id) AS d
)),
	't',
	'the node id sits in bits 16..20, the timestamp above them');

# No worker id is set aside for leases here (snowflake.lease_workers = 0).
my ($ret, $out, $err) = $node->psql('postgres',
	q{SELECT * FROM snowflake_lease_worker('nothing to lease', interval '1 minute')});
like($err, qr/ERROR:  no snowflake worker ids are set aside for leases/,
	'with snowflake.lease_workers = 0 there is nothing to lease');

$node->stop;
done_testing();
