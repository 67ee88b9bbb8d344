# The text a lease carries is valid in every database of the server: in a
# SQL_ASCII database a holder that is not printable ASCII is refused
# (22021), and a lease granted there reads the same in a UTF8 database, as
# text and with client_encoding LATIN1.

use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;

my $node = SnowflakeTest::new_node(
	'text',
	init => [ extra => [ '--encoding=UTF8', '--locale=C' ] ],
	settings => { 'snowflake.database' => 'legacydb', 'snowflake.lease_workers' => 4 });
$node->safe_psql(
	'postgres', q(
CREATE DATABASE legacydb ENCODING 'SQL_ASCII' TEMPLATE template0 LC_COLLATE 'C' LC_CTYPE 'C';
CREATE DATABASE utf8db ENCODING 'UTF8' TEMPLATE template0 LC_COLLATE 'C' LC_CTYPE 'C';
));
is($node->safe_psql('legacydb', 'SHOW server_encoding'), 'SQL_ASCII', 'legacydb is SQL_ASCII');
is($node->safe_psql('utf8db', 'SHOW server_encoding'), 'UTF8', 'utf8db is UTF8');
$node->safe_psql('legacydb', 'CREATE EXTENSION snowflake');

# A grant in the SQL_ASCII database with such a holder is refused.
my ($ret, $out, $err) = $node->psql('legacydb',
	q{SELECT token FROM snowflake_lease_worker(E'host\xff', interval '1 hour')},
	extra_params => [ '-v', 'VERBOSITY=verbose' ]);
isnt($ret, 0, 'a holder with byte 0xff is refused');
like($err, qr/ERROR:  22021: a snowflake lease's holder must be printable ASCII/,
	'with SQLSTATE 22021 and its message');
like($err, qr/DETAIL:  Byte 5 of the holder is 0xFF, outside printable ASCII \(0x20 to 0x7E\)\./,
	'the detail names the byte');
is($node->safe_psql('legacydb', 'SELECT count(*) FROM snowflake_leases'),
	'0', 'nothing was granted');

# A printable holder is granted; the UTF8 database reads it, also in LATIN1.
my $token = $node->safe_psql('legacydb',
	q{SELECT token FROM snowflake_lease_worker('host-ascii', interval '1 hour')});
$node->safe_psql('utf8db', 'CREATE EXTENSION snowflake');
($ret, $out, $err) = $node->psql('utf8db',
	qq{SELECT upper(holder) || '|' || state FROM snowflake_leases WHERE token = $token});
is($ret, 0, 'a UTF8 database reads the holder through a text function') or diag($err);
is($out, 'HOST-ASCII|held', 'and sees the text granted in the SQL_ASCII database');
($ret, $out, $err) = $node->psql('utf8db',
	"SET client_encoding = 'LATIN1';\nSELECT holder FROM snowflake_leases WHERE token = $token");
is($ret, 0, 'a LATIN1 client of the UTF8 database reads it') or diag($err);
is($out, 'host-ascii', 'the same text');

$node->stop;
done_testing();
