# Worker-id leases resist the attacks that worked on 1.4's SQL lease design
# (overloads and trojans found by name, a renamed schema, slow statements,
# SET ROLE, rolled-back grants); each check below fails on 1.4.  Every trojan
# records its call in trap.trojan_calls and, run as a superuser, makes its
# planter one and writes a file into the data directory.  Background sessions
# are gated by advisory locks; the test waits for their pg_stat_activity state.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SnowflakeOldVersions;
use SnowflakeTest;
use Test::More;

# A table public.snowflake_worker_leases with the columns of 1.4's, whose
# row type 1.4's SECURITY DEFINER code used: what an attacker plants in a
# renamed schema public.
my $lookalike_lease_table = q{
CREATE TABLE public.snowflake_worker_leases (
    node_id integer, worker_id integer, token bigint, holder text, holder_role name,
    client_addr inet, application_name text, backend_pid integer, backend_start timestamptz,
    instance_id uuid, ttl interval, window_ms bigint, layout text, granted_at timestamptz,
    renewed_at timestamptz, not_before_ms bigint, not_after_ms bigint, last_timestamp_ms bigint,
    released_at timestamptz);
};

# A node leasing 4 worker ids in appdb, which appowner (not a superuser)
# owns, so that appowner owns its schema public (pg_database_owner).
# %params go to PostgreSQL::Test::Cluster->new (install_path).
sub new_node
{
	my ($name, %params) = @_;
	my $node = SnowflakeTest::new_node(
		$name,
		install => [%params],
		settings => { 'snowflake.database' => 'appdb', 'snowflake.lease_workers' => 4 });
	$node->safe_psql(
		'postgres', q(
CREATE ROLE appowner LOGIN;
CREATE DATABASE appdb OWNER appowner;
));
	return $node;
}

# A node as new_node's with the extension in public and svc granted leases;
# $before_install runs on the node first.
sub new_leasing_node
{
	my ($name, $grantees, $before_install) = @_;
	my $node = new_node($name);
	$before_install->($node) if $before_install;
	su_psql($node, 'CREATE EXTENSION snowflake SCHEMA public');
	$node->safe_psql('appdb', 'CREATE ROLE svc LOGIN');
	grant_leases($node, 'public', $grantees // 'svc');
	return $node;
}

# The test's own statements run with a safe path, so that only the
# extension's code could meet the trojans.
sub su_psql
{
	my ($node, $sql) = @_;
	return $node->safe_psql('appdb', "SET search_path = pg_catalog, pg_temp;\n$sql");
}

sub as_role
{
	my ($node, $role, $sql) = @_;
	return $node->safe_psql('appdb', "SET search_path = pg_catalog, pg_temp;\n$sql",
		extra_params => [ '-U', $role ]);
}

# Like as_role, but returns (exit code, stdout, stderr), errors with their
# SQLSTATE.
sub try_as_role
{
	my ($node, $role, $sql) = @_;
	return $node->psql(
		'appdb', "\\set VERBOSITY verbose\nSET search_path = pg_catalog, pg_temp;\n$sql",
		extra_params => [ '-U', $role ]);
}

# Schema trap (owned by $planter) with the record of calls and the trojan
# every planted object calls: it records the call, and when it runs as a
# superuser it makes $planter a superuser and writes a file into the data
# directory.
sub plant_trap
{
	my ($node, $planter) = @_;
	my $dir = $node->data_dir;
	# The test makes the schema, so that the planter needs no CREATE on the
	# database.
	su_psql($node, "CREATE SCHEMA trap AUTHORIZATION $planter");
	as_role(
		$node, $planter, qq{
GRANT USAGE ON SCHEMA trap TO PUBLIC;
CREATE TABLE trap.trojan_calls (trojan text NOT NULL, called_by name NOT NULL);
GRANT SELECT, INSERT ON trap.trojan_calls TO PUBLIC;
CREATE FUNCTION trap.trojan(what text) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS \$t\$
BEGIN
    INSERT INTO trap.trojan_calls VALUES (what, current_user);
    IF (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
        EXECUTE format('COPY (SELECT %L) TO %L', what,
                       '$dir/pwned_' || md5(what || clock_timestamp()::text));
        EXECUTE 'ALTER ROLE $planter SUPERUSER';
    END IF;
END
\$t\$;
GRANT EXECUTE ON FUNCTION trap.trojan(text) TO PUBLIC;
});
	return;
}

# No trojan ran: none recorded, no file written, the planter no superuser.
sub no_trojan_ran
{
	my ($node, $planter, $what) = @_;
	is( su_psql(
			$node,
			"SELECT count(*) || ' ' || coalesce(string_agg(trojan || ' by ' || called_by, ', '), '')
			   FROM trap.trojan_calls"),
		'0 ',
		"$what: no planted object ran");
	my @files = glob($node->data_dir . '/pwned_*');
	is(scalar(@files), 0, "$what: no planted object ran as a superuser (no file written)");
	is(su_psql($node, "SELECT rolsuper FROM pg_roles WHERE rolname = '$planter'"),
		'f', "$what: $planter is not a superuser");
	return;
}

sub grant_leases
{
	my ($node, $schema, $roles) = @_;
	su_psql(
		$node, qq{
GRANT EXECUTE ON FUNCTION $schema.snowflake_lease_worker(text, interval, timestamptz),
                          $schema.snowflake_renew_lease(bigint, bigint, timestamptz),
                          $schema.snowflake_release_lease(bigint, bigint) TO $roles;
});
	return;
}

# One check, named $what: $role (through SET ROLE $set_role, if given)
# renews lease $token.
sub renews
{
	my ($node, $role, $token, $what, $set_role) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	my (undef, $out, $err) = try_as_role($node, $role,
		($set_role ? "SET ROLE $set_role;\n" : '')
		  . "SELECT 'renewed' FROM public.snowflake_renew_lease($token, NULL::bigint)");
	return is($out, 'renewed', $what) || diag($err);
}

# A lease as "worker_id|token|not_before_ms|not_after_ms".
sub lease_sql
{
	my ($schema, $holder, $ttl) = @_;
	return qq{SELECT worker_id || '|' || token || '|'
	       || (extract(epoch FROM not_before) * 1000)::bigint || '|'
	       || (extract(epoch FROM not_after) * 1000)::bigint
  FROM $schema.snowflake_lease_worker('$holder', interval '$ttl')};
}

sub split_lease
{
	my ($line) = @_;
	my ($worker_id, $token, $not_before, $not_after) = split /\|/, ($line // '');
	return {
		worker_id => $worker_id // -1,
		token => $token // -1,
		not_before => $not_before // 0,
		not_after => $not_after // 0
	};
}

# The objects outside pg_catalog and the extension that the view's rule
# depends on.
my $view_foreign_deps = q{
SELECT coalesce(string_agg(pg_describe_object(d.refclassid, d.refobjid, d.refobjsubid), ', '), '')
  FROM pg_depend AS d
  JOIN pg_rewrite AS r ON d.classid = 'pg_rewrite'::regclass AND d.objid = r.oid
 WHERE r.ev_class = 'public.snowflake_leases'::regclass
   AND NOT (d.refclassid = 'pg_class'::regclass AND d.refobjid = r.ev_class)
   AND (pg_identify_object(d.refclassid, d.refobjid, 0)).schema IS DISTINCT FROM 'pg_catalog'
   AND NOT EXISTS (SELECT FROM pg_depend AS e
                    WHERE e.classid = d.refclassid AND e.objid = d.refobjid
                      AND e.refclassid = 'pg_extension'::regclass AND e.deptype = 'e'
                      AND e.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'snowflake'))};

# --- trojans planted before the extension is installed -------------------------
# Look-alikes of what 1.4's view bound by name: better matches than
# pg_catalog's for its argument types.
sub plant_install_trojans
{
	my ($node) = @_;
	plant_trap($node, 'appowner');
	my $sql = q{
CREATE FUNCTION public.to_timestamp(numeric) RETURNS timestamptz
LANGUAGE plpgsql AS $f$
BEGIN
    PERFORM trap.trojan('to_timestamp(numeric)');
    RETURN pg_catalog.to_timestamp($1::pg_catalog.float8);
END $f$;
CREATE FUNCTION public.floor(numeric) RETURNS numeric
LANGUAGE plpgsql AS $f$
BEGIN
    PERFORM trap.trojan('floor(numeric)');
    RETURN pg_catalog.floor($1::pg_catalog.float8)::pg_catalog.numeric;
END $f$;
};
	my $n = 0;
	for my $op (
		[ '>', 'bigint', 'numeric', 'boolean' ],
		[ '<', 'bigint', 'numeric', 'boolean' ],
		[ '>=', 'bigint', 'numeric', 'boolean' ],
		[ '/', 'bigint', 'numeric', 'numeric' ],
		[ '*', 'numeric', 'integer', 'numeric' ],
		[ '-', 'bigint', 'numeric', 'numeric' ],
		[ '+', 'timestamptz', 'interval', 'timestamptz' ])
	{
		my ($name, $left, $right, $result) = @$op;
		$n++;
		$sql .= qq{
CREATE FUNCTION public.trojan_op_$n($left, $right) RETURNS $result
LANGUAGE plpgsql AS \$f\$
BEGIN
    PERFORM trap.trojan('$name($left,$right)');
    RETURN \$1::pg_catalog.numeric OPERATOR(pg_catalog.$name) \$2;
END \$f\$;
CREATE OPERATOR public.$name (LEFTARG = $left, RIGHTARG = $right, FUNCTION = public.trojan_op_$n);
};
	}
	# The timestamptz + interval one computes in its own types.
	$sql =~ s/RETURN \$1::pg_catalog.numeric OPERATOR\(pg_catalog.\+\)/RETURN \$1 OPERATOR(pg_catalog.+)/;
	as_role($node, 'appowner', $sql);
	return;
}

{
	my $node = new_leasing_node('preinstall', 'svc', \&plant_install_trojans);
	is(su_psql($node, "SELECT extversion FROM pg_extension WHERE extname = 'snowflake'"),
		'1.6', 'trojans before install: the fresh install is at 1.6');
	is(su_psql($node, $view_foreign_deps), '',
		'trojans before install: after CREATE EXTENSION, snowflake_leases depends on nothing outside pg_catalog and the extension');

	my $lease = split_lease(as_role($node, 'svc', lease_sql('public', 'svc-preinstall', '1 hour')));
	as_role($node, 'svc', "SELECT not_after FROM public.snowflake_renew_lease($lease->{token}, NULL::bigint)");
	# As the monitoring query of docs/leases.md, with the default path too.
	is( $node->safe_psql('appdb',
			"SELECT count(*) FROM snowflake_leases WHERE token = $lease->{token} AND state = 'held'"),
		'1', 'trojans before install: a superuser reads the lease in snowflake_leases');
	su_psql($node, 'SELECT * FROM public.snowflake_leases');
	no_trojan_ran($node, 'appowner', 'trojans before install (CREATE EXTENSION)');
	$node->stop;
}

# The same trojans before a 1.3 install that is updated to 1.6, the update
# that creates the lease functions and the view.  The shipped files install
# no version before 1.6: a relocated copy of the installation installs 1.0
# from the test fixture, and the shipped update scripts take it to 1.3
# (test/perl/SnowflakeOldVersions.pm).
{
	my $node = new_node('h3upd',
		install_path => SnowflakeOldVersions::relocated_install('h3upd'));
	plant_install_trojans($node);
	my ($ret, $out, $err) = $node->psql('appdb',
		"SET search_path = pg_catalog, pg_temp;\n"
		  . "CREATE EXTENSION snowflake SCHEMA public VERSION '1.0';\n"
		  . "ALTER EXTENSION snowflake UPDATE TO '1.3'");
	is($ret, 0, 'trojans before install (update): CREATE EXTENSION snowflake VERSION 1.0, updated to 1.3') or diag($err);
	($ret, $out, $err) =
	  $node->psql('appdb', "SET search_path = pg_catalog, pg_temp;\nALTER EXTENSION snowflake UPDATE TO '1.6'");
	is($ret, 0, 'trojans before install (update): ALTER EXTENSION snowflake UPDATE TO 1.6') or diag($err);
	is(su_psql($node, $view_foreign_deps), '',
		'trojans before install (update): after the update, snowflake_leases depends on nothing outside pg_catalog and the extension');
	$node->safe_psql('appdb', 'CREATE ROLE svc LOGIN');
	grant_leases($node, 'public', 'svc');
	my $lease = split_lease(as_role($node, 'svc', lease_sql('public', 'svc-after-update', '1 hour')));
	is( $node->safe_psql('appdb',
			"SELECT string_agg(holder || ':' || state, ',') FROM snowflake_leases WHERE token = $lease->{token}"),
		'svc-after-update:held',
		'trojans before install (update): a superuser reads the lease in snowflake_leases');
	no_trojan_ran($node, 'appowner', 'trojans before install (1.3 updated to 1.6)');
	$node->stop;
}

# --- same-schema overloads, planted after installation -------------------------
my $node = new_node('sec');
su_psql($node, 'CREATE EXTENSION snowflake SCHEMA public');
$node->safe_psql(
	'appdb', q(
CREATE ROLE mallory LOGIN;
GRANT CREATE ON SCHEMA public TO mallory;
CREATE ROLE svc LOGIN;
));
grant_leases($node, 'public', 'svc');
plant_trap($node, 'mallory');

# For every function name of the extension, and every helper name of 1.4,
# overloads of one to four text parameters; and the overload 1.4's renewal
# called with its bare NULL.
as_role(
	$node, 'mallory', q{
CREATE FUNCTION public.snowflake_lease_check_clock(client_time timestamptz, db_now_ms bigint, reported text)
RETURNS void LANGUAGE plpgsql AS $f$
BEGIN
    PERFORM trap.trojan('snowflake_lease_check_clock(timestamptz,bigint,text)');
END $f$;
DO $d$
DECLARE
    f record;
    signature text;
BEGIN
    FOR f IN
        SELECT DISTINCT p.proname::text AS name, a AS arity
          FROM pg_proc AS p
          JOIN pg_depend AS d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid
                             AND d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e'
          JOIN pg_extension AS e ON e.oid = d.refobjid AND e.extname = 'snowflake'
         CROSS JOIN generate_series(1, 4) AS a
        UNION
        SELECT h, a
          FROM unnest(ARRAY['snowflake_lease_held', 'snowflake_lease_reported_ms',
                            'snowflake_lease_check_clock', 'snowflake_lease_layout',
                            'snowflake_lease_ms', 'snowflake_lease_time',
                            'snowflake_lease_connection_alive', 'snowflake_lease_context',
                            'snowflake_lease_list']) AS h
         CROSS JOIN generate_series(1, 4) AS a
    LOOP
        signature := format('public.%I(%s)', f.name,
                            array_to_string(array_fill('text'::text, ARRAY[f.arity]), ', '));
        CONTINUE WHEN to_regprocedure(signature) IS NOT NULL;
        EXECUTE format($c$CREATE FUNCTION %s RETURNS text LANGUAGE plpgsql AS $b$
BEGIN
    PERFORM trap.trojan(%L);
    RETURN NULL;
END $b$$c$, signature, signature);
    END LOOP;
END
$d$;
});
ok( su_psql(
		$node,
		"SELECT count(*) FROM pg_proc WHERE proowner = 'mallory'::regrole AND proname LIKE 'snowflake%'")
	  > 40,
	'overloads: mallory planted string-typed overloads of every function name');

{
	my $a = split_lease(as_role($node, 'svc', lease_sql('public', 'svc-overloads', '1 hour')));
	my ($ret, $out, $err) = try_as_role($node, 'svc',
		"SELECT not_after FROM public.snowflake_renew_lease($a->{token}, NULL::bigint, clock_timestamp())");
	is($ret, 0, 'overloads: the service renews its lease') or diag($err);
	($ret, $out, $err) = try_as_role($node, 'svc',
		"SELECT not_after FROM public.snowflake_renew_lease($a->{token}, NULL::bigint)");
	is($ret, 0, 'overloads: the service renews its lease without client_time') or diag($err);
	($ret, $out, $err) = try_as_role($node, 'svc',
		"SELECT public.snowflake_release_lease($a->{token}, NULL::bigint)");
	is($out, 't', 'overloads: the service releases its lease') or diag($err);
	# A superuser reads the view, the default path with public on it.
	$node->safe_psql('appdb', 'SELECT * FROM snowflake_leases');
	$node->safe_psql('appdb', 'SELECT * FROM snowflake_workers');
	no_trojan_ran($node, 'mallory', 'overloads');
}

# --- no SECURITY DEFINER, no SET clauses, no connection_alive ------------------
# The extension's functions (mallory's overloads are not members).
my $extension_functions = q{
  FROM pg_proc AS p
  JOIN pg_depend AS d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid
                     AND d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e'
  JOIN pg_extension AS e ON e.oid = d.refobjid AND e.extname = 'snowflake'};
is( su_psql(
		$node, "SELECT count(*) $extension_functions WHERE p.proname = 'snowflake_lease_connection_alive'")
	  . '|'
	  . su_psql($node,
		"SELECT to_regprocedure('public.snowflake_lease_connection_alive(integer, timestamptz)') IS NULL"),
	'0|t',
	'no SECURITY DEFINER: snowflake_lease_connection_alive() no longer exists');
is( su_psql(
		$node, "SELECT count(*) FILTER (WHERE p.prosecdef) || '|' || (count(*) > 10) $extension_functions"),
	'0|true',
	'no SECURITY DEFINER: no function of the extension is SECURITY DEFINER');
# snowflake_publication_tables(), SECURITY INVOKER, keeps only pg_catalog
# on its path; no other function has a SET clause (snowflake_convert_column()
# is C now, and has none).
is( su_psql(
		$node, "SELECT coalesce(string_agg(p.oid::regprocedure || ' ' || p.proconfig::text, ', '), '')
		        $extension_functions
		  WHERE p.proconfig IS NOT NULL
		    AND NOT (p.proname = 'snowflake_publication_tables'
		             AND p.proconfig = '{\"search_path=pg_catalog, pg_temp\"}')"),
	'',
	'no SECURITY DEFINER: no function of the extension has a SET clause (but one safe path)');

# --- (snowflake_lease_worker(...)).* is refused, and takes no lease -------------
{
	my $count_sql = 'SELECT count(*) FROM public.snowflake_leases';
	my $before = su_psql($node, $count_sql);
	my ($ret, $out, $err) = try_as_role($node, 'svc',
		"SELECT (public.snowflake_lease_worker('x', interval '1 s')).*");
	isnt($ret, 0, '(snowflake_lease_worker(...)).* is refused');
	like($err, qr/0A000: cannot select a column of snowflake_lease_worker\(\)'s result/,
		'(snowflake_lease_worker(...)).*: the refusal names the call');
	is(su_psql($node, $count_sql), $before, '(snowflake_lease_worker(...)).* takes no lease');
}

# --- ownership by the role that leased -----------------------------------------
{
	$node->safe_psql(
		'appdb', q(
CREATE ROLE tenant_a;
CREATE ROLE tenant_b;
CREATE ROLE pool LOGIN NOINHERIT IN ROLE tenant_a, tenant_b;
));
	# pool may call the functions itself too (1.4 made the login role the
	# owner of every lease taken through it).
	grant_leases($node, 'public', 'tenant_a, tenant_b, pool');
	my $lease = split_lease(as_role($node, 'pool', "SET ROLE tenant_a;\n" . lease_sql('public', 'tenant-a', '1 hour')));
	ok($lease->{token} > 0, 'lease owner: tenant_a leases through pool');
	for my $try (
		[ "SET ROLE tenant_b;\nSELECT not_after FROM public.snowflake_renew_lease",
			'tenant_b cannot renew' ],
		[ "SET ROLE tenant_b;\nSELECT public.snowflake_release_lease", 'tenant_b cannot release' ],
		[ 'SELECT not_after FROM public.snowflake_renew_lease',
			'pool itself, the login role, cannot renew' ])
	{
		my (undef, undef, $err) =
		  try_as_role($node, 'pool', "$try->[0]($lease->{token}, NULL::bigint)");
		like($err, qr/ERROR:  42501: snowflake lease $lease->{token} belongs to another role/,
			"lease owner: $try->[1] tenant_a's lease (42501)");
	}
	is( su_psql($node,
			"SELECT holder_role || ':' || state FROM public.snowflake_leases WHERE token = $lease->{token}"),
		'tenant_a:held',
		'lease owner: the view shows holder_role tenant_a, the lease held');
	renews($node, 'pool', $lease->{token}, 'lease owner: tenant_a renews its lease', 'tenant_a');
	my ($ret, $out, $err) = try_as_role($node, 'pool',
		"SET ROLE tenant_a;\nSELECT public.snowflake_release_lease($lease->{token}, NULL::bigint)");
	is($out, 't', 'lease owner: tenant_a releases its lease') or diag($err);
}

# --- pg_dump by the database owner ---------------------------------------------
{
	my $held = split_lease(as_role($node, 'svc', lease_sql('public', 'dump-holder-7f3a', '1 hour')));
	my $dump = "$PostgreSQL::Test::Utils::tmp_check/appdb.sql";
	$node->command_ok([ 'pg_dump', '-U', 'appowner', '-d', 'appdb', '-f', $dump ],
		'pg_dump by the owner: pg_dump by the non-superuser database owner succeeds');
	my $text = -f $dump ? slurp_file($dump) : '';
	unlike($text, qr/dump-holder-7f3a|snowflake_worker_leases/, 'pg_dump by the owner: the dump holds no lease data');
	like($text, qr/CREATE EXTENSION IF NOT EXISTS snowflake/, 'pg_dump by the owner: the dump creates the extension');
	as_role($node, 'svc', "SELECT public.snowflake_release_lease($held->{token}, NULL::bigint)");
}

# --- slow lease statements and open transactions block nobody ---------------
{
	$node->safe_psql('appdb', 'CREATE ROLE orders_svc LOGIN; CREATE ROLE billing_svc LOGIN;');
	grant_leases($node, 'public', 'orders_svc, billing_svc');
	my $orders = split_lease(as_role($node, 'orders_svc', lease_sql('public', 'orders', '1 hour')));

	# The gate: the test holds an advisory lock that billing's statement
	# waits for after its grant and its pg_sleep.
	my $gate = $node->background_psql('appdb');
	$gate->query_safe('SELECT pg_advisory_lock(4242)');
	my $billing = $node->background_psql(
		'appdb',
		on_error_stop => 0,
		extra_params => [ '-U', 'billing_svc' ]);
	my $billing_pid = $billing->query_safe('SELECT pg_backend_pid()');
	$billing->query_until(
		qr/started/, q{
\echo started
SELECT s.token, pg_sleep(0.01), pg_advisory_lock(4242)
  FROM (SELECT l.token FROM public.snowflake_lease_worker('b', interval '1 second') AS l
        OFFSET 0) AS s;
});
	ok( $node->poll_query_until(
			'appdb', qq{
SELECT state = 'active' AND wait_event = 'advisory'
  FROM pg_stat_activity WHERE pid = $billing_pid}),
		'slow lease statements: billing\'s statement has leased and slept, and waits at the gate');
	is(su_psql($node, "SELECT count(*) FROM public.snowflake_leases WHERE holder = 'b'"),
		'1', 'slow lease statements: the running statement\'s lease is in snowflake_leases');
	renews($node, 'orders_svc', $orders->{token},
		'slow lease statements: orders_svc renews while billing\'s lease statement runs');
	is( su_psql($node,
			"SELECT state || ':' || wait_event FROM pg_stat_activity WHERE pid = $billing_pid"),
		'active:advisory',
		'slow lease statements: billing\'s statement was still running during the renewal');
	$gate->query_safe('SELECT pg_advisory_unlock(4242)');
	$billing->query_safe('SELECT pg_advisory_unlock_all()');

	# An open transaction after a grant.
	$billing->query('BEGIN; ' . lease_sql('public', 'b2', '1 second'));
	ok( $node->poll_query_until(
			'appdb', qq{SELECT state LIKE 'idle in transaction%' FROM pg_stat_activity WHERE pid = $billing_pid}),
		'slow lease statements: billing holds a transaction open after a grant');
	renews($node, 'orders_svc', $orders->{token},
		'slow lease statements: orders_svc renews while billing\'s transaction is open');
	is(su_psql($node, "SELECT state FROM pg_stat_activity WHERE pid = $billing_pid"),
		'idle in transaction', 'slow lease statements: billing\'s transaction was still open during the renewal');
	my ($ret, $out, $err) = try_as_role($node, 'orders_svc',
		"SELECT public.snowflake_release_lease($orders->{token}, NULL::bigint)");
	is($out, 't', 'slow lease statements: orders_svc releases while billing\'s transaction is open') or diag($err);
	$billing->query('ROLLBACK');
	$billing->quit;
	$gate->quit;
}
$node->stop;

# --- grants that a rollback does not undo ---------------------------------------
{
	my $node = new_leasing_node('rollback');
	my ($ret, $out, $err) = try_as_role($node, 'svc',
		"BEGIN;\n" . lease_sql('public', 'rolled-back', '1 hour') . ";\nROLLBACK;");
	my $first = split_lease($out);
	ok($first->{token} > 0, 'rollback: a grant inside a transaction block') or diag($err);
	is( su_psql($node, "SELECT state FROM public.snowflake_leases WHERE token = $first->{token}"),
		'held', 'rollback: the rolled-back grant is still shown held');

	# Read through a cursor, one row, then rolled back.
	($ret, $out, $err) = try_as_role(
		$node, 'svc', qq{BEGIN;
DECLARE c NO SCROLL CURSOR FOR
@{[ lease_sql('public', 'cursor', '1 hour') ]};
FETCH 1 FROM c;
ROLLBACK;});
	my $cursor = split_lease($out);
	ok($cursor->{token} > 0, 'rollback: a grant read through a cursor') or diag($err);

	my $second = split_lease(as_role($node, 'svc', lease_sql('public', 'second', '1 hour')));
	for my $earlier ([ 'rolled-back', $first ], [ 'cursor', $cursor ])
	{
		my ($name, $lease) = @$earlier;
		ok( $second->{worker_id} != $lease->{worker_id}
			  || $second->{not_before} >= $lease->{not_after} - 1,
			"rollback: the next grant does not overlap the $name grant's window");
		ok($second->{token} > $lease->{token}, "rollback: the next grant's token is above the $name grant's");
		renews($node, 'svc', $lease->{token}, "rollback: the $name grant's token still renews");
	}
	isnt($cursor->{worker_id}, $first->{worker_id}, 'rollback: the cursor grant got another worker id');
	$node->stop;
}

# --- a revocation blocks only its own worker id -----------------------------
{
	my $node = new_leasing_node('revoke');
	my @leases = map { split_lease(as_role($node, 'svc', lease_sql('public', "svc-$_", '12 hours'))) } 1 .. 4;
	is(scalar(keys %{ { map { $_->{worker_id} => 1 } @leases } }), 4, 'revocation: svc holds all 4 worker ids for 12 hours');
	is(su_psql($node, "SELECT public.snowflake_release_lease($leases[0]{token}, NULL::bigint)"),
		't', 'revocation: a superuser revokes one lease');
	is(as_role($node, 'svc', "SELECT public.snowflake_release_lease($leases[1]{token}, NULL::bigint)"),
		't', 'revocation: svc releases another normally');
	my ($ret, $out, $err) = try_as_role($node, 'svc', lease_sql('public', 'svc-next', '12 hours'));
	is($ret, 0, 'revocation: the next request is granted at once (no 53400)') or diag($err);
	is(split_lease($out)->{worker_id}, $leases[1]{worker_id}, 'revocation: it gets the normally released worker id');
	$node->stop;
}

# --- the database owner renames and drops the extension's schema ---
{
	my $node = new_leasing_node('rename', 'svc, appowner');
	plant_trap($node, 'appowner');
	my $live = split_lease(as_role($node, 'svc', lease_sql('public', 'live-hour', '1 hour')));

	# appowner moves the extension's schema away and plants the names 1.4's
	# definer code used, keeping the services working through the path.
	my $helper_sql = '';
	for my $helper (
		[ 'snowflake_lease_context(caller text)', 'record', 'RETURN NULL;' ],
		[ 'snowflake_lease_check_clock(timestamptz, bigint, bigint)', 'void', '' ],
		[   'snowflake_lease_ms(timestamptz)', 'bigint',
			q{RETURN (pg_catalog.date_part('epoch', $1) OPERATOR(pg_catalog.*) 1000)::bigint;}
		],
		[   'snowflake_lease_time(bigint)', 'timestamptz',
			'RETURN pg_catalog.to_timestamp($1::float8 OPERATOR(pg_catalog./) 1000);'
		],
		[ 'snowflake_lease_connection_alive(integer, timestamptz)', 'boolean', 'RETURN true;' ],
		[ 'snowflake_lease_list()', 'SETOF record', '' ])
	{
		my ($signature, $result, $return) = @$helper;
		(my $label = $signature) =~ s/caller //;
		$label =~ s/, /,/g;
		$helper_sql .= qq{
CREATE FUNCTION public.$signature RETURNS $result LANGUAGE plpgsql AS \$f\$
BEGIN
    PERFORM trap.trojan('$label');
    $return
END \$f\$;};
	}
	as_role(
		$node, 'appowner', q{
ALTER SCHEMA public RENAME TO snowpub;
CREATE SCHEMA public;
GRANT USAGE ON SCHEMA public TO PUBLIC;
ALTER DATABASE appdb SET search_path = "$user", public, snowpub;
} . $lookalike_lease_table . q{
GRANT ALL ON public.snowflake_worker_leases TO PUBLIC;
CREATE FUNCTION public.snowflake_lease_held(token bigint, caller text)
RETURNS public.snowflake_worker_leases LANGUAGE plpgsql AS $f$
DECLARE r public.snowflake_worker_leases;
BEGIN
    PERFORM trap.trojan('snowflake_lease_held(bigint,text)');
    r.released_at := pg_catalog.now();
    RETURN r;
END $f$;
} . $helper_sql);
	# The service, with the database's path, as usual.
	my $svc_sql = sub {
		my ($sql) = @_;
		return $node->psql('appdb', "\\set VERBOSITY verbose\n$sql", extra_params => [ '-U', 'svc' ]);
	};
	my ($ret, $out, $err) =
	  $svc_sql->("SELECT token FROM snowflake_lease_worker('svc-renamed', interval '1 hour')");
	my $token = $out;
	is($ret, 0, 'renamed schema: the service leases after the rename') or diag($err);
	($ret, $out, $err) = $svc_sql->("SELECT 'renewed' FROM snowflake_renew_lease(${token}::bigint, NULL::bigint)");
	is($out, 'renewed', 'renamed schema: the service renews') or diag($err);
	($ret, $out, $err) = $svc_sql->("SELECT snowflake_release_lease(${token}::bigint, NULL::bigint)");
	is($out, 't', 'renamed schema: the service releases') or diag($err);
	# appowner, granted too, tries the live lease of svc (as 1.4's attack A did).
	($ret, $out, $err) = $node->psql('appdb', "SELECT count(*) FROM snowpub.snowflake_release_lease($live->{token}, NULL::bigint)",
		extra_params => [ '-U', 'appowner' ]);
	$node->safe_psql('appdb', 'SELECT * FROM snowpub.snowflake_leases');
	no_trojan_ran($node, 'appowner', 'renamed schema');

	# schema drop: the owner's DROP SCHEMA ... CASCADE would drop the extension, and
	# the layout history with it: refused.
	($ret, $out, $err) = try_as_role($node, 'appowner', 'DROP SCHEMA snowpub CASCADE');
	like($err, qr/ERROR:  42501: only a superuser can drop the snowflake extension\n.*DETAIL:  Its table snowflake_layout holds the layout history/s,
		'schema drop: DROP SCHEMA ... CASCADE by the database owner is refused');
	is( su_psql(
			$node, "SELECT count(*) FROM pg_extension AS e JOIN pg_namespace AS n ON n.oid = e.extnamespace
			  WHERE e.extname = 'snowflake' AND n.nspname = 'snowpub'"),
		'1', 'schema drop: the extension, and its layout history, are still there');
	# A superuser may.
	su_psql($node, 'DROP SCHEMA snowpub CASCADE');
	is(su_psql($node, "SELECT count(*) FROM pg_extension WHERE extname = 'snowflake'"),
		'0', 'schema drop: a superuser dropped the extension with its schema');
	su_psql(
		$node, q{
DROP SCHEMA public CASCADE;
CREATE SCHEMA public AUTHORIZATION pg_database_owner;
GRANT USAGE ON SCHEMA public TO PUBLIC;
ALTER DATABASE appdb RESET search_path;
CREATE EXTENSION snowflake SCHEMA public;
});
	grant_leases($node, 'public', 'svc');
	is( su_psql($node,
			"SELECT worker_id || ':' || state FROM public.snowflake_leases WHERE token = $live->{token}"),
		"$live->{worker_id}:held",
		'schema drop: the live 1-hour lease is still in snowflake_leases after the re-creation');
	# Lease every id there is: none may overlap the live lease's window.
	my $overlaps = 0;
	my $granted = 0;
	for my $i (1 .. 4)
	{
		($ret, $out, $err) = try_as_role($node, 'svc', lease_sql('public', "svc-after-$i", '1 hour'));
		next if $ret != 0;
		$granted++;
		my $lease = split_lease($out);
		$overlaps++
		  if $lease->{worker_id} == $live->{worker_id}
		  && $lease->{not_before} < $live->{not_after} - 1;
		$overlaps++ if $lease->{token} <= $live->{token};
	}
	ok($granted >= 3, "schema drop: the other worker ids are leased after the re-creation ($granted)");
	is($overlaps, 0, 'schema drop: no new grant overlaps the live lease\'s window or reuses its token');
	$node->stop;
}
done_testing();
