/*
 * timestamp_predicates.cpp
 *	  The functions a rewritten comparison of snowflake_timestamp(id) calls:
 *	  the bounds of its ID range, and the comparison itself as a recheck.
 *
 * The bounds never raise an error: a time no ID carries gives NULL, which
 * makes the range, like the comparison, match nothing.  Infinities follow
 * timestamptz: every ID's timestamp lies after -infinity and before
 * infinity.
 */
extern "C"
{
#include "postgres.h"

#include "fmgr.h"
#include "nodes/supportnodes.h"
#include "optimizer/optimizer.h"	/* cpu_operator_cost */
#include "utils/timestamp.h"
}

#include "core/time_range.hpp"
#include "pg/layout/decode.hpp"
#include "pg/layout/layout_registry.hpp"
#include "pg/shared_state.hpp"
#include "pg/timestamps.hpp"

extern "C"
{
PG_FUNCTION_INFO_V1(snowflake_timestamp_lower_id);
PG_FUNCTION_INFO_V1(snowflake_timestamp_upper_id);
PG_FUNCTION_INFO_V1(snowflake_timestamp_support);
}

namespace {

/* The smallest Unix ms whose start is at or after "ts" (finite). */
int64
CeilUnixMs(TimestampTz ts)
{
	int64		floor_ms = TimestampTzToUnixMs(ts);

	return UnixMsToTimestampTz(floor_ms) == ts ? floor_ms : floor_ms + 1;
}

}							/* namespace */

/*
 * The smallest ID whose timestamp is at or after ts (inclusive), or after
 * it; NULL when there is none.
 */
extern "C" Datum
snowflake_timestamp_lower_id(PG_FUNCTION_ARGS)
{
	TimestampTz ts = PG_GETARG_TIMESTAMPTZ(0);
	bool		inclusive = PG_GETARG_BOOL(1);

	RequireSharedState();
	if (TIMESTAMP_IS_NOBEGIN(ts))
		PG_RETURN_INT64(0);
	if (TIMESTAMP_IS_NOEND(ts))
		PG_RETURN_NULL();

	/* ms * 1000 >= ts, or ms * 1000 > ts. */
	int64		from_ms = inclusive ? CeilUnixMs(ts) : TimestampTzToUnixMs(ts) + 1;
	const snowflake::LayoutSegment *segments;
	int			count = LayoutSegmentsForIds(fcinfo->flinfo->fn_oid, &segments);
	int64		id = snowflake::LowestIdFromMs(segments, count, from_ms);

	if (id < 0)
		PG_RETURN_NULL();
	PG_RETURN_INT64(id);
}

/*
 * The largest ID whose timestamp is at or before ts (inclusive), or before
 * it; -1 when there is none.  -1 keeps every ID out of the range, as NULL
 * would, but lets a negative id (which no snowflake_nextval() makes)
 * through to the recheck, which then raises snowflake_timestamp()'s error
 * on it as the comparison unrewritten does: so a rewritten < or <= is
 * exact for negative ids too.
 */
extern "C" Datum
snowflake_timestamp_upper_id(PG_FUNCTION_ARGS)
{
	TimestampTz ts = PG_GETARG_TIMESTAMPTZ(0);
	bool		inclusive = PG_GETARG_BOOL(1);

	RequireSharedState();
	if (TIMESTAMP_IS_NOBEGIN(ts))
		PG_RETURN_INT64(-1);
	if (TIMESTAMP_IS_NOEND(ts))
		PG_RETURN_INT64(PG_INT64_MAX);

	/* ms * 1000 <= ts, or ms * 1000 < ts. */
	int64		until_ms = inclusive ? TimestampTzToUnixMs(ts) : CeilUnixMs(ts) - 1;
	const snowflake::LayoutSegment *segments;
	int			count = LayoutSegmentsForIds(fcinfo->flinfo->fn_oid, &segments);
	int64		id = snowflake::HighestIdUntilMs(segments, count, until_ms);

	PG_RETURN_INT64(id < 0 ? -1 : id);
}

/* The rechecks: snowflake_timestamp(id) <op> ts, exactly, errors included. */
#define SNOWFLAKE_RECHECK(name, op) \
	extern "C" \
	{ \
	PG_FUNCTION_INFO_V1(name); \
	} \
	extern "C" Datum name(PG_FUNCTION_ARGS) \
	{ \
		TimestampTz of_id = IdTimestamp(fcinfo->flinfo->fn_oid, PG_GETARG_INT64(0)); \
\
		PG_RETURN_BOOL(timestamp_cmp_internal(of_id, PG_GETARG_TIMESTAMPTZ(1)) op 0); \
	}

SNOWFLAKE_RECHECK(snowflake_timestamp_lt, <)
SNOWFLAKE_RECHECK(snowflake_timestamp_le, <=)
SNOWFLAKE_RECHECK(snowflake_timestamp_eq, ==)
SNOWFLAKE_RECHECK(snowflake_timestamp_ge, >=)
SNOWFLAKE_RECHECK(snowflake_timestamp_gt, >)

/*
 * Support of the rechecks.  A recheck stands beside the ID range the
 * planner built from the same comparison, and that range's estimate is the
 * comparison's: the recheck removes nothing more, so its selectivity is 1.
 * Its cost is a decode and a compare.
 */
extern "C" Datum
snowflake_timestamp_support(PG_FUNCTION_ARGS)
{
	Node	   *request = reinterpret_cast<Node *>(PG_GETARG_POINTER(0));

	if (IsA(request, SupportRequestSelectivity))
	{
		SupportRequestSelectivity *selectivity =
			reinterpret_cast<SupportRequestSelectivity *>(request);

		selectivity->selectivity = 1.0;
		PG_RETURN_POINTER(selectivity);
	}
	if (IsA(request, SupportRequestCost))
	{
		SupportRequestCost *cost = reinterpret_cast<SupportRequestCost *>(request);

		cost->startup = 0;
		cost->per_tuple = 2 * cpu_operator_cost;
		PG_RETURN_POINTER(cost);
	}
	PG_RETURN_POINTER(nullptr);
}
