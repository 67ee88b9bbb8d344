# SnowflakeLeaseFile: reads and rewrites $PGDATA/snowflake.lease_state of a
# stopped server, for the TAP tests of damaged files, of version 1.5's
# format, and of a machine restart (another boot id in the header).  The
# layout is src/pg/leases/lease_table.hpp's: 512-byte blocks, block n the
# lease state of worker id n, block 0 the header; each with a CRC-32C of its
# bytes before the CRC, as PostgreSQL's pg_crc32c computes it.
package SnowflakeLeaseFile;

use strict;
use warnings;
use Exporter 'import';

our @EXPORT = qw(lease_file read_lease_header write_lease_header lease_block
  write_lease_block rewrite_as_v15 crc32c);

use constant BLOCK => 512;
use constant HEADER_MAGIC => 0x534c4832;        # "SLH2"
use constant HEADER_MAGIC_V15 => 0x534c4831;    # "SLH1", version 1.5
use constant EMPTY_MAGIC => 0x534c4530;         # "SLE0", a worker id never leased

# LeaseFileHeader: magic, clean, settle, blocks, last_token, last_change,
# boot_id[40], then the CRC at offset 72.
my $header_format = 'L< L< L< L< q< Q< a40';

my @crc_table = map {
	my $c = $_;
	$c = ($c & 1) ? (($c >> 1) ^ 0x82F63B78) : ($c >> 1) for 1 .. 8;
	$c
} 0 .. 255;

# CRC-32C (Castagnoli) of $data, as INIT_CRC32C, COMP_CRC32C, FIN_CRC32C.
sub crc32c
{
	my ($data) = @_;
	my $crc = 0xFFFFFFFF;
	$crc = $crc_table[($crc ^ $_) & 0xFF] ^ ($crc >> 8) for unpack 'C*', $data;
	return $crc ^ 0xFFFFFFFF;
}

sub lease_file
{
	my ($node) = @_;
	return $node->data_dir . '/snowflake.lease_state';
}

# The bytes of block $n.
sub lease_block
{
	my ($path, $n) = @_;
	open my $fh, '<:raw', $path or die "open $path: $!";
	sysseek $fh, $n * BLOCK, 0 or die "seek: $!";
	my $got = sysread $fh, my $block, BLOCK;
	close $fh;
	die "block $n of $path is short" unless defined $got && $got == BLOCK;
	return $block;
}

# Writes $bytes at the start of block $n (the rest of the block unchanged).
sub write_lease_block
{
	my ($path, $n, $bytes) = @_;
	open my $fh, '+<:raw', $path or die "open $path: $!";
	sysseek $fh, $n * BLOCK, 0 or die "seek: $!";
	syswrite($fh, $bytes) == length $bytes or die "write $path: $!";
	close $fh;
	return;
}

# The header as a hash (boot_id without its padding).
sub read_lease_header
{
	my ($path) = @_;
	my $block = lease_block($path, 0);
	my %h;
	@h{qw(magic clean settle blocks last_token last_change boot_id)} =
	  unpack $header_format, $block;
	$h{boot_id} =~ s/\0+$//;
	$h{crc} = unpack 'L<', substr($block, 72, 4);
	$h{crc_ok} = $h{crc} == crc32c(substr($block, 0, 72));
	return \%h;
}

# Rewrites the header with the fields of %changes changed, and a valid CRC.
sub write_lease_header
{
	my ($path, %changes) = @_;
	my %h = (%{ read_lease_header($path) }, %changes);
	my $bytes = pack $header_format,
	  @h{qw(magic clean settle blocks last_token last_change boot_id)};
	write_lease_block($path, 0,
		$bytes . pack('L<', crc32c($bytes)) . ("\0" x (BLOCK - 76)));
	return;
}

# Rewrites the file as version 1.5 wrote it: its header (magic, clean, CRC
# of the two) and zeros in every block of a worker id never leased.
sub rewrite_as_v15
{
	my ($path, $clean) = @_;
	my $blocks = (-s $path) / BLOCK;
	for my $n (1 .. $blocks - 1)
	{
		write_lease_block($path, $n, "\0" x BLOCK)
		  if unpack('L<', lease_block($path, $n)) == EMPTY_MAGIC;
	}
	my $bytes = pack 'L< L<', HEADER_MAGIC_V15, $clean;
	write_lease_block($path, 0,
		$bytes . pack('L<', crc32c($bytes)) . ("\0" x (BLOCK - 12)));
	return;
}

1;
