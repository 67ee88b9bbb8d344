/*
 * sync_standbys.hpp
 *	  Waiting for synchronous standbys to confirm WAL, whatever the calling
 *	  session's synchronous_commit: the reservation and the leases decide
 *	  for the whole server, not per session.
 */
#ifndef SNOWFLAKE_PG_SYNC_STANDBYS_HPP
#define SNOWFLAKE_PG_SYNC_STANDBYS_HPP

extern "C"
{
#include "postgres.h"

#include "access/xlogdefs.h"
}

/* Whether synchronous_standby_names names standbys, server-wide. */
bool		SynchronousStandbysDefined(void);

/*
 * Returns once the synchronous standbys, if there are any, flushed WAL up
 * to "lsn" (which the caller flushed locally); answers cancel and
 * termination requests.
 */
void		WaitForSynchronousStandbys(XLogRecPtr lsn);

#endif							/* SNOWFLAKE_PG_SYNC_STANDBYS_HPP */
