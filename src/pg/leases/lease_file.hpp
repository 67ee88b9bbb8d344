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

/*
 * Postmaster, at start and after a crash restart: reads the file into
 * "table" (creating it, or rewriting a version 1.5 file, first), decides
 * whether the first change settles (needs_bump), grows the file to the lease
 * space, and writes the header of this run.  FATAL on a damaged file.
 */
void		LoadLeaseFile(LeaseTable *table);

/*
 * Writes the header from "table" (clean: at a clean shutdown) into block 0
 * of "fd", without fsync; false (errno set) on failure.  Under the table's
 * lock, or in the postmaster alone.
 */
bool		WriteLeaseHeader(int fd, const LeaseTable *table, bool clean);

/*
 * Postmaster, at a clean exit, after every other process: fsyncs the file
 * and marks the shutdown clean in its header.
 */
void		MarkLeaseFileClean(const LeaseTable *table);

#endif							/* SNOWFLAKE_PG_LEASE_FILE_HPP */
