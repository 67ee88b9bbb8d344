/*
 * wal.hpp
 *	  The extension's custom WAL resource manager (src/pg/README.md): its
 *	  id, in the range PostgreSQL leaves to extensions, the record kinds,
 *	  and the table through which each kind's owner replays and describes
 *	  it.  Every server that replays this WAL must preload snowflake.
 */
#ifndef SNOWFLAKE_PG_WAL_HPP
#define SNOWFLAKE_PG_WAL_HPP

extern "C"
{
#include "postgres.h"

#include "access/rmgr.h"		/* RmgrId */
#include "access/xlogdefs.h"
#include "access/xlogreader.h"	/* XLogReaderState */
#include "lib/stringinfo.h"
}

constexpr RmgrId kSnowflakeRmgrId = 148;

/* The rmgr's own bits of xl_info (the low four belong to PostgreSQL). */
constexpr uint8 kXlogReserve = 0x10;	/* reservation/reservation_record.hpp */
constexpr uint8 kXlogLease = 0x20;		/* leases/lease_table.hpp */
constexpr uint8 kXlogSettings = 0x30;	/* since 1.6: primary_settings.hpp */

/* What the owner of one record kind does with it. */
struct WalRecordHandlers
{
	uint8		info;			/* kXlogReserve, kXlogLease or kXlogSettings */
	void (*redo)(XLogReaderState *record);
	void (*desc)(StringInfo buf, XLogReaderState *record);
};

/*
 * Registers the resource manager, with the handlers of each record kind:
 * "kinds" is a table of "count" entries that outlives the process (static);
 * "redo_start" runs in the startup process before the first record.
 * _PG_init, while preloading.
 */
void		RegisterSnowflakeRmgr(const WalRecordHandlers *kinds, int count,
								  void (*redo_start)(void));

/*
 * Copies the body of a record of kind "name" into "body", which has
 * "size" bytes; PANIC if the record holds another length (WAL this build
 * did not write: replaying it would go wrong silently).
 */
void CopyWalRecordBody(XLogReaderState *record, const char *name, void *body, size_t size);

#endif							/* SNOWFLAKE_PG_WAL_HPP */
