/*
 * snowflake_bench_noop.c
 *	  A C function that does nothing but return a constant int8.
 *
 * bench/run.sh calls it the way it calls snowflake_nextval(), so its cost
 * is the floor every C function pays: the executor's expression step, the
 * fmgr call and returning a by-value int8.  Not part of the extension.
 */
#include "postgres.h"

#include "fmgr.h"

PG_MODULE_MAGIC;

PG_FUNCTION_INFO_V1(snowflake_bench_noop);

Datum
snowflake_bench_noop(PG_FUNCTION_ARGS)
{
	(void) fcinfo;
	PG_RETURN_INT64(42);
}
