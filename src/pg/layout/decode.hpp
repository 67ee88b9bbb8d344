/*
 * decode.hpp
 *	  The timestamp of an ID, for the functions that compare it.
 */
#ifndef SNOWFLAKE_PG_LAYOUT_DECODE_HPP
#define SNOWFLAKE_PG_LAYOUT_DECODE_HPP

extern "C"
{
#include "postgres.h"

#include "datatype/timestamp.h"
}

/*
 * What snowflake_timestamp(id) returns, with its errors, in the database
 * that holds the extension's function "fn_oid".
 */
TimestampTz IdTimestamp(Oid fn_oid, int64 id);

#endif							/* SNOWFLAKE_PG_LAYOUT_DECODE_HPP */
