/*
 * reservation_record.hpp
 *	  The RESERVE record (src/pg/wal.hpp): a new reservation, as Unix ms.
 */
#ifndef SNOWFLAKE_PG_RESERVATION_RECORD_HPP
#define SNOWFLAKE_PG_RESERVATION_RECORD_HPP

#include "pg/wal.hpp"

/* Inserts a RESERVE record for "until_unix_ms" and flushes it. */
XLogRecPtr	LogReservation(int64 until_unix_ms);

/* Its redo and its description (pg_waldump). */
void		RedoReservationRecord(XLogReaderState *record);
void		DescribeReservationRecord(StringInfo buf, XLogReaderState *record);

#endif							/* SNOWFLAKE_PG_RESERVATION_RECORD_HPP */
