/*
 * reservation_record.hpp
 *	  The RESERVE record of the extension's resource manager (src/pg/wal.hpp):
 *	  a new reservation, as Unix ms, whose redo raises the reservation of the
 *	  replaying server.
 */
#ifndef SNOWFLAKE_PG_RESERVATION_RECORD_HPP
#define SNOWFLAKE_PG_RESERVATION_RECORD_HPP

#include "pg/wal.hpp"

/* Inserts a RESERVE record for "until_unix_ms" and flushes it. */
XLogRecPtr	LogReservation(int64 until_unix_ms);

/* Redo of a RESERVE record. */
void		RedoReservationRecord(XLogReaderState *record);

/* Describes a RESERVE record for pg_waldump. */
void		DescribeReservationRecord(StringInfo buf, XLogReaderState *record);

#endif							/* SNOWFLAKE_PG_RESERVATION_RECORD_HPP */
