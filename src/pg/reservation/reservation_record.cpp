/*
 * reservation_record.cpp
 *	  Writing, replaying and describing RESERVE records.
 */
extern "C"
{
#include "postgres.h"

#include "access/xlog.h"		/* XLogFlush */
#include "access/xloginsert.h"
}

#include "pg/reservation/reservation.hpp"
#include "pg/reservation/reservation_record.hpp"

namespace {

struct ReservationRecord
{
	int64		until_unix_ms;
};

ReservationRecord
ReadRecord(XLogReaderState *record)
{
	ReservationRecord body;

	CopyWalRecordBody(record, "RESERVE", &body, sizeof(body));
	return body;
}

}							/* namespace */

void
RedoReservationRecord(XLogReaderState *record)
{
	ReplayReservation(ReadRecord(record).until_unix_ms);
}

void
DescribeReservationRecord(StringInfo buf, XLogReaderState *record)
{
	appendStringInfo(buf, "until " INT64_FORMAT " (Unix ms)",
					 ReadRecord(record).until_unix_ms);
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
