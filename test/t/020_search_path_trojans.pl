# Objects a non-superuser plants never run with the extension's rights: the
# owner of the registry database plants in public better-matching and
# same-signature functions, aggregates and operators (the latter winning once
# public precedes pg_catalog on the database's path), each recording its call
# and trying to make the owner a superuser.  The registry worker, sessions
# of another role and of a superuser, snowflake_convert_column(), the lease
# functions and a layout recording then run none of them.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;
use Time::HiRes;

my $node = SnowflakeTest::new_node(
	'trojans',
	settings => {
		'snowflake.database' => 'appdb',
		'snowflake.registry_interval' => 200,
		'snowflake.lease_workers' => 4,
		# The client's clock is read before psql starts, which may take seconds.
		'snowflake.lease_clock_tolerance' => '60s'
	});

$node->safe_psql(
	'postgres', q(
CREATE ROLE appowner LOGIN;
CREATE ROLE bob LOGIN;
CREATE DATABASE appdb OWNER appowner;
));
$node->safe_psql('appdb', 'CREATE EXTENSION snowflake');

# The test's own statements in appdb run with a safe path, so that only the
# extension's statements can meet the trojans.
sub app_psql
{
	my ($sql, %params) = @_;
	return $node->safe_psql('appdb', "SET search_path = pg_catalog, pg_temp;\n$sql",
		%params);
}

# What a user sees: appdb's own search_path, public first.
sub as_role
{
	my ($role, $sql) = @_;
	return $node->safe_psql('appdb', $sql, extra_params => [ '-U', $role ]);
}

# --- the trojans ---------------------------------------------------------------
# Each operator trojan computes the real result, so that nothing breaks
# visibly: a successful attack would go unnoticed but for the record.
my @operators = (
	[ '=', 'integer', 'integer', 'boolean' ],
	[ '=', 'uuid', 'uuid', 'boolean' ],
	[ '<>', 'uuid', 'uuid', 'boolean' ],
	[ '=', 'name', 'name', 'boolean' ],
	[ '=', 'oid', 'oid', 'boolean' ],
	[ '<>', 'oid', 'regtype', 'boolean' ],
	[ '+', 'bigint', 'integer', 'bigint' ],
	[ '||', 'text', 'text', 'text' ],
	[ '*', 'numeric', 'integer', 'numeric' ],
	# The types the worker-id lease functions compare and compute with.
	[ '=', 'bigint', 'bigint', 'boolean' ],
	[ '<', 'bigint', 'bigint', 'boolean' ],
	[ '<=', 'bigint', 'bigint', 'boolean' ],
	[ '>=', 'integer', 'integer', 'boolean' ],
	[ '-', 'bigint', 'integer', 'bigint' ],
	[ '+', 'bigint', 'bigint', 'bigint' ],
	[ '=', 'text', 'text', 'boolean' ],
	[ '<>', 'name', 'name', 'boolean' ],
	[ '=', 'timestamptz', 'timestamptz', 'boolean' ],
	[ '>', 'interval', 'interval', 'boolean' ],
	[ '+', 'timestamptz', 'interval', 'timestamptz' ],);
my $operator_sql = '';
my $n = 0;
for my $op (@operators)
{
	my ($name, $left, $right, $result) = @$op;
	$n++;
	$operator_sql .= qq{
CREATE FUNCTION public.trojan_op_$n($left, $right) RETURNS $result
LANGUAGE plpgsql AS \$\$
BEGIN
    PERFORM public.trojan('$name($left,$right)');
    RETURN \$1 OPERATOR(pg_catalog.$name) \$2;
END
\$\$;
CREATE OPERATOR public.$name (LEFTARG = $left, RIGHTARG = $right,
                              FUNCTION = public.trojan_op_$n);
};
}

# Each function trojan returns what the real function would: its
# signature, result type and the real call.
my @functions = (
	[ 'quote_ident(name)', 'text', 'pg_catalog.quote_ident($1::pg_catalog.text)' ],
	[ 'now()', 'timestamptz', 'pg_catalog.now()' ],
	[ 'clock_timestamp()', 'timestamptz', 'pg_catalog.clock_timestamp()' ],
	[ 'pg_backend_pid()', 'integer', 'pg_catalog.pg_backend_pid()' ],
	[ 'floor(numeric)', 'numeric', 'pg_catalog.floor($1)' ],);
my $function_sql = '';
for my $function (@functions)
{
	my ($signature, $result, $real) = @$function;
	$function_sql .= qq{
CREATE FUNCTION public.$signature RETURNS $result
LANGUAGE plpgsql AS \$\$
BEGIN
    PERFORM public.trojan('$signature');
    RETURN $real;
END
\$\$;
};
}

app_psql(
	qq{
SET ROLE appowner;
CREATE TABLE public.trojan_calls (trojan text NOT NULL, called_by name NOT NULL);
GRANT SELECT, INSERT ON public.trojan_calls TO PUBLIC;

CREATE FUNCTION public.trojan(what text) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS \$\$
BEGIN
    INSERT INTO public.trojan_calls VALUES (what, current_user);
    BEGIN
        EXECUTE 'ALTER ROLE appowner SUPERUSER';
    EXCEPTION WHEN OTHERS THEN
        NULL;
    END;
END
\$\$;

$function_sql
CREATE FUNCTION public.trojan_max(bigint, bigint) RETURNS bigint
LANGUAGE plpgsql AS \$\$
BEGIN
    PERFORM public.trojan('max(bigint)');
    RETURN GREATEST(\$1, \$2);
END
\$\$;
CREATE AGGREGATE public.max(bigint) (SFUNC = public.trojan_max, STYPE = bigint);

CREATE FUNCTION public.trojan_count(bigint) RETURNS bigint
LANGUAGE plpgsql AS \$\$
BEGIN
    PERFORM public.trojan('count(*)');
    RETURN \$1 OPERATOR(pg_catalog.+) 1;
END
\$\$;
CREATE AGGREGATE public.count(*) (SFUNC = public.trojan_count, STYPE = bigint,
                                  INITCOND = '0');

CREATE FUNCTION public.generate_series(integer, integer) RETURNS SETOF integer
LANGUAGE plpgsql AS \$\$
BEGIN
    PERFORM public.trojan('generate_series(integer,integer)');
    RETURN QUERY SELECT * FROM pg_catalog.generate_series(\$1, \$2);
END
\$\$;

$operator_sql
ALTER DATABASE appdb SET search_path = public, pg_catalog;
});

is( app_psql(
		q{SELECT count(*) FROM pg_proc WHERE proowner = 'appowner'::regrole}),
	11 + scalar(@operators),
	'the trojans are in place');

# The trojans do work against a session that does not guard itself.
is( as_role('bob', q{SELECT 1 = 1}) . '|'
	  . app_psql(q{SELECT count(*) FROM public.trojan_calls}),
	't|1',
	'a trojan operator runs in an unguarded session of bob');
app_psql(q{SET ROLE appowner; DELETE FROM public.trojan_calls});

# --- the registry worker, a superuser ---------------------------------------
# Qualified throughout: poll_query_until() cannot set the path first.
my $beats_sql = q{SELECT n.beats FROM public.snowflake_nodes AS n
 WHERE n.instance_id OPERATOR(pg_catalog.=)
       (SELECT s.instance_id FROM public.snowflake_status() AS s)};
my $beats = app_psql($beats_sql);
ok( $node->poll_query_until(
		'appdb', "SELECT ($beats_sql) OPERATOR(pg_catalog.>=) " . ($beats + 10)),
	'the registry worker keeps heartbeating with the trojans in place');

# --- sessions of another role and of a superuser ---------------------------
as_role('bob', q{SELECT snowflake_nextval() FROM pg_catalog.generate_series(1, 3)});
like(
	as_role('bob', q{SELECT worker_id FROM snowflake_decode(snowflake_nextval())}),
	qr/^\d+$/,
	'bob generates and decodes IDs');
$node->safe_psql(
	'appdb', q{
CREATE TABLE orders (id serial PRIMARY KEY, item text);
INSERT INTO orders (item) VALUES ('tea');
SELECT * FROM snowflake_convert_column('orders', 'id');
SELECT snowflake_nextval();
});
is(app_psql(q{SELECT count(*) FROM public.orders}),
	1, 'a superuser converted a serial column in appdb');

# --- worker-id leases, as the extension's owner, called by another role -----
$node->safe_psql(
	'appdb', q{
SET search_path = pg_catalog, pg_temp;
GRANT EXECUTE ON FUNCTION public.snowflake_lease_worker(text, interval, timestamptz),
                          public.snowflake_renew_lease(bigint, bigint, timestamptz),
                          public.snowflake_release_lease(bigint, bigint)
   TO bob;});
# bob's statements use only the extension's functions (his clock a literal),
# with public first on his path.
sub bob_clock
{
	my $now = Time::HiRes::time();
	my @t = gmtime($now);
	return sprintf("'%04d-%02d-%02d %02d:%02d:%02d.%03d+00'",
		$t[5] + 1900, $t[4] + 1, @t[ 3, 2, 1, 0 ], int(($now - int($now)) * 1000));
}
my ($ttl_token, $worker, $node_id, $not_before) = split /\|/, as_role(
	'bob', qq{
SELECT token, worker_id, node_id, extract(epoch FROM not_before)
  FROM snowflake_lease_worker('bob', interval '1 minute', @{[ bob_clock() ]})});
my $conn_token = as_role('bob',
	qq{SELECT token FROM snowflake_lease_worker('bob', NULL, @{[ bob_clock() ]})});
my $epoch_ms = 1735689600000;    # 2025-01-01 UTC
my $last_id =
  ((int($not_before * 1000) + 1 - $epoch_ms) << 22) | ($node_id << 19) | ($worker << 12);
is( as_role(
		'bob', qq{
SELECT expires_at IS NOT NULL FROM snowflake_renew_lease($ttl_token, $last_id, @{[ bob_clock() ]})}),
	't',
	'bob renews his lease with an ID issued under it');
is(as_role('bob', qq{SELECT snowflake_release_lease($ttl_token, $last_id)}),
	't', 'and releases it');
is( app_psql(q{SELECT state FROM public.snowflake_leases WHERE holder = 'bob' ORDER BY token}),
	"released\ndisconnected",
	'a superuser reads the leases');

# --- a layout change, recorded as the extension's owner ----------------------
$node->append_conf('postgresql.conf', 'snowflake.sequence_bits = 13');
$node->restart;
my $decoded = as_role(
	'bob', q{
SELECT d.seq < 8192 FROM snowflake_decode(snowflake_nextval()) AS d
});
is($decoded, 't', 'bob generates under the new layout');
is( app_psql(q{SELECT count(*) FROM public.snowflake_layout}),
	2, 'the new layout was recorded');
$beats = app_psql($beats_sql);
ok( $node->poll_query_until(
		'appdb', "SELECT ($beats_sql) OPERATOR(pg_catalog.>=) " . ($beats + 10)),
	'the registry worker heartbeats after the restart');

# --- no trojan ran ----------------------------------------------------------
is( app_psql(
		q{SELECT string_agg(DISTINCT trojan || ' as ' || called_by, ', ')
            FROM public.trojan_calls}),
	'',
	'no trojan ran in any of the extension\'s statements');
is($node->safe_psql('postgres', q{SELECT rolsuper FROM pg_roles WHERE rolname = 'appowner'}),
	'f', 'appowner is still not a superuser');

$node->stop;
done_testing();
