/*
 * lease_space.hpp
 *	  The worker ids leased to application-side generators, and the record
 *	  of them in the data directory.
 *
 * Lease space: the top snowflake.lease_workers worker ids of this node.
 * Sessions never attach to them (shared_state.cpp makes no slot for them);
 * snowflake_lease_worker() hands them out (lease_functions.cpp).
 *
 * $PGDATA/snowflake.leases holds "worker_bits lease_workers" as the server
 * last ran with.  A lease may let its holder issue IDs for up to 24 h after
 * the server stops, so a start that would give sessions a worker id of the
 * old lease space (fewer lease workers, same worker bits) is refused: both
 * could issue the same IDs.  A larger lease space is safe: a lease's
 * not_before is at least this run's generation floor, which is above every
 * ID a session issued before.  A changed layout is checked by the layout
 * file instead (its margin covers 24 h).
 */
#ifndef SNOWFLAKE_PG_LEASE_SPACE_HPP
#define SNOWFLAKE_PG_LEASE_SPACE_HPP

#include "pg/data_directory.hpp"	/* kLeaseSpaceFileName */

/*
 * Postmaster, at start: FATAL if the lease space shrank since the data
 * directory last ran (see above).  Call after DefineSettings().
 */
void CheckLeaseSpaceOfDataDirectory(void);

/*
 * Writes the running lease space into the file if it differs: one of the
 * first-ID records (pg/data_directory.hpp), made with the layout's once the
 * server has started and before its first ID.
 */
void RecordLeaseSpaceOfDataDirectory(void);

#endif /* SNOWFLAKE_PG_LEASE_SPACE_HPP */
