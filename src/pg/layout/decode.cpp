/*
 * decode.cpp
 *	  snowflake_decode() and snowflake_timestamp(): the fields of an ID,
 *	  under the layout it was made with.
 */
extern "C"
{
#include "postgres.h"

#include "access/htup_details.h"	/* heap_form_tuple */
#include "fmgr.h"
#include "funcapi.h"
#include "utils/timestamp.h"
}

#include "pg/layout/decode.hpp"
#include "pg/layout/layout_registry.hpp"
#include "pg/shared_state.hpp"
#include "pg/timestamps.hpp"

extern "C"
{
PG_FUNCTION_INFO_V1(snowflake_decode);
PG_FUNCTION_INFO_V1(snowflake_timestamp);
}

/* The last Unix millisecond that timestamptz can hold. */
static constexpr int64 kLastTimestampTzUnixMs =
	(END_TIMESTAMP - 1) / 1000 + kPostgresEpochUnixMs;

/*
 * The fields of "id" under the layout it was made with; *layout is set to
 * that layout.  ERROR for an ID no layout can have made, or whose time
 * timestamptz cannot hold.
 */
static snowflake::IdParts
DecodeId(Oid fn_oid, int64 id, const snowflake::Layout **layout_out)
{
	RequireSharedState();
	if (id < 0)
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("snowflake ID %lld is out of range", static_cast<long long>(id)),
				 errdetail("Snowflake IDs are never negative.")));

	const snowflake::Layout &layout = LayoutForId(fn_oid, id);
	snowflake::IdParts parts = snowflake::Decompose(layout, id);

	if (parts.timestamp > kLastTimestampTzUnixMs - layout.epoch_ms)
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("snowflake ID %lld is out of range", static_cast<long long>(id)),
				 errdetail("Its timestamp lies beyond the range of timestamptz under a "
						   "layout with %d timestamp bits.", layout.TimestampBits())));
	*layout_out = &layout;
	return parts;
}

/* The columns of snowflake_decode(), as snowflake--1.6.sql declares them. */
static constexpr int kDecodeColumns = 4;

extern "C" Datum
snowflake_decode(PG_FUNCTION_ARGS)
{
	Datum		values[kDecodeColumns];
	bool		nulls[kDecodeColumns] = {false};
	int			i = 0;
	const snowflake::Layout *layout;
	snowflake::IdParts parts = DecodeId(fcinfo->flinfo->fn_oid, PG_GETARG_INT64(0), &layout);

	/*
	 * The row type is looked up and blessed once per call site, not per
	 * row: it cost more than the decode itself.
	 */
	TupleDesc	tupdesc = static_cast<TupleDesc>(fcinfo->flinfo->fn_extra);

	if (tupdesc == nullptr)
	{
		TupleDesc	looked_up;

		if (get_call_result_type(fcinfo, nullptr, &looked_up) != TYPEFUNC_COMPOSITE)
			elog(ERROR, "return type must be a row type");

		MemoryContext previous = MemoryContextSwitchTo(fcinfo->flinfo->fn_mcxt);

		tupdesc = BlessTupleDesc(CreateTupleDescCopy(looked_up));
		MemoryContextSwitchTo(previous);
		fcinfo->flinfo->fn_extra = tupdesc;
	}
	values[i++] = TimestampTzGetDatum(
		UnixMsToTimestampTz(layout->epoch_ms + parts.timestamp));
	values[i++] = Int32GetDatum(static_cast<int32>(parts.node_id));
	values[i++] = Int32GetDatum(static_cast<int32>(parts.worker_id));
	values[i++] = Int32GetDatum(static_cast<int32>(parts.sequence));
	Assert(i == kDecodeColumns);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

TimestampTz
IdTimestamp(Oid fn_oid, int64 id)
{
	const snowflake::Layout *layout;
	snowflake::IdParts parts = DecodeId(fn_oid, id, &layout);

	return UnixMsToTimestampTz(layout->epoch_ms + parts.timestamp);
}

/* The timestamp alone: no row to build, for filters and sort keys. */
extern "C" Datum
snowflake_timestamp(PG_FUNCTION_ARGS)
{
	PG_RETURN_TIMESTAMPTZ(IdTimestamp(fcinfo->flinfo->fn_oid, PG_GETARG_INT64(0)));
}
