/*
 * reservation_wal.cpp
 *	  Writing, replaying and describing RESERVE records.
 */
extern "C"
{
#include "postgres.h"

#include "access/xlog.h"		/* XLogFlush */
#include "access/xlog_internal.h"	/* RmgrData, RegisterCustomRmgr */
#include "access/xloginsert.h"
#include "access/xlogreader.h"
#include "lib/stringinfo.h"
}

#include "pg/leases/lease_table.hpp"
#include "pg/reservation/reservation.hpp"
#include "pg/reservation/reservation_wal.hpp"

namespace {

struct ReservationRecord
{
	int64		until_unix_ms;
};

ReservationRecord
ReadRecord(XLogReaderState *record)
{
	ReservationRecord body;

	if (XLogRecGetDataLen(record) != sizeof(body))
		elog(PANIC, "snowflake RESERVE record has length %u, expected %zu",
			 XLogRecGetDataLen(record), sizeof(body));
	memcpy(&body, XLogRecGetData(record), sizeof(body));
	return body;
}

uint8
RecordKind(XLogReaderState *record)
{
	return XLogRecGetInfo(record) & XLR_RMGR_INFO_MASK;
}

void
Redo(XLogReaderState *record)
{
	switch (RecordKind(record))
	{
		case kXlogReserve:
			ReplayReservation(ReadRecord(record).until_unix_ms);
			break;
		case kXlogLease:
			ReplayLeaseRecord(record);
			break;
		default:
			elog(PANIC, "snowflake redo: unknown record kind 0x%02X", RecordKind(record));
	}
}

void
Describe(StringInfo buf, XLogReaderState *record)
{
	if (RecordKind(record) == kXlogReserve)
		appendStringInfo(buf, "until " INT64_FORMAT " (Unix ms)",
						 ReadRecord(record).until_unix_ms);
	else if (RecordKind(record) == kXlogLease)
		DescribeLeaseRecord(buf, record);
}

const char *
Identify(uint8 info)
{
	switch (info & XLR_RMGR_INFO_MASK)
	{
		case kXlogReserve:
			return "RESERVE";
		case kXlogLease:
			return "LEASE";
	}
	return nullptr;
}

RmgrData	reservation_rmgr = {
	"snowflake",				/* rm_name */
	Redo,						/* rm_redo */
	Describe,					/* rm_desc */
	Identify,					/* rm_identify */
	nullptr,					/* rm_startup */
	nullptr,					/* rm_cleanup */
	nullptr,					/* rm_mask */
	nullptr,					/* rm_decode: logical decoding skips it */
};

}							/* namespace */

void
RegisterReservationRmgr(void)
{
	RegisterCustomRmgr(kSnowflakeRmgrId, &reservation_rmgr);
}

XLogRecPtr
LogReservation(int64 until_unix_ms)
{
	ReservationRecord body{until_unix_ms};

	XLogBeginInsert();
	XLogRegisterData(reinterpret_cast<char *>(&body), sizeof(body));

	XLogRecPtr	lsn = XLogInsert(kSnowflakeRmgrId, kXlogReserve);

	XLogFlush(lsn);
	return lsn;
}
