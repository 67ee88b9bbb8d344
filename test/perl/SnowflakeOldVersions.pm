# SnowflakeOldVersions: databases at versions older than the library's.
# relocated_install() makes a private copy of the installation on PATH with
# the first release's script, test/fixtures/snowflake--1.0.sql, added, so that
# CREATE EXTENSION snowflake VERSION '1.0' and the shipped update scripts give
# a database at any version.  PostgreSQL finds its share and library
# directories relative to its binaries' real location: bin is copied, the rest
# linked (the extension directory as a directory of links), following
# pg_config's layout, Debian's or a single prefix.
package SnowflakeOldVersions;

use strict;
use warnings;
use Cwd ();
use File::Basename ();
use File::Copy ();
use PostgreSQL::Test::Utils;
use SnowflakeTest;

# The first release's install script, kept only for these tests.
sub fixture
{
	return ($ENV{TESTDIR} // '.') . '/test/fixtures/snowflake--1.0.sql';
}

sub pg_config_dir
{
	my ($what) = @_;
	my $dir = `pg_config --$what`;
	die "pg_config --$what failed" if $? != 0;
	chomp $dir;
	return Cwd::realpath($dir) // die "pg_config --$what: no directory $dir";
}

# Whether $dir is $path or one of its ancestors.
sub holds
{
	my ($dir, $path) = @_;
	return $path eq $dir || index($path, "$dir/") == 0;
}

# Recreates $from at $to: links to every entry, but real directories on the
# way to the bin directory (copied) and to the extension directory.
sub mirror
{
	my ($from, $to, $bindir, $extdir) = @_;
	if ($from eq $bindir)
	{
		system('cp', '-RL', '-p', $from, $to) == 0 or die "cannot copy $from to $to";
		return;
	}
	mkdir $to or die "cannot create $to: $!";
	opendir(my $dh, $from) or die "cannot read $from: $!";
	my @entries = grep { $_ ne '.' && $_ ne '..' } readdir $dh;
	closedir $dh;
	for my $entry (@entries)
	{
		my ($source, $target) = ("$from/$entry", "$to/$entry");
		if ($source eq $extdir)
		{
			mkdir $target or die "cannot create $target: $!";
			opendir(my $eh, $source) or die "cannot read $source: $!";
			for my $file (grep { $_ ne '.' && $_ ne '..' } readdir $eh)
			{
				next if $file eq 'snowflake--1.0.sql';
				symlink("$source/$file", "$target/$file") or die "cannot link $target/$file: $!";
			}
			closedir $eh;
			File::Copy::copy(fixture(), "$target/snowflake--1.0.sql")
			  or die "cannot copy " . fixture() . ": $!";
		}
		elsif (holds($source, $bindir) || holds($source, $extdir))
		{
			mirror($source, $target, $bindir, $extdir);
		}
		else
		{
			symlink($source, $target) or die "cannot link $target: $!";
		}
	}
	return;
}

# Copies the installation as described above into a directory of the test's
# own, named after $name.  Returns the path for
# PostgreSQL::Test::Cluster->new(..., install_path => $path): the directory
# that holds the copied bin.
sub relocated_install
{
	my ($name) = @_;
	my $bindir = pg_config_dir('bindir');
	my $extdir = pg_config_dir('sharedir') . '/extension';
	my $pkglibdir = pg_config_dir('pkglibdir');

	# The deepest directory that holds all three.
	my @paths = map { [ split m{/}, $_ ] } ($bindir, $extdir, $pkglibdir);
	my @common;
	for (my $i = 0;; $i++)
	{
		my $part = $paths[0][$i];
		last if !defined $part || grep { !defined $_->[$i] || $_->[$i] ne $part } @paths;
		push @common, $part;
	}
	my $root = join('/', @common);
	die "no common directory of $bindir, $extdir and $pkglibdir" if $root eq '';

	my $copy = Cwd::realpath(PostgreSQL::Test::Utils::tempdir("install_$name")) . '/root';
	mirror($root, $copy, $bindir, $extdir);
	return $copy . substr(File::Basename::dirname($bindir), length $root);
}

# The extension's catalog in $db, one line per property of each member
# object ("what | property = value"), sorted: every member from pg_depend
# by its identity; functions with their signature, labels, language, body
# (line by line) and rights; tables and views with their columns,
# constraints, indexes, definition, options and rights; types, operators
# and casts; comments; pg_dump's initial privileges; each member's other
# dependencies; and the extension's version, schema and configuration
# tables.
my $catalog_query = q{
WITH ext AS (
    SELECT e.oid FROM pg_catalog.pg_extension AS e WHERE e.extname = 'snowflake'
), members AS (
    SELECT d.classid, d.objid,
           pg_catalog.pg_describe_object(d.classid, d.objid, 0) AS what
      FROM pg_catalog.pg_depend AS d, ext
     WHERE d.refclassid = 'pg_catalog.pg_extension'::pg_catalog.regclass
       AND d.refobjid = ext.oid AND d.deptype = 'e'
), props(what, prop, val) AS (
    SELECT 'extension snowflake', v.prop, v.val
      FROM pg_catalog.pg_extension AS e
           JOIN ext ON ext.oid = e.oid,
           LATERAL (VALUES
               ('version', e.extversion),
               ('schema', e.extnamespace::pg_catalog.regnamespace::text),
               ('relocatable', e.extrelocatable::text),
               ('config tables', e.extconfig::pg_catalog.regclass[]::text),
               ('config conditions', e.extcondition::text)) AS v(prop, val)
    UNION ALL
    SELECT m.what, 'member', 'yes' FROM members AS m
    UNION ALL
    SELECT m.what, v.prop, v.val
      FROM members AS m
           JOIN pg_catalog.pg_proc AS p
             ON m.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass AND p.oid = m.objid
           JOIN pg_catalog.pg_language AS l ON l.oid = p.prolang,
           LATERAL (VALUES
               ('arguments', pg_catalog.pg_get_function_arguments(p.oid)),
               ('result', pg_catalog.pg_get_function_result(p.oid)),
               ('kind', p.prokind::text),
               ('volatility', p.provolatile::text),
               ('strict', p.proisstrict::text),
               ('parallel', p.proparallel::text),
               ('leakproof', p.proleakproof::text),
               ('security definer', p.prosecdef::text),
               ('returns set', p.proretset::text),
               ('config', p.proconfig::text),
               ('cost', p.procost::text),
               ('rows', p.prorows::text),
               ('support', p.prosupport::pg_catalog.regproc::text),
               ('language', l.lanname::text),
               ('library', p.probin),
               ('owner', p.proowner::pg_catalog.regrole::text),
               ('acl', p.proacl::text)) AS v(prop, val)
    UNION ALL
    SELECT m.what, pg_catalog.format('source line %s', s.n), s.line
      FROM members AS m
           JOIN pg_catalog.pg_proc AS p
             ON m.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass AND p.oid = m.objid,
           LATERAL pg_catalog.regexp_split_to_table(p.prosrc, E'\n') WITH ORDINALITY AS s(line, n)
    UNION ALL
    SELECT m.what, v.prop, v.val
      FROM members AS m
           JOIN pg_catalog.pg_class AS c
             ON m.classid = 'pg_catalog.pg_class'::pg_catalog.regclass AND c.oid = m.objid,
           LATERAL (VALUES
               ('kind', c.relkind::text),
               ('persistence', c.relpersistence::text),
               ('options', c.reloptions::text),
               ('row security', c.relrowsecurity::text),
               ('replica identity', c.relreplident::text),
               ('owner', c.relowner::pg_catalog.regrole::text),
               ('acl', c.relacl::text),
               ('view definition',
                CASE WHEN c.relkind IN ('v', 'm') THEN pg_catalog.pg_get_viewdef(c.oid, true) END))
             AS v(prop, val)
    UNION ALL
    SELECT m.what, pg_catalog.format('column %s %s', a.attnum, v.prop), v.val
      FROM members AS m
           JOIN pg_catalog.pg_attribute AS a
             ON m.classid = 'pg_catalog.pg_class'::pg_catalog.regclass AND a.attrelid = m.objid
            AND a.attnum > 0
           LEFT JOIN pg_catalog.pg_attrdef AS ad ON ad.adrelid = a.attrelid AND ad.adnum = a.attnum,
           LATERAL (VALUES
               ('name', a.attname::text),
               ('type', pg_catalog.format_type(a.atttypid, a.atttypmod)),
               ('not null', a.attnotnull::text),
               ('default', pg_catalog.pg_get_expr(ad.adbin, ad.adrelid)),
               ('identity', a.attidentity::text),
               ('generated', a.attgenerated::text),
               ('collation', a.attcollation::pg_catalog.regcollation::text),
               ('dropped', a.attisdropped::text),
               ('acl', a.attacl::text)) AS v(prop, val)
    UNION ALL
    SELECT m.what, 'constraint ' || co.conname, pg_catalog.pg_get_constraintdef(co.oid)
      FROM members AS m
           JOIN pg_catalog.pg_constraint AS co
             ON m.classid = 'pg_catalog.pg_class'::pg_catalog.regclass AND co.conrelid = m.objid
    UNION ALL
    SELECT m.what, 'index ' || i.indexrelid::pg_catalog.regclass::text,
           pg_catalog.pg_get_indexdef(i.indexrelid)
      FROM members AS m
           JOIN pg_catalog.pg_index AS i
             ON m.classid = 'pg_catalog.pg_class'::pg_catalog.regclass AND i.indrelid = m.objid
    UNION ALL
    SELECT m.what, 'trigger ' || t.tgname, pg_catalog.pg_get_triggerdef(t.oid)
      FROM members AS m
           JOIN pg_catalog.pg_trigger AS t
             ON m.classid = 'pg_catalog.pg_class'::pg_catalog.regclass AND t.tgrelid = m.objid
    UNION ALL
    SELECT m.what, 'rule ' || r.rulename, pg_catalog.pg_get_ruledef(r.oid)
      FROM members AS m
           JOIN pg_catalog.pg_rewrite AS r
             ON m.classid = 'pg_catalog.pg_class'::pg_catalog.regclass AND r.ev_class = m.objid
            AND r.rulename <> '_RETURN'
    UNION ALL
    SELECT m.what, 'policy ' || po.polname, pg_catalog.pg_get_expr(po.polqual, po.polrelid)
      FROM members AS m
           JOIN pg_catalog.pg_policy AS po
             ON m.classid = 'pg_catalog.pg_class'::pg_catalog.regclass AND po.polrelid = m.objid
    UNION ALL
    SELECT m.what, 'type',
           pg_catalog.format('%s %s in=%s out=%s', t.typtype, t.typcategory, t.typinput, t.typoutput)
      FROM members AS m
           JOIN pg_catalog.pg_type AS t
             ON m.classid = 'pg_catalog.pg_type'::pg_catalog.regclass AND t.oid = m.objid
    UNION ALL
    SELECT m.what, 'operator',
           pg_catalog.format('%s(%s, %s) = %s, commutator %s, negator %s, restrict %s, join %s',
                             o.oprcode, o.oprleft::pg_catalog.regtype, o.oprright::pg_catalog.regtype,
                             o.oprresult::pg_catalog.regtype, o.oprcom::pg_catalog.regoper,
                             o.oprnegate::pg_catalog.regoper, o.oprrest, o.oprjoin)
      FROM members AS m
           JOIN pg_catalog.pg_operator AS o
             ON m.classid = 'pg_catalog.pg_operator'::pg_catalog.regclass AND o.oid = m.objid
    UNION ALL
    SELECT m.what, 'cast',
           pg_catalog.format('%s %s %s', ca.castfunc::pg_catalog.regprocedure, ca.castcontext,
                             ca.castmethod)
      FROM members AS m
           JOIN pg_catalog.pg_cast AS ca
             ON m.classid = 'pg_catalog.pg_cast'::pg_catalog.regclass AND ca.oid = m.objid
    UNION ALL
    SELECT m.what, pg_catalog.format('comment %s', de.objsubid), de.description
      FROM members AS m
           JOIN pg_catalog.pg_description AS de ON de.classoid = m.classid AND de.objoid = m.objid
    UNION ALL
    SELECT m.what, pg_catalog.format('initial acl %s', ip.objsubid),
           pg_catalog.format('%s %s', ip.privtype, ip.initprivs)
      FROM members AS m
           JOIN pg_catalog.pg_init_privs AS ip ON ip.classoid = m.classid AND ip.objoid = m.objid
    UNION ALL
    SELECT m.what, 'depends on',
           pg_catalog.format('%s (%s)',
                             pg_catalog.pg_describe_object(d.refclassid, d.refobjid, d.refobjsubid),
                             d.deptype)
      FROM members AS m
           JOIN pg_catalog.pg_depend AS d ON d.classid = m.classid AND d.objid = m.objid
     WHERE d.deptype <> 'e' AND d.refclassid <> 'pg_catalog.pg_namespace'::pg_catalog.regclass
)
SELECT pg_catalog.format('%s | %s = %s', what, prop,
                         pg_catalog.replace(coalesce(val, '<null>'), E'\n', '\n'))
  FROM props
 ORDER BY 1;
};

# extension_catalog($node, $db): the lines described above, in order.
sub extension_catalog
{
	my ($node, $db) = @_;
	return [ split /\n/, $node->safe_psql($db, $catalog_query) ];
}

# catalog_differences(\@got, \@want): '' if they are equal, else the lines
# only in @want ("- ") and only in @got ("+ "), in the order of the
# objects and properties, the wanted value of a property before the one
# found.
sub catalog_differences
{
	my ($got, $want) = @_;
	my %in_got = map { $_ => 1 } @$got;
	my %in_want = map { $_ => 1 } @$want;
	my @lines = (
		(map { [ $_, 0 ] } grep { !$in_got{$_} } @$want),
		(map { [ $_, 1 ] } grep { !$in_want{$_} } @$got));
	my $key = sub { return $_[0] =~ s/ = .*//sr; };
	return join("\n",
		map { ($_->[1] ? '+ ' : '- ') . $_->[0] }
		  sort { $key->($a->[0]) cmp $key->($b->[0]) || $a->[1] <=> $b->[1] || $a->[0] cmp $b->[0] }
		  @lines);
}

1;
