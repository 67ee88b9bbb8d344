/*
 * wal.hpp
 *	  The extension's custom WAL resource manager: its id, the kinds of
 *	  record it carries, and the table through which each kind's owner
 *	  replays and describes it.
 *
 * Three record kinds: "RESERVE", holding a new reservation as Unix ms
 * (src/pg/reservation/reservation_record.hpp), "LEASE", a worker-id
 * lease's new image (src/pg/leases/lease_table.hpp), and "SETTINGS", the
 * primary's node id, lease space and layout, which a standby checks
 * (src/pg/primary_settings.hpp).  Replayed after crash
 * recovery, and continuously on physical standbys.
 *
 * Resource manager id 148, in the range PostgreSQL leaves to extensions.
 * Every server that replays this WAL must preload snowflake.
 *
 * The shape is that of PostgreSQL's src/test/modules/test_custom_rmgrs:
 * one RmgrData whose redo, desc and identify switch on the record kind.
 * The subsystems that write records include this header for the id and
 * the kind bits; this file includes none of theirs.  module.cpp hands the
 * redo and desc function of each kind to RegisterSnowflakeRmgr.
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
constexpr uint8 kXlogReserve = 0x10;
constexpr uint8 kXlogLease = 0x20;
constexpr uint8 kXlogSettings = 0x30;	/* since 1.6: src/pg/primary_settings.hpp */

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
