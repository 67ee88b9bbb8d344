/*
 * lease_file.hpp
 *	  $PGDATA/snowflake.lease_state: its blocks, its header, and its loading
 *	  at start (the format and the crash-safety reasoning: lease_table.hpp).
 */
#ifndef SNOWFLAKE_PG_LEASE_FILE_HPP
#define SNOWFLAKE_PG_LEASE_FILE_HPP

#include "pg/leases/lease_table.hpp"

/* The CRC of an image (a lease or an empty block). */
pg_crc32c	LeaseImageCrc(const LeaseImage &image);

/* The block of a worker id never leased: magic, worker id and CRC, the rest zeros. */
LeaseImage EmptyLeaseImage(uint32 worker_id);

/* Writes "size" bytes of "data", zero-padded, as block n of "fd"; false (errno set) on failure. */
bool WriteLeaseBlock(int fd, uint32 n, const void *data, size_t size);

/* _PG_init, before the pg_upgrade guard removes its marker: is an empty file new? */
void NoteLeaseFileStart(void);

/*
 * Postmaster, at start and after a crash restart: reads (or makes) the file
 * into "table", decides whether the first change settles (needs_bump),
 * grows the file to the lease space and writes this run's header (a node
 * id change is logged).  FATAL on damage or a lease the start would break.
 */
void		LoadLeaseFile(LeaseTable *table);

/*
 * Writes the header from "table" (clean: at a clean shutdown) into block 0
 * of "fd", without fsync; false (errno set) on failure.  Under the table's
 * lock, or in the postmaster alone.
 */
bool		WriteLeaseHeader(int fd, const LeaseTable *table, bool clean);

/* Postmaster, at a clean exit after every other process: fsync, header says clean. */
void		MarkLeaseFileClean(const LeaseTable *table);

#endif							/* SNOWFLAKE_PG_LEASE_FILE_HPP */
