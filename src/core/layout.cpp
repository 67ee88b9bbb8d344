/*
 * layout.cpp
 *	  Validation of snowflake layouts and ID bounds used to compare layouts.
 */
#include "layout.hpp"

#include <cstdint>

namespace snowflake {

WidthProblem
CheckWidths(const Layout &layout)
{
	if (layout.node_bits < 0 || layout.worker_bits < 0 || layout.sequence_bits < 0)
		return WidthProblem::kNegativeWidth;
	if (layout.sequence_bits == 0)
		return WidthProblem::kNoSequenceBits;
	if (layout.node_bits + layout.worker_bits + layout.sequence_bits >
		kUsableBits - kMinTimestampBits)
		return WidthProblem::kTimestampTooNarrow;
	return WidthProblem::kOk;
}

EpochProblem
CheckEpoch(const Layout &layout, int64_t now_unix_ms)
{
	if (layout.epoch_ms > now_unix_ms)
		return EpochProblem::kInFuture;
	if (now_unix_ms - layout.epoch_ms > layout.MaxTimestamp())
		return EpochProblem::kExhausted;
	return EpochProblem::kOk;
}

int64_t
LargestIdUntil(const Layout &layout, int64_t until_unix_ms)
{
	if (until_unix_ms < layout.epoch_ms)
		return -1;
	if (until_unix_ms - layout.epoch_ms >= layout.MaxTimestamp())
		return INT64_MAX;

	IdParts		parts{until_unix_ms - layout.epoch_ms, layout.MaxNodeId(),
					  layout.MaxWorkerId(), layout.MaxSequence()};

	return Compose(layout, parts);
}

int64_t
SmallestIdFrom(const Layout &layout, int64_t from_unix_ms)
{
	if (from_unix_ms < layout.epoch_ms ||
		from_unix_ms - layout.epoch_ms > layout.MaxTimestamp())
		return -1;

	IdParts		parts{from_unix_ms - layout.epoch_ms, 0, 0, 0};

	return Compose(layout, parts);
}

bool
IsProvableSuccessor(const Layout &previous, int64_t previous_until_unix_ms,
					const Layout &next, int64_t next_from_unix_ms)
{
	int64_t		previous_max = LargestIdUntil(previous, previous_until_unix_ms);
	int64_t		next_min = SmallestIdFrom(next, next_from_unix_ms);

	return previous_max != INT64_MAX && next_min >= 0 && next_min > previous_max;
}

}							/* namespace snowflake */
