/*
 * snowflake_io.cpp
 *	  The snowflake type's input, output, send and receive functions, and
 *	  its cast from integer (README.md).
 *
 * Output, send, receive and the cast are C functions of this library that
 * call bigint's own with the caller's FunctionCallInfo, rather than
 * LANGUAGE internal aliases of int8out and the like: PostgreSQL's
 * opr_sanity test (run on the extension by test/opr-sanity.sh) flags a
 * built-in function declared twice with other types.  On PostgreSQL 16 and
 * later the input's errors are soft, so pg_input_is_valid('x',
 * 'snowflake') answers false.
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

/* A function of the type that is bigint's "int8_function". */
#define SNOWFLAKE_AS_BIGINT(name, int8_function) \
	PG_FUNCTION_INFO_V1(name); \
	Datum name(PG_FUNCTION_ARGS) \
	{ \
		return int8_function(fcinfo); \
	}

SNOWFLAKE_AS_BIGINT(snowflake_out, int8out)
SNOWFLAKE_AS_BIGINT(snowflake_recv, int8recv)
SNOWFLAKE_AS_BIGINT(snowflake_send, int8send)
SNOWFLAKE_AS_BIGINT(snowflake_from_integer, int48)
}
