# Reads the recipes of the docs that TAP tests run.  A block of README.md
# or docs/*.md that needs more than the docs tier's one server (two
# servers, pglogical, pg_upgrade, ...) is marked on the line before its
# fence with
#
#   <!-- run by: test/t/0NN_x.pl NAME -->
#
# and the test takes the block from the page with block(PAGE, NAME) and runs
# it in place of a copy of its own, so that a recipe that stops working
# fails the test.  The docs tier (test/docs/run_blocks.py) checks that the
# test named exists and contains NAME.
package SnowflakeDocs;

use strict;
use warnings;
use Carp;
use Cwd ();
use File::Basename ();

# The repository root, from this file's place (test/perl/), taken when the
# module loads: tests may chdir later (027 does, for pg_upgrade).
my $root = Cwd::abs_path(File::Basename::dirname(__FILE__) . '/../..');

sub root
{
	return $root;
}

# The text of the fenced block right after "<!-- run by: PATH $name -->" in
# $page (a path from the repository root), without its fences, dedented by
# the fence's indentation (a block inside a list item is indented).  Dies,
# naming the page and the name, if the page has no such block or has two.
sub block
{
	my ($page, $name) = @_;
	my $file = "$root/$page";
	open my $fh, '<', $file or croak "cannot read $file: $!";
	my @lines = <$fh>;
	close $fh;
	my @found;
	for my $i (0 .. $#lines)
	{
		next
		  unless $lines[$i] =~ /^\s*<!-- run by: \S+ \Q$name\E -->\s*$/;
		my ($indent) = ($lines[ $i + 1 ] // '') =~ /^(\s*)```\w+\s*$/
		  or croak "$page: the line after <!-- run by: ... $name --> "
		  . 'is not the opening fence of a block with a language';
		my @body;
		my $j = $i + 2;
		for (; $j <= $#lines; $j++)
		{
			last if $lines[$j] =~ /^\s*```\s*$/;
			my $line = $lines[$j];
			# A blank line inside a list item may lack the indentation.
			$line =~ s/^\Q$indent\E// or $line =~ /^\s*$/
			  or croak "$page: line "
			  . ($j + 1)
			  . " of block $name is indented less than its fence";
			push @body, $line;
		}
		croak "$page: block $name has no closing fence" if $j > $#lines;
		push @found, join('', @body);
	}
	croak "$page has no block marked <!-- run by: ... $name -->" unless @found;
	croak "$page has " . scalar(@found) . " blocks marked <!-- run by: ... $name -->"
	  if @found > 1;
	return $found[0];
}

# The parts of a block that says where each part runs, with lines
# "-- on NAME" (sql) or "# on NAME" (sh, ini): a hash from NAME to the
# lines that follow it, up to the next such line.  Text before the first
# such line is under the key ''.  Dies unless every name in @want has a
# part.
sub parts
{
	my ($text, @want) = @_;
	my %parts;
	my $current = '';
	for my $line (split /^/, $text)
	{
		if ($line =~ /^(?:--|#) on (\S+)\s*$/)
		{
			$current = $1;
			croak "the block has two parts \"on $current\"" if exists $parts{$current};
			$parts{$current} = '';
			next;
		}
		$parts{$current} .= $line;
	}
	for my $name (@want)
	{
		croak "the block has no part \"on $name\"" unless exists $parts{$name};
	}
	return %parts;
}

# $text with each key of %subst replaced by its value, every occurrence,
# in one pass (a value that contains another key is not replaced again).
# Dies if a key does not occur, so that a recipe whose host, port or name
# changed fails the test instead of running with the doc's value.
sub substitute
{
	my ($text, %subst) = @_;
	return $text unless %subst;
	for my $from (sort keys %subst)
	{
		croak "the block does not contain \"$from\"" unless index($text, $from) >= 0;
	}
	my $keys = join '|',
	  map { quotemeta } sort { length($b) <=> length($a) || $a cmp $b } keys %subst;
	$text =~ s/($keys)/$subst{$1}/g;
	return $text;
}

# The commands of a sh block, for a test that runs some of them its own
# way (a service started with "&" in its own process group, say): each
# command with its continuation lines joined (a backslash at the end of a
# line) and a here-document's lines kept, up to and including its
# delimiter.  Blank lines and comment lines are dropped.
sub commands
{
	my ($sh) = @_;
	my @lines = split /\n/, $sh;
	my @commands;
	while (@lines)
	{
		my $line = shift @lines;
		next if $line =~ /^\s*(#.*)?$/;
		while ($line =~ s/\\$// && @lines)
		{
			(my $next = shift @lines) =~ s/^\s+//;
			$line .= $next;
		}
		if ($line =~ /<<-?\s*'?(\w+)'?/)
		{
			my $delimiter = $1;
			while (@lines)
			{
				my $body = shift @lines;
				$line .= "\n$body";
				last if $body eq $delimiter;
			}
		}
		push @commands, $line;
	}
	return @commands;
}

# The one command of a sh block that starts with $prefix (see commands()).
# Dies unless exactly one does.
sub command
{
	my ($sh, $prefix) = @_;
	my @found = grep { index($_, $prefix) == 0 } commands($sh);
	croak "the block has " . scalar(@found) . " commands starting with \"$prefix\""
	  unless @found == 1;
	return $found[0];
}

1;
