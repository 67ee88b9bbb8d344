/*
 * timestamps.hpp
 *	  Conversion between Unix milliseconds and PostgreSQL's timestamptz.
 */
#ifndef SNOWFLAKE_PG_TIMESTAMPS_HPP
#define SNOWFLAKE_PG_TIMESTAMPS_HPP

extern "C"
{
#include "postgres.h"

#include "datatype/timestamp.h"
}

/* Unix time of PostgreSQL's epoch (2000-01-01), in milliseconds. */
constexpr int64 kPostgresEpochUnixMs =
	INT64CONST(1000) * SECS_PER_DAY * (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE);

inline TimestampTz
UnixMsToTimestampTz(int64 unix_ms)
{
	return (unix_ms - kPostgresEpochUnixMs) * 1000;
}

/* The millisecond of "ts", rounded down. */
inline int64
TimestampTzToUnixMs(TimestampTz ts)
{
	int64		ms = ts / 1000;

	if (ts % 1000 < 0)
		ms--;
	return ms + kPostgresEpochUnixMs;
}

#endif							/* SNOWFLAKE_PG_TIMESTAMPS_HPP */
