# The text a lease carries is valid in every database of the server:
# leases belong to the server, and a holder given
# in a SQL_ASCII database was shown as invalid UTF-8 in every UTF8 one,
# where monitoring queries then failed.
#
# - In a SQL_ASCII database a grant with a holder that is not printable
#   ASCII (byte 0xff) is refused (22021) and grants nothing.
# - A lease that 1.4 recorded there with such bytes (in its holder and
#   application_name) is carried into 1.5 by the update with each of them
#   shown as '?', and a UTF8 database reads it, also through text
#   functions and with client_encoding LATIN1.

use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;
use SnowflakeOldVersions;

# The 1.4 database needs the first release's install script, which only a
# relocated copy of the installation has (SnowflakeOldVersions).
my $node = SnowflakeTest::new_node(
	'text',
	install => [ install_path => SnowflakeOldVersions::relocated_install('text') ],
	init => [ extra => [ '--encoding=UTF8', '--locale=C' ] ],
	settings => { 'snowflake.database' => 'legacydb', 'snowflake.lease_workers' => 4 });
$node->safe_psql(
	'postgres', q(
CREATE DATABASE legacydb ENCODING 'SQL_ASCII' TEMPLATE template0 LC_COLLATE 'C' LC_CTYPE 'C';
CREATE DATABASE utf8db ENCODING 'UTF8' TEMPLATE template0 LC_COLLATE 'C' LC_CTYPE 'C';
));
is($node->safe_psql('legacydb', 'SHOW server_encoding'), 'SQL_ASCII', 'legacydb is SQL_ASCII');
is($node->safe_psql('utf8db', 'SHOW server_encoding'), 'UTF8', 'utf8db is UTF8');

# A database still at 1.4, with a lease its functions recorded before the
# restart that loaded library 1.5: holder and application_name hold bytes
# that are not UTF-8.
$node->safe_psql(
	'legacydb', q{
CREATE EXTENSION snowflake VERSION '1.0';
ALTER EXTENSION snowflake UPDATE TO '1.4';
INSERT INTO snowflake_worker_leases
       (node_id, worker_id, token, holder, holder_role, application_name, ttl, window_ms,
        layout, granted_at, renewed_at, not_before_ms, not_after_ms)
SELECT 0, 127, 1, E'host\xff\xfe-1.4', current_user, E'app\xe9', interval '1 hour', 3600000,
       '1735689600000/3/7/12', now(), now(), (extract(epoch FROM now()) * 1000)::bigint - 1,
       (extract(epoch FROM now()) * 1000)::bigint + 3600000;
});
my ($ret, $out, $err) = $node->psql('legacydb', q{ALTER EXTENSION snowflake UPDATE TO '1.5'});
is($ret, 0, 'the SQL_ASCII database updates to 1.5') or diag($err);
is( $node->safe_psql(
		'legacydb', q{SELECT holder || '|' || application_name || '|' || state
  FROM snowflake_leases WHERE token = 1}),
	'host??-1.4|app?|held',
	'the update carries the lease of 1.4, with each byte outside printable ASCII as ?');

# A grant in the SQL_ASCII database with such a holder is refused.
($ret, $out, $err) = $node->psql('legacydb',
	q{SELECT token FROM snowflake_lease_worker(E'host\xff', interval '1 hour')},
	extra_params => [ '-v', 'VERBOSITY=verbose' ]);
isnt($ret, 0, 'a holder with byte 0xff is refused');
like($err, qr/ERROR:  22021: a snowflake lease's holder must be printable ASCII/,
	'with SQLSTATE 22021 and its message');
like($err, qr/DETAIL:  Byte 5 of the holder is 0xFF, outside printable ASCII \(0x20 to 0x7E\)\./,
	'the detail names the byte');
is($node->safe_psql('legacydb', 'SELECT count(*) FROM snowflake_leases'),
	'1', 'nothing was granted');

# The UTF8 database reads the lease, as text, and in LATIN1.
$node->safe_psql('utf8db', 'CREATE EXTENSION snowflake');
($ret, $out, $err) = $node->psql('utf8db',
	q{SELECT upper(holder) || '|' || upper(application_name) FROM snowflake_leases WHERE token = 1});
is($ret, 0, 'a UTF8 database reads the holder through a text function') or diag($err);
is($out, 'HOST??-1.4|APP?', 'and sees the cleaned text');
($ret, $out, $err) = $node->psql('utf8db',
	"SET client_encoding = 'LATIN1';\nSELECT holder FROM snowflake_leases WHERE token = 1");
is($ret, 0, 'a LATIN1 client of the UTF8 database reads it') or diag($err);
is($out, 'host??-1.4', 'the same text');

$node->stop;
done_testing();
