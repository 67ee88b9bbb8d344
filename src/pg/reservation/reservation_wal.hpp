/*
 * reservation_wal.hpp
 *	  The custom WAL resource manager that carries reservations.
 *
 * One record type, "RESERVE", holding the new reservation as Unix ms.  Its
 * redo raises the reservation of the replaying server: after crash recovery,
 * and continuously on physical standbys.
 *
 * Resource manager id 148, in the range PostgreSQL leaves to extensions.
 * Every server that replays this WAL must preload snowflake.
 */
#ifndef SNOWFLAKE_PG_RESERVATION_WAL_HPP
#define SNOWFLAKE_PG_RESERVATION_WAL_HPP

extern "C"
{
#include "postgres.h"

#include "access/rmgr.h"		/* RmgrId */
#include "access/xlogdefs.h"
}

constexpr RmgrId kSnowflakeRmgrId = 148;

/* Registers the resource manager; _PG_init, while preloading. */
void		RegisterReservationRmgr(void);

/* Inserts a RESERVE record for "until_unix_ms" and flushes it. */
XLogRecPtr	LogReservation(int64 until_unix_ms);

#endif							/* SNOWFLAKE_PG_RESERVATION_WAL_HPP */
