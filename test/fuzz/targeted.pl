#!/usr/bin/perl
# test/fuzz/targeted.pl: the targeted half of the fuzz tier (test/fuzz/run.sh).
#
# Reads the extension's functions (pg_proc, pg_depend: a new function is
# covered without an edit here) and settings (pg_settings) from the
# catalog, and drives them through psql, one statement a line, section by
# section (@sections below): edge values of every argument; every setting
# set to bad and extreme values (SET, SET LOCAL, set_config(), ALTER
# SYSTEM); random transaction programs (aborts, savepoints, exception
# blocks, prepared transactions, cancels, terminations) and cursor
# programs; forced parallel query; custom and generic plans; the planner's
# rewrite of snowflake_timestamp(id) <op> ts (B-tree, BRIN, partitions)
# against a query it cannot touch; leases; every function as an ordinary
# role (fuzz_plain); and the snowflake type's input, casts and text forms
# ("form" checks against a second encoder written here).  A second session
# ("noise") issues IDs, batches and cursors meanwhile.
#
# Errors are expected, as clean ERRORs.  A failure: an internal error (class
# XX), a statement cancelled by statement_timeout that was not meant to be
# (a hang), a lost connection (a crash), a duplicate ID (every ID a
# statement returns is printed, "fuzzid" rows or NOTICEs, rolled back or
# not), a rewritten count that differs, a "form" check that counts a
# mismatch or does not run, a psql run that does not finish in time.
#
# Connects as PGHOST/PGPORT/PGUSER/PGDATABASE say, as a superuser, to a
# database whose statement_timeout is the hang limit.
#   FUZZ_SEED, FUZZ_ITERATIONS (random programs per section, default 40)
#   FUZZ_WORKDIR           where the scripts and their output go (required)
#   FUZZ_TARGETED_SECONDS  the time it may take in all (default 240)
#   FUZZ_NOISE             1 (default) to run the concurrent session, 0 not
#   FUZZ_SERVER_LOG        the server's log, where the noise session's
#                          termination is looked for when its message was lost
# Prints one line per section and last
#   targeted: N statements, M IDs, C checks passed, F failed (seed S)
# and exits non-zero if any check failed.
use strict;
use warnings;
use IPC::Run qw(run timeout);
use List::Util qw(head min tail);
use Time::HiRes qw(time sleep);
use POSIX ();

my $seed = $ENV{FUZZ_SEED};
$seed = (int(time * 1000) ^ ($$ << 8)) % 2147483647 if !defined $seed || $seed eq '';
die "FUZZ_SEED must be an integer\n" unless $seed =~ /^\d+$/;
my $iterations = $ENV{FUZZ_ITERATIONS} // 40;
my $workdir = $ENV{FUZZ_WORKDIR} or die "FUZZ_WORKDIR is not set\n";
my $budget = $ENV{FUZZ_TARGETED_SECONDS} // 240;
my $noise_on = $ENV{FUZZ_NOISE} // 1;
my $server_log = $ENV{FUZZ_SERVER_LOG};
my $started = time;
my $deadline = $started + $budget;
srand($seed);
print "targeted: seed $seed, $iterations iterations (replay: FUZZ_SEED=$seed FUZZ_ITERATIONS=$iterations)\n";

my @psql = ('psql', '-X', '-q', '-At', '-F', '|', '-v', 'VERBOSITY=verbose', '-v', 'ON_ERROR_STOP=0');

# A signal (run.sh's timeout, Ctrl-C) ends this through die, so that the
# psql running is killed (IPC::Run's run does) and the END block below
# stops the noise session.
$SIG{INT} = $SIG{TERM} = sub { die "targeted: stopped by SIG$_[0]\n" };

# ---------------------------------------------------------------- results

my @failures;            # one line each
my $checks = 0;          # passed checks
my $statements_total = 0;
my %errors_by_state;     # SQLSTATE -> count
my %extension_errors;    # "SQLSTATE message-shape (location)" -> count, raised by our C++
my %warnings;            # the main session's only
my @ids;                 # every ID seen, once per issue
my %keyed;               # "key|id" of rows that may be fetched again (scroll cursors)
my %cmp;                 # rewrite comparisons: key -> {a => n, b => n}
my %form_checks;         # the type's checks: key -> mismatches counted

sub fail { my ($msg) = @_; push @failures, $msg; print "targeted: FAILED: $msg\n"; }
sub check { my ($ok, $msg) = @_; if ($ok) { $checks++ } else { fail($msg) } return $ok; }

# ---------------------------------------------------------------- psql

sub sql_quote { my ($s) = @_; $s =~ s/'/''/g; return "'$s'"; }

# Rows of one catalog query, fields split on \x1f.  Dies on error.
sub query_rows {
	my ($sql) = @_;
	my ($out, $err) = ('', '');
	run [ 'psql', '-X', '-q', '-At', '-F', "\x1f", '-v', 'ON_ERROR_STOP=1', '-c', $sql ],
		'>', \$out, '2>', \$err, timeout(60)
		or die "targeted: query failed: $sql\n$err";
	return map { [ split /\x1f/, $_, -1 ] } split /\n/, $out;
}

# A statement: its SQL (one line), and cancel => 1 if statement_timeout may
# cancel it (a deliberately short one), which is otherwise a hang.
sub st { my ($sql, %opt) = @_; $sql =~ s/\s*\n\s*/ /g; return { sql => $sql, %opt }; }

my $script_seq = 0;

# Runs statements in one psql session; parses what it printed.  $opt{noise}:
# the session may be cancelled or terminated by the main one; $opt{strict}:
# any error fails (the setup); $opt{limit}: the seconds psql may take
# (default: until the deadline, at least 10).
sub run_script {
	my ($section, $stmts, %opt) = @_;
	$script_seq++;
	my $base = sprintf('%s/%03d-%s', $workdir, $script_seq, $section);
	open my $fh, '>', "$base.sql" or die "$base.sql: $!";
	print $fh "$_->{sql}\n" for @$stmts;
	close $fh;
	my $limit = $opt{limit} // ($deadline - time);
	$limit = 10 if $limit < 10;
	my ($status, $timed_out) = (0, 0);
	my $appname = $opt{appname} // 'fuzz_main';
	local $ENV{PGAPPNAME} = $appname;
	$opt{log_from} = $server_log ? (-s $server_log // 0) : undef;
	eval {
		run [ @psql, '-f', "$base.sql" ], '<', \undef, '>', "$base.out", '2>', "$base.err",
			timeout($limit);
		$status = $? >> 8;
		1;
	} or do {
		die $@ if $@ =~ /^targeted: stopped/;
		$status = -1;
		if ($@ =~ /timeout/) {
			$timed_out = 1;
		} else {
			fail("$section: psql could not be run: $@");
		}
	};
	my ($ran, $lost_reported, $terminated) = parse_output($section, $base, $stmts, %opt);
	$statements_total += $ran;
	# psql ends with 0 when statements fail (ON_ERROR_STOP=0); 2 is a lost
	# connection, 1 a failure of its own.
	if (!$timed_out && $status > 0 && !$lost_reported && !$terminated) {
		open my $eh, '<', "$base.err";
		my @tail = $eh ? tail(3, <$eh>) : ();
		fail("$section: psql exited with status $status ($base.err: " . join('', @tail) . ')');
	}
	if ($timed_out) {
		my $active = eval {
			join '; ', map { "$_->[0] for $_->[1]: $_->[2]" } query_rows(
				"SELECT pid, now() - query_start, left(query, 300) FROM pg_stat_activity "
				  . "WHERE state = 'active' AND application_name LIKE 'fuzz%'");
		} // '?';
		fail("$section: psql did not finish within $limit s (a hang?); $base.sql, "
			  . "statement " . ($ran + 1) . "; active: $active");
		# Its own session only: the other one (main or noise) goes on.
		eval {
			query_rows("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = "
				  . sql_quote($appname));
			1;
		} or fail("$section: could not end its session: $@");
	}
	return ($status, $ran);
}

# Reads $base.out and $base.err: IDs, comparison rows, errors.  Returns the
# number of statements run (all of them, unless the connection was lost),
# whether the connection was lost, and whether the main session terminated
# this one on purpose.
sub parse_output {
	my ($section, $base, $stmts, %opt) = @_;
	my $n = scalar @$stmts;
	open my $out, '<', "$base.out" or die "$base.out: $!";
	while (my $line = <$out>) {
		chomp $line;
		if ($line =~ /^fuzzid\|([^|]*)\|(.*)$/) {
			record_ids($1, $2);
		} elsif ($line =~ /^cmp\|([^|]+)\|([ab])\|(\d+)$/) {
			$cmp{$1}{$2} = $3;
		} elsif ($line =~ /^form\|([^|]+)\|(\d+)$/) {
			$form_checks{$1} = $2;
		} elsif ($line =~ /^reloaded\|([^|]*)\|([tf])$/) {
			fail("$section: the session did not re-read the configuration within the wait "
				  . "after pg_reload_conf() ($1; $base.sql)") if $2 ne 't';
		}
	}
	close $out;
	open my $err, '<', "$base.err" or die "$base.err: $!";
	my ($last, $lost, $terminated, $lost_line) = (undef, 0, 0, undef);
	while (my $line = <$err>) {
		chomp $line;
		if ($line =~ /^psql:[^:]*:(\d+): (ERROR|FATAL|PANIC|WARNING|NOTICE|INFO|LOG):\s+(?:([0-9A-Z]{5}): )?(.*)$/) {
			my ($lineno, $level, $state, $msg) = ($1, $2, $3 // '?????', $4);
			$last = undef;
			if ($level eq 'NOTICE' || $level eq 'INFO') {
				record_ids($1, $2) if $msg =~ /^fuzzid\|([^|]*)\|(.*)$/;
				next;
			}
			my $stmt = $stmts->[$lineno - 1] // { sql => '?' };
			if ($level eq 'WARNING') {
				$warnings{"$state $msg"}++ unless $opt{noise};
				next;
			}
			$errors_by_state{$state}++;
			$last = { state => $state, msg => $msg, line => $lineno, stmt => $stmt };
			$terminated = 1 if $state eq '57P01' && $opt{noise};
			if ($state =~ /^XX/ || $level eq 'PANIC') {
				fail("$section: internal error $state \"$msg\" from: $stmt->{sql}  ($base.sql:$lineno)");
			} elsif ($opt{strict}) {
				fail("$section: $level $state \"$msg\" from: $stmt->{sql}  ($base.sql:$lineno)");
			} elsif ($state eq '57014' && !$stmt->{cancel}
				&& !($opt{noise} && $msg =~ /due to user request/)) {
				fail("$section: cancelled (statement_timeout, a hang?) \"$msg\": $stmt->{sql}  ($base.sql:$lineno)");
			} elsif ($state eq '23505' && $msg =~ /fuzz_ids/) {
				fail("$section: duplicate ID in fuzz_ids: \"$msg\": $stmt->{sql}  ($base.sql:$lineno)");
			} elsif ($state =~ /^57P0[2-4]$/ || ($state =~ /^57P01$/ && !$opt{noise})) {
				fail("$section: server went away ($state \"$msg\") at: $stmt->{sql}  ($base.sql:$lineno)");
			}
		} elsif ($line =~ /^psql:[^:]*:(\d+): (server closed the connection unexpectedly|connection to server was lost|.*connection to server .* failed)/) {
			$lost = 1;
			$lost_line = $1;
		} elsif ($line =~ /^(server closed the connection unexpectedly|connection to server was lost)/) {
			$lost = 1;
		} elsif ($last && $line =~ /^LOCATION:\s+(\S+), (\S+?):\d+$/) {
			my ($func, $file) = ($1, $2);
			if ($file =~ /\.cpp$/) {
				(my $shape = $last->{msg}) =~ s/-?\d+/N/g;
				$extension_errors{"$last->{state} $shape ($func)"}++;
			}
		}
	}
	close $err;
	my $ran = $n;
	if ($lost) {
		$ran = $lost_line // $n;
		# The main session terminated the noise session, but the server's
		# message was lost with the connection (psql was sending, and the
		# socket was closed under it): the server log says so.
		$terminated = 1 if !$terminated && $opt{noise} && noise_terminated_in_log($opt{log_from});
		if (!$terminated) {
			my $stmt = defined $lost_line ? $stmts->[$lost_line - 1]{sql} : '?';
			fail("$section: the connection was lost (a crash?) at: $stmt  ($base.sql:"
				  . ($lost_line // '?') . ")");
		}
	}
	return ($ran, $lost, $terminated);
}

# Whether the server log, from byte $from on (where the noise session's
# script began: one noise session runs at a time), shows that session
# terminated by pg_terminate_backend().
sub noise_terminated_in_log {
	my ($from) = @_;
	return 0 unless defined $from && open my $log, '<', $server_log;
	seek $log, $from, 0;
	while (my $line = <$log>) {
		return 1 if $line =~ /\] fuzz_noise FATAL:  terminating connection due to administrator command$/;
	}
	return 0;
}

sub record_ids {
	my ($key, $rest) = @_;
	for my $id (split /\|/, $rest) {
		next if $id eq '';
		if ($id !~ /^-?\d+$/) {
			fail("not an ID in the output: \"$id\"");
			next;
		}
		if ($key ne '-' && $key ne '') {
			next if $keyed{"$key|$id"}++;
		}
		push @ids, $id;
	}
}

# ---------------------------------------------------------------- the catalog

my ($server_version) = map { $_->[0] } query_rows('SHOW server_version_num');
my @functions;
for my $r (query_rows(<<'SQL')) {
SELECT quote_ident(n.nspname) || '.' || quote_ident(p.proname), p.proname,
       p.pronargdefaults, p.proretset, p.provolatile,
       format_type(p.prorettype, NULL), t.typtype,
       array_to_string(ARRAY(SELECT format_type(u.t, NULL)
                               FROM unnest(coalesce(p.proallargtypes, p.proargtypes::oid[]))
                                    WITH ORDINALITY AS u(t, i) ORDER BY u.i), ';'),
       coalesce(array_to_string(p.proargmodes, ';'), ''),
       -- The argument names, as they are and quoted (for named notation),
       -- apart by chr(30).
       coalesce((SELECT string_agg(u.n, chr(30) ORDER BY u.i)
                   FROM unnest(p.proargnames) WITH ORDINALITY AS u(n, i)), ''),
       coalesce((SELECT string_agg(CASE WHEN u.n = '' THEN '' ELSE quote_ident(u.n) END, chr(30) ORDER BY u.i)
                   FROM unnest(p.proargnames) WITH ORDINALITY AS u(n, i)), '')
  FROM pg_proc AS p
  JOIN pg_namespace AS n ON n.oid = p.pronamespace
  JOIN pg_type AS t ON t.oid = p.prorettype
  JOIN pg_depend AS d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid
                     AND d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e'
  JOIN pg_extension AS e ON e.oid = d.refobjid AND e.extname = 'snowflake'
 WHERE p.prokind = 'f'
 ORDER BY p.proname, p.oid
SQL
	my ($qname, $name, $ndefaults, $retset, $vol, $rettype, $rettyptype, $alltypes, $modes, $names,
		$qnames) = @$r;
	my @types = split /;/, $alltypes, -1;
	my @modes = split /;/, $modes, -1;
	my @names = split /\x1e/, $names, -1;
	my @qnames = split /\x1e/, $qnames, -1;
	my (@argtypes, @argnames, @qargnames);
	for my $i (0 .. $#types) {
		next if @modes && $modes[$i] !~ /^[ibv]$/;
		push @argtypes, $types[$i];
		push @argnames, $names[$i] // '';
		push @qargnames, $qnames[$i] // '';
	}
	push @functions, {
		qname => $qname, name => $name, ndefaults => $ndefaults, retset => $retset eq 't',
		volatile => $vol eq 'v', record => ($rettyptype eq 'c' || $rettype eq 'record'),
		argtypes => \@argtypes, argnames => \@argnames, qargnames => \@qargnames,
		# Issues IDs: a volatile function returning bigint (snowflake_nextval
		# and its batch form); their results are recorded and checked.
		issues_ids => ($vol eq 'v' && $rettype eq 'bigint' ? 1 : 0),
		leases => ($vol eq 'v' && $name =~ /lease/ ? 1 : 0),
		# Changes the schema: kept out of the repeated probes.
		ddl => ($name =~ /convert/ ? 1 : 0),
		callable => (grep { $_ eq 'internal' } @argtypes) ? 0 : 1,
	};
}
die "targeted: the extension has no functions (is it created?)\n" unless @functions;
my @settings = map {
	{ name => $_->[0], vartype => $_->[1], context => $_->[2], min => $_->[3], max => $_->[4],
	  unit => $_->[5], enumvals => $_->[6] }
} query_rows("SELECT name, vartype, context, coalesce(min_val, ''), coalesce(max_val, ''), "
	  . "coalesce(unit, ''), coalesce(array_to_string(enumvals, ';'), '') "
	  . "FROM pg_settings WHERE name LIKE 'snowflake.%' ORDER BY name");
my %has = map { $_->{name} => 1 } @functions;
my ($epoch, $last_ms, $recent_id) = @{ (query_rows(<<'SQL'))[0] };
SELECT s.epoch, s.epoch + ((2::numeric ^ s.timestamp_bits - 1) * interval '1 ms'),
       snowflake_nextval()
  FROM snowflake_status() AS s
SQL
record_ids('-', $recent_id);
printf "targeted: %d functions, %d settings, PostgreSQL %s, layout %s to %s\n",
	scalar @functions, scalar @settings, $server_version, $epoch, $last_ms;

# ---------------------------------------------------------------- edge values

my $lease_cleanup = st(q{DO $c$ DECLARE r record; BEGIN FOR r IN SELECT token FROM snowflake_leases WHERE state = 'held' LOOP BEGIN PERFORM snowflake_release_lease(r.token, NULL); EXCEPTION WHEN others THEN NULL; END; END LOOP; END $c$;});

my @ts_literals = ('infinity', '-infinity', '4714-11-24 00:00:00+00 BC', '294276-12-31 23:59:59+00',
	'294276-12-31 23:59:59.999999+00',
	'epoch', '2000-01-01 00:00:00+00', $epoch);
my %edges = (
	bigint => [ 'NULL::bigint', '0::bigint', '1::bigint', '(-1)::bigint', '2147483647::bigint',
		'(-2147483648)::bigint', '2147483648::bigint', '9007199254740992::bigint',
		'9223372036854775807::bigint', "'-9223372036854775808'::bigint", "$recent_id\::bigint",
		'4194303::bigint', '4194304::bigint' ],
	integer => [ 'NULL::integer', '0', '1', '-1', '2', '100', '4096', '1000001', '2147483647',
		"'-2147483648'::integer" ],
	smallint => [ 'NULL::smallint', '0::smallint', '1::smallint', '(-1)::smallint', '32767::smallint',
		"'-32768'::smallint" ],
	boolean => [ 'NULL::boolean', 'true', 'false' ],
	text => [ 'NULL::text', "''::text", "'x'::text", "repeat('h', 200)", "repeat('h', 201)",
		"repeat('x', 100000)", "'%s%s%s%n%p'::text", "E'quote''\\\\back\\nnl\\ttab'::text",
		"'ñ☃😀'::text", "'no_such_name'::text", "'snowflake_layout'::text", "'id'::text" ],
	name => [ 'NULL::name', "''::name", "'id'::name", "repeat('n', 63)::name", "repeat('n', 64)::name",
		"'no_such_column'::name", "'%s%n'::name", "'v'::name", "'ref'::name" ],
	regclass => [ 'NULL::regclass', "'fuzz_conv_a'::regclass", "'fuzz_conv_b'::regclass",
		"'fuzz_conv_c'::regclass", "'fuzz_conv_d'::regclass", "'fuzz_t'::regclass",
		"'fuzz_part'::regclass", "'snowflake_layout'::regclass", "'pg_class'::regclass",
		"'fuzz_view'::regclass", "'fuzz_seq'::regclass", '0::oid::regclass',
		'4294967295::oid::regclass' ],
	oid => [ 'NULL::oid', '0::oid', '1::oid', '4294967295::oid' ],
	'timestamp with time zone' => [ 'NULL::timestamptz', (map { sql_quote($_) . '::timestamptz' } @ts_literals),
		'now()', 'clock_timestamp()', "now() + interval '1 day'", "now() - interval '1 s'",
		sql_quote($epoch) . "::timestamptz - interval '1 microsecond'",
		sql_quote($epoch) . "::timestamptz + interval '1 ms'", sql_quote($last_ms) . '::timestamptz',
		sql_quote($last_ms) . "::timestamptz + interval '1 ms'" ],
	'timestamp without time zone' => [ 'NULL::timestamp', "'infinity'::timestamp", "'-infinity'::timestamp",
		"'4714-11-24 00:00:00 BC'::timestamp", "'294276-12-31 23:59:59.999999'::timestamp",
		"'epoch'::timestamp", 'localtimestamp' ],
	date => [ 'NULL::date', "'infinity'::date", "'-infinity'::date", "'4714-11-24 BC'::date",
		"'5874897-12-31'::date", "'epoch'::date", 'current_date' ],
	interval => [ 'NULL::interval', "'0'::interval", "'1 ms'::interval", "'-1 ms'::interval",
		"'1 microsecond'::interval", "'999 microseconds'::interval", "'1 s'::interval",
		"'-1 day'::interval", "'24 hours'::interval", "'24 hours 1 microsecond'::interval",
		"'1 mon'::interval", "'1 mon -30 days'::interval", "'178000000 years'::interval",
		"'-178000000 years'::interval", "'2147483647 days'::interval", "'-2147483648 days'::interval",
		"'2562047788:00:54.775807'::interval", "'-2562047788:00:54.775807'::interval",
		($server_version >= 170000 ? ("'infinity'::interval", "'-infinity'::interval") : ()) ],
	numeric => [ 'NULL::numeric', '0::numeric', "'NaN'::numeric", '1e100::numeric', '-1.5::numeric' ],
	'double precision' => [ 'NULL::float8', '0::float8', "'NaN'::float8", "'Infinity'::float8",
		"'-Infinity'::float8", '1e308::float8' ],
);
$edges{'character varying'} = [ map { my $v = $_; $v =~ s/::text$//; "($v)::varchar" } @{ $edges{text} } ];
# What a probe passes: values that usually work.
my %typical = (
	bigint => "$recent_id\::bigint", integer => '3', smallint => '1::smallint', boolean => 'true',
	text => "'fuzz probe'::text", name => "'id'::name", regclass => "'fuzz_t'::regclass",
	oid => '0::oid', 'timestamp with time zone' => 'now()', 'timestamp without time zone' => 'localtimestamp',
	date => 'current_date', interval => "'1 s'::interval", numeric => '1::numeric',
	'double precision' => '1::float8', 'character varying' => "'fuzz probe'::varchar",
);

# The text forms of an ID (snowflake_to_text()), written here too: a second
# encoder, whose texts the extension must read back as their IDs.  Each
# form's digits in order, and its fixed width (0: none).
my %text_forms = (
	base32hex => [ '0123456789ABCDEFGHIJKLMNOPQRSTUV', 13 ],
	crockford => [ '0123456789ABCDEFGHJKMNPQRSTVWXYZ', 13 ],
	base62 => [ '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz', 11 ],
	decimal => [ '0123456789', 0 ],
);
my @text_form_names = sort keys %text_forms;
sub id_text {
	my ($id, $form) = @_;
	use integer;
	my ($digits, $width) = @{ $text_forms{$form} };
	my $base = length $digits;
	my $t = '';
	do {
		$t = substr($digits, $id % $base, 1) . $t;
		$id /= $base;
	} while ($id > 0);
	# Forms without a fixed width have $width 0: no padding.
	my $pad = $width - length $t;
	return ($pad > 0 ? '0' x $pad : '') . $t;
}
# A random ID of a random magnitude: 63 random bits shifted right by 0 to 62.
sub random_id {
	my $v = (int(rand(2147483648)) << 32) | int(rand(4294967296));
	return $v >> int(rand(63));
}
# Texts that are, nearly are, or are far from an ID in some form: for the
# type's input function (and so every cast from text) and
# snowflake_from_text().  SQL literals, untyped.
my @id_text_literals = ((map { sql_quote($_) } '', ' ', '0', '-0', '+1', ' 1', '1 ', '00000000000000000001',
		'9223372036854775807', '9223372036854775808', '-9223372036854775808', '-9223372036854775809',
		'18446744073709551616', '1e3', '0x10', '0b1', '0o7', '1_000', '1.5', 'NaN', 'Infinity', 'x', '%s%n', "'", '"',
		'\\', '9' x 1000, "\xd9\xa1\xd9\xa2", 'ñ☃😀', "0000000000\xc3\xa9", $recent_id,
		(map { id_text($recent_id, $_) } @text_form_names), (map { lc id_text($recent_id, $_) } @text_form_names),
		(map { id_text(9223372036854775807, $_) } @text_form_names), '8000000000000', 'VVVVVVVVVVVVV',
		'zzzzzzzzzzzzz', 'AzL8n0Y58m8', 'zzzzzzzzzzz', 'B0000000000', '0000-0000-0000-0', '-000000000001',
		'OOOOOOOOOOOOO', 'IIIIIIIIIIIII', 'LLLLLLLLLLLLl', 'UUUUUUUUUUUUU', '000000000000=', '000000000000',
		'0000000000', '000000000000000', '0' x 1000),
	q{E'1\n'}, q{E'\t1'}, q{E'00000000000\r'});
$edges{snowflake} = [ 'NULL::snowflake',
	map { sql_quote($_) . '::snowflake' } '0', '1', '-1', '4194304', '9007199254740992', '9223372036854775807',
	'-9223372036854775808', $recent_id ];
$edges{cstring} = [ 'NULL::cstring', map { "$_\::cstring" } @id_text_literals ];
# The formats of the text forms, and names that are not one.
my @format_edges = ('NULL::text', (map { sql_quote($_) . '::text' } @text_form_names, 'BASE32HEX', 'Crockford',
		'DECIMAL', 'base62 ', ' base62', 'base32', 'base64', 'hex', 'escape', 'crockford32', 'base', '', '%s%n'),
	"repeat('x', 100000)", "E'base62\\n'", "'ñ☃😀'::text");
$typical{snowflake} = "'$recent_id'::snowflake";
$typical{cstring} = "'$recent_id'::cstring";

sub edges_for {
	my ($type, $argname) = @_;
	my @e;
	if ($edges{$type}) {
		@e = @{ $edges{$type} };
	} elsif ($type =~ /^(.*)\[\]$/) {
		my $elem = $1;
		@e = ("NULL::$type", "'{}'::$type", "'{NULL}'::$type");
		my @el = grep { !/^NULL/ } @{ $edges{$elem} // [] };
		push @e, "ARRAY[" . join(', ', head(4, @el)) . "]::$type" if @el;
	} else {
		@e = ("NULL::$type");
	}
	# Values that reach further than a type's edges, by the argument's name.
	if ($type eq 'text' && $argname eq 'format') {
		@e = @format_edges;
	} elsif ($type eq 'text' && $argname eq 'input') {
		push @e, (map { "$_\::text" } @id_text_literals), "repeat('0', 100000)", "repeat('z', 13)",
			"repeat('0', 12) || chr(233)";
	} elsif ($argname =~ /token/) {
		push @e, '(SELECT max(token) FROM snowflake_leases)', '(SELECT min(token) FROM snowflake_leases)';
	} elsif ($type eq 'bigint' && $argname =~ /(^|_)id$/) {
		push @e, '(SELECT max(id) FROM fuzz_ids)';
	}
	return @e;
}
# A value that usually works for an argument of $type (named $argname).
sub typical_for {
	my ($type, $argname) = @_;
	$argname //= '';
	return "'base62'::text" if $type eq 'text' && $argname eq 'format';
	return sql_quote(id_text($recent_id, 'base62')) . '::text' if $type eq 'text' && $argname eq 'input';
	return $typical{$type} // "NULL::$type";
}

sub pick { return $_[ int rand @_ ]; }

# A call of $f with the argument expressions @args, as statements: in FROM
# (records and sets), in the select list, and for an ID issuer with its IDs
# printed.
sub call_forms {
	my ($f, $args, %opt) = @_;
	my $call = "$f->{qname}(" . join(', ', @$args) . ')';
	my @s;
	if ($f->{issues_ids}) {
		push @s, st("SELECT 'fuzzid', '-', x FROM $call AS x;");
		push @s, st("SELECT 'fuzzid', '-', $call;") if $opt{all} || rand() < 0.3;
	} elsif ($f->{retset} || $f->{record}) {
		push @s, st("SELECT * FROM $call LIMIT 50;");
		push @s, st("SELECT ($call)" . ($f->{record} ? '.*' : '') . ($f->{retset} ? ' LIMIT 50' : '') . ';')
			if $opt{all} || rand() < 0.3;
	} else {
		push @s, st("SELECT $call;");
	}
	push @s, $lease_cleanup if $f->{leases};
	return @s;
}

# Typical arguments of $f, or undef if it cannot be called from SQL.
sub typical_args {
	my ($f) = @_;
	return undef unless $f->{callable};
	my @names = @{ $f->{argnames} };
	# A token: the newest held lease's.
	return [ map { $names[$_] =~ /token/ ? "(SELECT max(token) FROM snowflake_leases WHERE state = 'held')" : typical_for($f->{argtypes}[$_], $names[$_]) } 0 .. $#{ $f->{argtypes} } ];
}

# One call of every function (but DDL) with typical arguments: what runs
# after each change of a setting.  Grants first, releases last, so that
# renewals find the lease held.
sub probe_rank { my ($f) = @_; return $f->{name} =~ /lease_worker/ ? 0 : $f->{name} =~ /renew/ ? 1 : $f->{name} =~ /release/ ? 3 : 2; }
sub probe {
	my @s;
	for my $f (sort { probe_rank($a) <=> probe_rank($b) } @functions) {
		next if $f->{ddl};
		my $args = typical_args($f) or next;
		push @s, grep { $_ != $lease_cleanup } call_forms($f, $args);
	}
	push @s, $lease_cleanup;
	push @s, st("SELECT count(*) FROM fuzz_t WHERE snowflake_timestamp(id) >= now() - interval '1 hour';")
		if $has{snowflake_timestamp};
	return @s;
}

# ---------------------------------------------------------------- fixtures

my @setup = map { st($_) } (
	'CREATE TABLE fuzz_ids (id bigint PRIMARY KEY);',
	'CREATE TABLE fuzz_t (id bigint);',
	"INSERT INTO fuzz_t SELECT snowflake_nextval() FROM generate_series(1, 4000) RETURNING 'fuzzid', '-', id;",
	'INSERT INTO fuzz_ids SELECT id FROM fuzz_t;',
	'INSERT INTO fuzz_t VALUES (0), (1), (4194303), (4194304), (9007199254740992), (9223372036854775807), (NULL);',
	"INSERT INTO fuzz_t SELECT snowflake_min_id(t) FROM unnest(ARRAY['$epoch'::timestamptz, '$epoch'::timestamptz + interval '1 ms', now() - interval '1 day', now() + interval '1 day', '$last_ms'::timestamptz]) AS t;",
	"INSERT INTO fuzz_t SELECT snowflake_max_id(t) FROM unnest(ARRAY['$epoch'::timestamptz, now() - interval '1 day', now(), '$last_ms'::timestamptz]) AS t;",
	'CREATE INDEX fuzz_t_id ON fuzz_t (id);',
	'CREATE TABLE fuzz_small AS SELECT id FROM fuzz_t WHERE id IS NOT NULL ORDER BY id DESC LIMIT 200;',
	'CREATE TABLE fuzz_brin AS SELECT id FROM fuzz_t;',
	'CREATE INDEX fuzz_brin_id ON fuzz_brin USING brin (id) WITH (pages_per_range = 1);',
	'CREATE TABLE fuzz_part (id bigint) PARTITION BY RANGE (id);',
	q{DO $d$ DECLARE b1 bigint := snowflake_min_id(now() - interval '1 day'); b2 bigint := snowflake_min_id(now() - interval '1 hour'); BEGIN EXECUTE format('CREATE TABLE fuzz_part_old PARTITION OF fuzz_part FOR VALUES FROM (MINVALUE) TO (%s)', b1); EXECUTE format('CREATE TABLE fuzz_part_day PARTITION OF fuzz_part FOR VALUES FROM (%s) TO (%s)', b1, b2); EXECUTE format('CREATE TABLE fuzz_part_new PARTITION OF fuzz_part FOR VALUES FROM (%s) TO (MAXVALUE)', b2); END $d$;},
	'CREATE TABLE fuzz_part_null PARTITION OF fuzz_part DEFAULT;',
	'CREATE INDEX ON fuzz_part (id);',
	'INSERT INTO fuzz_part SELECT id FROM fuzz_t;',
	'CREATE TABLE fuzz_conv_a (id serial PRIMARY KEY, v text);',
	'CREATE TABLE fuzz_conv_b (id integer GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, v text);',
	'CREATE TABLE fuzz_conv_c (id smallserial PRIMARY KEY);',
	'CREATE TABLE fuzz_conv_d (id bigserial PRIMARY KEY, ref integer REFERENCES fuzz_conv_a (id));',
	"INSERT INTO fuzz_conv_a (v) SELECT 'v' || g FROM generate_series(1, 20) AS g;",
	"INSERT INTO fuzz_conv_b (v) SELECT 'v' || g FROM generate_series(1, 20) AS g;",
	'INSERT INTO fuzz_conv_c DEFAULT VALUES;',
	'INSERT INTO fuzz_conv_d (ref) SELECT id FROM fuzz_conv_a;',
	'CREATE VIEW fuzz_view AS SELECT id FROM fuzz_t;',
	'CREATE SEQUENCE fuzz_seq;',
	'ANALYZE;',
	# Not ON ALL TABLES: that would take in the extension's lease tables,
	# which hold tokens and are kept from PUBLIC.
	'GRANT SELECT ON fuzz_ids, fuzz_t, fuzz_small, fuzz_brin, fuzz_part, fuzz_conv_a, fuzz_conv_b, '
	  . 'fuzz_conv_c, fuzz_conv_d, fuzz_view, fuzz_seq TO fuzz_plain;',
);
# PL/pgSQL wrappers that claim PARALLEL SAFE, one per function: so that the
# function runs inside a parallel worker, as a mislabelled user function
# would make it.
my @liars;
for my $i (0 .. $#functions) {
	my $f = $functions[$i];
	next if $f->{ddl};
	my $args = typical_args($f) or next;
	my $call = "$f->{qname}(" . join(', ', @$args) . ')';
	push @setup, st("CREATE FUNCTION fuzz_liar_$i() RETURNS SETOF text LANGUAGE plpgsql VOLATILE PARALLEL SAFE AS \$l\$ BEGIN RETURN QUERY SELECT x::text FROM $call AS x; END \$l\$;");
	push @setup, st("CREATE FUNCTION fuzz_liar_scalar_$i() RETURNS text LANGUAGE plpgsql VOLATILE PARALLEL SAFE AS \$l\$ BEGIN RETURN (SELECT string_agg(x::text, ',') FROM $call AS x); END \$l\$;");
	push @liars, [ $i, $f ];
}
{
	# No statement_timeout: a slow CREATE INDEX or ANALYZE is no hang.
	local $ENV{PGOPTIONS} = '-c statement_timeout=0';
	run_script('setup', \@setup, strict => 1);
}
check(!@failures, 'setup failed') or die "targeted: setup failed\n";

# ---------------------------------------------------------------- noise

# A second session all along: IDs, batches, cursors, worker releases.  The
# main session cancels and terminates it now and then.  It runs in a child
# process, which the END block below stops if this one ends early; it stops
# by itself at the deadline, or if this one is gone.
my $noise_pid;
my $noise_stop = "$workdir/noise.stop";
my $parent_pid = $$;
END {
	if ($noise_pid && $$ == $parent_pid) {
		local $?;
		kill 'TERM', $noise_pid;
		waitpid($noise_pid, 0);
	}
}
if ($noise_on) {
	$noise_pid = fork // die "fork: $!";
	if ($noise_pid == 0) {
		srand($seed + 7919);
		# Its own findings only, not what the parent had when it forked.
		@ids = ();
		@failures = ();
		(%errors_by_state, %extension_errors, %keyed) = ();
		$statements_total = 0;
		my $chunk = 0;
		# At least one chunk, unless the time is out.
		while (time < $deadline - 10 && getppid() == $parent_pid && ($chunk == 0 || !-e $noise_stop)) {
			my @s = map { txn_program("n$chunk.$_", 1) } 1 .. 8;
			run_script("noise$chunk", \@s, noise => 1, appname => 'fuzz_noise',
				limit => min(60, $deadline - time));
			$chunk++;
			# Leaves the main session most of a CPU.
			sleep 0.2;
		}
		# Hands its findings to the parent through a file; "end" last.
		open my $fh, '>', "$workdir/noise.result" or die;
		print $fh "statements $statements_total\n";
		print $fh "chunks $chunk\n";
		print $fh "id $_\n" for @ids;
		print $fh "fail $_\n" for @failures;
		print $fh "error $_ $errors_by_state{$_}\n" for keys %errors_by_state;
		print $fh "exterr $extension_errors{$_} $_\n" for keys %extension_errors;
		print $fh "end\n";
		close $fh or die;
		POSIX::_exit(0);
	}
}

# ---------------------------------------------------------------- generators

# Random transaction programs.  $noise: the concurrent session's (no
# settings, no killing).
my $program_seq = 0;
sub txn_program {
	my ($tag, $noise) = @_;
	$program_seq++;
	my @s;
	my $in_txn = rand() < 0.75;
	my $prepared = $in_txn && !$noise && rand() < 0.12;
	if ($in_txn) {
		push @s, st(pick('BEGIN;', 'BEGIN;', 'BEGIN ISOLATION LEVEL SERIALIZABLE;', 'BEGIN READ ONLY;',
			'BEGIN ISOLATION LEVEL REPEATABLE READ;', 'START TRANSACTION;'));
	}
	my @savepoints;
	# Where a short statement_timeout may hold till the end of the
	# transaction: in one aborted by the cancel it is not undone before.
	my $short_from;
	my $ops = 3 + int rand 12;
	for my $k (1 .. $ops) {
		my $r = rand;
		my $batch = pick(0, 1, 2, 5, 100, 4096, 5000, 20000);
		if ($r < 0.18) {
			push @s, st("SELECT 'fuzzid', '-', snowflake_nextval();");
		} elsif ($r < 0.28) {
			push @s, st("SELECT 'fuzzid', '-', x FROM snowflake_nextval($batch) AS x;");
		} elsif ($r < 0.33) {
			push @s, st("SELECT 'fuzzid', '-', snowflake_nextval(" . pick(1, 3, 50) . "), snowflake_nextval();");
		} elsif ($r < 0.40) {
			push @s, st("INSERT INTO fuzz_ids SELECT snowflake_nextval() FROM generate_series(1, " . pick(1, 10, 300) . ") RETURNING 'fuzzid', '-', id;");
		} elsif ($r < 0.44) {
			push @s, st("INSERT INTO fuzz_ids SELECT x FROM snowflake_nextval(" . pick(1, 1000) . ") AS x RETURNING 'fuzzid', '-', id;");
		} elsif ($r < 0.50) {
			push @s, st(pick('SELECT 1/0;', 'SELECT snowflake_nextval(-1);', 'SELECT snowflake_timestamp(-1);',
				"SELECT 'fuzzid', '-', x FROM snowflake_nextval(60) WITH ORDINALITY AS t(x, g) WHERE 1/(60 - g) >= 0;",
				"SELECT 'fuzzid', '-', snowflake_nextval() FROM generate_series(1, 10) AS g WHERE 1/(10 - g) >= 0;"));
		} elsif ($r < 0.56 && $in_txn) {
			my $sp = "s$k";
			push @savepoints, $sp;
			push @s, st("SAVEPOINT $sp;");
		} elsif ($r < 0.62 && @savepoints) {
			push @s, st('ROLLBACK TO SAVEPOINT ' . pick(@savepoints) . ';');
		} elsif ($r < 0.64 && @savepoints) {
			my $sp = pop @savepoints;
			push @s, st("RELEASE SAVEPOINT $sp;");
		} elsif ($r < 0.69) {
			push @s, st('SELECT snowflake_release_worker();');
		} elsif ($r < 0.73) {
			push @s, st(q{DO $p$ DECLARE i bigint; BEGIN i := snowflake_nextval(); RAISE NOTICE 'fuzzid|-|%', i; PERFORM 1/0; EXCEPTION WHEN division_by_zero THEN RAISE NOTICE 'fuzzid|-|%', snowflake_nextval(); END $p$;});
		} elsif ($r < 0.76) {
			push @s, st(q{DO $p$ DECLARE i bigint; BEGIN FOR i IN SELECT x FROM snowflake_nextval(20) AS x LOOP RAISE NOTICE 'fuzzid|-|%', i; IF i % 7 = 0 THEN PERFORM snowflake_release_worker(); END IF; END LOOP; PERFORM snowflake_nextval(-5); END $p$;});
		} elsif ($r < 0.79) {
			# A cancel in the middle of a batch.  The short timeout may
			# cancel the statements that restore it too; a plain RESET
			# after them, under the usual timeout.
			my $local = $in_txn ? 'LOCAL ' : '';
			push @s, st("SET ${local}statement_timeout = '" . pick(1, 2, 5, 20) . "ms';"),
				st('SELECT count(*) FROM snowflake_nextval(1000000);', cancel => 1);
			$short_from //= @s if $in_txn;
			push @s, st("SET ${local}statement_timeout = DEFAULT;", cancel => 1),
				st('RESET statement_timeout;');
		} elsif ($r < 0.82) {
			push @s, st('SELECT * FROM snowflake_decode((SELECT max(id) FROM fuzz_ids));');
		} elsif ($r < 0.85) {
			push @s, st(pick("SELECT count(*) FROM fuzz_t WHERE snowflake_timestamp(id) >= now() - interval '1 hour';",
				"SELECT count(*) FROM fuzz_part WHERE (snowflake_decode(id)).ts < now() - interval '1 day';",
				'SELECT count(*) FROM snowflake_workers;', 'SELECT count(*) FROM snowflake_status();'));
		} elsif ($r < 0.88 && !$noise) {
			push @s, st(pick('SET LOCAL snowflake.clock_wait_timeout = 0;', 'SET LOCAL snowflake.rewrite_timestamp_comparisons = off;',
				"SET LOCAL snowflake.clock_wait_timeout = '1h';", 'SET snowflake.clock_wait_timeout = 1;',
				'RESET snowflake.clock_wait_timeout;'));
		} elsif ($r < 0.91 && !$noise) {
			push @s, st("SELECT token FROM snowflake_lease_worker('txn $tag', " . pick('NULL', "'1 s'", "'1 h'") . ", now());");
		} elsif ($r < 0.93 && !$noise) {
			push @s, st(pick(
				"SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE application_name = 'fuzz_noise';",
				"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'fuzz_noise';"));
		} elsif ($r < 0.96) {
			push @s, st('SELECT 1;');
		} else {
			push @s, cursor_program("$tag.$k", 1);
		}
	}
	if ($in_txn) {
		if ($prepared) {
			my $gid = "fuzz_$program_seq";
			push @s, st("PREPARE TRANSACTION '$gid';");
			push @s, st(pick("COMMIT PREPARED '$gid';", "ROLLBACK PREPARED '$gid';"));
		} else {
			push @s, st(pick('COMMIT;', 'ROLLBACK;', 'END;', 'ABORT;'));
		}
		# Copies: a statement may be shared ($lease_cleanup).
		$_ = { %$_, cancel => 1 } for @s[ ($short_from // scalar @s) .. $#s ];
	}
	push @s, $lease_cleanup if !$noise;
	return @s;
}

# A random cursor program; $inner: inside a transaction program (no BEGIN).
my $cursor_seq = 0;
sub cursor_program {
	my ($tag, $inner) = @_;
	my @s;
	push @s, st('BEGIN;') unless $inner;
	my @open;
	my $ncur = 1 + int rand 3;
	for my $c (1 .. $ncur) {
		$cursor_seq++;
		my $name = "fc$cursor_seq";
		my $scroll = rand() < 0.5;
		my $hold = !$inner && rand() < 0.3;
		my $m = pick(5, 50, 300, 2000);
		my $key = "'$tag.$name:' || g";
		my $query = pick(
			"SELECT 'fuzzid', $key, snowflake_nextval() FROM generate_series(1, $m) AS g",
			"SELECT 'fuzzid', $key, x FROM snowflake_nextval($m) WITH ORDINALITY AS t(x, g)",
			"SELECT 'fuzzid', $key, x FROM (SELECT snowflake_nextval($m) AS x, generate_series(1, $m) AS g) AS s",
			"SELECT 'fuzzid', $key, snowflake_nextval() FROM generate_series(1, $m) AS g WHERE snowflake_timestamp(snowflake_nextval()) > '-infinity'",
			"SELECT 'fuzzid', $key, snowflake_nextval() FROM (SELECT id, row_number() OVER () AS g FROM fuzz_t WHERE id >= 0 LIMIT $m) AS f, snowflake_decode(f.id) AS d WHERE d.seq >= 0");
		push @s, st('DECLARE ' . $name . ($scroll ? ' SCROLL' : pick(' NO SCROLL', '')) . ' CURSOR'
			  . ($hold ? ' WITH HOLD' : '') . " FOR $query;");
		push @open, [ $name, $scroll, $m ];
	}
	my $ops = 3 + int rand 10;
	for (1 .. $ops) {
		my ($name, $scroll, $m) = @{ pick(@open) };
		my $r = rand;
		if ($r < 0.35) {
			push @s, st('FETCH ' . pick(1, 2, 10, 100) . " FROM $name;");
		} elsif ($r < 0.45) {
			push @s, st(pick('FETCH NEXT', 'FETCH FORWARD 3', 'MOVE 5 IN', 'MOVE FORWARD ALL IN', 'FETCH ALL FROM') . " $name;");
		} elsif ($r < 0.65) {
			push @s, st(pick('FETCH BACKWARD ' . pick(1, 3, 20), 'FETCH PRIOR FROM', 'FETCH FIRST FROM', 'FETCH LAST FROM',
				'FETCH ABSOLUTE ' . pick(1, 3, -1, $m), 'FETCH RELATIVE ' . pick(-2, 0, 2), 'MOVE BACKWARD ALL IN')
				  . " $name;");
		} elsif ($r < 0.75) {
			push @s, st("SELECT 'fuzzid', '-', snowflake_nextval();");
		} elsif ($r < 0.80) {
			push @s, st("SELECT 'fuzzid', '-', x FROM snowflake_nextval(7) AS x;");
		} elsif ($r < 0.84) {
			push @s, st('SELECT snowflake_release_worker();');
		} elsif ($r < 0.88) {
			push @s, st("CLOSE $name;");
		} elsif ($r < 0.91) {
			push @s, st('SELECT count(*) FROM pg_cursors;');
		} elsif ($r < 0.94 && !$inner) {
			push @s, st('SAVEPOINT cs;'), st("FETCH 2 FROM $name;"), st('ROLLBACK TO SAVEPOINT cs;');
		} else {
			push @s, st('SELECT 1/0;') if rand() < 0.3;
		}
	}
	unless ($inner) {
		push @s, st(pick('COMMIT;', 'COMMIT;', 'ROLLBACK;'));
		# Holdable cursors outlive the commit: their rest was issued then.
		for my $o (@open) {
			push @s, st("FETCH " . pick(5, 'ALL') . " FROM $o->[0];") if rand() < 0.5;
			push @s, st("CLOSE $o->[0];");
		}
	}
	return @s;
}

# ---------------------------------------------------------------- sections

# Argument lists for types @$types (named @$names): each argument in turn
# over its values in @$lists while the others keep typical ones, then
# $random lists of values drawn at random.
sub vary_each {
	my ($types, $lists, $random, $names) = @_;
	my @combos;
	for my $i (0 .. $#$types) {
		for my $v (@{ $lists->[$i] }) {
			my @c = map { typical_for($types->[$_], $names ? $names->[$_] : '') } 0 .. $#$types;
			$c[$i] = $v;
			push @combos, \@c;
		}
	}
	push @combos, [ map { pick(@$_) } @$lists ] for 1 .. $random;
	return @combos;
}

sub section_edge {
	my @s;
	my $cap = 400;
	for my $f (@functions) {
		my @types = @{ $f->{argtypes} };
		my @names = @{ $f->{argnames} };
		if (!$f->{callable}) {
			# Cannot be called from SQL; trying must fail cleanly.
			push @s, st("SELECT $f->{qname}(NULL);");
			next;
		}
		my @lists = map { [ edges_for($types[$_], $names[$_]) ] } 0 .. $#types;
		my $product = 1;
		$product *= scalar @$_ for @lists;
		my @combos;
		if (!@types) {
			@combos = ([]);
		} elsif ($product <= $cap) {
			@combos = ([]);
			for my $l (@lists) {
				@combos = map { my $c = $_; map { [ @$c, $_ ] } @$l } @combos;
			}
		} else {
			@combos = vary_each(\@types, \@lists, $iterations * 3, \@names);
		}
		for my $c (@combos) {
			push @s, call_forms($f, $c);
		}
		# Default arguments left out, and named notation.
		if ($f->{ndefaults} > 0) {
			my $required = @types - $f->{ndefaults};
			for my $c (head(21, @combos)) {
				push @s, call_forms($f, [ @$c[0 .. $required - 1] ]);
			}
			my @qnames = @{ $f->{qargnames} };
			if (!grep { $_ eq '' } @qnames) {
				my @c = @{ pick(@combos) };
				push @s, call_forms($f, [ map { "$qnames[$_] => $c[$_]" } reverse 0 .. $#c ]);
			}
		}
		push @s, call_forms($f, typical_args($f), all => 1);
	}
	# Wrong argument counts and types: resolution errors.
	for my $f (@functions) {
		push @s, st("SELECT $f->{qname}(" . join(', ', ('NULL') x (@{ $f->{argtypes} } + 1)) . ');');
		push @s, st("SELECT $f->{qname}(" . join(', ', ("'garbage'") x @{ $f->{argtypes} }) . ');')
			if @{ $f->{argtypes} };
	}
	return @s;
}

sub setting_values {
	my ($g) = @_;
	my @bad = ("''", "'garbage'", "'-1'", "'1e400'", "'NaN'", "repeat('9', 1000)");
	my (@good, @v);
	if ($g->{vartype} eq 'integer' || $g->{vartype} eq 'real') {
		my ($min, $max) = ($g->{min}, $g->{max});
		@v = ("'-2147483648'", "'2147483647'", "'2147483648'", "'99999999999999999999'", "'" . ($min - 1) . "'",
			"'" . ($max + 1) . "'", "'1.5'", "'0x10'", "' 7 '", "'Infinity'", "'1e3'");
		@good = ("'$min'", "'$max'");
		if ($g->{unit} eq 'ms') {
			push @v, "'1 us'", "'999 us'", "'1 fortnight'", "'5 kB'", "'1000000 d'", "'-1 s'", "'1.5 s'", "'25 h'";
			push @good, "'1 s'", "'1 min'";
		}
	} elsif ($g->{vartype} eq 'bool') {
		@v = ("'maybe'", "'2'", "'onn'", "'of'");
		@good = ("'on'", "'off'", "'yes'", "'0'");
	} elsif ($g->{vartype} eq 'enum') {
		my @e = split /;/, $g->{enumvals};
		@v = ((map { sql_quote(uc $_) } @e), (map { sql_quote("$_ ") } @e), "'fatal'");
		@good = map { sql_quote($_) } @e;
	} else {
		@v = ("'%s%n'", "'2025-13-45'", "'infinity'", "'-infinity'", "repeat('x', 10000)", "'9999-12-31 23:59:59.999'",
			"'1970-01-01'", "'2999-01-01'");
		@good = ("'2025-01-01'");
	}
	return ([ @bad, @v ], \@good);
}

# pg_reload_conf(), then a wait until this session has re-read the
# configuration (a backend does between statements: pg_conf_load_time()
# moves then), bounded: statements that sleep, less and less briefly, only
# while it has not; then whether it has ("reloaded|name|t").
sub reload_conf {
	my ($n) = @_;
	return (st('SELECT pg_conf_load_time() AS fz_conf \\gset'), st('SELECT pg_reload_conf();'),
		st(q{SELECT format('SELECT pg_sleep(%s) WHERE pg_conf_load_time() <= %L', s, :'fz_conf') }
		  . q{FROM unnest('{0.01,0.02,0.05,0.1,0.2,0.5,1,1,1,1,1,1,1,1,1,1}'::numeric[]) AS s \\gexec}),
		st("SELECT 'reloaded', '$n', pg_conf_load_time() > :'fz_conf';"));
}

sub section_settings {
	my @s;
	my @probe = probe();
	for my $g (@settings) {
		my ($bad, $good) = setting_values($g);
		my $n = $g->{name};
		for my $v (@$bad, @$good) {
			# SET takes a literal only; a repeat() goes through set_config().
			push @s, st("SET $n = $v;") if $v =~ /^'/;
			push @s, st("SELECT set_config('$n', $v, " . pick('false', 'true') . ');');
		}
		push @s, @probe;
		push @s, st('BEGIN;');
		for my $v (@$bad, @$good) {
			push @s, st("SAVEPOINT v;"), st("SET LOCAL $n = $v;"), st('ROLLBACK TO SAVEPOINT v;') if $v =~ /^'/;
		}
		# The last good value, for the rest of the transaction, if it may be set.
		push @s, st("DO \$g\$ BEGIN PERFORM set_config('$n', $good->[-1], true); EXCEPTION WHEN others THEN NULL; END \$g\$;") if @$good;
		push @s, @probe;
		push @s, st(pick('COMMIT;', 'ROLLBACK;'));
		push @s, st("RESET $n;"), st("SHOW $n;"), st("SELECT current_setting('$n'), current_setting('$n', true);");
		# ALTER SYSTEM: a bad value fails there; an extreme valid one is
		# reloaded, probed and taken back.
		for my $v (@$bad) {
			push @s, st("ALTER SYSTEM SET $n = $v;") if $v =~ /^'/;
		}
		push @s, st("ALTER SYSTEM RESET $n;");
		# Not those that only a restart changes.
		for my $v ($g->{context} eq 'postmaster' ? () : @$good) {
			push @s, st("ALTER SYSTEM SET $n = $v;"), reload_conf($n);
			push @s, st("SHOW $n;");
			push @s, @probe;
			push @s, st("ALTER SYSTEM RESET $n;"), reload_conf($n);
		}
		push @s, st("DO \$a\$ BEGIN EXECUTE format('ALTER DATABASE %I SET $n = %L', current_database(), $good->[0]); END \$a\$;"),
			st("DO \$a\$ BEGIN EXECUTE format('ALTER DATABASE %I RESET $n', current_database()); END \$a\$;") if @$good;
	}
	# Names under the reserved prefix that are not settings.
	for my $n ('snowflake.no_such_setting', 'snowflake.', 'snowflake.epoch.x', 'snowflake."node_bits"', 'SNOWFLAKE.NODE_BITS') {
		push @s, st("SET $n = 1;"), st("SHOW $n;"), st("SELECT set_config('$n', '1', false);"),
			st("SELECT current_setting('$n', true);"), st("ALTER SYSTEM SET $n = 1;");
	}
	push @s, st('RESET ALL;'), st('ALTER SYSTEM RESET ALL;'), reload_conf('all');
	push @s, @probe;
	return @s;
}

# Forced parallel query, however small the table.
sub parallel_on {
	my $force = $server_version >= 160000 ? 'debug_parallel_query' : 'force_parallel_mode';
	return map { st($_) } ("SET $force = on;", 'SET parallel_setup_cost = 0;',
		'SET parallel_tuple_cost = 0;', 'SET min_parallel_table_scan_size = 0;');
}

sub section_parallel {
	my @s;
	push @s, parallel_on(), map { st($_) } ('SET min_parallel_index_scan_size = 0;',
		'SET max_parallel_workers_per_gather = 2;', 'SET parallel_leader_participation = off;');
	for my $pass (1 .. 2) {
		push @s, st('SET enable_seqscan = off;'), st('SET enable_bitmapscan = off;') if $pass == 2;
		my $where = $pass == 2 ? "id >= 0 AND id < 9223372036854775807" : 'id >= 0';
		for my $f (@functions) {
			next if $f->{ddl} || !$f->{callable};
			my @types = @{ $f->{argtypes} };
			my @names = @{ $f->{argnames} };
			# The second pass, over indexes, for the functions of an ID only.
			next if $pass == 2 && !grep { $_ eq 'bigint' } @types;
			if ($f->{issues_ids}) {
				# Typical arguments, in the select list: once per row (in
				# FROM it would run once).
				my $call = "$f->{qname}(" . join(', ', @{ typical_args($f) }) . ')';
				push @s, st("SELECT 'fuzzid', '-', $call FROM fuzz_small WHERE $where;");
				push @s, $lease_cleanup if $f->{leases};
				next;
			}
			# A bigint argument takes the scanned column.
			my @combos = ([ map { $types[$_] eq 'bigint' ? 'id' : typical_for($types[$_], $names[$_]) } 0 .. $#types ]);
			for (1 .. ($pass == 1 ? 1 + int($iterations / 10) : 1)) {
				push @combos, [ map { $types[$_] eq 'bigint' && rand() < 0.7 ? 'id' : pick(edges_for($types[$_], $names[$_])) } 0 .. $#types ];
			}
			for my $c (@combos) {
				my $call = "$f->{qname}(" . join(', ', @$c) . ')';
				if ($f->{retset}) {
					push @s, st("SELECT count(*) FROM fuzz_small, LATERAL $call AS x WHERE $where;");
				} else {
					# Volatile ones run once per row: the small table.
					my $table = $f->{volatile} ? 'fuzz_small' : 'fuzz_t';
					push @s, st("SELECT count(*), count(($call)::text) FROM $table WHERE $where;");
					push @s, st("SELECT count(*) FROM $table WHERE $where AND ($call)::text IS DISTINCT FROM 'x';");
				}
				push @s, $lease_cleanup if $f->{leases};
			}
		}
		for my $l ($pass == 1 ? @liars : ()) {
			my ($i, $f) = @$l;
			my $tag = $f->{issues_ids} ? "'fuzzid', '-'," : "'liar', '$i',";
			push @s, st("SELECT $tag v FROM fuzz_liar_$i() AS v;");
			push @s, st("SELECT count(*) FROM fuzz_small WHERE fuzz_liar_scalar_$i() IS DISTINCT FROM 'x';");
			push @s, $lease_cleanup if $f->{leases};
		}
		push @s, section_rewrite_queries(1);
	}
	push @s, st('RESET ALL;');
	return @s;
}

# The rewrite checks: each count of a rewritten comparison ("a") against
# the same comparison computed below OFFSET 0, where the planner hook cannot
# reach ("b"); $key, an SQL expression, pairs them in the output.
sub cmp_queries {
	my ($table, $pred, $ref_pred, $key) = @_;
	return ("SELECT 'cmp', $key, 'a', count(*) FROM $table WHERE id IS NOT NULL AND ($pred)",
		"SELECT 'cmp', $key, 'b', count(*) FROM (SELECT id, snowflake_timestamp(id) AS ts FROM $table WHERE id IS NOT NULL OFFSET 0) AS s WHERE $ref_pred");
}
my $cmp_seq = 0;
sub rewrite_pair {
	my ($table, $pred, $ref_pred) = @_;
	$cmp_seq++;
	return map { st("$_;") } cmp_queries($table, $pred, $ref_pred, "'r$cmp_seq'");
}

sub rewrite_predicates {
	my ($x, $y) = @_;
	my @p;
	for my $op ('<', '<=', '=', '>=', '>') {
		push @p, [ "snowflake_timestamp(id) $op $x", "ts $op $x" ];
		push @p, [ "$x $op snowflake_timestamp(id)", "$x $op ts" ];
		push @p, [ "(snowflake_decode(id)).ts $op $x", "ts $op $x" ] if $has{snowflake_decode};
		push @p, [ "NOT (snowflake_timestamp(id) $op $x)", "NOT (ts $op $x)" ];
	}
	push @p, [ "snowflake_timestamp(id) BETWEEN $x AND $y", "ts BETWEEN $x AND $y" ];
	push @p, [ "snowflake_timestamp(id) BETWEEN SYMMETRIC $x AND $y", "ts BETWEEN SYMMETRIC $x AND $y" ];
	push @p, [ "snowflake_timestamp(id) >= $x AND snowflake_timestamp(id) < $y", "ts >= $x AND ts < $y" ];
	push @p, [ "snowflake_timestamp(id) < $x OR snowflake_timestamp(id) > $y", "ts < $x OR ts > $y" ];
	push @p, [ "snowflake_timestamp(id) = ANY (ARRAY[$x, $y])", "ts = ANY (ARRAY[$x, $y])" ];
	push @p, [ "snowflake_timestamp(id) IS DISTINCT FROM $x", "ts IS DISTINCT FROM $x" ];
	push @p, [ "snowflake_timestamp(id) < ($x)::timestamp", "ts < ($x)::timestamp" ];
	push @p, [ "snowflake_timestamp(id) >= ($x)::date", "ts >= ($x)::date" ];
	return @p;
}

sub section_rewrite_queries {
	my ($short) = @_;
	my @s;
	my @ts = grep { !/^NULL/ } @{ $edges{'timestamp with time zone'} };
	push @ts, 'NULL::timestamptz';
	my @tables = ('fuzz_t', 'fuzz_brin', 'fuzz_part');
	# Literals.
	for my $x ($short ? head(6, @ts) : @ts) {
		my $y = pick(@ts);
		my @p = rewrite_predicates($x, $y);
		@p = map { pick(@p) } 1 .. 6 if $short;
		for my $p (@p) {
			push @s, rewrite_pair(pick(@tables), $p->[0], $p->[1]);
		}
	}
	return @s if $short;
	# Parameters, under each plan cache mode.
	my @p = rewrite_predicates('$1', '$2');
	my $pi = 0;
	for my $p (@p) {
		for my $table (@tables) {
			$pi++;
			my ($qa, $qb) = cmp_queries($table, $p->[0], $p->[1], '$3');
			push @s, st("PREPARE fz_ra$pi(timestamptz, timestamptz, text) AS $qa;"),
				st("PREPARE fz_rb$pi(timestamptz, timestamptz, text) AS $qb;");
			for my $mode ('force_custom_plan', 'force_generic_plan') {
				push @s, st("SET plan_cache_mode = $mode;");
				my @xs = (rand() < 0.5 ? @ts : map { pick(@ts) } 1 .. 5);
				for my $x (@xs) {
					my $y = pick(@ts);
					$cmp_seq++;
					push @s, st("EXECUTE fz_ra$pi($x, $y, 'p$cmp_seq');"), st("EXECUTE fz_rb$pi($x, $y, 'p$cmp_seq');");
				}
			}
			push @s, st("DEALLOCATE fz_ra$pi;"), st("DEALLOCATE fz_rb$pi;");
		}
	}
	push @s, st('RESET plan_cache_mode;');
	# The same with the rewrite off must agree too, and interval arithmetic.
	push @s, st('SET snowflake.rewrite_timestamp_comparisons = off;') if grep { $_->{name} eq 'snowflake.rewrite_timestamp_comparisons' } @settings;
	for my $x (map { pick(@ts) } 1 .. 5) {
		my $p = pick(rewrite_predicates($x, pick(@ts)));
		push @s, rewrite_pair('fuzz_t', $p->[0], $p->[1]);
	}
	push @s, st('RESET snowflake.rewrite_timestamp_comparisons;');
	for my $iv (grep { !/^NULL/ } @{ $edges{interval} }) {
		push @s, rewrite_pair(pick(@tables), "snowflake_timestamp(id) >= now() - $iv", "ts >= now() - $iv");
	}
	return @s;
}

sub section_prepared {
	my @s;
	my $pn = 0;
	for my $f (@functions) {
		next if !$f->{callable} || $f->{ddl};
		my @types = @{ $f->{argtypes} };
		my @names = @{ $f->{argnames} };
		$pn++;
		my $call = "$f->{qname}(" . join(', ', map { '$' . $_ } 1 .. @types) . ')';
		my $body = $f->{issues_ids} ? "SELECT 'fuzzid', '-', x FROM $call AS x"
		  : ($f->{retset} || $f->{record}) ? "SELECT * FROM $call"
		  : "SELECT $call";
		push @s, st("PREPARE fz_p$pn" . (@types ? '(' . join(', ', @types) . ')' : '') . " AS $body;");
		# No subqueries in EXECUTE's parameters.
		my @lists = map { [ grep { !/SELECT/ } edges_for($types[$_], $names[$_]) ] } 0 .. $#types;
		my @combos = @types ? vary_each(\@types, \@lists, $iterations / 4, \@names) : ([]);
		for my $mode ('force_custom_plan', 'force_generic_plan', 'auto') {
			push @s, st("SET plan_cache_mode = $mode;");
			my $reps = $mode eq 'auto' ? 7 : 1;
			for my $c ($mode eq 'auto' ? head(4, @combos) : @combos) {
				my $exec = "EXECUTE fz_p$pn" . (@types ? '(' . join(', ', @$c) . ')' : '') . ';';
				push @s, st($exec) for 1 .. $reps;
				push @s, $lease_cleanup if $f->{leases};
			}
		}
		push @s, st("DEALLOCATE fz_p$pn;"), st('RESET plan_cache_mode;');
	}
	return @s;
}

sub section_leases {
	my @s;
	return @s unless $has{snowflake_lease_worker} && $has{snowflake_renew_lease} && $has{snowflake_release_lease};
	my @ct = ('NULL', 'now()', "now() - interval '999 ms'", "now() + interval '1001 ms'", "'infinity'", "'-infinity'",
		"'4714-11-24 00:00:00+00 BC'", "clock_timestamp()");
	my @ttl = ('NULL', "'1 s'", "'999 ms'", "'24 h'", "'24 h 1 us'", "'1 mon'", "'-1 s'", "'1 h'");
	# Until a grant sets them (a failed grant leaves the last ones: a stale
	# lease).
	push @s, map { st("\\set fz_$_ 0") } qw(tok w n tb nb wb sb ep lo hi);
	for my $i (1 .. $iterations) {
		# Mostly a grant that works, so that the program has a lease.
		my $ttl = rand() < 0.7 ? pick('NULL', "'1 s'", "'1 h'") : pick(@ttl);
		my $ct = rand() < 0.7 ? pick('NULL', 'now()') : pick(@ct);
		push @s, st("SELECT token AS tok, worker_id AS w, node_id AS n, timestamp_bits AS tb, node_bits AS nb, worker_bits AS wb, sequence_bits AS sb, (extract(epoch FROM epoch) * 1000)::bigint AS ep, (extract(epoch FROM not_before) * 1000)::bigint AS lo, (extract(epoch FROM not_after) * 1000)::bigint AS hi FROM snowflake_lease_worker('lease program $i', $ttl, $ct) \\gset fz_");
		# IDs of the lease's worker id: inside the window, at its edges,
		# and of another worker id.
		my $id = sub {
			my ($ms, $w) = @_;
			return "((($ms) - :fz_ep) << (:fz_nb + :fz_wb + :fz_sb)) | (:fz_n::bigint << (:fz_wb + :fz_sb)) | (($w)::bigint << :fz_sb)";
		};
		my @last = ('NULL', $id->(':fz_lo + 1', ':fz_w'), $id->(':fz_lo', ':fz_w'), $id->(':fz_hi', ':fz_w'),
			$id->(':fz_hi - 1', ':fz_w'), $id->(':fz_lo + 1', ':fz_w + 1'), '0', '-1', '9223372036854775807',
			"(SELECT max(id) FROM fuzz_ids)");
		my @tok = (':fz_tok', ':fz_tok', ':fz_tok', ':fz_tok + 1', ':fz_tok - 1', '0', '-1', 'NULL',
			'9223372036854775807', "'-9223372036854775808'::bigint");
		for (1 .. 3 + int rand 6) {
			my $r = rand;
			if ($r < 0.45) {
				push @s, st('SELECT * FROM snowflake_renew_lease(' . pick(@tok) . ', ' . pick(@last) . ', ' . pick(@ct) . ');');
			} elsif ($r < 0.65) {
				push @s, st('SELECT snowflake_release_lease(' . pick(@tok) . ', ' . pick(@last) . ');');
			} elsif ($r < 0.75) {
				push @s, st('SET ROLE fuzz_plain;'), st('SELECT * FROM snowflake_renew_lease(:fz_tok, NULL);'),
					st('SELECT snowflake_release_lease(:fz_tok, NULL);'),
					st("SELECT token FROM snowflake_lease_worker('plain $i', " . pick(@ttl) . ');'),
					st('SELECT count(*) FROM snowflake_leases;'), st('RESET ROLE;');
			} elsif ($r < 0.85) {
				push @s, st("SELECT * FROM snowflake_leases WHERE token = :fz_tok;"), st('SELECT count(*) FROM snowflake_lease_list();');
			} else {
				push @s, st('BEGIN;'), st('SELECT * FROM snowflake_renew_lease(:fz_tok, ' . pick(@last) . ');'),
					st('SELECT 1/0;'), st('ROLLBACK;'), st('SELECT * FROM snowflake_renew_lease(:fz_tok, NULL);');
			}
		}
		push @s, $lease_cleanup if rand() < 0.5;
	}
	push @s, $lease_cleanup;
	return @s;
}

sub section_role {
	my @s = (st('SET ROLE fuzz_plain;'));
	for my $f (@functions) {
		my $args = typical_args($f) or next;
		push @s, call_forms($f, $args, all => 1);
	}
	push @s, st('RESET ROLE;'), $lease_cleanup;
	return @s;
}

# The snowflake type and its text forms.  A check prints "form|KEY|N", N
# the mismatches it counted (0 passes); every key in @form_keys must print.
my @form_keys;
sub form_check {
	my ($key, $sql) = @_;
	push @form_keys, $key;
	return st("SELECT 'form', '$key', ($sql);");
}
sub section_type {
	my @s;
	# No skip when a function is missing: its checks then fail to run.
	my @texts = @id_text_literals;
	# The input function, directly and through the casts from text.
	for my $t (@texts) {
		push @s, st("SELECT $t\::snowflake;"), st("SELECT CAST($t AS snowflake)::bigint;"),
			st("SELECT ($t\::text)::snowflake;"), st("SELECT ($t\::varchar)::snowflake::timestamptz;"),
			st("SELECT snowflake_in($t\::cstring);");
	}
	# The casts from numbers, and on to bigint, timestamptz and text.
	for my $b (@{ $edges{bigint} }) {
		push @s, st("SELECT $b\::snowflake;"), st("SELECT ($b\::snowflake)::bigint = $b;"),
			st("SELECT ($b\::snowflake)::timestamptz;"), st("SELECT ($b\::snowflake)::text;");
	}
	for my $i (@{ $edges{integer} }, @{ $edges{smallint} }) {
		push @s, st("SELECT ($i)::snowflake;"), st("SELECT COALESCE(NULL::snowflake, $i);"),
			st("SELECT ($i)::snowflake::timestamptz;");
	}
	# Every format, good and bad, with every edge ID and hostile text.
	for my $f (@format_edges) {
		push @s, st("SELECT snowflake_to_text($_, $f);") for @{ $edges{bigint} }, @{ $edges{snowflake} };
		push @s, st("SELECT snowflake_from_text($_, $f);") for @texts;
	}
	# Random strings, mostly of the forms' characters, of lengths near the
	# forms' widths.
	my @pool = (split(//, $text_forms{base62}[0]), '-', ' ', '+', '=', '_', '.', '%', '\\', "'", "\xc3\xa9",
		"\xe2\x98\x83");
	for (1 .. $iterations * 10) {
		my $str = join '', map { pick(@pool) } 1 .. pick(0, 1, 10, 11, 12, 13, 14, 19, 20, int rand 40);
		push @s, st("SELECT snowflake_from_text(" . sql_quote($str) . ', ' . sql_quote(pick(@text_form_names)) . ');');
		push @s, st('SELECT ' . sql_quote($str) . '::snowflake;') if rand() < 0.3;
	}
	# Valid texts of random IDs, mutated: a character changed, dropped or
	# doubled, the case flipped, the text reversed.
	for (1 .. $iterations * 10) {
		my $form = pick(@text_form_names);
		my $t = id_text(random_id(), $form);
		my ($i, $r) = (int rand length $t, rand);
		if ($r < 0.3) {
			substr($t, $i, 1) = pick(@pool);
		} elsif ($r < 0.5) {
			substr($t, $i, 1) = '';
		} elsif ($r < 0.7) {
			substr($t, $i, 0) = substr($t, $i, 1);
		} elsif ($r < 0.85) {
			$t = $t =~ /[a-z]/ ? uc $t : lc $t;
		} else {
			$t = reverse $t;
		}
		push @s, st('SELECT snowflake_from_text(' . sql_quote($t) . ", '$form');");
	}
	# Generic plans: the text a parameter.
	push @s, st('PREPARE fz_tf(text, text) AS SELECT snowflake_from_text($1, $2);'),
		st('PREPARE fz_tc(text) AS SELECT $1::snowflake;'), st('SET plan_cache_mode = force_generic_plan;');
	for my $t (head(30, @texts)) {
		push @s, st("EXECUTE fz_tf($t, " . sql_quote(pick(@text_form_names)) . ');'), st("EXECUTE fz_tc($t);");
	}
	push @s, st('DEALLOCATE fz_tf;'), st('DEALLOCATE fz_tc;'), st('RESET plan_cache_mode;');
	# A column of the type: assignment casts from bigint, integer and text.
	push @s, st('CREATE TEMP TABLE fuzz_typed (id snowflake PRIMARY KEY, code text);'),
		st("INSERT INTO fuzz_typed SELECT DISTINCT id, snowflake_to_text(id, 'base62') FROM fuzz_t WHERE id >= 0;");
	push @s, st("INSERT INTO fuzz_typed (id) VALUES ($_);") for @{ $edges{bigint} }, @{ $edges{integer} }, head(20, @texts);
	push @s, st("SELECT count(*) FROM fuzz_typed WHERE id = $recent_id;"),
		st('SELECT count(*) FROM fuzz_typed WHERE id BETWEEN 0 AND 9007199254740992;'),
		st('SELECT to_json(id), jsonb_build_object(\'id\', id), id::timestamptz FROM fuzz_typed ORDER BY id LIMIT 5;'),
		st('UPDATE fuzz_typed SET id = id + 1 WHERE id = 0;'),
		form_check('typed-column', "SELECT count(*) FILTER (WHERE snowflake_from_text(code, 'base62') IS DISTINCT FROM id) FROM fuzz_typed WHERE code IS NOT NULL");
	# Every ID of the fuzz tables round-trips through each form and the
	# casts, and the fixed-width forms sort as the IDs do.
	for my $f (@text_form_names) {
		push @s, form_check("roundtrip-$f", "SELECT count(*) FILTER (WHERE snowflake_from_text(snowflake_to_text(id, '$f'), '$f') IS DISTINCT FROM id OR ('$f' <> 'base62' AND snowflake_from_text(lower(snowflake_to_text(id, '$f')), '$f') IS DISTINCT FROM id)) FROM fuzz_t WHERE id >= 0");
		next if $f eq 'decimal';
		push @s, form_check("sorted-$f", "SELECT count(*) FILTER (WHERE by_text <> by_id) FROM (SELECT row_number() OVER (ORDER BY snowflake_to_text(id, '$f') COLLATE \"C\") AS by_text, row_number() OVER (ORDER BY id) AS by_id FROM (SELECT DISTINCT id FROM fuzz_t WHERE id >= 0) AS d) AS s");
	}
	push @s, form_check('cast-text', 'SELECT count(*) FILTER (WHERE id::text::snowflake IS DISTINCT FROM id OR id::snowflake::text IS DISTINCT FROM id::text) FROM fuzz_t');
	push @s, form_check('cast-timestamptz', 'SELECT count(*) FILTER (WHERE id::snowflake::timestamptz IS DISTINCT FROM snowflake_timestamp(id)) FROM fuzz_t WHERE id >= 0');
	push @s, form_check('send', 'SELECT count(*) FILTER (WHERE snowflake_send(id::snowflake) <> int8send(id)) FROM fuzz_t WHERE id IS NOT NULL');
	# The texts of the encoder here read back as their IDs, and are what
	# snowflake_to_text() writes.
	my @rows;
	for my $id ((map { random_id() } 1 .. $iterations * 25), 0, 1, 9007199254740991, 9007199254740992,
		9007199254740993, 9223372036854775807) {
		push @rows, map { "($id, '" . id_text($id, $_) . "', '$_')" } @text_form_names;
	}
	push @s, form_check('perl-texts', 'SELECT count(*) FILTER (WHERE snowflake_from_text(t, f) IS DISTINCT FROM id OR snowflake_to_text(id, f) IS DISTINCT FROM t) FROM (VALUES ' . join(', ', @rows) . ') AS v(id, t, f)');
	# The same round trip in parallel workers.
	push @s, parallel_on(), form_check('parallel-roundtrip', "SELECT count(*) FILTER (WHERE snowflake_from_text(snowflake_to_text(id, 'crockford'), 'crockford') IS DISTINCT FROM id::snowflake) FROM fuzz_t WHERE id >= 0"),
		st('RESET ALL;');
	push @s, st('DROP TABLE fuzz_typed;');
	return @s;
}

# ---------------------------------------------------------------- run

my @sections = (
	[ edge => \&section_edge ],
	[ settings => \&section_settings ],
	[ txn => sub { map { txn_program("t$_", 0) } 1 .. $iterations * 2 } ],
	[ cursors => sub { map { cursor_program("c$_", 0) } 1 .. $iterations } ],
	[ parallel => \&section_parallel ],
	[ prepared => \&section_prepared ],
	[ rewrite => sub { section_rewrite_queries(0) } ],
	[ leases => \&section_leases ],
	[ role => \&section_role ],
	[ type => \&section_type ],
);
for my $sec (@sections) {
	my ($name, $gen) = @$sec;
	if (time > $deadline - 10) {
		fail("$name: not run, the time (FUZZ_TARGETED_SECONDS=$budget) ran out");
		next;
	}
	my @stmts = $gen->();
	my $t0 = time;
	my $before = @failures;
	my ($status, $ran) = run_script($name, \@stmts);
	check(@failures == $before && $ran == @stmts, "$name: failed");
	printf "targeted: %-9s %6d statements in %5.1f s%s\n", $name, $ran, time - $t0,
		@failures == $before ? '' : ' FAILED';
	# A lost connection is a crash: what follows would only fail to connect.
	last if grep { /connection was lost|server went away/ } @failures[$before .. $#failures];
}

# The noise session stops; its findings join ours.  It must have ended
# normally, its result complete, after issuing IDs.
if ($noise_pid) {
	open my $fh, '>', $noise_stop or die;
	close $fh;
	waitpid($noise_pid, 0);
	my $exit = $?;
	$noise_pid = undef;
	my ($noise_statements, $chunks, $noise_ids, $complete) = (0, 0, 0, 0);
	if (open my $in, '<', "$workdir/noise.result") {
		while (my $line = <$in>) {
			chomp $line;
			if ($line =~ /^statements (\d+)$/) { $noise_statements = $1 }
			elsif ($line =~ /^chunks (\d+)$/) { $chunks = $1 }
			elsif ($line =~ /^id (-?\d+)$/) { push @ids, $1; $noise_ids++ }
			elsif ($line =~ /^fail (.*)$/) { fail("noise: $1") }
			elsif ($line =~ /^error (\S+) (\d+)$/) { $errors_by_state{$1} += $2 }
			elsif ($line =~ /^exterr (\d+) (.*)$/) { $extension_errors{$2} += $1 }
			elsif ($line eq 'end') { $complete = 1 }
		}
		close $in;
	}
	check($exit == 0 && $complete && $noise_ids > 0,
		"noise: the concurrent session did not end normally after issuing IDs (exit status $exit, "
		  . ($complete ? 'its result complete' : 'no complete result') . ", $noise_ids IDs)");
	$statements_total += $noise_statements;
	printf "targeted: %-9s %6d statements in %d scripts, %d IDs, beside the others\n", 'noise', $noise_statements,
		$chunks, $noise_ids;
}

# Every check of the type ran and counted no mismatch.
for my $k (@form_keys) {
	if (!defined $form_checks{$k}) {
		fail("type: the check $k did not run (find 'form', '$k' in the type script)");
	} else {
		check($form_checks{$k} == 0, "type: the check $k counted $form_checks{$k} mismatches");
	}
}
print "targeted: type checks: " . scalar(@form_keys) . ", " . scalar(grep { ($form_checks{$_} // 1) != 0 } @form_keys) . " failed or did not run\n";

# Every rewritten comparison agrees with its reference.
my ($cmp_ok, $cmp_bad) = (0, 0);
for my $k (sort keys %cmp) {
	my ($a, $b) = ($cmp{$k}{a}, $cmp{$k}{b});
	if (defined $a && defined $b && $a == $b) {
		$cmp_ok++;
	} else {
		$cmp_bad++;
		fail("rewrite: comparison $k: rewritten count " . ($a // 'error') . ', reference ' . ($b // 'error')
			  . ' (find \'' . $k . '\' in the rewrite, parallel or prepared scripts)') if $cmp_bad <= 20;
	}
}
check($cmp_bad == 0, "rewrite: $cmp_bad rewritten comparisons differ from their reference");
print "targeted: rewrite comparisons: $cmp_ok agree, $cmp_bad differ\n";

# After max_drift, a new ID lies above every ID issued so far.
my $final = eval {
	my ($max_drift) = map { $_->[0] } query_rows("SELECT max_drift_ms FROM snowflake_status()");
	sleep(($max_drift + 50) / 1000);
	(map { $_->[0] } query_rows("SELECT snowflake_nextval()"))[0];
};
if (defined $final) {
	my $max_seen = 0;
	for (@ids) { $max_seen = $_ if $_ > $max_seen }
	check($final > $max_seen, "a new ID ($final) is not above every ID issued before ($max_seen)");
	push @ids, $final;
} else {
	fail("no new ID at the end: $@");
}

# All IDs distinct.
my %seen;
my @dups = grep { $seen{$_}++ == 1 } @ids;
check(!@dups, scalar(@dups) . ' duplicate IDs, first: ' . join(', ', head(10, @dups)));
my $committed = eval { (map { $_->[0] } query_rows('SELECT count(*) FROM fuzz_ids'))[0] } // '?';
printf "targeted: %d IDs issued and seen (%d distinct), %s of them committed into fuzz_ids\n",
	scalar @ids, scalar keys %seen, $committed;

# What the errors were: by SQLSTATE, and those the extension raised.
print "targeted: errors by SQLSTATE: ",
	join(', ', map { "$_ $errors_by_state{$_}" } sort { $errors_by_state{$b} <=> $errors_by_state{$a} } keys %errors_by_state), "\n";
printf "targeted: %d distinct errors raised by the extension (%s/extension-errors.txt)\n",
	scalar keys %extension_errors, $workdir;
open my $ee, '>', "$workdir/extension-errors.txt" or die;
print $ee "$extension_errors{$_}\t$_\n" for sort keys %extension_errors;
close $ee;
print "targeted: warning: $_ ($warnings{$_}x)\n" for sort keys %warnings;

my $elapsed = time - $started;
printf "targeted: %d statements, %d IDs, %d checks passed, %d failed, %.0f s (seed %d)\n",
	$statements_total, scalar @ids, $checks, scalar @failures, $elapsed, $seed;
exit(@failures ? 1 : 0);
