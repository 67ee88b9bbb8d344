/*
 * reservation_wal.hpp
 *	  The custom WAL resource manager that carries reservations.
 *
 * Two record types: "RESERVE", holding the new reservation as Unix ms,
 * whose redo raises the reservation of the replaying server, and "LEASE",
 * a worker-id lease's new image (src/pg/leases/lease_table.hpp).  Replayed
 * after crash recovery, and continuously on physical standbys.
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

/* The rmgr's own bits of xl_info (the low four belong to PostgreSQL). */
constexpr uint8 kXlogReserve = 0x10;
constexpr uint8 kXlogLease = 0x20;

/* Registers the resource manager; _PG_init, while preloading. */
void		RegisterReservationRmgr(void);

/* Inserts a RESERVE record for "until_unix_ms" and flushes it. */
XLogRecPtr	LogReservation(int64 until_unix_ms);

#endif							/* SNOWFLAKE_PG_RESERVATION_WAL_HPP */
