/*
 * nextval_batch.cpp
 *	  snowflake_nextval(n): n IDs in one call, for ORMs that fetch blocks of
 *	  keys (Hibernate's pooled optimizers) and for bulk loaders.
 *
 * The batch takes its IDs from the session's generator as single calls do,
 * so it has every guarantee of theirs: unique, strictly increasing within
 * the session (and after every earlier ID of it), covered by the durable
 * reservation, and within snowflake.max_drift of the clock: a batch larger
 * than a millisecond's sequence borrows later milliseconds, then waits for
 * the clock, as single calls do.  It takes them in runs (consecutive IDs of
 * one millisecond, one clock read and one compare-and-swap per run), and
 * saves the executor's work of a call per ID.
 */
extern "C"
{
#include "postgres.h"

#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"		/* CHECK_FOR_INTERRUPTS */
}

#include "pg/slots/nextval.hpp"

extern "C"
{
PG_FUNCTION_INFO_V1(snowflake_nextval_batch);
}

/* More IDs than this in one call is a mistake, not a batch. */
static constexpr int32 kMaxBatch = 1000000;

/* Where a batch is: the IDs of the current run not yet returned. */
struct BatchState
{
	int64		next_id;
	uint32		left_in_run;
};

/*
 * Value per call, not a materialized set: in a select list the executor
 * then takes each ID as it is made, with no tuplestore, which is what makes
 * a batch cheaper per ID than single calls (docs/benchmarks.md).  In FROM
 * the executor materializes the set itself.
 */
extern "C" Datum
snowflake_nextval_batch(PG_FUNCTION_ARGS)
{
	FuncCallContext *funcctx;

	if (SRF_IS_FIRSTCALL())
	{
		int32		n = PG_GETARG_INT32(0);

		if (n < 0 || n > kMaxBatch)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("snowflake_nextval() takes a batch size from 0 to %d, not %d",
							kMaxBatch, n),
					 n > kMaxBatch ? errhint("Call it several times for more IDs.") : 0));
		funcctx = SRF_FIRSTCALL_INIT();
		funcctx->max_calls = static_cast<uint64>(n);
		funcctx->user_fctx = MemoryContextAllocZero(funcctx->multi_call_memory_ctx,
													sizeof(BatchState));
	}
	funcctx = SRF_PERCALL_SETUP();

	BatchState *batch = static_cast<BatchState *>(funcctx->user_fctx);
	uint64		left = funcctx->max_calls - funcctx->call_cntr;

	if (left == 0)
		SRF_RETURN_DONE(funcctx);
	/*
	 * A run is used up, or the session took IDs since (a single call in the
	 * same select list): then the rest of the run would come out below them.
	 * A run never outlasts the batch, so no ID is dropped but in the second
	 * case.
	 */
	if (batch->left_in_run == 0 ||
		SessionLastId() != batch->next_id + (batch->left_in_run - 1))
	{
		CHECK_FOR_INTERRUPTS();
		batch->next_id = NextSessionRun(fcinfo->flinfo->fn_oid,
										static_cast<uint32>(left), &batch->left_in_run);
	}
	batch->left_in_run--;
	SRF_RETURN_NEXT(funcctx, Int64GetDatum(batch->next_id++));
}
