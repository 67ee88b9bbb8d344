/*
 * lease_space.hpp
 *	  The lease space, the top snowflake.lease_workers worker ids (no
 *	  session slot is made for them), and its record in the data directory.
 *
 * $PGDATA/snowflake.leases holds "worker_bits lease_workers" as the server
 * last ran with.  A lease may issue IDs for up to 24 h after the server
 * stops, so a start that would give sessions a worker id of the old lease
 * space (fewer lease workers, same worker bits) is refused.  A larger one
 * is safe: a lease's not_before is at least this run's generation floor.
 * A changed layout is the layout file's check (its margin covers 24 h).
 */
#ifndef SNOWFLAKE_PG_LEASE_SPACE_HPP
#define SNOWFLAKE_PG_LEASE_SPACE_HPP

#include "pg/data_directory.hpp"	/* kLeaseSpaceFileName */

/*
 * Postmaster, after DefineSettings(), before CheckDataDirectoryAtStart():
 * FATAL if the lease space shrank; calls NoteLeaseFileStart().
 */
void CheckLeaseSpaceOfDataDirectory(void);

/* Records the running lease space if it differs: a first-ID record (data_directory.hpp). */
void RecordLeaseSpaceOfDataDirectory(void);

#endif /* SNOWFLAKE_PG_LEASE_SPACE_HPP */
