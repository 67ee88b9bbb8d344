/*
 * nextval_batch.cpp
 *	  snowflake_nextval(n): n IDs in one call, for ORMs that fetch blocks of
 *	  keys (Hibernate's pooled optimizers) and for bulk loaders.
 *
 * The batch takes its IDs one by one from the session's generator, so it
 * has every guarantee of single calls: unique, strictly increasing within
 * the session (and after every earlier ID of it), covered by the durable
 * reservation, and within snowflake.max_drift of the clock: a batch larger
 * than a millisecond's sequence borrows later milliseconds, then waits for
 * the clock, as single calls do.  What it saves is the executor's work per
 * call.
 */
#include "postgres_headers.hpp"

#include "nextval.hpp"

extern "C"
{
PG_FUNCTION_INFO_V1(snowflake_nextval_batch);
}

/* More IDs than this in one call is a mistake, not a batch. */
static constexpr int32 kMaxBatch = 1000000;

/* How often a long batch looks for a cancel request. */
static constexpr int32 kInterruptCheckMask = 4095;

extern "C" Datum
snowflake_nextval_batch(PG_FUNCTION_ARGS)
{
	int32		n = PG_GETARG_INT32(0);

	if (n < 0 || n > kMaxBatch)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("snowflake_nextval() takes a batch size from 0 to %d, not %d",
						kMaxBatch, n),
				 errhint("Call it several times for more IDs.")));

	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);

	ReturnSetInfo *rsinfo = reinterpret_cast<ReturnSetInfo *>(fcinfo->resultinfo);
	Oid			fn_oid = fcinfo->flinfo->fn_oid;

	for (int32 i = 0; i < n; i++)
	{
		Datum		value = Int64GetDatum(NextSessionId(fn_oid));
		bool		isnull = false;

		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, &value, &isnull);
		if ((i & kInterruptCheckMask) == kInterruptCheckMask)
			CHECK_FOR_INTERRUPTS();
	}
	return static_cast<Datum>(0);
}
