/*
 * snowflake_io.cpp
 *	  The snowflake type's input, output, send and receive functions, and
 *	  its cast from integer: bigint's own, called with the caller's
 *	  FunctionCallInfo.
 *
 * A snowflake is a bigint in storage, in text and on the wire; only its
 * type OID differs, so that JSON functions write it as a string.  The SQL
 * functions are C functions of this library rather than LANGUAGE internal
 * aliases of int8in and the like: PostgreSQL's opr_sanity test (run on
 * the extension by test/opr-sanity.sh) flags a built-in function declared
 * twice with other types.  Passing fcinfo on keeps the soft-error context
 * of PostgreSQL 16 and later, so pg_input_is_valid('x', 'snowflake')
 * answers false instead of raising.
 */
extern "C"
{
#include "postgres.h"

#include "fmgr.h"
#include "utils/fmgrprotos.h"
}

extern "C"
{
PG_FUNCTION_INFO_V1(snowflake_in);
PG_FUNCTION_INFO_V1(snowflake_out);
PG_FUNCTION_INFO_V1(snowflake_recv);
PG_FUNCTION_INFO_V1(snowflake_send);
PG_FUNCTION_INFO_V1(snowflake_from_integer);

Datum
snowflake_in(PG_FUNCTION_ARGS)
{
	return int8in(fcinfo);
}

Datum
snowflake_out(PG_FUNCTION_ARGS)
{
	return int8out(fcinfo);
}

Datum
snowflake_recv(PG_FUNCTION_ARGS)
{
	return int8recv(fcinfo);
}

Datum
snowflake_send(PG_FUNCTION_ARGS)
{
	return int8send(fcinfo);
}

Datum
snowflake_from_integer(PG_FUNCTION_ARGS)
{
	return int48(fcinfo);
}
}
