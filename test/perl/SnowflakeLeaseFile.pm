# SnowflakeLeaseFile: reads and rewrites a stopped server's
# snowflake.lease_state, laid out as src/pg/leases/lease_table.hpp says:
# 512-byte blocks, block 0 the header, block n worker id n's state, each
# with a CRC-32C (PostgreSQL's pg_crc32c) of its bytes before the CRC.
package SnowflakeLeaseFile;

use strict;
use warnings;
use Exporter 'import';

our @EXPORT = qw(lease_file read_lease_header write_lease_header lease_block
  write_lease_block crc32c);

use constant BLOCK => 512;
use constant HEADER_MAGIC => 0x534c4833;        # "SLH3"
use constant EMPTY_MAGIC => 0x534c4530;         # "SLE0", a worker id never leased

# LeaseFileHeader: magic, clean, settle, blocks, node_id, padding,
# last_token, last_change, boot_id[40], then the CRC at offset 80.
my $header_format = 'L< L< L< L< l< l< q< Q< a40';
my @header_fields =
  qw(magic clean settle blocks node_id padding last_token last_change boot_id);

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
	@h{@header_fields} = unpack $header_format, $block;
	$h{boot_id} =~ s/\0+$//;
	$h{crc} = unpack 'L<', substr($block, 80, 4);
	$h{crc_ok} = $h{crc} == crc32c(substr($block, 0, 80));
	return \%h;
}

# Rewrites the header with the fields of %changes changed, and a valid CRC.
sub write_lease_header
{
	my ($path, %changes) = @_;
	my %h = (%{ read_lease_header($path) }, %changes);
	my $bytes = pack $header_format, @h{@header_fields};
	write_lease_block($path, 0,
		$bytes . pack('L<', crc32c($bytes)) . ("\0" x (BLOCK - 84)));
	return;
}

1;
