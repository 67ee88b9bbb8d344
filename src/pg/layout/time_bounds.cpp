/*
 * time_bounds.cpp
 *	  snowflake_min_id() and snowflake_max_id(): the IDs that can carry a
 *	  given millisecond, so that a time range becomes a range of the
 *	  primary key.
 *
 * Bounds come from the layout in force at that time in this database (the
 * snowflake_layout history), so
 *	  id >= snowflake_min_id(a) AND id < snowflake_min_id(b)
 * selects the IDs whose timestamp lies in [a, b), on any node and worker.
 * A time before the layout's epoch has no IDs: snowflake_min_id() gives 0
 * (every ID is at or above it) and snowflake_max_id() gives -1 (none is at
 * or below it).  A time past the layout's last millisecond is an error:
 * no bigint lies above every ID there.
 *
 * snowflake_id_interval() turns a span of time into a count of IDs under
 * the layout in force at the transaction's start: the integer width of a
 * partition of a table range-partitioned on its snowflake key.
 */
extern "C"
{
#include "postgres.h"

#include "access/xact.h"		/* GetCurrentTransactionStartTimestamp */
#include "common/int.h"
#include "fmgr.h"
#include "utils/timestamp.h"
}

#include "pg/layout/layout_registry.hpp"
#include "pg/shared_state.hpp"
#include "pg/timestamps.hpp"

extern "C"
{
PG_FUNCTION_INFO_V1(snowflake_min_id);
PG_FUNCTION_INFO_V1(snowflake_max_id);
PG_FUNCTION_INFO_V1(snowflake_id_interval);
}

namespace {

enum class Bound
{
	kSmallest,
	kLargest,
};

[[noreturn]] void
ReportPastLayout(TimestampTz ts, const snowflake::Layout &layout)
{
	ereport(ERROR,
			(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
			 errmsg("timestamp %s lies beyond the snowflake layout",
					TIMESTAMP_NOT_FINITE(ts) ? "infinity" : timestamptz_to_str(ts)),
			 errdetail("The layout's last millisecond is %s.",
					   timestamptz_to_str(UnixMsToTimestampTz(layout.LastUnixMs())))));
}

int64
IdBound(FunctionCallInfo fcinfo, Bound bound)
{
	TimestampTz ts = PG_GETARG_TIMESTAMPTZ(0);

	RequireSharedState();
	if (TIMESTAMP_IS_NOBEGIN(ts))
		return bound == Bound::kSmallest ? 0 : -1;

	int64		unix_ms = TimestampTzToUnixMs(ts);
	const snowflake::Layout &layout = LayoutForUnixMs(fcinfo->flinfo->fn_oid, unix_ms);

	if (TIMESTAMP_IS_NOEND(ts) || unix_ms > layout.LastUnixMs())
		ReportPastLayout(ts, layout);
	if (unix_ms < layout.epoch_ms)
		return bound == Bound::kSmallest ? 0 : -1;
	return bound == Bound::kSmallest ? snowflake::SmallestIdFrom(layout, unix_ms) :
		snowflake::LargestIdUntil(layout, unix_ms);
}

}							/* namespace */

extern "C" Datum
snowflake_min_id(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT64(IdBound(fcinfo, Bound::kSmallest));
}

extern "C" Datum
snowflake_max_id(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT64(IdBound(fcinfo, Bound::kLargest));
}

extern "C" Datum
snowflake_id_interval(PG_FUNCTION_ARGS)
{
	Interval   *span = PG_GETARG_INTERVAL_P(0);

	RequireSharedState();
#ifdef INTERVAL_NOT_FINITE
	if (INTERVAL_NOT_FINITE(span))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the span of snowflake IDs must be finite")));
#endif
	if (span->month != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the span of snowflake IDs must not contain months or years"),
				 errdetail("A month has no fixed number of milliseconds."),
				 errhint("Write the span in days, for example '30 days'.")));

	/* Days are 24 hours here: IDs count UTC milliseconds. */
	int64		us;

	if (pg_mul_s64_overflow(static_cast<int64>(span->day), USECS_PER_DAY, &us) ||
		pg_add_s64_overflow(us, span->time, &us))
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("the span of snowflake IDs is out of range")));
	if (us <= 0 || us % 1000 != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the span of snowflake IDs must be a positive whole number of "
						"milliseconds")));

	int64		ms = us / 1000;
	int64		now_ms = TimestampTzToUnixMs(GetCurrentTransactionStartTimestamp());
	const snowflake::Layout &layout = LayoutForUnixMs(fcinfo->flinfo->fn_oid, now_ms);
	int			shift = layout.TimestampShift();

	if (ms > (PG_INT64_MAX >> shift))
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("the span of snowflake IDs is out of range"),
				 errdetail("%lld ms cover more IDs than a bigint holds under a layout with "
						   "%d timestamp bits.",
						   static_cast<long long>(ms), layout.TimestampBits())));
	PG_RETURN_INT64(ms << shift);
}
