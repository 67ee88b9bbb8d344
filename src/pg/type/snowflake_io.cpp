/*
 * snowflake_io.cpp
 *	  The snowflake type's input, output, send and receive functions, and
 *	  its cast from integer: bigint's own, called with the caller's
 *	  FunctionCallInfo.
 *
 * A snowflake is a bigint in storage, in text and on the wire; only its
 * type OID differs, so that JSON functions write it as a string.  Output,
 * send, receive and the cast call bigint's own functions with the
 * caller's FunctionCallInfo.  They are C functions of this library rather
 * than LANGUAGE internal aliases of int8out and the like: PostgreSQL's
 * opr_sanity test (run on the extension by test/opr-sanity.sh) flags a
 * built-in function declared twice with other types.  The input parses
 * itself (core/decimal_text.hpp), so that its errors name the type and it
 * reads the same text on every version; on PostgreSQL 16 and later its
 * errors are soft, so pg_input_is_valid('x', 'snowflake') answers false.
 */
extern "C"
{
#include "postgres.h"

#include "fmgr.h"
#include "utils/fmgrprotos.h"
}

#include "core/decimal_text.hpp"

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
	const char *text = PG_GETARG_CSTRING(0);
	const snowflake::DecimalValue parsed = snowflake::ParseDecimalInt64(text);

#if PG_VERSION_NUM >= 160000
	/* ereturn() hands the error to a soft-error context, if the caller gave one. */
#define SNOWFLAKE_INPUT_ERROR(...) ereturn(fcinfo->context, (Datum) 0, __VA_ARGS__)
#else
#define SNOWFLAKE_INPUT_ERROR(...) ereport(ERROR, __VA_ARGS__)
#endif
	switch (parsed.outcome)
	{
		case snowflake::DecimalOutcome::kOk:
			break;
		case snowflake::DecimalOutcome::kBadSyntax:
			SNOWFLAKE_INPUT_ERROR((
				errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
				errmsg("invalid input syntax for type %s: \"%s\"", "snowflake", text),
				errhint(
					"A snowflake is written in decimal; snowflake_from_text() reads its compact forms.")));
			break;
		case snowflake::DecimalOutcome::kOutOfRange:
			SNOWFLAKE_INPUT_ERROR(
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("value \"%s\" is out of range for type %s", text, "snowflake")));
			break;
	}
#undef SNOWFLAKE_INPUT_ERROR
	PG_RETURN_INT64(parsed.value);
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
